package runs

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/tmc/langchaingo/llms"

	"github.com/trellis-ai/trellis/llm"
	"github.com/trellis-ai/trellis/store"
)

// titleRunes bounds the titles the service makes, in characters: a line
// of a conversation list.
const titleRunes = 60

// title is a new conversation's title, made at once from its first
// message, until a model's replaces it (TitleConversation): the gist of
// the message's first sentence that says something, without greetings,
// politeness and the phrasing of a request ("Hi! Could you tell me what
// the capital of France is?" is "Capital of France"), at most titleRunes
// characters cut at a word. A message that is only a greeting (or only
// code) is its own title.
func title(msg string) string {
	first := ""
	for _, s := range sentences(msg) {
		if first == "" && strings.ContainsFunc(s, isWordRune) {
			first = s
		}
		if g := gist(s); g != "" {
			return clipTitle(g)
		}
	}
	if first == "" { // all code, or no words
		if all := appendSentence(nil, msg); len(all) > 0 {
			first = all[0]
		}
	}
	return clipTitle(strings.TrimRightFunc(first, isTrailer))
}

// sentences splits text into its sentences and lines, each with its
// spaces collapsed; code fences and what they hold are left out.
func sentences(text string) []string {
	var out []string
	inCode := false
	for line := range strings.SplitSeq(text, "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			inCode = !inCode
			continue
		}
		if inCode {
			continue
		}
		start := 0
		for i, r := range line {
			if r == '?' || r == '!' || r == '.' && (i+1 == len(line) || line[i+1] == ' ') {
				out = appendSentence(out, line[start:i+1])
				start = i + 1
			}
		}
		out = appendSentence(out, line[start:])
	}
	return out
}

func appendSentence(out []string, s string) []string {
	s = strings.Join(strings.FieldsFunc(s, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) }), " ")
	if s == "" {
		return out
	}
	return append(out, s)
}

// Phrases a title leaves out at the start of a sentence, lower case, each
// followed by a space or the sentence's end; tried in order, again after
// each one removed. Longer phrases come before their beginnings.
var (
	greetings = []string{"good morning", "good afternoon", "good evening", "hello there", "hi there", "hey there",
		"greetings", "hello", "hiya", "howdy", "hey", "hi", "yo", "dear trellis", "trellis"}
	fillers = []string{"i was wondering if you could", "i was wondering", "i wonder if you could", "i wonder",
		"quick question", "one more question", "question", "so", "ok", "okay", "well", "um", "uh", "oh", "also", "and", "but",
		"please", "pls", "kindly", "can you please", "could you please", "would you please",
		"can you help me", "could you help me", "help me to", "help me", "i need help with", "i need help",
		"can you", "could you", "would you", "will you", "can u", "i want you to", "i'd like you to", "i would like you to",
		"i need you to", "i want to know", "i'd like to know", "i would like to know", "i want to", "i'd like to",
		"i would like to", "i need to", "let me know", "tell me about", "tell me what", "tell me who", "tell me where", "tell me when", "tell me why", "tell me", "explain to me", "explain",
		"describe", "define", "show me", "give me", "what is", "what's", "what are", "who is", "who was", "who are",
		"what was", "what were", "the", "a", "an"}
	// howTo are the phrasings of "how do I": the title is "How to …".
	howTo = []string{"how do i", "how can i", "how should i", "how would i", "how do you", "how can you", "how to"}
)

// gist is the title a sentence gives: "" when it holds nothing but a
// greeting, politeness or filler.
func gist(s string) string {
	s = trimPhrases(s, greetings)
	how := false
	for {
		before := s
		s = trimPhrases(s, fillers)
		if rest, ok := cutPhrase(s, howTo); ok {
			s, how = rest, true
		}
		if s == before {
			break
		}
	}
	s = strings.TrimRightFunc(s, isTrailer)
	for _, tail := range []string{" please", " thanks", " thank you", " for me", " is", " are"} {
		if len(s) > len(tail) && strings.EqualFold(s[len(s)-len(tail):], tail) {
			s = strings.TrimRightFunc(s[:len(s)-len(tail)], isTrailer)
		}
	}
	if !strings.ContainsFunc(s, isWordRune) {
		return ""
	}
	if how {
		return "How to " + s
	}
	r, n := utf8.DecodeRuneInString(s)
	return string(unicode.ToUpper(r)) + s[n:]
}

// trimPhrases removes any of phrases, and the punctuation after them,
// from the start of s, as long as one is there.
func trimPhrases(s string, phrases []string) string {
	for {
		rest, ok := cutPhrase(s, phrases)
		if !ok {
			return s
		}
		s = rest
	}
}

// cutPhrase removes the first of phrases that starts s, as a whole word
// or words, with the spaces and punctuation after it.
func cutPhrase(s string, phrases []string) (string, bool) {
	for _, p := range phrases {
		if len(s) < len(p) || !strings.EqualFold(s[:len(p)], p) {
			continue
		}
		rest := s[len(p):]
		if r, _ := utf8.DecodeRuneInString(rest); rest != "" && !unicode.IsSpace(r) && !strings.ContainsRune(",:;!?.…—", r) {
			continue // the start of a longer word ("history", "this", "so-called", "A/B")
		}
		return strings.TrimLeftFunc(rest, func(r rune) bool { return r == '—' || isTrailer(r) }), true
	}
	return s, false
}

// isWordRune reports whether r is a letter or a digit.
func isWordRune(r rune) bool { return unicode.IsLetter(r) || unicode.IsDigit(r) }

// isTrailer reports whether r may end a sentence but not a title.
func isTrailer(r rune) bool {
	return r == '?' || r == '!' || r == '.' || r == ',' || r == ';' || r == ':' || r == '…' || unicode.IsSpace(r)
}

// clipTitle bounds a title to titleRunes characters, cut at a word when
// one ends in its second half, with "…" for what was cut.
func clipTitle(s string) string {
	if utf8.RuneCountInString(s) <= titleRunes {
		return s
	}
	r := []rune(s)[:titleRunes-1]
	if i := strings.LastIndexByte(string(r), ' '); i > len(string(r))/2 {
		return strings.TrimRightFunc(string(r)[:i], isTrailer) + "…"
	}
	return string(r) + "…"
}

// titleInstructions ask a model for a conversation's title.
const titleInstructions = "Write a title for the conversation below, for a list of conversations: " +
	"a short noun phrase of at most six words naming its subject, in the language of the user's message. " +
	"Reply with the title alone: no quotes, no final punctuation, nothing else."

// TitleConversation titles the user's conversation after its first
// answer with model: it reads the conversation's first message and
// answer, asks the model for a title, and stores it unless the user has
// renamed the conversation (meanwhile too). It does nothing for a
// conversation the user renamed or that has no answer yet. Errors:
// store.ErrNotFound (deleted), store.ErrErasing, the model's, or an
// ErrUnusableTitle for a reply that cannot be a title.
func (m *Service) TitleConversation(ctx context.Context, model llms.Model, userID, conversationID string) error {
	c, err := m.st.GetConversation(ctx, userID, conversationID)
	if err != nil || c.TitleByUser {
		return err
	}
	page, err := m.st.ListRuns(ctx, userID, conversationID, store.RunQuery{Limit: 1, EventLimit: 1})
	if err != nil {
		return err
	}
	var question, answer string
	for _, msg := range page.Messages {
		switch {
		case msg.Role == store.RoleUser && question == "":
			question = msg.Content
		case msg.Role == store.RoleAssistant && answer == "":
			answer = msg.Content
		}
	}
	if question == "" || answer == "" {
		return nil
	}
	prompt := "User: " + clipRunes(question, 2000) + "\n\nAssistant: " + clipRunes(answer, 2000)
	resp, err := model.GenerateContent(llm.WithNode(ctx, "title"), []llms.MessageContent{
		llms.TextParts(llms.ChatMessageTypeSystem, titleInstructions),
		llms.TextParts(llms.ChatMessageTypeHuman, prompt),
	}, llms.WithMaxTokens(32))
	if err != nil {
		return fmt.Errorf("runs: title conversation %s: %w", conversationID, err)
	}
	var reply string
	if len(resp.Choices) > 0 {
		reply = resp.Choices[0].Content
	}
	t := cleanTitle(reply)
	if t == "" {
		return fmt.Errorf("runs: title conversation %s: %w: %q", conversationID, ErrUnusableTitle, reply)
	}
	_, err = m.st.SetGeneratedTitle(ctx, userID, conversationID, t)
	return err
}

// ErrUnusableTitle: the model's reply held no title.
var ErrUnusableTitle = errors.New("the model's reply is no title")

// cleanTitle makes a model's reply a title: its first line that says
// something, without a "Title:" label, quotes, markdown emphasis and final
// punctuation, bounded as the service's titles are; "" when nothing is
// left.
func cleanTitle(reply string) string {
	for _, line := range sentencesOrLines(reply) {
		line = strings.TrimSpace(line)
		if len(line) > 6 && strings.EqualFold(line[:6], "title:") {
			line = line[6:]
		}
		line = strings.Trim(line, "\"'“”‘’`*#_ ")
		line = strings.TrimRightFunc(line, isTrailer)
		if strings.ContainsFunc(line, isWordRune) {
			return clipTitle(line)
		}
	}
	return ""
}

// sentencesOrLines is the reply's lines, spaces and control characters
// collapsed.
func sentencesOrLines(s string) []string {
	var out []string
	for line := range strings.SplitSeq(s, "\n") {
		out = appendSentence(out, line)
	}
	return out
}

// clipRunes bounds s to n characters.
func clipRunes(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	return string([]rune(s)[:n]) + "…"
}
