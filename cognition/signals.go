package cognition

import (
	"regexp"
	"slices"
	"strings"
	"unicode"

	"github.com/trellis-ai/trellis/internal/stopword"
	"github.com/trellis-ai/trellis/store"
)

// Names of the preferences that set the profile's fields, and of those
// the rules name by what they are.
const (
	PrefExpertise = "expertise"
	PrefStyle     = "style"
	// PrefFormat is how the user wants answers laid out ("answers in
	// bullet points").
	PrefFormat = "format"
	// PrefLocation is where the user says they live ("I live in
	// Lisbon"): the place.
	PrefLocation = "location"
)

func validExpertise(e string) bool { return e == "novice" || e == "intermediate" || e == "expert" }
func validStyle(s string) bool     { return s == "concise" || s == "detailed" || s == "technical" }

// Signal is what one message tells of its writer.
type Signal struct {
	Novice, Expert, Technical int
	Question                  bool
	Words                     int
	// Preferences are stated ones, by name (PrefStyle, PrefExpertise,
	// PrefFormat, PrefLocation, or the statement's first topic).
	Preferences map[string]string
	// Facts are things the user asked to be remembered.
	Facts []string
	// Topics are what the message asks about (stated facts, preferences
	// and places left out, and the verbs of what it asks): the user's
	// interests.
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

	// statement finds a preference stated outright, in one clause: group 1
	// after "I prefer", "please always"…, group 2 after "I want" or "I
	// need" when what is wanted is the answers ("I need you to…", "I want
	// shorter answers"), so that "I need a plan for the launch" is a
	// request, not a preference.
	statement = regexp.MustCompile(`(?i)\b(?:i (?:really |much )?(?:prefer|like)|i(?: would|'d) prefer|please (?:always|keep|give me|use)|(?:always|from now on),?(?: please)?)\s+([^.!?\n]{3,200})` +
		`|\bi (?:really )?(?:want|need|would like|'d like)\s+((?:you to |your |the |all |more |less |short |shorter |long |longer )*(?:answers?|responses?|replies|explanations?)\b[^.!?\n]{0,200})`)
	// location finds where the user says they live, in one clause; group 1
	// is the place, up to a word that ends it ("in Lisbon with my wife").
	location = regexp.MustCompile(`(?i)\b(?:i (?:live|reside)|i(?:'m| am) (?:based|located|living)|i(?:'m| am) from|my (?:home ?town|city|town) is)\s+(?:in |at |near )?` +
		`([\p{L}][\p{L}\p{M}' .-]{1,79}?)\s*(?:\b(?:with|for|since|because|where|which|and|but|now|these|this)\b.*)?[.!?,;]?\s*$`)
	// fact finds a thing the user asks to be remembered, up to the end of
	// its sentence: a stop, '!' or '?' before a space or the end ("10.0.0.1"
	// stays whole), so a preference stated next is read as one.
	fact = regexp.MustCompile(`(?i)\bremember (?:that |this: ?|: ?)((?:[^\n.!?]|[.!?][^\s.!?]){3,300})`)
	// selfLevel finds the user's statement of their own level.
	selfNovice = regexp.MustCompile(`(?i)\bi(?:'m| am) (?:a |an |just a )?(?:beginner|novice|new to)\b`)
	selfExpert = regexp.MustCompile(`(?i)\bi(?:'m| am) (?:a |an )?(?:expert|senior|experienced|professional)\b`)
)

// Signals reads one message, clause by clause: "I prefer answers in
// bullet points and I live in Lisbon" states a preference and a place,
// each kept apart.
func Signals(msg string) Signal {
	low := strings.ToLower(msg)
	s := Signal{Question: strings.Contains(msg, "?"), Words: len(strings.Fields(msg)), Preferences: map[string]string{}}
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
	// Interests come from what the user asks about, not from what they
	// state of themself: a fact to remember, once deleted, must not
	// linger in the profile, nor a preference or a place in it.
	var asked []string
	for _, c := range clauses(fact.ReplaceAllString(msg, " ")) {
		if m := statement.FindStringSubmatch(c); m != nil {
			s.statePreference(strings.TrimSpace(m[1] + m[2]))
			c = statement.ReplaceAllString(c, " ")
		}
		if m := location.FindStringSubmatch(c); m != nil {
			s.Preferences[PrefLocation] = strings.TrimSpace(m[1])
			c = location.ReplaceAllString(c, " ")
		}
		asked = append(asked, withoutVerbs(c))
	}
	s.Topics = Topics(strings.Join(asked, "\n"), 8)
	switch {
	case selfNovice.MatchString(msg):
		s.Preferences[PrefExpertise] = "novice"
	case selfExpert.MatchString(msg):
		s.Preferences[PrefExpertise] = "expert"
	}
	return s
}

// statePreference records a stated preference under its name: the
// style, the format, or else its first topic.
func (s *Signal) statePreference(text string) {
	if st := styleOf(text); st != "" {
		s.Preferences[PrefStyle] = st
		return
	}
	key := "preference"
	switch ts := Topics(text, 1); {
	case formatOf(text):
		key = PrefFormat
	case len(ts) > 0:
		key = ts[0]
	}
	s.Preferences[key] = text
}

// clauseJoint is where a sentence goes on with a new clause of the
// user's own: ", and I…", " but my…", ", please…".
var clauseJoint = regexp.MustCompile(`(?i)(?:\s*,\s*(?:(?:and|but|so)\s+)?|\s+(?:and|but|so|while)\s+)(?:also\s+)?(?:i|i'm|i've|i'd|my|we|please|always)\b`)

// sentenceRun is one sentence with the marks that end it.
var sentenceRun = regexp.MustCompile(`[^.!?;\n]+[.!?;\n]*`)

// clauses splits a message into its sentences, and each sentence where
// a new clause about the user begins; a clause keeps the marks that end
// it, so a question's last clause still ends with "?".
func clauses(msg string) []string {
	var out []string
	for _, sentence := range sentenceRun.FindAllString(msg, -1) {
		start := 0
		for _, m := range clauseJoint.FindAllStringIndex(sentence, -1) {
			// The clause starts at the joint's last word ("I", "my"…).
			word := m[1] - len(lastWord(sentence[m[0]:m[1]]))
			out = append(out, sentence[start:m[0]])
			start = word
		}
		out = append(out, sentence[start:])
	}
	return out
}

func lastWord(s string) string {
	f := strings.Fields(s)
	return f[len(f)-1]
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

// formatOf reports whether a stated preference is about the layout of
// answers.
func formatOf(text string) bool {
	low := strings.ToLower(text)
	return slices.ContainsFunc([]string{"bullet", "list", "table", "numbered", "markdown", "heading", "code block", "emoji"},
		func(w string) bool { return strings.Contains(low, w) })
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

// withoutVerbs blanks the words of text that name an action rather than
// what the user asks about. They are found by their place, since no list
// of words tells "paint it" from "the paint is dry": the first word of a
// clause that is an order ("buy wood; build the frame, then paint it"),
// that is, one not followed by an auxiliary ("postgres is slow") and not
// in a question; and the word after a subject ("how do I install
// postgres", "can you explain channels").
func withoutVerbs(text string) string {
	b := []byte(text)
	question := strings.Contains(text, "?")
	locs := wordRun.FindAllStringIndex(text, -1)
	start := true // the next word begins a clause
	for i, loc := range locs {
		if i > 0 && strings.ContainsAny(text[locs[i-1][1]:loc[0]], ".!?;:,\n") {
			start = true
		}
		w := strings.ToLower(text[loc[0]:loc[1]])
		var prev, next string
		if i > 0 {
			prev = strings.ToLower(text[locs[i-1][0]:locs[i-1][1]])
		}
		if i+1 < len(locs) && !strings.ContainsAny(text[loc[1]:locs[i+1][0]], ".!?;:,\n") {
			next = strings.ToLower(text[locs[i+1][0]:locs[i+1][1]])
		}
		content := !noTopic(w)
		verb := false
		switch {
		case w == "then" || (start && clauseLead[w]):
			start = true
			continue
		case start:
			verb = content && !question && !auxiliary[next]
		case subject[prev]:
			verb = content
		}
		start = false
		if verb {
			for j := loc[0]; j < loc[1]; j++ {
				b[j] = ' '
			}
		}
	}
	return string(b)
}

var wordRun = regexp.MustCompile(`[\p{L}\p{N}']+`)

// The grammar withoutVerbs reads a clause by: the words that may open it
// before its verb, the auxiliaries that show its first word is a subject,
// and the subjects a verb follows.
var (
	clauseLead = setOf("and also please first next finally so now")
	auxiliary  = setOf("is are was were be been has have had does do did can could will would should may might must")
	subject    = setOf("i we you they i'm i've we're we've you're let's")
)

func setOf(words string) map[string]bool {
	m := map[string]bool{}
	for _, w := range strings.Fields(words) {
		m[w] = true
	}
	return m
}

// chatter are the words of a conversation, beyond the English stop
// words, that say nothing about its topic ("please remember that I
// prefer…"): they are left out of topics too.
var chatter = setOf(`also always answer answers anything bit done every get give got help i'm im it's
		i've ive keep know let like lot make many mine much need one onto plan planning please prefer really
		remember show something step steps tell thank thanks thing things think two us use used using want way
		whose yes yet`)

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
