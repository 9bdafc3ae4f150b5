package llm

import (
	"regexp"
	"strings"
	"testing"
)

// FuzzOfflineCheapTests holds the offline model's cheap tests to what
// they stand in for: none turns away a message its regular expressions
// would read, and countWords counts what strings.Fields splits.
func FuzzOfflineCheapTests(f *testing.F) {
	for _, q := range []string{
		"", "hello, my name is Ada and I like tea", "thanks, and what else?",
		"what is 2+2*3?", "calculate sqrt(PI)", "what is () squared?", "() CUBED",
		"What DAY is it?", "what's the current TIME in new york", "today's date",
		"read notes.md", "Show my FILES", "what files do I have?", "add a line to todo.txt: milk",
		"a\u00a0b \u0085c\u2003d\u3000e\u1680f", "\t\n\v\f\r x\x1cy ", "\xff\xfe a\xc5",
	} {
		f.Add(q)
	}
	f.Fuzz(func(t *testing.T, q string) {
		if !mayHoldArithmetic(q) {
			if e := findArithmetic(q); e != "" {
				t.Errorf("mayHoldArithmetic(%q) = false, but it holds %q", q, e)
			}
		}
		if !mayAskTime(q) && timeCue.MatchString(q) {
			t.Errorf("mayAskTime(%q) = false, but timeCue matches", q)
		}
		if !mayNameFile(q) {
			for _, re := range []*regexp.Regexp{writeFileCue, appendFileCue, readFileCue, listFilesCue} {
				if re.MatchString(q) {
					t.Errorf("mayNameFile(%q) = false, but %v matches", q, re)
				}
			}
		}
		if got, want := countWords(q), len(strings.Fields(q)); got != want {
			t.Errorf("countWords(%q) = %d, want %d", q, got, want)
		}
	})
}
