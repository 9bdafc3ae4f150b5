package llm_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/tmc/langchaingo/llms"

	"github.com/trellis-ai/trellis/llm"
)

func TestParseScriptRejectsMistakes(t *testing.T) {
	for _, tc := range []struct {
		name, script, want string
	}{
		{"not json", `{`, "unexpected EOF"},
		{"no steps", `{"steps":[]}`, "no steps"},
		{"unknown field", `{"steps":[{"reply":{"txt":"a"}}]}`, `unknown field "txt"`},
		{"empty reply", `{"steps":[{"match":{"node":"x"},"reply":{}}]}`, "empty reply"},
		{"json and text", `{"steps":[{"reply":{"text":"a","json":{}}}]}`, "excludes"},
		{"chunks differ", `{"steps":[{"reply":{"text":"ab","chunks":["a","c"]}}]}`, "differs"},
		{"bad kind", `{"steps":[{"reply":{"error":{"kind":"flaky"}}}]}`, "unknown error kind"},
		{"args not object", `{"steps":[{"reply":{"tool_calls":[{"name":"x","args":[1]}]}}]}`, "args must be a JSON object"},
		{"tool without name", `{"steps":[{"reply":{"tool_calls":[{"args":{}}]}}]}`, "empty name"},
		{"negative delay", `{"steps":[{"name":"slow","reply":{"text":"a","delay_ms":-1}}]}`, "step 0 (slow): reply.delay_ms is negative"},
		{"trailing data", `{"steps":[{"reply":{"text":"a"}}]} {}`, "trailing data"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := llm.ParseScript([]byte(tc.script))
			if !errors.Is(err, llm.ErrInvalidScript) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want ErrInvalidScript mentioning %q", err, tc.want)
			}
		})
	}
}

func TestLoadScriptExample(t *testing.T) {
	s, err := llm.LoadScript("testdata/calculator.json")
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Steps) != 4 || s.Steps[0].Reply.ToolCalls[0].Name != "calculator" {
		t.Fatalf("parsed %+v", s)
	}
	if _, err := llm.LoadScript("testdata/missing.json"); err == nil {
		t.Error("a missing file should fail")
	}
}

// FuzzParseScript checks that the parser never panics, that whatever it
// accepts survives a JSON round trip, and that the scripted model can replay
// it.
func FuzzParseScript(f *testing.F) {
	f.Add([]byte(`{"steps":[{"reply":{"text":"hello world"}}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := llm.ParseScript(data)
		if err != nil {
			if !errors.Is(err, llm.ErrInvalidScript) {
				t.Fatalf("error %v does not match ErrInvalidScript", err)
			}
			return
		}
		b, err := json.Marshal(s)
		if err != nil {
			t.Fatalf("marshal accepted script: %v", err)
		}
		if _, err := llm.ParseScript(b); err != nil {
			t.Fatalf("round trip of %s: %v", b, err)
		}
		for i := range s.Steps {
			s.Steps[i].Reply.DelayMS = 0
		}
		m := llm.NewScripted(s)
		ctx := llm.WithNode(context.Background(), "supervisor")
		for range 3 {
			resp, err := m.GenerateContent(ctx, []llms.MessageContent{human("hi")},
				llms.WithStreamingFunc(func(context.Context, []byte) error { return nil }))
			if err == nil && (resp == nil || len(resp.Choices) != 1) {
				t.Fatalf("success without one choice: %+v", resp)
			}
		}
	})
}
