package llm

import (
	"encoding/json"
	"regexp"
	"strings"
)

// The offline model's memory intents: "remember that …", opening the
// message or one of its sentences ("I prefer short answers. Remember
// that my boat is called Nautilus."), asks the remember tool to keep a
// fact; "what do you remember about me?" asks the
// recall tool. The cues are deliberately narrow, so an ordinary question
// that happens to say "remember" is not taken for either.
var (
	rememberCue = regexp.MustCompile(`(?i)(?:^|[.!?;]\s+)\s*(?:please\s+)?remember(?:\s+that|\s*:)\s+(.+?)[.!]?\s*$`)
	recallCue   = regexp.MustCompile(`(?i)\bwhat\s+(?:do|did)\s+you\s+(?:remember|know|recall)\s+(?:about|of)\s+me\b|\bwhat\s+have\s+you\s+remembered\b`)
)

// rememberRequest returns the fact a "remember that …" message asks to
// keep, or "".
func rememberRequest(q string) string {
	if m := rememberCue.FindStringSubmatch(q); m != nil {
		return strings.TrimSpace(m[1])
	}
	return ""
}

// recallQuestion reports whether the message asks what is remembered of
// the user.
func recallQuestion(q string) bool { return recallCue.MatchString(q) }

// describeMemory words the result of remember or recall.
func describeMemory(r toolResult, value string, isErr bool) string {
	if isErr {
		return "I couldn't reach my memory: " + value
	}
	if r.name == "remember" {
		fact, _ := r.args["fact"].(string)
		return "I'll remember that: " + fact
	}
	var res struct {
		Memories []struct {
			Summary string `json:"summary"`
		} `json:"memories"`
	}
	if json.Unmarshal([]byte(r.content), &res) != nil || len(res.Memories) == 0 {
		return "I don't remember anything about you yet."
	}
	lines := []string{"Here is what I remember about you:"}
	for _, m := range res.Memories {
		lines = append(lines, "- "+m.Summary)
	}
	return strings.Join(lines, "\n")
}
