package agui

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/trellis-ai/trellis/api/httperr"
)

// FuzzDecodeInput: any body either decodes into an input Trellis can
// run (ids set; a user's message with text, or resume entries that name
// their interrupts), or is a bad-input error (a 400), never a panic.
func FuzzDecodeInput(f *testing.F) {
	for _, seed := range []string{
		`{"threadId":"t","runId":"r","messages":[{"id":"1","role":"user","content":"hi"}]}`,
		`{"threadId":"t","runId":"r","protocolVersion":"1.0","state":{},"tools":[],"context":[],"forwardedProps":{},` +
			`"messages":[{"id":"1","role":"user","content":[{"type":"text","text":"a"},{"type":"text","text":"b"}]}]}`,
		`{"threadId":"t","runId":"r","messages":[{"id":"1","role":"user","content":"2+2"},` +
			`{"id":"2","role":"assistant","toolCalls":[{"id":"c","type":"function","function":{"name":"calculator","arguments":"{}"}}]}],` +
			`"resume":[{"interruptId":"a","status":"resolved","payload":{"approved":true,"editedArgs":{"expression":"3"}}}]}`,
		`{"threadId":"t","runId":"r","messages":[],"resume":[{"interruptId":"a","status":"cancelled"}]}`,
		`{"threadId":"t","runId":"r","messages":[{"id":"1","role":"user","content":[{"type":"image","url":"x"}]}]}`,
		`{"threadId":"","runId":"r","messages":[]}`,
		`{"threadId":"t","runId":"r","messages":[{"id":"1","role":"robot","content":"hi"}]}`,
		`{"threadId":"t"} {}`,
		`{"threadId":"t","runId":"r","context":[{"description":"page","value":"</client_context>"}],"messages":[{"id":"1","role":"user","content":"hi"}]}`,
		`{"threadId":"t","runId":"r","context":[{"description":"n","value":7}],"messages":[{"id":"1","role":"user","content":"hi"}]}`,
		`[]`, `null`, `{`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		in, err := decodeInput(bytes.NewReader(body))
		if err != nil {
			if !invalid(err) {
				t.Fatalf("error %v is not a bad input", err)
			}
			return
		}
		if strings.TrimSpace(in.ThreadID) == "" || strings.TrimSpace(in.RunID) == "" {
			t.Fatalf("decoded without ids: %+v", in)
		}
		if len(in.Resume) == 0 && in.message == "" {
			t.Fatalf("decoded without a message to run: %+v", in)
		}
		if c := in.contextObject(); c != nil && (c[0] != '{' || !json.Valid(c)) || c == nil && len(in.Context) > 0 {
			t.Fatalf("context %+v made the object %s", in.Context, c)
		}
		for _, e := range in.Resume {
			if e.InterruptID == "" || e.Status != "resolved" && e.Status != "cancelled" {
				t.Fatalf("resume entry %+v", e)
			}
			if p, err := decodeApproval(e.Payload); err == nil {
				if p.Approved == nil || p.EditedArgs != nil && (p.EditedArgs[0] != '{' || !json.Valid(p.EditedArgs)) {
					t.Fatalf("approval payload %+v", p)
				}
			} else if !invalid(err) {
				t.Fatalf("payload error %v is not a bad input", err)
			}
		}
	})
}

// invalid reports whether err is the 400 a client's mistake is answered
// with.
func invalid(err error) bool {
	var p *httperr.Problem
	return errors.As(err, &p) && p.Status == http.StatusBadRequest
}
