package llm

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"unicode"

	"github.com/tmc/langchaingo/llms"

	"github.com/trellis-ai/trellis/internal/stopword"
)

// The offline model's handling of the agent's document tools: it
// searches the documents when the prompt lists one ready, and answers by
// quoting the passages the tools returned.

func isDocumentTool(name string) bool { return name == "search_documents" || name == "load_document" }

// hasReadyDocuments reports whether a text message lists the
// conversation's documents with one of them ready.
func hasReadyDocuments(msgs []llms.MessageContent) bool {
	for _, m := range msgs {
		text := partsText(m.Parts)
		i := strings.Index(text, DocumentsHeading)
		if i < 0 {
			continue
		}
		for _, line := range strings.Split(text[i+len(DocumentsHeading):], "\n") {
			if strings.HasPrefix(line, "## ") {
				break
			}
			if strings.HasPrefix(line, "- ") && strings.Contains(line, "[ready]") {
				return true
			}
		}
	}
	return false
}

var sourceLine = regexp.MustCompile(`^\[(\d+)\] `)

// numberedSources reads the numbered sources of a prompt (under
// SourcesHeading): each number's text.
func numberedSources(msgs []llms.MessageContent) map[int]string {
	out := map[int]string{}
	for _, m := range msgs {
		text := partsText(m.Parts)
		i := strings.Index(text, SourcesHeading+"\n")
		if i < 0 {
			continue
		}
		n := 0
		var body []string
		flush := func() {
			if n > 0 {
				out[n] = strings.Join(body, "\n")
			}
			n, body = 0, nil
		}
		for _, line := range strings.Split(text[i+len(SourcesHeading)+1:], "\n") {
			if sm := sourceLine.FindStringSubmatch(line); sm != nil && n == 0 {
				n, _ = strconv.Atoi(sm[1])
				continue
			}
			if n > 0 && line == "" && len(body) > 0 {
				flush()
				continue
			}
			if n > 0 {
				body = append(body, line)
			}
		}
		flush()
	}
	return out
}

// docPassage is a passage a document tool returned.
type docPassage struct {
	DocumentID string `json:"document_id"`
	Filename   string `json:"filename"`
	Text       string `json:"text"`
}

// quotePassages answers from a document tool's result: its best
// passages (at most two), each quoted by the sentences that share most
// words with the question, cited by number when the sources are numbered.
func quotePassages(question string, r toolResult, sources map[int]string) string {
	var res struct {
		Results  []docPassage `json:"results"`
		Chunks   []docPassage `json:"chunks"`
		Filename string       `json:"filename"`
		Text     string       `json:"text"`
		Error    string       `json:"error"`
	}
	if json.Unmarshal([]byte(strings.TrimSpace(r.content)), &res) != nil {
		return describeResult(r)
	}
	ps := append(res.Results, res.Chunks...)
	if len(ps) == 0 && res.Text != "" {
		ps = []docPassage{{Filename: res.Filename, Text: res.Text}}
	}
	if len(ps) == 0 {
		return "I looked in this conversation's documents and found nothing about that."
	}
	words := queryWords(question)
	type quote struct {
		text, file, cite string
		score            int
	}
	var quotes []quote
	for _, p := range ps {
		text, score := bestSentences(p.Text, words)
		if score == 0 && len(quotes) > 0 {
			continue
		}
		file := p.Filename
		if file == "" {
			file = res.Filename
		}
		quotes = append(quotes, quote{text: text, file: file, cite: citeOf(p.Text, sources), score: score})
		if len(quotes) == 2 {
			break
		}
	}
	var b strings.Builder
	for i, q := range quotes {
		if i > 0 {
			b.WriteString("\n")
		}
		if q.file != "" {
			fmt.Fprintf(&b, "From %s: “%s”", q.file, q.text)
		} else {
			fmt.Fprintf(&b, "From the documents: “%s”", q.text)
		}
		if q.cite != "" {
			b.WriteString(" " + q.cite)
		}
	}
	return b.String()
}

// citeOf is "[n]" for the numbered source whose text is the passage's.
func citeOf(text string, sources map[int]string) string {
	// The prompt holds each source's text up to its first blank line,
	// maybe clipped: the passage and it must begin alike.
	head := []rune(strings.TrimSpace(text))
	best := 0
	for n, s := range sources {
		src := []rune(strings.TrimSpace(s))
		k := min(80, len(src), len(head))
		if k > 0 && string(src[:k]) == string(head[:k]) && (best == 0 || n < best) {
			best = n
		}
	}
	if best == 0 {
		return ""
	}
	return "[" + strconv.Itoa(best) + "]"
}

// questionWords are words of a question about documents that no passage
// is found by, beyond the English stop words.
var questionWords = map[string]bool{"document": true, "documents": true, "say": true, "says": true, "tell": true, "please": true}

// queryWords are the question's words worth matching, lower case and
// stemmed.
func queryWords(q string) []string {
	var out []string
	seen := map[string]bool{}
	for _, w := range strings.FieldsFunc(strings.ToLower(q), func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) }) {
		if len([]rune(w)) < 3 || stopword.Is(w) || questionWords[w] || seen[w] {
			continue
		}
		w = stem(w)
		if seen[w] {
			continue
		}
		seen[w] = true
		out = append(out, w)
	}
	return out
}

// stem cuts an English inflection off a question's word, so that it
// matches the passage's other forms by prefix: "descales" finds
// "descaled" and "descaling". The stem keeps four letters at least.
func stem(w string) string {
	for _, suffix := range []string{"ing", "es", "ed", "s"} {
		if base, ok := strings.CutSuffix(w, suffix); ok && len([]rune(base)) >= 4 {
			return base
		}
	}
	return w
}

// bestSentences returns the one or two consecutive sentences of text
// that hold most of the words (a word of text beginning with one
// counts), and how many they hold; at most 400 characters.
func bestSentences(text string, words []string) (string, int) {
	sentences := splitSentences(text)
	if len(sentences) == 0 {
		return "", 0
	}
	matched := func(s string) map[string]bool {
		m := map[string]bool{}
		for _, tw := range strings.FieldsFunc(strings.ToLower(s), func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) }) {
			for _, w := range words {
				if strings.HasPrefix(tw, w) {
					m[w] = true
				}
			}
		}
		return m
	}
	best, bestScore := sentences[0], -1
	for i := range sentences {
		for j := i; j < len(sentences) && j < i+2; j++ {
			m := matched(sentences[i])
			for k := range matched(sentences[j]) {
				m[k] = true
			}
			score := len(m)
			if j > i && score == len(matched(sentences[i])) {
				continue // the second sentence adds nothing
			}
			if score > bestScore {
				best, bestScore = strings.Join(sentences[i:j+1], " "), score
			}
		}
	}
	if r := []rune(best); len(r) > 400 {
		best = string(r[:400]) + "…"
	}
	return best, bestScore
}

// splitSentences splits text into sentences and lines, headings and
// blank lines left out, each with its spaces folded.
func splitSentences(text string) []string {
	var out []string
	for _, para := range strings.Split(text, "\n\n") {
		var lines []string
		for _, line := range strings.Split(para, "\n") {
			if !strings.HasPrefix(strings.TrimSpace(line), "#") {
				lines = append(lines, line)
			}
		}
		para = strings.Join(strings.Fields(strings.Join(lines, " ")), " ")
		if para == "" {
			continue
		}
		start := 0
		for i := 0; i < len(para); i++ {
			if (para[i] == '.' || para[i] == '?' || para[i] == '!') && (i+1 == len(para) || para[i+1] == ' ') {
				out = append(out, strings.TrimSpace(para[start:i+1]))
				start = i + 1
			}
		}
		if rest := strings.TrimSpace(para[start:]); rest != "" {
			out = append(out, rest)
		}
	}
	return out
}
