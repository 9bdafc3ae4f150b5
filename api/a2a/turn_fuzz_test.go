package a2a

import (
	"encoding/json"
	"errors"
	"net/http"
	"testing"
)

// FuzzDecodeTurn: any SendMessage params either decode into a user's
// message (from the user) or are a client error (a
// 4xx of InvalidParams or ContentTypeNotSupported), never a panic; and
// a decision read from a turn is approve, reject or InvalidParams.
func FuzzDecodeTurn(f *testing.F) {
	for _, seed := range []string{
		`{"message":{"messageId":"m","role":"ROLE_USER","parts":[{"text":"hi"}]}}`,
		`{"message":{"messageId":"m","role":"ROLE_USER","contextId":"c","taskId":"t","parts":[{"text":"approve"}]},"configuration":{"historyLength":0}}`,
		`{"message":{"messageId":"m","role":"ROLE_USER","parts":[{"data":{"decision":"reject","reason":"no"}}]}}`,
		`{"message":{"messageId":"m","role":"ROLE_USER","parts":[{"url":"https://x/a.pdf"}]}}`,
		`{"message":{"messageId":"m","role":"ROLE_AGENT","parts":[{"text":"hi"}]}}`,
		`{"message":{"role":"ROLE_USER","parts":[{}]}}`,
		`{"message":{"role":"ROLE_USER","parts":[]},"configuration":{"historyLength":-1}}`,
		`{"message":{"role":"ROLE_USER","parts":[{"data":null}]}}`,
		`{}`, `null`, `[]`, `{"message":7}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, params []byte) {
		tn, err := decodeTurn(params)
		if err != nil {
			var re *rpcError
			if !errors.As(err, &re) || re.Status != http.StatusBadRequest || re.Code != codeInvalidParams && re.Code != codeContentType {
				t.Fatalf("error %v is not a client error", err)
			}
			return
		}
		var req sendMessageRequest
		if json.Unmarshal(params, &req) != nil || req.Message == nil || req.Message.Role != roleUser || tn.history < -1 {
			t.Fatalf("params %q decoded into %+v", params, tn)
		}
		if _, _, err := tn.decision(); err != nil {
			var re *rpcError
			if !errors.As(err, &re) || re.Code != codeInvalidParams {
				t.Fatalf("decision error %v is not InvalidParams", err)
			}
		}
	})
}
