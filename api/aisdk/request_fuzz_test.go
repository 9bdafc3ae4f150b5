package aisdk

import (
	"bytes"
	"errors"
	"net/http"
	"testing"

	"github.com/trellis-ai/trellis/api/httperr"
)

// chatSeeds are bodies as useChat sends them (a message, a
// regeneration, approval answers) and bodies it never sends.
var chatSeeds = []string{
	`{"id":"c","trigger":"submit-message","messages":[{"id":"m","role":"user","parts":[{"type":"text","text":"hi"}]}]}`,
	`{"id":"c","trigger":"regenerate-message","messages":[{"id":"m","role":"user","parts":[{"type":"text","text":"hi"}]}],"messageId":"a"}`,
	`{"id":"c","trigger":"submit-message","messageId":"a","messages":[{"id":"m","role":"user","parts":[{"type":"text","text":"2+2"}]},` +
		`{"id":"a","role":"assistant","parts":[{"type":"step-start"},{"type":"dynamic-tool","toolName":"calculator","toolCallId":"k",` +
		`"state":"approval-responded","input":{"expression":"2+2"},"approval":{"id":"ap","approved":false,"reason":"no"}}]}]}`,
	`{"id":"c","messages":[{"id":"a","role":"assistant","parts":[{"type":"text","text":"hi"}]}]}`,
	`{"id":"c","messages":[{"id":"m","role":"user","parts":[{"type":"file","url":"x"}]}],"approvals":false}`,
	`{"id":"c","messages":[],"trigger":"submit-message"}`,
	`{"messages":[{"id":"m","role":"user","parts":[{"type":"text","text":"hi"}]}]}`,
	`{"id":"c","approvals":"yes","messages":[]}`,
	`{} {}`, `null`, `{`,
}

// FuzzDecodeRequest: any body either decodes into a turn Trellis can
// take (a chat id, and a user's message with text or answers naming
// their approvals and calls) or is a bad-request error (a 400), never a
// panic.
func FuzzDecodeRequest(f *testing.F) {
	for _, seed := range chatSeeds {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		tn, err := decodeRequest(bytes.NewReader(body))
		if err != nil {
			if !invalid(err) {
				t.Fatalf("error %v is not a bad request", err)
			}
			return
		}
		if tn.chat == "" || (tn.message == "") == (len(tn.answers) == 0) {
			t.Fatalf("decoded %+v: want a chat and either a message or answers", tn)
		}
		for _, a := range tn.answers {
			if a.approvalID == "" || a.toolCallID == "" {
				t.Fatalf("answer %+v", a)
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
