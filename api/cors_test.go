package api_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/trellis-ai/trellis/api/apitest"
	"github.com/trellis-ai/trellis/api/web/webtest"
	"github.com/trellis-ai/trellis/cognition"
)

const appOrigin = "https://app.example"

// allows reports whether a preflight's answer lets a browser send method
// with headers, as the Fetch standard's CORS check decides.
func allows(h http.Header, method string, headers []string) error {
	list := func(name string) []string {
		var out []string
		for v := range strings.SplitSeq(h.Get(name), ",") {
			out = append(out, strings.ToLower(strings.TrimSpace(v)))
		}
		return out
	}
	if h.Get("Access-Control-Allow-Origin") != appOrigin {
		return fmt.Errorf("Access-Control-Allow-Origin %q", h.Get("Access-Control-Allow-Origin"))
	}
	if method != http.MethodGet && method != http.MethodPost && !slices.Contains(list("Access-Control-Allow-Methods"), strings.ToLower(method)) {
		return fmt.Errorf("method %s not in %q", method, h.Get("Access-Control-Allow-Methods"))
	}
	for _, name := range headers {
		if !slices.Contains(list("Access-Control-Allow-Headers"), strings.ToLower(name)) {
			return fmt.Errorf("header %s not in %q", name, h.Get("Access-Control-Allow-Headers"))
		}
	}
	return nil
}

// TestCORSPreflights: a browser of an allowed origin may send every
// method the API's routes answer, with the headers each real client
// sends.
func TestCORSPreflights(t *testing.T) {
	e := newEnv(t, envOptions{configure: func(c *apitest.Config) { c.API.CORSOrigins = []string{appOrigin} }})
	native := []string{"Authorization", "Content-Type"}
	openai := []string{"Authorization", "Content-Type", "X-Stainless-Arch", "X-Stainless-Lang", "X-Stainless-OS",
		"X-Stainless-Package-Version", "X-Stainless-Retry-Count", "X-Stainless-Runtime", "X-Stainless-Runtime-Version",
		"X-Stainless-Timeout", "X-Stainless-Helper-Method", "OpenAI-Organization", "OpenAI-Project"}
	cases := []struct {
		method, path string
		headers      []string
	}{
		{"POST", "/api/v1/chat", append(native, "X-Request-Id")},
		{"GET", "/api/v1/conversations/c1/stream", []string{"Authorization", "Last-Event-ID"}},
		{"DELETE", "/api/v1/conversations/c1", native},
		{"PATCH", "/api/v1/me/profile", native},
		{"PATCH", "/api/v1/conversations/c1/tasks/t1", native},
		{"DELETE", "/api/v1/me/memories", native},
		{"PUT", "/api/v1/files/user/me/content?path=a.md", []string{"Authorization", "Content-Type"}},
		{"PUT", "/api/v1/conversations/c1/project", native},
		{"PATCH", "/langgraph/threads/t1", []string{"X-Api-Key", "Content-Type"}},
		{"POST", "/langgraph/threads/t1/runs/stream", []string{"X-Api-Key", "Content-Type", "Last-Event-ID"}},
		{"DELETE", "/langgraph/threads/t1", []string{"X-Api-Key"}},
		{"POST", "/v1/chat/completions", openai},
		{"POST", "/v1/responses", openai},
		{"GET", "/v1/models", openai},
		{"POST", "/ag-ui", native},
		{"POST", "/api/ai-sdk/chat", native},
		{"POST", "/mcp", []string{"Authorization", "Content-Type", "Mcp-Session-Id", "Mcp-Protocol-Version"}},
		{"DELETE", "/mcp", []string{"Authorization", "Mcp-Session-Id", "Mcp-Protocol-Version"}},
	}
	for _, tc := range cases {
		t.Run(tc.method+" "+tc.path, func(t *testing.T) {
			req := e.request("OPTIONS", tc.path, nil, "", "Origin", appOrigin,
				"Access-Control-Request-Method", tc.method,
				"Access-Control-Request-Headers", strings.ToLower(strings.Join(tc.headers, ",")))
			resp, err := e.ts.Client().Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusNoContent {
				t.Fatalf("preflight: %d", resp.StatusCode)
			}
			if err := allows(resp.Header, tc.method, tc.headers); err != nil {
				t.Error(err)
			}
		})
	}
}

// TestCORSBrowser: a real browser on another origin patches a profile
// with a bearer key, patches a LangGraph thread with the SDK's x-api-key,
// asks for a chat completion with the openai client's headers and reads
// the conversation the adapter names, and deletes a conversation.
func TestCORSBrowser(t *testing.T) {
	app := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprint(w, `<!doctype html><title>app</title><body data-ready="true"></body>`)
	}))
	t.Cleanup(app.Close)
	e := newEnv(t, envOptions{configure: func(c *apitest.Config) {
		c.API.CORSOrigins = []string{app.URL}
		svc, err := cognition.New(cognition.Config{Store: c.API.Store.(cognition.Store)})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(svc.Close)
		c.API.Cognition = svc
	}})
	status, body := e.do(http.MethodPost, "/langgraph/threads", map[string]any{})
	if status != http.StatusOK {
		t.Fatalf("create thread: %d %s", status, body)
	}
	thread := jsonOf[struct {
		ThreadID string `json:"thread_id"`
	}](t, body).ThreadID

	p := webtest.Open(t, webtest.Browser(t), app.URL)
	fetch := func(method, path, body string, headers map[string]string, expose string) string {
		t.Helper()
		hs := `{"Content-Type": "application/json"`
		for k, v := range headers {
			hs += fmt.Sprintf(`, %q: %q`, k, v)
		}
		hs += "}"
		js := fmt.Sprintf(`fetch(%q, {method: %q, headers: %s, body: %s}).then(
			async r => r.status + " " + (%q ? r.headers.get(%q) : await r.text()),
			e => "failed: " + e.message)`, e.ts.URL+path, method, hs, body, expose, expose)
		return webtest.Eval[string](p, js)
	}
	bearer := map[string]string{"Authorization": "Bearer " + aliceKey}
	if got := fetch("PATCH", "/api/v1/me/profile", `JSON.stringify({expertise_level: "expert"})`, bearer, ""); !strings.HasPrefix(got, "200 ") {
		t.Errorf("PATCH /me/profile: %s", got)
	}
	if got := fetch("PATCH", "/langgraph/threads/"+thread, `JSON.stringify({metadata: {k: "v"}})`,
		map[string]string{"x-api-key": aliceKey}, ""); !strings.HasPrefix(got, "200 ") {
		t.Errorf("PATCH a LangGraph thread with x-api-key: %s", got)
	}
	openai := map[string]string{"Authorization": "Bearer " + aliceKey, "X-Stainless-Lang": "js",
		"X-Stainless-Package-Version": "7.57.0", "X-Stainless-Retry-Count": "0", "X-Stainless-Timeout": "600"}
	got := fetch("POST", "/v1/chat/completions", `JSON.stringify({model: "scripted", messages: [{role: "user", content: "hello"}]})`,
		openai, "X-Trellis-Conversation-Id")
	conv, ok := strings.CutPrefix(got, "200 ")
	if !ok || conv == "" || conv == "null" {
		t.Fatalf("POST /v1/chat/completions, its conversation header read: %s", got)
	}
	if got := fetch("DELETE", "/api/v1/conversations/"+conv, "undefined", bearer, ""); !strings.HasPrefix(got, "204 ") {
		t.Errorf("DELETE a conversation: %s", got)
	}
}
