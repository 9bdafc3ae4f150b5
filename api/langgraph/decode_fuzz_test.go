package langgraph

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/trellis-ai/trellis/api/httperr"
)

// runSeeds are run bodies as the SDK and agent-chat-ui send them, and
// bodies they never send.
var runSeeds = []string{
	`{"assistant_id":"agent","input":{"messages":[{"type":"human","content":"hi"}]},"stream_mode":["values","messages-tuple"]}`,
	`{"input":{"messages":[{"role":"user","content":[{"type":"text","text":"hi"}]}]},"stream_mode":"updates","on_disconnect":"cancel"}`,
	`{"input":{},"command":{"resume":{"decisions":[{"type":"approve"},{"type":"reject","message":"no"}]}}}`,
	`{"command":{"resume":{"decisions":[{"type":"edit","edited_action":{"name":"calculator","args":{"expression":"1+1"}}}]}}}`,
	`{"command":{"resume":"the answer"}}`,
	`{"command":{"goto":"x"}}`,
	`{"input":null,"stream_mode":7}`,
	`{"input":{"messages":[{"type":"ai","content":"x"}]}}`,
	`{"metadata":[1],"input":{"messages":[{"type":"human","content":"hi"}]}}`,
	`{"assistant_id":"agent","context":{"tenant":"acme","n":[1, 2]},"input":{"messages":[{"type":"human","content":"hi"}]}}`,
	`{"context":[1],"input":{"messages":[{"type":"human","content":"hi"}]}}`,
	`{"context":null,"input":{"messages":[{"type":"human","content":"hi"}]}}`,
	`[]`, `null`, ``, `{"input":{"messages":"x"}}`, "{\"input\":\"\xff\"}",
}

// FuzzParseRun feeds run bodies to the decoder: it never panics, every
// refusal is a client error (4xx, which the SDK does not retry), and
// what it accepts is a run that can start or resume.
func FuzzParseRun(f *testing.F) {
	for _, seed := range runSeeds {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		spec, err := parseRun(body)
		if err != nil {
			var e *httperr.Problem
			if !errors.As(err, &e) || e.Status < 400 || e.Status > 499 {
				t.Fatalf("parseRun(%q) = %v: want a 4xx *httperr.Problem", body, err)
			}
			return
		}
		if spec.modes == 0 {
			t.Fatalf("parseRun(%q): no stream mode", body)
		}
		if c := spec.context; c != nil {
			var compact bytes.Buffer
			if c[0] != '{' || json.Compact(&compact, c) != nil || !bytes.Equal(compact.Bytes(), c) {
				t.Fatalf("parseRun(%q): context %s is not a compact object", body, c)
			}
		}
		switch {
		case spec.answers != nil:
			if !spec.resuming || len(spec.answers) == 0 {
				t.Fatalf("parseRun(%q): answers without a resume: %+v", body, spec)
			}
		case strings.TrimSpace(spec.message) == "":
			t.Fatalf("parseRun(%q): accepted with neither a message nor decisions", body)
		}
	})
}
