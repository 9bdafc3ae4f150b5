// Package stopword holds the one list of English stop words: the function
// words ("the", "what", "about") that say nothing about what a text is
// about. Search drops them from a query, the offline model from a
// question, cognition from a memory's topics.
//
// The list is Snowball's English list, the one PostgreSQL's english text
// search configuration drops from a tsquery, and "could" and "would".
// Dropping them before either backend sees a query makes SQLite's FTS5 and
// PostgreSQL search the same words. Words that are noise only in one place
// ("please", "remember", "document") belong to that place, not here.
package stopword

import "strings"

// Is reports whether w, in lower case, is an English stop word.
func Is(w string) bool { return english[w] }

var english = func() map[string]bool {
	m := map[string]bool{}
	for _, w := range strings.Fields(`a about above after again against all am an and any are as at be because
		been before being below between both but by can could did do does doing don down during each few for
		from further had has have having he her here hers herself him himself his how i if in into is it its
		itself just me more most my myself no nor not now of off on once only or other our ours ourselves out
		over own same she should so some such than that the their theirs them themselves then there these they
		this those through to too under until up very was we were what when where which while who whom why will
		with would you your yours yourself yourselves`) {
		m[w] = true
	}
	return m
}()
