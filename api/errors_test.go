package api_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/trellis-ai/trellis/api/apitest"
	"github.com/trellis-ai/trellis/events"
	"github.com/trellis-ai/trellis/runs"
	"github.com/trellis-ai/trellis/store"
)

// snapshot is everything the store holds for the test users, to show a
// bad request changed nothing.
func (e *env) snapshot() string {
	e.t.Helper()
	ctx := e.t.Context()
	var b strings.Builder
	for _, user := range []string{"alice", "bob"} {
		page, err := e.store.ListConversations(ctx, user, store.Page{Limit: store.MaxLimit})
		if err != nil {
			e.t.Fatal(err)
		}
		for _, c := range page.Conversations {
			fmt.Fprintf(&b, "%s %s %s %s\n", user, c.ID, c.Status, c.UpdatedAt)
			runs, err := e.store.ListRuns(ctx, user, c.ID, store.RunQuery{Limit: store.MaxRunLimit})
			if err != nil {
				e.t.Fatal(err)
			}
			for _, r := range runs.Runs {
				fmt.Fprintf(&b, "  run %s %s %d events superseded=%v\n", r.ID, r.Status, r.LastSeq, r.Superseded)
			}
			msgs := runs.Messages
			fmt.Fprintf(&b, "  %d messages\n", len(msgs))
		}
		as, _ := e.store.PendingHumanRequests(ctx, events.PendingApproval, user, "", store.Page{Limit: store.MaxLimit})
		es, _ := e.store.PendingHumanRequests(ctx, events.PendingElicitation, user, "", store.Page{Limit: store.MaxLimit})
		fmt.Fprintf(&b, "%s: %d approvals, %d elicitations pending\n", user, len(as.Requests), len(es.Requests))
	}
	return b.String()
}

func TestBadRequestsChangeNothing(t *testing.T) {
	e := newEnv(t, envOptions{configure: func(c *apitest.Config) {
		c.API.Limits.MaxBodyBytes = 4096
		c.Runs.MaxMessageRunes = 100
		c.Runs.InterruptAfter = -1 // park approvals at once
	}})
	// Alice has a finished conversation and one parked on an approval;
	// Bob has one of his own.
	done := e.chat(map[string]any{"message": "hello"})
	done.all()
	aliceConv, aliceRun := done.header("X-Conversation-ID"), done.header("X-Run-ID")
	parked := e.chat(map[string]any{"message": "please delete it"})
	approval := parked.until("approval.required").str("approval_id")
	parked.all()
	parkedConv := parked.header("X-Conversation-ID")
	bob := e.open(e.request("POST", "/api/v1/chat", map[string]any{"message": "hello"}, bobKey))
	bob.all()
	bobConv, bobRun := bob.header("X-Conversation-ID"), bob.header("X-Run-ID")

	json := "application/json"
	big := `{"message": "` + strings.Repeat("x", 5000) + `"}`
	long := `{"message": "` + strings.Repeat("é", 101) + `"}`
	cases := []struct {
		name, method, path, body string
		headers                  []string // pairs; Content-Type defaults to JSON when there is a body
		key                      string   // default alice's; "-" sends none
		status                   int
	}{
		{"chat: malformed JSON", "POST", "/api/v1/chat", `{"message":`, nil, "", 400},
		{"chat: unknown field", "POST", "/api/v1/chat", `{"message": "hi", "mesage": "typo"}`, nil, "", 400},
		{"chat: no message", "POST", "/api/v1/chat", `{}`, nil, "", 400},
		{"chat: empty message", "POST", "/api/v1/chat", `{"message": ""}`, nil, "", 400},
		{"chat: blank message", "POST", "/api/v1/chat", `{"message": " \n\t "}`, nil, "", 400},
		{"chat: message too long", "POST", "/api/v1/chat", long, nil, "", 400},
		{"chat: body too large", "POST", "/api/v1/chat", big, nil, "", 413},
		{"chat: wrong content type", "POST", "/api/v1/chat", `{"message": "hi"}`, []string{"Content-Type", "text/plain"}, "", 415},
		{"chat: form content type", "POST", "/api/v1/chat", `message=hi`, []string{"Content-Type", "application/x-www-form-urlencoded"}, "", 415},
		{"chat: no content type", "POST", "/api/v1/chat", `{"message": "hi"}`, []string{"Content-Type", ""}, "", 415},
		{"chat: two JSON values", "POST", "/api/v1/chat", `{"message": "hi"} {"message": "again"}`, nil, "", 400},
		{"chat: an array", "POST", "/api/v1/chat", `[{"message": "hi"}]`, nil, "", 400},
		{"chat: message not a string", "POST", "/api/v1/chat", `{"message": 42}`, nil, "", 400},
		{"chat: empty body", "POST", "/api/v1/chat", ``, []string{"Content-Type", json}, "", 400},
		{"chat: unknown conversation", "POST", "/api/v1/chat", `{"message": "hi", "conversation_id": "nope"}`, nil, "", 404},
		{"chat: another user's conversation", "POST", "/api/v1/chat", `{"message": "hi", "conversation_id": "` + bobConv + `"}`, nil, "", 404},
		{"chat: unknown model", "POST", "/api/v1/chat", `{"message": "hi", "model": "gpt-9"}`, nil, "", 400},
		{"chat: context not an object", "POST", "/api/v1/chat", `{"message": "hi", "context": [1]}`, nil, "", 400},
		{"chat: no key", "POST", "/api/v1/chat", `{"message": "hi"}`, nil, "-", 401},
		{"chat: wrong key", "POST", "/api/v1/chat", `{"message": "hi"}`, nil, "key-mallory", 401},
		{"chat: approval pending", "POST", "/api/v1/chat", `{"message": "hi", "conversation_id": "` + parkedConv + `"}`, nil, "", 409},
		{"sync: unknown field", "POST", "/api/v1/chat/sync", `{"message": "hi", "stream": true}`, nil, "", 400},
		{"sync: empty message", "POST", "/api/v1/chat/sync", `{"message": ""}`, nil, "", 400},
		{"sync: wrong content type", "POST", "/api/v1/chat/sync", `{"message": "hi"}`, []string{"Content-Type", "text/json"}, "", 415},
		{"sync: another user's conversation", "POST", "/api/v1/chat/sync", `{"message": "hi", "conversation_id": "` + bobConv + `"}`, nil, "", 404},
		{"list: bad limit", "GET", "/api/v1/conversations?limit=abc", "", nil, "", 400},
		{"list: negative limit", "GET", "/api/v1/conversations?limit=-1", "", nil, "", 400},
		{"list: bad cursor", "GET", "/api/v1/conversations?cursor=bogus", "", nil, "", 400},
		{"list: no key", "GET", "/api/v1/conversations", "", nil, "-", 401},
		{"get: unknown conversation", "GET", "/api/v1/conversations/nope", "", nil, "", 404},
		{"get: another user's conversation", "GET", "/api/v1/conversations/" + bobConv, "", nil, "", 404},
		{"get: bad limit", "GET", "/api/v1/conversations/" + aliceConv + "?limit=x", "", nil, "", 400},
		{"get: negative events_limit", "GET", "/api/v1/conversations/" + aliceConv + "?events_limit=-1", "", nil, "", 400},
		{"get: bad cursor", "GET", "/api/v1/conversations/" + aliceConv + "?cursor=bogus", "", nil, "", 400},
		{"events: another user's run", "GET", "/api/v1/conversations/" + bobConv + "/runs/" + bobRun + "/events", "", nil, "", 404},
		{"events: run of another conversation", "GET", "/api/v1/conversations/" + parkedConv + "/runs/" + aliceRun + "/events", "", nil, "", 404},
		{"events: unknown run", "GET", "/api/v1/conversations/" + aliceConv + "/runs/nope/events", "", nil, "", 404},
		{"events: bad after", "GET", "/api/v1/conversations/" + aliceConv + "/runs/" + aliceRun + "/events?after=1.5", "", nil, "", 400},
		{"events: negative limit", "GET", "/api/v1/conversations/" + aliceConv + "/runs/" + aliceRun + "/events?limit=-2", "", nil, "", 400},
		{"delete: unknown conversation", "DELETE", "/api/v1/conversations/nope", "", nil, "", 404},
		{"delete: another user's conversation", "DELETE", "/api/v1/conversations/" + bobConv, "", nil, "", 404},
		{"stream: another user's conversation", "GET", "/api/v1/conversations/" + bobConv + "/stream", "", nil, "", 404},
		{"stream: another user's run", "GET", "/api/v1/conversations/" + aliceConv + "/stream?run_id=" + bobRun, "", nil, "", 404},
		{"stream: bad Last-Event-ID", "GET", "/api/v1/conversations/" + aliceConv + "/stream", "", []string{"Last-Event-ID", "x1"}, "", 400},
		{"stream: bad after", "GET", "/api/v1/conversations/" + aliceConv + "/stream?after=-3", "", nil, "", 400},
		{"cancel: another user's conversation", "POST", "/api/v1/conversations/" + bobConv + "/cancel", "", nil, "", 404},
		{"cancel: nothing running", "POST", "/api/v1/conversations/" + aliceConv + "/cancel", "", nil, "", 409},
		{"edit: another user's run", "POST", "/api/v1/conversations/" + bobConv + "/runs/" + bobRun + "/edit", `{"message": "x"}`, nil, "", 404},
		{"edit: run of another conversation", "POST", "/api/v1/conversations/" + parkedConv + "/runs/" + aliceRun + "/edit", `{"message": "x"}`, nil, "", 404},
		{"edit: empty message", "POST", "/api/v1/conversations/" + aliceConv + "/runs/" + aliceRun + "/edit", `{"message": ""}`, nil, "", 400},
		{"edit: unknown field", "POST", "/api/v1/conversations/" + aliceConv + "/runs/" + aliceRun + "/edit", `{"message": "x", "model": "fast"}`, nil, "", 400},
		{"edit: wrong content type", "POST", "/api/v1/conversations/" + aliceConv + "/runs/" + aliceRun + "/edit", `{"message": "x"}`, []string{"Content-Type", "text/plain"}, "", 415},
		{"approve: unknown approval", "POST", "/api/v1/approvals/nope", `{"decision": "approve"}`, nil, "", 404},
		{"approve: another user's approval", "POST", "/api/v1/approvals/" + approval, `{"decision": "approve"}`, nil, bobKey, 404},
		{"approve: unknown decision", "POST", "/api/v1/approvals/" + approval, `{"decision": "maybe"}`, nil, "", 400},
		{"approve: edit without args", "POST", "/api/v1/approvals/" + approval, `{"decision": "edit"}`, nil, "", 400},
		{"approve: edit with args not an object", "POST", "/api/v1/approvals/" + approval, `{"decision": "edit", "args": "rm -rf"}`, nil, "", 400},
		{"approve: unknown field", "POST", "/api/v1/approvals/" + approval, `{"decision": "approve", "why": "x"}`, nil, "", 400},
		{"approve: malformed JSON", "POST", "/api/v1/approvals/" + approval, `{"decision"`, nil, "", 400},
		{"approve: wrong content type", "POST", "/api/v1/approvals/" + approval, `{"decision": "approve"}`, []string{"Content-Type", "text/plain"}, "", 415},
		{"approvals: another user's conversation", "GET", "/api/v1/approvals/pending?conversation_id=" + bobConv, "", nil, "", 404},
		{"elicitation: unknown id", "POST", "/api/v1/elicitation/respond", `{"elicitation_id": "nope", "action": "accept", "content": {}}`, nil, "", 404},
		{"elicitation: no id", "POST", "/api/v1/elicitation/respond", `{"action": "decline"}`, nil, "", 400},
		{"elicitation: unknown action", "POST", "/api/v1/elicitation/respond", `{"elicitation_id": "nope", "action": "shrug"}`, nil, "", 400},
		{"elicitation: content not an object", "POST", "/api/v1/elicitation/respond", `{"elicitation_id": "nope", "action": "accept", "content": [1]}`, nil, "", 400},
		{"elicitation: unknown field", "POST", "/api/v1/elicitation/respond", `{"elicitation_id": "nope", "action": "accept", "answer": {}}`, nil, "", 400},
		{"elicitation: cancel unknown", "DELETE", "/api/v1/elicitation/nope", "", nil, "", 404},
		{"elicitations: another user's conversation", "GET", "/api/v1/elicitation/pending?conversation_id=" + bobConv, "", nil, "", 404},
		{"clarifications: another user's conversation", "GET", "/api/v1/clarifications/pending?conversation_id=" + bobConv, "", nil, "", 404},
		{"unknown endpoint", "GET", "/api/v1/nothing-here", "", nil, "", 404},
		{"wrong method", "PUT", "/api/v1/chat", `{"message": "hi"}`, nil, "", 405},
	}
	before := e.snapshot()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var body any
			if tc.body != "" {
				body = tc.body
			}
			key := aliceKey
			switch tc.key {
			case "-":
				key = ""
			case "":
			default:
				key = tc.key
			}
			req := e.request(tc.method, tc.path, body, key, tc.headers...)
			resp, err := e.ts.Client().Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			var b []byte
			b, _ = readAll(resp)
			wantError(t, resp.StatusCode, b, tc.status)
			if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
				t.Errorf("Content-Type %q", ct)
			}
			if tc.status == 401 && !strings.HasPrefix(resp.Header.Get("WWW-Authenticate"), "Bearer") {
				t.Errorf("WWW-Authenticate %q", resp.Header.Get("WWW-Authenticate"))
			}
			if strings.Contains(string(b), "goroutine ") || strings.Contains(string(b), ".go:") {
				t.Errorf("the error body leaks internals: %s", b)
			}
			if after := e.snapshot(); after != before {
				t.Errorf("the store changed:\nbefore\n%s\nafter\n%s", before, after)
			}
		})
	}
}

func TestAuthIsPerUser(t *testing.T) {
	e := newEnv(t, envOptions{})
	s := e.chat(map[string]any{"message": "hello"})
	s.all()
	conv := s.header("X-Conversation-ID")
	// Bob sees nothing of Alice's.
	status, body := e.doAs(bobKey, "GET", "/api/v1/conversations", nil)
	if list := jsonOf[struct{ Conversations []store.Conversation }](t, body); status != 200 || len(list.Conversations) != 0 {
		t.Errorf("bob's list: %d %s", status, body)
	}
	status, body = e.doAs(bobKey, "GET", "/api/v1/conversations/"+conv, nil)
	wantError(t, status, body, 404)
	// A key is compared whole.
	status, body = e.doAs(aliceKey+"x", "GET", "/api/v1/conversations", nil)
	wantError(t, status, body, 401)
	status, body = e.doAs(aliceKey[:len(aliceKey)-1], "GET", "/api/v1/conversations", nil)
	wantError(t, status, body, 401)
	// Operations endpoints need no key.
	for _, p := range []string{"/healthz", "/readyz", "/metrics"} {
		if status, body := e.doAs("", "GET", p, nil); status != 200 {
			t.Errorf("%s: %d %s", p, status, body)
		}
	}
}

func TestRateAndRunLimits(t *testing.T) {
	e := newEnv(t, envOptions{configure: func(c *apitest.Config) {
		c.API.Limits.RatePerMinute = 60
		c.API.Limits.Burst = 3
	}})
	for i := range 3 {
		if status, body := e.do("GET", "/api/v1/conversations", nil); status != 200 {
			t.Fatalf("request %d: %d %s", i, status, body)
		}
	}
	resp, err := e.ts.Client().Do(e.request("GET", "/api/v1/conversations", nil, aliceKey))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := readAll(resp)
	resp.Body.Close()
	wantError(t, resp.StatusCode, b, 429)
	if ra := resp.Header.Get("Retry-After"); ra != "1" {
		t.Errorf("Retry-After %q, want 1 (a token a second)", ra)
	}
	// Bob has a bucket of his own.
	if status, body := e.doAs(bobKey, "GET", "/api/v1/conversations", nil); status != 200 {
		t.Errorf("bob: %d %s", status, body)
	}

	e2 := newEnv(t, envOptions{configure: func(c *apitest.Config) { c.API.Limits.MaxConcurrentRunsPerUser = 1 }})
	s := e2.chat(map[string]any{"message": "wait for me"})
	<-e2.tools.waiting
	s.until("tool.start") // events are sent once stored: the run writes nothing more while its tool waits
	before := e2.snapshot()
	resp, err = e2.ts.Client().Do(e2.request("POST", "/api/v1/chat", map[string]any{"message": "hello"}, aliceKey))
	if err != nil {
		t.Fatal(err)
	}
	b, _ = readAll(resp)
	resp.Body.Close()
	wantError(t, resp.StatusCode, b, 429)
	if resp.Header.Get("Retry-After") == "" {
		t.Error("no Retry-After")
	}
	if after := e2.snapshot(); after != before {
		t.Errorf("the refused run changed the store:\n%s\n%s", before, after)
	}
	// Bob's runs are his own.
	if status, body := e2.doAs(bobKey, "POST", "/api/v1/chat/sync", map[string]any{"message": "hello"}); status != 200 {
		t.Errorf("bob: %d %s", status, body)
	}
	close(e2.tools.release)
	if last := s.all(); last[len(last)-1].Type != "run.completed" {
		t.Errorf("run: %v", types(last))
	}
	// The slot is free again once the run has ended.
	if status, body := e2.do("POST", "/api/v1/chat/sync", map[string]any{"message": "hello"}); status != 200 {
		t.Errorf("after the run: %d %s", status, body)
	}
}

func TestOperationsEndpoints(t *testing.T) {
	e := newEnv(t, envOptions{})
	s := e.chat(map[string]any{"message": "what is 2+2?"})
	s.all()

	status, body := e.do("GET", "/api/v1/tools", nil)
	tools := jsonOf[struct {
		Tools []struct {
			Name             string
			Source           string
			InputSchema      map[string]any `json:"input_schema"`
			RequiresApproval bool           `json:"requires_approval"`
		}
	}](t, body)
	found := map[string]bool{}
	for _, tl := range tools.Tools {
		found[tl.Name] = tl.RequiresApproval
		if tl.Source != "local" || tl.InputSchema == nil {
			t.Errorf("tool %+v", tl)
		}
	}
	if status != 200 || !found["delete_file"] || found["calculator"] {
		t.Errorf("tools: %d %s", status, body)
	}

	// The run and its stream end just after the client saw the last event.
	var m exposition
	waitFor(t, "the run and its stream to end", func() bool {
		m = scrape(t, e)
		streams, _ := m.value("trellis_sse_streams_open")
		active, _ := m.value("trellis_runs_active")
		return streams == 0 && active == 0
	})
	for _, c := range []struct {
		name   string
		labels []string
		want   float64
	}{
		{"trellis_runs_total", []string{"status", "completed"}, 1},
		{"trellis_tool_calls_total", []string{"tool", "calculator", "status", "success"}, 1},
		{"trellis_sse_streams_open", nil, 0},
		{"trellis_runs_active", nil, 0},
	} {
		if got, ok := m.value(c.name, c.labels...); !ok || got != c.want {
			t.Errorf("%s%v = %v (present %v), want %v", c.name, c.labels, got, ok, c.want)
		}
	}
	if h, ok := m.series("trellis_run_duration_seconds", "status", "completed"); !ok || h.GetHistogram().GetSampleCount() != 1 {
		t.Errorf("run duration: %v", h)
	}
	if v, _ := m.value("trellis_tokens_total", "kind", "output"); v == 0 {
		t.Error("no output tokens counted")
	}
	e.srv.Metrics().BreakerChanged("github", "open")
	if v, ok := scrape(t, e).value("trellis_breaker_state", "source", "github"); !ok || v != 2 {
		t.Errorf("breaker state %v (present %v), want 2", v, ok)
	}

	if status, body := e.do("GET", "/healthz", nil); status != 200 {
		t.Errorf("healthz: %d %s", status, body)
	}
	if status, body := e.do("GET", "/readyz", nil); status != 200 {
		t.Errorf("readyz: %d %s", status, body)
	}
	// Storage gone: not ready.
	e.closeDB()
	e.closeDB = func() {}
	status, body = e.do("GET", "/readyz", nil)
	wantError(t, status, body, 503)
}

func TestReadyzFailsWhileShuttingDown(t *testing.T) {
	e := newEnv(t, envOptions{})
	ctx := t.Context()
	if err := e.srv.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	status, body := e.do("GET", "/readyz", nil)
	wantError(t, status, body, 503)
	status, body = e.do("POST", "/api/v1/chat", map[string]any{"message": "hello"})
	wantError(t, status, body, 503)
}

func TestCORS(t *testing.T) {
	off := newEnv(t, envOptions{})
	resp, err := off.ts.Client().Do(off.request("GET", "/api/v1/conversations", nil, aliceKey, "Origin", "https://evil.example"))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if h := resp.Header.Get("Access-Control-Allow-Origin"); h != "" {
		t.Errorf("CORS is on by default: %q", h)
	}

	on := newEnv(t, envOptions{configure: func(c *apitest.Config) { c.API.CORSOrigins = []string{"https://app.example"} }})
	pre := on.request("OPTIONS", "/api/v1/chat", nil, "", "Origin", "https://app.example", "Access-Control-Request-Method", "POST")
	resp, err = on.ts.Client().Do(pre)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 204 || resp.Header.Get("Access-Control-Allow-Origin") != "https://app.example" ||
		!strings.Contains(resp.Header.Get("Access-Control-Allow-Headers"), "Authorization") {
		t.Errorf("preflight: %d %v", resp.StatusCode, resp.Header)
	}
	resp, err = on.ts.Client().Do(on.request("GET", "/api/v1/conversations", nil, aliceKey, "Origin", "https://other.example"))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if h := resp.Header.Get("Access-Control-Allow-Origin"); h != "" {
		t.Errorf("an unlisted origin got %q", h)
	}
}

func TestMountsMCPBehindAuthAndTheWebPage(t *testing.T) {
	mcpHandler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "mcp for %s at %s", runs.UserFrom(r.Context()), r.URL.Path)
	})
	page := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "<html>chat</html>") })
	e := newEnv(t, envOptions{configure: func(c *apitest.Config) { c.API.MCP, c.API.Web = mcpHandler, page }})
	status, body := e.doAs("", "POST", "/mcp", `{}`)
	wantError(t, status, body, http.StatusUnauthorized)
	if status, body := e.do("POST", "/mcp", `{}`); status != 200 || string(body) != "mcp for alice at /mcp" {
		t.Errorf("/mcp: %d %s", status, body)
	}
	if status, body := e.doAs("", "GET", "/", nil); status != 200 || string(body) != "<html>chat</html>" {
		t.Errorf("/: %d %s", status, body)
	}
	// The API keeps its own JSON 404s.
	status, body = e.do("GET", "/api/v1/nope", nil)
	wantError(t, status, body, http.StatusNotFound)
}
