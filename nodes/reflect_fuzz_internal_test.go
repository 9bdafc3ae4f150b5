package nodes

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/tmc/langchaingo/llms"
)

// FuzzParseReflection feeds what a model answers the reflect node: an
// assess call's arguments (the first, when it makes several) or a JSON
// object in its text. A verdict it takes is satisfied, need_more or
// blocked, never direct_response (which only a tool's result decides),
// with the model's reasoning as it wrote it; anything else is no
// verdict, and the rule judges.
func FuzzParseReflection(f *testing.F) {
	f.Add(`{"assessment":"satisfied"}`, "", "")
	f.Add("", `{"assessment":" NEED_MORE ","reasoning":"search again"}`, `{"assessment":"blocked"}`)
	f.Add("```json\n{\"assessment\":\"blocked\",\"reasoning\":\"no access\"}\n```", "", "")
	f.Add(`{"assessment":"direct_response"}`, "", "")
	f.Add("I think we are done.", "", "")
	f.Add(`{"assessment":"satisfied"}`, `not json`, "")
	f.Add("", `{"assessment":7}`, "")
	f.Add("", `{"assessment":"satisfied","reasoning":"a\u0000b"}`, "")
	f.Add(" {\"assessment\":\"Satisfied\"} trailing", "", "")
	f.Fuzz(func(t *testing.T, text, assessArgs, secondArgs string) {
		var calls []llms.ToolCall
		if assessArgs != "" {
			calls = append(calls, call("decide", `{"assessment":"blocked"}`), call(assessToolName, assessArgs))
			if secondArgs != "" {
				calls = append(calls, call(assessToolName, secondArgs))
			}
		}
		r, ok := parseReflection(text, calls)
		if !ok {
			if r != (Reflection{}) {
				t.Fatalf("parseReflection(%q, %q) = %+v with no verdict", text, assessArgs, r)
			}
			return
		}
		switch r.Assessment {
		case AssessSatisfied, AssessNeedMore, AssessBlocked:
		default:
			t.Fatalf("parseReflection(%q, %q) = %+v", text, assessArgs, r)
		}
		// The verdict is the assess call's when there is one, else the text's.
		raw := []byte(assessArgs)
		if assessArgs == "" {
			raw, _ = jsonObject(strings.TrimSpace(text))
		}
		var said Reflection
		if err := json.Unmarshal(raw, &said); err != nil {
			t.Fatalf("parseReflection(%q, %q) = %+v from %q, which is not a reflection: %v", text, assessArgs, r, raw, err)
		}
		if !strings.EqualFold(strings.TrimSpace(string(said.Assessment)), string(r.Assessment)) || said.Reasoning != r.Reasoning {
			t.Fatalf("parseReflection(%q, %q) = %+v, but the model said %+v", text, assessArgs, r, said)
		}
	})
}
