package runs

import (
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"github.com/trellis-ai/trellis/store"
)

// The first title of a conversation is the gist of its first message,
// not its first line: greetings, politeness and the phrasing of a request
// go, and a long one is cut at a word.
func TestTitle(t *testing.T) {
	for _, tc := range []struct{ msg, want string }{
		{"Hi! Could you tell me what the capital of France is?", "Capital of France"},
		{"hello there, what is the boiling point of water at altitude?", "Boiling point of water at altitude"},
		{"Hey\n\nHow do I reverse a linked list in Go?", "How to reverse a linked list in Go"},
		{"Good morning! Please summarise the attached report for me. Thanks!", "Summarise the attached report"},
		{"I was wondering if you could explain quantum entanglement", "Quantum entanglement"},
		{"what's 2+2", "2+2"},
		{"Tell me about the history of the Hanseatic League", "History of the Hanseatic League"},
		{"Hi", "Hi"},
		{"hello!!!", "hello"},
		{"```go\nfunc main() {}\n```\nwhy does this not compile?", "Why does this not compile"},
		{"yoga routines for beginners", "Yoga routines for beginners"},
		{"A/B testing for so-called experts", "A/B testing for so-called experts"},
		{"so-called dark matter — what is it?", "So-called dark matter — what is it"},
		{"Can you write a detailed comparison of PostgreSQL and SQLite for an embedded chat server, with benchmarks?",
			"Write a detailed comparison of PostgreSQL and SQLite for…"},
	} {
		if got := title(tc.msg); got != tc.want {
			t.Errorf("title(%q) = %q, want %q", tc.msg, got, tc.want)
		}
	}
}

// A model's reply is made a title: its first line that says something,
// without a label, quotes and final punctuation.
func TestCleanTitle(t *testing.T) {
	for _, tc := range []struct{ reply, want string }{
		{"Harbour fees in Kiel", "Harbour fees in Kiel"},
		{"\"Harbour fees in Kiel.\"", "Harbour fees in Kiel"},
		{"Title: **Harbour fees**\nBecause the user asked…", "Harbour fees"},
		{"\n\n  # Linked lists in Go  \n", "Linked lists in Go"},
		{"...", ""},
		{"", ""},
	} {
		if got := cleanTitle(tc.reply); got != tc.want {
			t.Errorf("cleanTitle(%q) = %q, want %q", tc.reply, got, tc.want)
		}
	}
}

// Whatever the message, its title is one the store takes (or empty only
// for a message with nothing to show), at most titleRunes characters.
func FuzzTitle(f *testing.F) {
	for _, s := range []string{"Hi! Could you tell me what the capital of France is?", "hi", "```\ncode\n```", "how do i",
		"\u00a0\t?", "é" + strings.Repeat("x", 200), "a\x00b\nc", "caf\xe9 au lait?", "Title: x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, msg string) {
		for name, got := range map[string]string{"title": title(msg), "cleanTitle": cleanTitle(msg)} {
			if n := utf8.RuneCountInString(got); n > titleRunes {
				t.Errorf("%s(%q) = %q: %d characters", name, msg, got, n)
			}
			if got == "" {
				continue
			}
			if utf8.ValidString(msg) && strings.IndexByte(msg, 0) < 0 {
				if err := store.CheckTitle(got); err != nil {
					t.Errorf("%s(%q) = %q: %v", name, msg, got, err)
				}
			}
		}
		if strings.ContainsFunc(msg, func(r rune) bool { return unicode.IsLetter(r) || unicode.IsDigit(r) }) && title(msg) == "" {
			t.Errorf("title(%q) is empty", msg)
		}
	})
}
