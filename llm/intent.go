package llm

import (
	"regexp"
	"strings"
)

// This file holds the offline model's deterministic reading of a question:
// arithmetic, time and capability intents.

var (
	mathWords = []struct {
		re *regexp.Regexp
		to string
	}{
		{regexp.MustCompile(`(?i)(\d(?:[\d.]*\d)?)\s*(?:%|percent)\s+of\s+`), "$1/100*"},
		{regexp.MustCompile(`(?i)\bmultiplied\s+by\b`), "*"},
		{regexp.MustCompile(`(?i)\bdivided\s+by\b`), "/"},
		{regexp.MustCompile(`(?i)\bto\s+the\s+power\s+of\b`), "^"},
		{regexp.MustCompile(`(?i)\bsquare\s+root\s+of\s+(\d+(?:\.\d+)?)`), "sqrt($1)"},
		{regexp.MustCompile(`(?i)\bsquared\b`), "^2"},
		{regexp.MustCompile(`(?i)\bcubed\b`), "^3"},
		{regexp.MustCompile(`(?i)\bplus\b`), "+"},
		{regexp.MustCompile(`(?i)\bminus\b`), "-"},
		{regexp.MustCompile(`(?i)\btimes\b`), "*"},
		{regexp.MustCompile(`(\d)\s*[x×]\s*(\d)`), "$1*$2"},
		{regexp.MustCompile(`÷`), "/"},
	}
	// mathSpan matches a run of expression tokens: numbers, operators,
	// parentheses, commas, spaces, and known functions and constants.
	mathSpan = regexp.MustCompile(`(?i)(?:\b(?:sqrt|cbrt|sin|cos|tan|asin|acos|atan|log|log2|log10|ln|exp|abs|pow|round|floor|ceil|min|max)\b|\bpi\b|\d+(?:\.\d+)?|[-+*/^%(),]|\s)+`)
	mathFunc = regexp.MustCompile(`(?i)\b(?:sqrt|cbrt|sin|cos|tan|asin|acos|atan|log|log2|log10|ln|exp|abs|pow|round|floor|ceil|min|max)\s*\(`)
	mathOp   = regexp.MustCompile(`\d\s*[-+*/^%]\s*[-(\d.a-z]|\)\s*[-+*/^]|[-+*/^]\s*\(`)
	mathCue  = regexp.MustCompile(`(?i)\b(?:calculate|compute|evaluate|solve|what(?:'s| is)|how much is|math)\b`)
)

// arithmeticExpr extracts an arithmetic expression from a question ("what
// is 2+2*3?" → "2+2*3", "calculate sqrt(16)" → "sqrt(16)"), or "".
func arithmeticExpr(q string) string {
	if !mayHoldArithmetic(q) {
		return ""
	}
	return findArithmetic(q)
}

// mayHoldArithmetic is false for a question in which findArithmetic
// finds nothing, and cheap: an expression holds a digit or pi, and the
// rewrites bring in no digit but q's own and squared's and cubed's
// exponents.
func mayHoldArithmetic(q string) bool {
	return strings.ContainsAny(q, "0123456789") || mentions(q, "pi", "quared", "cubed")
}

// findArithmetic is arithmeticExpr without its cheap test.
func findArithmetic(q string) string {
	s := q
	for _, w := range mathWords {
		s = w.re.ReplaceAllString(s, w.to)
	}
	best := ""
	for _, m := range mathSpan.FindAllString(s, -1) {
		m = strings.Trim(strings.TrimSpace(m), ",")
		m = strings.TrimSpace(m)
		if !strings.ContainsAny(m, "0123456789") && !strings.Contains(strings.ToLower(m), "pi") {
			continue
		}
		if !mathOp.MatchString(m) && !mathFunc.MatchString(m) {
			continue
		}
		if !balanced(m) {
			continue
		}
		if len(m) > len(best) {
			best = m
		}
	}
	if best == "" {
		return ""
	}
	// A bare binary "a - b" inside prose such as dates ("2024-05-01") is not
	// a question; demand a cue word unless the expression is the whole text.
	trimmed := strings.Trim(strings.TrimSpace(s), "?!. ")
	if best != trimmed && !mathCue.MatchString(q) && !mathFunc.MatchString(best) {
		return ""
	}
	return best
}

func balanced(s string) bool {
	depth := 0
	for _, r := range s {
		switch r {
		case '(':
			depth++
		case ')':
			depth--
			if depth < 0 {
				return false
			}
		}
	}
	return depth == 0
}

var (
	timeCue  = regexp.MustCompile(`(?i)\b(?:what(?:'s| is)?\s+(?:the\s+)?(?:current\s+|local\s+)?(?:time|date|day)|what\s+time|current\s+(?:time|date)|time\s+(?:is\s+it|now|in|at)|(?:today'?s?|the)\s+date|date\s+today|what\s+day|day\s+is\s+(?:it|today)|local\s+time|time\s+zone)\b`)
	ianaZone = regexp.MustCompile(`\b(?:Africa|America|Antarctica|Asia|Atlantic|Australia|Europe|Indian|Pacific|Etc)/[A-Za-z_]+(?:/[A-Za-z_]+)?\b`)
)

// cityZones maps place names (lower case) to IANA zones. Longer names are
// checked first so "new york" wins over "york".
var cityZones = []struct{ name, zone string }{
	{"los angeles", "America/Los_Angeles"}, {"san francisco", "America/Los_Angeles"},
	{"new york", "America/New_York"}, {"mexico city", "America/Mexico_City"},
	{"sao paulo", "America/Sao_Paulo"}, {"são paulo", "America/Sao_Paulo"},
	{"buenos aires", "America/Argentina/Buenos_Aires"}, {"hong kong", "Asia/Hong_Kong"},
	{"new delhi", "Asia/Kolkata"}, {"cape town", "Africa/Johannesburg"},
	{"tokyo", "Asia/Tokyo"}, {"osaka", "Asia/Tokyo"}, {"japan", "Asia/Tokyo"},
	{"london", "Europe/London"}, {"paris", "Europe/Paris"}, {"berlin", "Europe/Berlin"},
	{"madrid", "Europe/Madrid"}, {"rome", "Europe/Rome"}, {"amsterdam", "Europe/Amsterdam"},
	{"zurich", "Europe/Zurich"}, {"stockholm", "Europe/Stockholm"}, {"moscow", "Europe/Moscow"},
	{"istanbul", "Europe/Istanbul"}, {"dubai", "Asia/Dubai"}, {"mumbai", "Asia/Kolkata"},
	{"delhi", "Asia/Kolkata"}, {"india", "Asia/Kolkata"}, {"singapore", "Asia/Singapore"},
	{"beijing", "Asia/Shanghai"}, {"shanghai", "Asia/Shanghai"}, {"china", "Asia/Shanghai"},
	{"seoul", "Asia/Seoul"}, {"sydney", "Australia/Sydney"}, {"melbourne", "Australia/Melbourne"},
	{"auckland", "Pacific/Auckland"}, {"chicago", "America/Chicago"}, {"denver", "America/Denver"},
	{"toronto", "America/Toronto"}, {"vancouver", "America/Vancouver"}, {"seattle", "America/Los_Angeles"},
	{"boston", "America/New_York"}, {"cairo", "Africa/Cairo"}, {"lagos", "Africa/Lagos"},
	{"nairobi", "Africa/Nairobi"}, {"johannesburg", "Africa/Johannesburg"}, {"utc", "UTC"}, {"gmt", "UTC"},
}

var wordBoundary = regexp.MustCompile(`[^\p{L}]+`)

// timeQuestion reports whether q asks for the time or date, and the IANA
// zone it names, if any.
func timeQuestion(q string) (asks bool, zone string) {
	if !mayAskTime(q) || !timeCue.MatchString(q) {
		return false, ""
	}
	if z := ianaZone.FindString(q); z != "" {
		return true, z
	}
	padded := " " + wordBoundary.ReplaceAllString(strings.ToLower(q), " ") + " "
	for _, c := range cityZones {
		if strings.Contains(padded, " "+c.name+" ") {
			return true, c.zone
		}
	}
	return true, ""
}

// mayAskTime is false for a question timeCue does not match, and cheap:
// each of its phrases says one of these words.
func mayAskTime(q string) bool { return mentions(q, "time", "date", "day") }

var (
	toolsCue = regexp.MustCompile(`(?i)\b(?:what\s+(?:can|could)\s+you\s+do|what\s+(?:tools|capabilities|abilities)|which\s+tools|list\s+(?:your\s+|the\s+|all\s+)?tools|your\s+(?:tools|capabilities|abilities)|what\s+are\s+you\s+able|help\s+me\s+with\s+what|what\s+do\s+you\s+support)\b`)
	selfCue  = regexp.MustCompile(`(?i)\b(?:who\s+are\s+you|what\s+are\s+you|about\s+yourself|your\s+name|which\s+model|what\s+model|are\s+you\s+(?:an?\s+)?(?:ai|bot|llm|model))\b`)
)

// capabilityQuestion returns "list_tools" for "what can you do"-style
// questions, "self_info" for "who are you"-style ones, or "".
func capabilityQuestion(q string) string {
	switch {
	case toolsCue.MatchString(q):
		return "list_tools"
	case selfCue.MatchString(q):
		return "self_info"
	}
	return ""
}

// mentions reports whether q contains one of words, ignoring ASCII case:
// a cheap test that saves running a regular expression each of whose
// matches contains one. The words are lower-case ASCII letters without
// k or s, which (?i) also matches as the Kelvin sign and the long s.
func mentions(q string, words ...string) bool {
	for _, w := range words {
		for i := 0; i+len(w) <= len(q); i++ {
			if equalFoldASCII(q[i:i+len(w)], w) {
				return true
			}
		}
	}
	return false
}

// equalFoldASCII reports whether s is lower, a word of lower-case ASCII
// letters, in any ASCII case.
func equalFoldASCII(s, lower string) bool {
	for i := range len(lower) {
		if s[i]|0x20 != lower[i] {
			return false
		}
	}
	return true
}
