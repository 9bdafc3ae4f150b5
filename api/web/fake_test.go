package web_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/trellis-ai/trellis/api/web"
	"github.com/trellis-ai/trellis/api/web/webtest"
)

// contractFake is a scripted fake of the Trellis HTTP API of API.md, for
// driving the web page in a browser apart from the real server (package
// api), which its own end-to-end tests cover with the same webtest steps.
//
// It keeps conversations, runs and their events as the service does and
// serves them in API.md's shapes and SSE framing: seq from 1 without gaps,
// one terminal event per stream, replay after Last-Event-ID, 404/409/422
// error bodies, strict JSON decoding (unknown fields are a 400). The agent
// is a script: every run started by POST /chat or by an edit runs
// contractFake.script in a goroutine, which emits events and waits on the
// page's answers (approvals, elicitations) or on gates the test opens.
//
// Every request is recorded, so a test can assert exactly what the page
// sent. Each SSE frame is written in two flushes, so the page's parser
// meets events split across chunks.
type contractFake struct {
	t      testing.TB
	script func(r *fakeRun) // returns after a terminal event, or when r.ctx ends
	URL    string           // the server: the page at "/", the API at /api/v1

	ctx  context.Context // ends at cleanup: stops scripts and streams
	stop context.CancelFunc
	wg   sync.WaitGroup // scripts

	mu       sync.Mutex
	changed  chan struct{} // closed and replaced on every change
	convs    []*fakeConv
	requests []fakeRequest
	waits    map[string]*fakeWait // by approval or elicitation id
	ids      int
	apiKey   string       // when set, every API request needs "Bearer <apiKey>"
	chatFail *fakeFailure // when set, POST /chat answers with it
	// replayAll makes /stream ignore Last-Event-ID and replay every
	// event, as a careless server might: the page must drop repeats.
	replayAll bool
	// runsPage and eventsPage, when set, page GET /conversations/{id}
	// as the server does past its defaults: runsPage runs a page
	// (next_cursor), each with its first eventsPage events
	// (events_truncated; the rest from .../runs/{run_id}/events); a
	// negative eventsPage gives each run none of its events, as a page
	// that reached the server's byte budget does.
	runsPage, eventsPage int
	// workspace holds the files of docs/api.md's workspace endpoints,
	// by scope ("user/me", "conversation/<id>") and path.
	workspace map[string]map[string]*fakeFile
}

type fakeFailure struct {
	status        int
	code, message string
}

type fakeConv struct {
	id, title        string
	created, updated time.Time
	runs             []*fakeRun
}

// fakeRun is one run. The script uses its methods; the fields after mu's
// comment in contractFake are guarded by the fake's mu.
type fakeRun struct {
	f       *contractFake
	conv    *fakeConv
	id      string
	message string
	// ctx ends when the page cancels the run or the test ends.
	ctx    context.Context
	cancel context.CancelFunc

	created, completed time.Time
	events             []fakeEvent
	status             string // running, interrupted, completed, cancelled, failed
	superseded         bool
	usage              json.RawMessage
	text               string    // the response.chunk contents so far
	drop               *fakeDrop // ends the open streams
}

// fakeDrop ends the streams open when it was made: ch is closed once
// reason is set, "" to cut them as a network failure would, else the
// stream.reconnect reason to end them with.
type fakeDrop struct {
	ch     chan struct{}
	reason string
}

// endStreamsLocked ends the streams: r.drop is replaced, so streams opened later are
// not affected. The caller holds f.mu.
func (r *fakeRun) endStreamsLocked(reason string) {
	r.drop.reason = reason
	close(r.drop.ch)
	r.drop = &fakeDrop{ch: make(chan struct{})}
}

type fakeEvent struct {
	seq  int
	typ  string
	data []byte
}

type fakeWait struct {
	kind     string // "approval", "elicitation" or "uncertain_call"
	schema   map[string]any
	answer   chan []byte
	answered bool
	reply    chan struct{} // when set, the 200 waits until it is closed
}

type fakeRequest struct {
	Method, Path, Query string
	Header              http.Header
	Body                []byte
}

// newContractFake starts the fake's server for the test; the server and
// every script stop at cleanup.
func newContractFake(t testing.TB, script func(r *fakeRun)) *contractFake {
	f := &contractFake{t: t, script: script, changed: make(chan struct{}), waits: map[string]*fakeWait{}}
	f.ctx, f.stop = context.WithCancel(context.Background())
	srv := httptest.NewServer(f.handler())
	f.URL = srv.URL
	t.Cleanup(func() {
		f.stop()
		f.wg.Wait()
		srv.Close()
	})
	return f
}

func (f *contractFake) handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /api/v1/chat", f.chat)
	mux.HandleFunc("GET /api/v1/conversations", f.list)
	mux.HandleFunc("GET /api/v1/conversations/{id}", f.conversation)
	mux.HandleFunc("GET /api/v1/conversations/{id}/stream", f.stream)
	mux.HandleFunc("POST /api/v1/conversations/{id}/cancel", f.cancelRun)
	mux.HandleFunc("POST /api/v1/conversations/{id}/runs/{run_id}/edit", f.edit)
	mux.HandleFunc("GET /api/v1/conversations/{id}/runs/{run_id}/events", f.runEvents)
	mux.HandleFunc("POST /api/v1/approvals/{id}", f.approval)
	mux.HandleFunc("POST /api/v1/conversations/{id}/runs/{run_id}/answers", f.answers)
	mux.HandleFunc("POST /api/v1/uncertain-calls/{id}", f.uncertainCall)
	mux.HandleFunc("POST /api/v1/elicitation/respond", f.elicitation)
	mux.HandleFunc("GET /api/v1/tools", f.tools)
	mux.HandleFunc("GET /api/v1/me/usage", f.usage)
	f.filesRoutes(mux)
	mux.HandleFunc("/api/", func(w http.ResponseWriter, r *http.Request) {
		writeErr(w, http.StatusNotFound, "not_found", "the fake has no "+r.Method+" "+r.URL.Path)
	})
	mux.Handle("/", web.Handler())
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasPrefix(r.URL.Path, "/api/") {
			body, _ := io.ReadAll(r.Body)
			r.Body = io.NopCloser(bytes.NewReader(body))
			f.mu.Lock()
			f.requests = append(f.requests, fakeRequest{Method: r.Method, Path: r.URL.Path, Query: r.URL.RawQuery, Header: r.Header.Clone(), Body: body})
			f.notifyLocked()
			key := f.apiKey
			f.mu.Unlock()
			if key != "" && r.Header.Get("Authorization") != "Bearer "+key {
				writeErr(w, http.StatusUnauthorized, "unauthorized", "missing or wrong API key: send Authorization: Bearer <key>")
				return
			}
		}
		mux.ServeHTTP(w, r)
	})
}

// --- what the script uses ---

// emit appends an event of type typ with fields and the envelope API.md
// requires (type, seq, run_id, conversation_id, ts).
func (r *fakeRun) emit(typ string, fields map[string]any) {
	r.f.mu.Lock()
	defer r.f.mu.Unlock()
	r.emitLocked(typ, fields)
}

func (r *fakeRun) emitLocked(typ string, fields map[string]any) {
	f := r.f
	data := map[string]any{}
	for k, v := range fields {
		data[k] = v
	}
	seq := len(r.events) + 1
	data["type"], data["seq"], data["run_id"], data["conversation_id"] = typ, seq, r.id, r.conv.id
	data["ts"] = time.Now().UTC().Format(time.RFC3339Nano)
	b, err := json.Marshal(data)
	if err != nil {
		f.t.Errorf("fake: encode %s: %v", typ, err)
		return
	}
	r.events = append(r.events, fakeEvent{seq: seq, typ: typ, data: b})
	switch typ {
	case "run.completed", "run.cancelled", "run.failed":
		r.status = strings.TrimPrefix(typ, "run.")
		r.completed = time.Now().UTC()
	case "run.interrupted":
		r.status = "interrupted"
	default:
		r.status = "running"
	}
	if c, ok := fields["content"].(string); ok && typ == "response.chunk" {
		r.text += c
	}
	if u, ok := fields["usage"]; ok {
		r.usage, _ = json.Marshal(u)
	}
	r.conv.updated = time.Now().UTC()
	f.notifyLocked()
}

// answer streams parts as response.chunk events, then sends response.done
// with every chunk of the run and run.completed.
func (r *fakeRun) answer(parts ...string) {
	for _, p := range parts {
		r.emit("response.chunk", map[string]any{"content": p})
	}
	r.f.mu.Lock()
	text := r.text
	r.f.mu.Unlock()
	r.finish(text, nil)
}

// finish sends response.done with content and citations, then run.completed.
func (r *fakeRun) finish(content string, citations []map[string]any) {
	usage := map[string]any{"input_tokens": 120, "output_tokens": 45, "thinking_tokens": 0, "cache_read_tokens": 30, "cache_write_tokens": 0, "total_tokens": 165}
	if citations == nil {
		citations = []map[string]any{}
	}
	r.emit("response.done", map[string]any{"content": content, "citations": citations, "usage": usage})
	r.emit("run.completed", map[string]any{"status": "completed", "usage": usage})
}

// await waits for a gate the test opens; false when the run was cancelled.
func (r *fakeRun) await(gate <-chan struct{}) bool {
	select {
	case <-gate:
		return true
	case <-r.ctx.Done():
		return false
	}
}

// approval asks for an approval and waits for the page's answer: the body
// it posted, or false when the run was cancelled.
func (r *fakeRun) approval(id, tool string, args map[string]any, revision int) (map[string]any, bool) {
	w := r.f.expect(id, "approval", nil)
	r.emit("approval.required", map[string]any{"approval_id": id, "tool_call_id": "call-" + id, "tool": tool, "args": args, "revision": revision})
	return r.wait(w)
}

// approvalReplyLate is approval, but the page gets its 200 only when the
// script calls reply: the run may go on, even finish, before the page
// learns that its answer was taken.
func (r *fakeRun) approvalReplyLate(id, tool string, args map[string]any) (ans map[string]any, reply func(), ok bool) {
	w := r.f.expect(id, "approval", nil)
	w.reply = make(chan struct{})
	r.emit("approval.required", map[string]any{"approval_id": id, "tool_call_id": "call-" + id, "tool": tool, "args": args, "revision": 0})
	ans, ok = r.wait(w)
	return ans, sync.OnceFunc(func() { close(w.reply) }), ok
}

// uncertain parks the run on a call that may have run (tool.uncertain,
// then run.interrupted) and waits for the page's decision.
func (r *fakeRun) uncertain(id, tool string, args map[string]any) (map[string]any, bool) {
	w := r.f.expect(id, "uncertain_call", nil)
	r.emit("tool.uncertain", map[string]any{"uncertain_call_id": id, "tool_call_id": "call-" + id, "tool": tool, "args": args})
	r.emit("run.interrupted", map[string]any{"reason": "uncertain_call", "uncertain_call_ids": []string{id}})
	return r.wait(w)
}

// elicit asks for input with schema and waits for the page's answer. With
// park, the run ends its stream with run.interrupted while it waits, and
// the page must come back through /conversations/{id}/stream.
func (r *fakeRun) elicit(id, message, schema string, park bool) (map[string]any, bool) {
	var parsed map[string]any
	if err := json.Unmarshal([]byte(schema), &parsed); err != nil {
		r.f.t.Errorf("fake: elicitation schema: %v", err)
	}
	w := r.f.expect(id, "elicitation", parsed)
	// Raw, so the page sees the properties in the order written.
	r.emit("elicitation.request", map[string]any{"elicitation_id": id, "source": "mcp", "message": message, "schema": json.RawMessage(schema)})
	if park {
		r.emit("run.interrupted", map[string]any{"reason": "elicitation", "elicitation_ids": []string{id}})
	}
	return r.wait(w)
}

func (r *fakeRun) wait(w *fakeWait) (map[string]any, bool) {
	select {
	case b := <-w.answer:
		var body map[string]any
		if err := json.Unmarshal(b, &body); err != nil {
			r.f.t.Errorf("fake: decode answer: %v", err)
		}
		return body, true
	case <-r.ctx.Done():
		return nil, false
	}
}

// dropStreams cuts every open stream of the run, as a network failure
// would; streams opened later are not affected.
func (r *fakeRun) dropStreams() {
	r.f.mu.Lock()
	defer r.f.mu.Unlock()
	r.endStreamsLocked("")
}

// askReconnect ends every open stream of the run as the server does when
// it cannot go on with one (api's askReconnect): an SSE retry, then
// stream.reconnect with reason and no id, then the end of the response.
func (r *fakeRun) askReconnect(reason string) {
	r.f.mu.Lock()
	defer r.f.mu.Unlock()
	r.endStreamsLocked(reason)
}

func (f *contractFake) expect(id, kind string, schema map[string]any) *fakeWait {
	f.mu.Lock()
	defer f.mu.Unlock()
	w := &fakeWait{kind: kind, schema: schema, answer: make(chan []byte, 1)}
	f.waits[id] = w
	return w
}

// --- what the test uses ---

// requireKey makes every API request need "Authorization: Bearer key".
func (f *contractFake) requireKey(key string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.apiKey = key
}

// failChat makes POST /chat answer with an API error; nil undoes it.
func (f *contractFake) failChat(fail *fakeFailure) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.chatFail = fail
}

// waitFor waits until cond, evaluated under the fake's lock, holds.
func (f *contractFake) waitFor(what string, cond func() bool) {
	f.t.Helper()
	deadline := time.NewTimer(webtest.StepTimeout)
	defer deadline.Stop()
	for {
		f.mu.Lock()
		ok, changed := cond(), f.changed
		f.mu.Unlock()
		if ok {
			return
		}
		select {
		case <-changed:
		case <-deadline.C:
			f.t.Fatalf("fake: timed out waiting for %s", what)
		}
	}
}

// requestsTo waits until the page has made at least n requests to
// method path and returns them all, oldest first.
func (f *contractFake) requestsTo(method, path string, n int) []fakeRequest {
	f.t.Helper()
	var got []fakeRequest
	f.waitFor(fmt.Sprintf("%d requests to %s %s", n, method, path), func() bool {
		got = got[:0]
		for _, r := range f.requests {
			if r.Method == method && r.Path == path {
				got = append(got, r)
			}
		}
		return len(got) >= n
	})
	return slices.Clone(got)
}

// count is the number of requests to method path so far.
func (f *contractFake) count(method, path string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := 0
	for _, r := range f.requests {
		if r.Method == method && r.Path == path {
			n++
		}
	}
	return n
}

// onlyConversation is the id of the one conversation the test made.
func (f *contractFake) onlyConversation() *fakeConv {
	f.t.Helper()
	f.waitFor("a conversation", func() bool { return len(f.convs) > 0 })
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.convs) != 1 {
		f.t.Fatalf("fake: %d conversations, want 1", len(f.convs))
	}
	return f.convs[0]
}

func (f *contractFake) notifyLocked() {
	close(f.changed)
	f.changed = make(chan struct{})
}
