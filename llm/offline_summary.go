package llm

import (
	"cmp"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"unicode"

	"github.com/tmc/langchaingo/llms"
)

// The offline model's summaries. Asked for one (a system prompt under
// ConversationSummaryHeading or ToolResultSummaryHeading), it keeps the
// sentences that state facts — a number, a name (a capitalised word
// inside a sentence), a decision or a preference — each once, under
// whose line it was, after the previous summary's lines; its own offline
// notice is no fact of the conversation. When they exceed the words the
// prompt allows ("at most N words"), the sentences with the fewest facts
// go first, the older of two alike before the newer.

// summaryRequest reports whether msgs ask for a summary, and returns
// its system prompt and its human message.
func summaryRequest(msgs []llms.MessageContent) (system, human string, ok bool) {
	if len(msgs) == 0 || msgs[0].Role != llms.ChatMessageTypeSystem {
		return "", "", false
	}
	for _, m := range msgs {
		for _, p := range m.Parts {
			t, isText := p.(llms.TextContent)
			if !isText {
				continue
			}
			switch m.Role {
			case llms.ChatMessageTypeSystem:
				if strings.HasPrefix(t.Text, ConversationSummaryHeading) || strings.HasPrefix(t.Text, ToolResultSummaryHeading) {
					system, ok = t.Text, true
				}
			case llms.ChatMessageTypeHuman:
				human = t.Text
			}
		}
	}
	return system, human, ok
}

var wordLimit = regexp.MustCompile(`at most (\d+) words`)

// offlineSummary is the offline model's summary of a request's text.
func offlineSummary(system, human string) string {
	limit := 0
	if m := wordLimit.FindStringSubmatch(system); m != nil {
		limit, _ = strconv.Atoi(m[1])
	}
	var previous, text string
	if i := strings.Index(human, TranscriptLabel+"\n"); i >= 0 {
		previous, text = human[:i], human[i+len(TranscriptLabel)+1:]
	} else {
		text = human
	}
	previous = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(previous), SummarySoFarLabel))

	var lines []factLine
	seen := map[string]bool{}
	add := func(who, sentence string, old bool) {
		sentence = strings.TrimSpace(sentence)
		key := who + "\x00" + strings.ToLower(sentence)
		if sentence == "" || seen[key] {
			return
		}
		score := factScore(sentence)
		if old {
			// A line of the previous summary was kept as a fact before.
			score = max(score, 1)
		}
		if score == 0 {
			return
		}
		seen[key] = true
		lines = append(lines, factLine{who: who, text: sentence, score: score})
	}
	for _, l := range strings.Split(previous, "\n") {
		who, rest := speaker(l)
		add(who, rest, true)
	}
	for _, l := range strings.Split(text, "\n") {
		who, rest := speaker(l)
		for _, s := range sentences(rest) {
			if !strings.Contains(OfflineNotice, s) {
				add(who, s, false)
			}
		}
	}
	lines = withinWords(lines, limit)
	if len(lines) == 0 {
		return "No facts to keep."
	}
	var b strings.Builder
	for i, l := range lines {
		if i > 0 {
			b.WriteByte('\n')
		}
		b.WriteString("- ")
		if l.who != "" {
			b.WriteString(l.who + ": ")
		}
		b.WriteString(l.text)
	}
	return b.String()
}

type factLine struct {
	who, text string
	score     int
}

// speaker splits "- User: text" into "User" and "text"; a line without
// a speaker has none.
func speaker(line string) (string, string) {
	line = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(line), "- "))
	for _, who := range []string{"User", "Assistant"} {
		if rest, ok := strings.CutPrefix(line, who+":"); ok {
			return who, strings.TrimSpace(rest)
		}
	}
	return "", line
}

// sentences splits text after ".", "!" or "?" followed by a space, and
// at line breaks.
func sentences(text string) []string {
	var out []string
	start := 0
	for i := 0; i < len(text); i++ {
		c := text[i]
		end := (c == '.' || c == '!' || c == '?') && (i+1 == len(text) || text[i+1] == ' ')
		if c == '\n' || end {
			if s := strings.TrimSpace(text[start : i+1]); s != "" {
				out = append(out, s)
			}
			start = i + 1
		}
	}
	if s := strings.TrimSpace(text[start:]); s != "" {
		out = append(out, s)
	}
	return out
}

// decisionWords mark a decision, a commitment or a preference.
var decisionWords = []string{"decid", "agree", "chose", "choose", "will ", "won't", "must", "deadline", "prefer",
	"always", "never", "name is", "called", "plan", "budget", "due ", "favourite", "favorite", "allergic"}

// factScore counts a sentence's signs of facts: numbers, names, decisions.
func factScore(s string) int {
	score := 0
	words := strings.Fields(s)
	for i, w := range words {
		w = strings.Trim(w, `"'()[],;:.!?`)
		if w == "" {
			continue
		}
		if strings.ContainsFunc(w, unicode.IsDigit) {
			score++
			continue
		}
		r := []rune(w)
		if i > 0 && unicode.IsUpper(r[0]) && w != "I" && !strings.HasPrefix(w, "I'") {
			score++
		}
	}
	lower := strings.ToLower(s)
	for _, d := range decisionWords {
		if strings.Contains(lower, d) {
			score++
		}
	}
	return score
}

// withinWords drops lines until they hold at most limit words (no limit
// when 0): the fewest facts first, the oldest of equals first.
func withinWords(lines []factLine, limit int) []factLine {
	if limit <= 0 {
		return lines
	}
	total := 0
	for _, l := range lines {
		total += countWords(l.text) + 1
	}
	if total <= limit {
		return lines
	}
	order := make([]int, len(lines))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(lines[a].score, lines[b].score) })
	dropped := make([]bool, len(lines))
	for _, i := range order {
		if total <= limit {
			break
		}
		dropped[i] = true
		total -= countWords(lines[i].text) + 1
	}
	kept := lines[:0]
	for i, l := range lines {
		if !dropped[i] {
			kept = append(kept, l)
		}
	}
	return kept
}
