package cognition

import (
	"regexp"
	"slices"
	"strings"
	"unicode"

	"github.com/trellis-ai/trellis/internal/stopword"
	"github.com/trellis-ai/trellis/store"
)

// Names of the preferences that set the profile's fields.
const (
	PrefExpertise = "expertise"
	PrefStyle     = "style"
)

func validExpertise(e string) bool { return e == "novice" || e == "intermediate" || e == "expert" }
func validStyle(s string) bool     { return s == "concise" || s == "detailed" || s == "technical" }

// Signal is what one message tells of its writer.
type Signal struct {
	Novice, Expert, Technical int
	Question                  bool
	Words                     int
	// Preferences are stated ones, by name (PrefStyle, PrefExpertise, or
	// the statement's first topic).
	Preferences map[string]string
	// Facts are things the user asked to be remembered.
	Facts []string
	// Topics are what the message asks about (stated facts and
	// preferences left out): the user's interests.
	Topics []string
}

// Seed 002's signals of expertise, and terms that mark a technical
// register.
var (
	noviceSignals = []string{"what is", "what's a", "what are", "how do i", "how can i", "explain", "beginner",
		"new to", "eli5", "simple terms", "for dummies", "basics"}
	expertSignals = []string{"implementation", "optimize", "optimise", "architecture", "performance", "benchmark",
		"concurrency", "latency", "throughput", "internals", "trade-off", "tradeoff", "complexity", "algorithm",
		"scalab", "profil", "asymptotic", "invariant"}
	technicalTerms = []string{"api", "function", "goroutine", "mutex", "sql", "index", "schema", "compile", "kernel",
		"protocol", "thread", "cache", "stack", "heap", "query", "regex", "json", "http", "tcp", "docker", "kubernetes"}

	// statement finds a preference stated outright.
	statement = regexp.MustCompile(`(?i)\b(?:i (?:really |much |would )?(?:prefer|like|want|need)|please (?:always|keep|give me|use)|(?:always|from now on),?(?: please)?)\s+([^.!?\n]{3,200})`)
	// fact finds a thing the user asks to be remembered.
	fact = regexp.MustCompile(`(?i)\bremember (?:that |this: ?|: ?)([^\n]{3,300})`)
	// selfLevel finds the user's statement of their own level.
	selfNovice = regexp.MustCompile(`(?i)\bi(?:'m| am) (?:a |an |just a )?(?:beginner|novice|new to)\b`)
	selfExpert = regexp.MustCompile(`(?i)\bi(?:'m| am) (?:a |an )?(?:expert|senior|experienced|professional)\b`)
)

// Signals reads one message.
func Signals(msg string) Signal {
	low := strings.ToLower(msg)
	// Interests come from what the user asks about, not from what they
	// state of themself: a fact to remember, once deleted, must not
	// linger in the profile.
	s := Signal{Question: strings.Contains(msg, "?"), Words: len(strings.Fields(msg)), Preferences: map[string]string{},
		Topics: Topics(statement.ReplaceAllString(fact.ReplaceAllString(msg, " "), " "), 8)}
	for _, w := range noviceSignals {
		if strings.Contains(low, w) {
			s.Novice++
		}
	}
	for _, w := range expertSignals {
		if strings.Contains(low, w) {
			s.Expert++
		}
	}
	words := map[string]bool{}
	for _, w := range splitWords(low) {
		words[w] = true
	}
	for _, w := range technicalTerms {
		if words[w] {
			s.Technical++
		}
	}
	for _, m := range fact.FindAllStringSubmatch(msg, -1) {
		s.Facts = append(s.Facts, strings.TrimRight(strings.TrimSpace(m[1]), ".!"))
	}
	for _, m := range statement.FindAllStringSubmatch(msg, -1) {
		text := strings.TrimSpace(m[1])
		switch st := styleOf(text); {
		case st != "":
			s.Preferences[PrefStyle] = st
		default:
			key := "preference"
			if ts := Topics(text, 1); len(ts) > 0 {
				key = ts[0]
			}
			s.Preferences[key] = text
		}
	}
	switch {
	case selfNovice.MatchString(msg):
		s.Preferences[PrefExpertise] = "novice"
	case selfExpert.MatchString(msg):
		s.Preferences[PrefExpertise] = "expert"
	}
	return s
}

// styleOf is the style a stated preference asks for, or "".
func styleOf(text string) string {
	low := strings.ToLower(text)
	has := func(ws ...string) bool {
		return slices.ContainsFunc(ws, func(w string) bool { return strings.Contains(low, w) })
	}
	switch {
	case has("short", "brief", "concise", "terse", "to the point", "one line", "one-line", "succinct"):
		return "concise"
	case has("detailed", "in depth", "in-depth", "thorough", "long", "step by step", "step-by-step"):
		return "detailed"
	case has("technical", "code", "precise"):
		return "technical"
	}
	return ""
}

// Infer updates p with what a message told (and a model's extraction,
// when there is one). Stated preferences are kept and set expertise and
// style; inference fills only what the user did not state.
func Infer(p *store.Profile, sig Signal, ext *Extraction) {
	p.Patterns["turns"]++
	if sig.Question {
		p.Patterns["questions"]++
	}
	p.Patterns["novice_signals"] += sig.Novice
	p.Patterns["expert_signals"] += sig.Expert
	p.Patterns["technical_terms"] += sig.Technical
	switch {
	case sig.Words > 0 && sig.Words < 8:
		p.Patterns["short_messages"]++
	case sig.Words > 40:
		p.Patterns["long_messages"]++
	}
	prefs := sig.Preferences
	if ext != nil {
		prefs = map[string]string{}
		for k, v := range sig.Preferences {
			prefs[k] = v
		}
		for k, v := range ext.Preferences {
			prefs[k] = v
		}
		if validExpertise(ext.Expertise) {
			prefs[PrefExpertise] = ext.Expertise
		}
		if validStyle(ext.Style) {
			prefs[PrefStyle] = ext.Style
		}
	}
	for k, v := range prefs {
		if (k == PrefExpertise && !validExpertise(v)) || (k == PrefStyle && !validStyle(v)) {
			continue
		}
		p.Preferences[k] = clip(v, 200)
	}
	// Interests: the latest topics first, at most 10.
	for i := len(sig.Topics) - 1; i >= 0; i-- {
		t := sig.Topics[i]
		p.Interests = slices.DeleteFunc(p.Interests, func(x string) bool { return x == t })
		p.Interests = slices.Insert(p.Interests, 0, t)
	}
	p.Interests = p.Interests[:min(len(p.Interests), 10)]

	n, e, turns := p.Patterns["novice_signals"], p.Patterns["expert_signals"], p.Patterns["turns"]
	switch {
	case validExpertise(p.Preferences[PrefExpertise]):
		p.Expertise = p.Preferences[PrefExpertise]
	case e >= 2 && e >= 2*n:
		p.Expertise = "expert"
	case n >= 2 && n >= 2*e:
		p.Expertise = "novice"
	default:
		p.Expertise = "intermediate"
	}
	short, long, tech := p.Patterns["short_messages"], p.Patterns["long_messages"], p.Patterns["technical_terms"]
	switch {
	case validStyle(p.Preferences[PrefStyle]):
		p.Style = p.Preferences[PrefStyle]
	case turns < 3:
		// Too early to tell.
	case tech >= turns:
		p.Style = "technical"
	case 2*short > turns:
		p.Style = "concise"
	case 2*long > turns:
		p.Style = "detailed"
	}
}

// chatter are the words of a conversation, beyond the English stop
// words, that say nothing about its topic ("please remember that I
// prefer…"): they are left out of topics too.
var chatter = func() map[string]bool {
	m := map[string]bool{}
	for _, w := range strings.Fields(`also always answer answers anything bit done every get give got i'm im it's
		i've ive keep know let like lot make many mine much need one onto please prefer really remember show
		something tell thank thanks thing things think two us use used using want way whose yes yet`) {
		m[w] = true
	}
	return m
}()

// noTopic reports whether w says nothing about a topic.
func noTopic(w string) bool { return stopword.Is(w) || chatter[w] }

// Topics are the words of text a memory is found and compared by: lower
// case, at least three letters, no stop words, each once, in order, at
// most n. A plural's trailing s is dropped where that is safe ("answers"
// meets "answer"; "postgres", "status" and "indexes" stay themselves).
func Topics(text string, n int) []string {
	var out []string
	for _, w := range splitWords(strings.ToLower(text)) {
		if len([]rune(w)) < 3 || noTopic(w) || isNumber(w) {
			continue
		}
		if len(w) > 4 && strings.HasSuffix(w, "s") && !hasAnySuffix(w, "ss", "us", "is", "es") {
			w = strings.TrimSuffix(w, "s")
		}
		if noTopic(w) || slices.Contains(out, w) {
			continue
		}
		out = append(out, w)
		if len(out) == n {
			break
		}
	}
	return out
}

func splitWords(s string) []string {
	return strings.FieldsFunc(s, func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) && r != '\'' })
}

func isNumber(w string) bool {
	return strings.IndexFunc(w, func(r rune) bool { return !unicode.IsDigit(r) }) < 0
}

func hasAnySuffix(w string, suffixes ...string) bool {
	return slices.ContainsFunc(suffixes, func(s string) bool { return strings.HasSuffix(w, s) })
}
