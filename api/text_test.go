package api_test

import (
	"encoding/base64"
	"fmt"
	"maps"
	"net/http"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/trellis-ai/trellis/api/apitest"
	"github.com/trellis-ai/trellis/store"
)

// hostileCase is a request holding text the store cannot keep, and the
// answer every backend must give it.
type hostileCase struct {
	name, method, path string
	body               string // JSON, sent as it is: raw bytes stay raw
	headers            []string
	status             int
	code               string
}

// hostileCases are requests naming ids that cannot exist, or carrying
// NUL characters or bytes that are not UTF-8, at every endpoint that takes
// outside text: path ids, query parameters, headers and JSON bodies.
func hostileCases(conv, runID, approval, elicitation string) []hostileCase {
	var cases []hostileCase
	add := func(name, method, path, body string, status int, code string, headers ...string) {
		cases = append(cases, hostileCase{name, method, path, body, headers, status, code})
	}
	// In URLs, percent-encoded.
	for _, bad := range []struct{ name, text string }{
		{"NUL", "%00"},
		{"NUL inside", "0190e3a4%00x"},
		{"0xFF", "%FF"},
		{"0xff lower case", "%ff"},
		{"truncated UTF-8", "caf%C3"},
	} {
		n, x := bad.name, bad.text
		add("get conversation, "+n, "GET", "/api/v1/conversations/"+x, "", 404, "not_found")
		add("delete conversation, "+n, "DELETE", "/api/v1/conversations/"+x, "", 404, "not_found")
		add("stream, conversation "+n, "GET", "/api/v1/conversations/"+x+"/stream", "", 404, "not_found")
		add("stream, run_id "+n, "GET", "/api/v1/conversations/"+conv+"/stream?run_id="+x, "", 404, "not_found")
		add("stream, after "+n, "GET", "/api/v1/conversations/"+conv+"/stream?after="+x, "", 400, "invalid_parameter")
		add("cancel, "+n, "POST", "/api/v1/conversations/"+x+"/cancel", "", 404, "not_found")
		add("edit, conversation "+n, "POST", "/api/v1/conversations/"+x+"/runs/"+runID+"/edit", `{"message": "x"}`, 404, "not_found")
		add("edit, run "+n, "POST", "/api/v1/conversations/"+conv+"/runs/"+x+"/edit", `{"message": "x"}`, 404, "not_found")
		add("list, cursor "+n, "GET", "/api/v1/conversations?cursor="+x, "", 400, "invalid_request")
		add("list, limit "+n, "GET", "/api/v1/conversations?limit="+x, "", 400, "invalid_parameter")
		add("approve, "+n, "POST", "/api/v1/approvals/"+x, `{"decision": "approve"}`, 404, "not_found")
		add("pending approvals, "+n, "GET", "/api/v1/approvals/pending?conversation_id="+x, "", 404, "not_found")
		add("pending elicitations, "+n, "GET", "/api/v1/elicitation/pending?conversation_id="+x, "", 404, "not_found")
		add("pending clarifications, "+n, "GET", "/api/v1/clarifications/pending?conversation_id="+x, "", 404, "not_found")
		add("cancel elicitation, "+n, "DELETE", "/api/v1/elicitation/"+x, "", 404, "not_found")
	}
	// A cursor of the right shape naming an id that cannot exist.
	for _, id := range []string{"\x00", "a\xffb"} {
		cursor := base64.RawURLEncoding.EncodeToString(fmt.Appendf(nil, "v1.%d.%s", time.Now().UnixMicro(), id))
		add(fmt.Sprintf("list, cursor naming %q", id), "GET", "/api/v1/conversations?cursor="+cursor, "", 400, "invalid_request")
	}
	add("stream, Last-Event-ID 0xff", "GET", "/api/v1/conversations/"+conv+"/stream", "", 400, "invalid_parameter", "Last-Event-ID", "\xff")

	// In JSON bodies: an escaped NUL, and raw bytes that are not UTF-8.
	long := strings.Repeat("a long message, past its title. ", 4)
	for _, bad := range []struct{ name, text string }{
		{"NUL", `\u0000`},
		{"NUL inside", `hi\u0000there`},
		{"0xff", "\xff"},
		{"truncated UTF-8", "caf\xc3"},
		{"lone continuation byte", "\x80"},
	} {
		n, x := bad.name, bad.text
		for _, path := range []string{"/api/v1/chat", "/api/v1/chat/sync"} {
			add(path+", message "+n, "POST", path, `{"message": "hi `+x+`"}`, 400, "invalid_text")
			add(path+", long message "+n, "POST", path, `{"message": "`+long+x+`"}`, 400, "invalid_text")
			add(path+", conversation_id "+n, "POST", path, `{"message": "hi", "conversation_id": "`+x+`"}`, 400, "invalid_text")
			add(path+", conversation_id of hers "+n, "POST", path, `{"message": "hi", "conversation_id": "`+conv+x+`"}`, 400, "invalid_text")
		}
		add("chat, model "+n, "POST", "/api/v1/chat", `{"message": "hi", "model": "`+x+`"}`, 400, "invalid_text")
		add("chat, document id "+n, "POST", "/api/v1/chat", `{"message": "hi", "document_ids": ["`+x+`"]}`, 400, "invalid_text")
		add("chat, context value "+n, "POST", "/api/v1/chat", `{"message": "hi", "context": {"a": ["`+x+`"]}}`, 400, "invalid_text")
		add("chat, context key "+n, "POST", "/api/v1/chat", `{"message": "hi", "context": {"`+x+`": 1}}`, 400, "invalid_text")
		add("edit, message "+n, "POST", "/api/v1/conversations/"+conv+"/runs/"+runID+"/edit", `{"message": "`+x+`"}`, 400, "invalid_text")
		add("approve, decision "+n, "POST", "/api/v1/approvals/"+approval, `{"decision": "`+x+`"}`, 400, "invalid_text")
		add("approve, reason "+n, "POST", "/api/v1/approvals/"+approval, `{"decision": "reject", "reason": "no `+x+`"}`, 400, "invalid_text")
		add("approve, edited args "+n, "POST", "/api/v1/approvals/"+approval, `{"decision": "edit", "args": {"path": "/tmp/`+x+`"}}`, 400, "invalid_text")
		add("elicitation, id "+n, "POST", "/api/v1/elicitation/respond", `{"elicitation_id": "`+x+`", "action": "decline"}`, 400, "invalid_text")
		add("elicitation, content "+n, "POST", "/api/v1/elicitation/respond",
			`{"elicitation_id": "`+elicitation+`", "action": "accept", "content": {"name": "`+x+`"}}`, 400, "invalid_text")
	}
	return cases
}

// TestHostileTextAnswersAlike: every request holding text the store
// cannot keep gets the same 4xx on SQLite and PostgreSQL, never a 500,
// and changes nothing.
func TestHostileTextAnswersAlike(t *testing.T) {
	answers := map[backend]map[string]string{}
	for _, b := range backends {
		t.Run(string(b), func(t *testing.T) {
			e := newEnv(t, envOptions{backend: b, configure: func(c *apitest.Config) {
				c.Runs.InterruptAfter = -1 // park approvals at once
				c.Runs.ElicitTimeout = time.Hour
			}})
			done := e.chat(map[string]any{"message": "hello"})
			done.all()
			conv, runID := done.header("X-Conversation-ID"), done.header("X-Run-ID")
			parked := e.chat(map[string]any{"message": "please delete it"})
			approval := parked.until("approval.required").str("approval_id")
			parked.all()
			// A run waiting, with its stream open, for the user's name.
			asking := e.chat(map[string]any{"message": "ask me my name"})
			elicitation := asking.until("elicitation.request").str("elicitation_id")

			got := map[string]string{}
			before := e.snapshot()
			for _, tc := range hostileCases(conv, runID, approval, elicitation) {
				t.Run(tc.name, func(t *testing.T) {
					var body any
					if tc.body != "" {
						body = []byte(tc.body)
					}
					status, b := e.do(tc.method, tc.path, body, tc.headers...)
					if status >= 500 {
						t.Fatalf("%d: %s", status, b)
					}
					wantError(t, status, b, tc.status)
					if code := jsonOf[apiError](t, b).Error.Code; code != tc.code {
						t.Errorf("code %q, want %q: %s", code, tc.code, b)
					}
					got[tc.name] = strconv.Itoa(status) + " " + jsonOf[apiError](t, b).Error.Code
					if after := e.snapshot(); after != before {
						t.Fatalf("the store changed:\nbefore\n%s\nafter\n%s", before, after)
					}
				})
			}
			answers[b] = got
			// The run still waits, and takes a good answer.
			if status, b := e.do("POST", "/api/v1/elicitation/respond", map[string]any{"elicitation_id": elicitation, "action": "accept",
				"content": map[string]any{"name": "Ada"}}); status != 200 {
				t.Fatalf("answering the elicitation: %d %s", status, b)
			}
			if evs := asking.all(); evs[len(evs)-1].Type != "run.completed" {
				t.Errorf("the asking run: %v", types(evs))
			}
		})
	}
	if len(answers) == len(backends) && !reflect.DeepEqual(answers[sqliteBackend], answers[postgresBackend]) {
		for _, name := range slices.Sorted(maps.Keys(answers[sqliteBackend])) {
			if s, p := answers[sqliteBackend][name], answers[postgresBackend][name]; s != p {
				t.Errorf("%s: SQLite answers %s, PostgreSQL %s", name, s, p)
			}
		}
	}
}

// TestUnusualTextKeptAlike: text the store can keep, however unusual
// (control characters, astral runes, an escaped lone surrogate, which
// JSON decoding makes U+FFFD, a backslash-u written out), is accepted and
// kept the same on both backends.
func TestUnusualTextKeptAlike(t *testing.T) {
	const sent = `{"message": "ctrl \u0001\t é ✓ 😀 \ud83d\ude00 lone \ud800 written \\u0000", "context": {"k": "\u001f"}}`
	const want = "ctrl \x01\t é ✓ 😀 😀 lone \ufffd written \\u0000"
	// The title is the message's gist, on one line.
	const wantTitle = "Ctrl é ✓ 😀 😀 lone \ufffd written \\u0000"
	kept := map[backend]string{}
	for _, b := range backends {
		t.Run(string(b), func(t *testing.T) {
			e := newEnv(t, envOptions{backend: b})
			status, body := e.do("POST", "/api/v1/chat/sync", []byte(sent))
			if status != http.StatusOK {
				t.Fatalf("%d %s", status, body)
			}
			res := jsonOf[struct {
				ConversationID string `json:"conversation_id"`
				Status         string
			}](t, body)
			status, body = e.do("GET", "/api/v1/conversations/"+res.ConversationID, nil)
			c := jsonOf[struct {
				Title    string
				Messages []store.Message
			}](t, body)
			if status != 200 || res.Status != "completed" || len(c.Messages) == 0 || c.Messages[0].Content != want || c.Title != wantTitle {
				t.Fatalf("run %s; conversation %d %s\nwant the message %q and title %q", res.Status, status, body, want, wantTitle)
			}
			kept[b] = c.Title + "\n" + c.Messages[0].Content
		})
	}
	if len(kept) == len(backends) && kept[sqliteBackend] != kept[postgresBackend] {
		t.Errorf("SQLite keeps %q, PostgreSQL %q", kept[sqliteBackend], kept[postgresBackend])
	}
}

// TestModelTextKeptAlike: an answer holding NUL characters (a model
// echoing a binary file) completes its run on both backends, kept with
// each NUL made U+FFFD.
func TestModelTextKeptAlike(t *testing.T) {
	for _, b := range backends {
		t.Run(string(b), func(t *testing.T) {
			e := newEnv(t, envOptions{backend: b})
			status, body := e.do("POST", "/api/v1/chat/sync", map[string]any{"message": "what is in the binary file?"})
			res := jsonOf[struct {
				ConversationID string `json:"conversation_id"`
				Status         string
				Response       string
			}](t, body)
			if status != 200 || res.Status != "completed" || res.Response != "it holds \x00 and \x00." {
				t.Fatalf("%d %s; want the run completed with the answer as the model wrote it", status, body)
			}
			_, body = e.do("GET", "/api/v1/conversations/"+res.ConversationID, nil)
			c := jsonOf[struct{ Messages []store.Message }](t, body)
			if len(c.Messages) != 2 || c.Messages[1].Content != "it holds \ufffd and \ufffd." {
				t.Errorf("messages %+v; want the answer kept with U+FFFD for each NUL", c.Messages)
			}
		})
	}
}

// pathParam is a route's path parameter, as chi writes it.
var pathParam = regexp.MustCompile(`\{[a-z_]+\}`)

// TestEveryPathIDNoRecordHasAnswersAlike walks every route the server
// serves and names, in each of its path parameters in turn, an id no
// record can have (a NUL, a byte that is not UTF-8), the others naming
// records that exist. No route answers 500, nothing changes, and SQLite
// and PostgreSQL answer each alike. hostileCases says what each answer
// is where it matters; this leaves no route out.
func TestEveryPathIDNoRecordHasAnswersAlike(t *testing.T) {
	answers := map[backend]map[string]string{}
	for _, b := range backends {
		t.Run(string(b), func(t *testing.T) {
			e, _ := filesEnv(t, b, nil, 0)
			runID, conv, _ := e.turn("", "hello")
			status, res := e.do("POST", "/api/v1/projects", map[string]any{"name": "p"})
			if status != http.StatusCreated {
				t.Fatalf("project: %d %s", status, res)
			}
			project := jsonOf[projectReply](t, res).ID
			// real names a record that exists for each parameter a route
			// has beside the one under test.
			real := func(route, param string) string {
				switch {
				case param == "run_id":
					return runID
				case param == "scope":
					return "conversation"
				case strings.HasPrefix(route, "/api/v1/projects/"):
					return project
				}
				return conv
			}
			routes, ok := e.srv.Handler().(chi.Routes)
			if !ok {
				t.Fatalf("the handler is a %T, not chi's routes", e.srv.Handler())
			}
			got := map[string]string{}
			before := e.snapshot()
			err := chi.Walk(routes, func(method, route string, _ http.Handler, _ ...func(http.Handler) http.Handler) error {
				params := pathParam.FindAllString(route, -1)
				for i := range params {
					for _, bad := range []string{"a%00b", "%FF"} {
						n := -1
						path := pathParam.ReplaceAllStringFunc(route, func(p string) string {
							if n++; n == i {
								return bad
							}
							return real(route, p[1:len(p)-1])
						})
						var body any
						if method == http.MethodPost || method == http.MethodPut || method == http.MethodPatch {
							body = []byte(`{}`)
						}
						name := method + " " + route + " " + params[i] + "=" + bad
						status, res := e.do(method, path, body)
						if status >= 500 {
							t.Errorf("%s: %d %s", name, status, res)
						}
						got[name] = strconv.Itoa(status)
					}
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			if len(got) == 0 {
				t.Fatal("no route with a path parameter was walked")
			}
			if after := e.snapshot(); after != before {
				t.Errorf("the store changed:\nbefore\n%s\nafter\n%s", before, after)
			}
			answers[b] = got
		})
	}
	if len(answers) == len(backends) {
		for _, name := range slices.Sorted(maps.Keys(answers[sqliteBackend])) {
			if s, p := answers[sqliteBackend][name], answers[postgresBackend][name]; s != p {
				t.Errorf("%s: SQLite answers %s, PostgreSQL %s", name, s, p)
			}
		}
	}
}
