package api_test

import (
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/trellis-ai/trellis/api/apitest"
	"github.com/trellis-ai/trellis/store"
)

// database stands between one server and the test database as the
// network does, so that the test can take the database away from that
// server alone (other tests share the PostgreSQL server) and give it
// back. Taken away, it cuts every connection at once and refuses new
// ones: PostgreSQL sees each session end, the server sees each
// connection drop. (Ending the sessions in PostgreSQL one by one would
// leave a window in which a session not yet ended serves the server,
// which then goes on as though the database had never gone.)
type database struct {
	t      *testing.T
	dsn    string // data's URL, through the cut
	target string // PostgreSQL's address
	ln     net.Listener
	wg     sync.WaitGroup

	mu    sync.Mutex
	gone  bool
	conns map[net.Conn]struct{}
}

func newDatabase(t *testing.T, data *storage) *database {
	t.Helper()
	u, err := url.Parse(data.dsn)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	d := &database{t: t, target: u.Host, ln: ln, conns: map[net.Conn]struct{}{}}
	u.Host = ln.Addr().String()
	d.dsn = u.String()
	d.wg.Go(d.accept)
	t.Cleanup(func() {
		_ = ln.Close()
		d.cut()
		d.wg.Wait()
	})
	return d
}

// accept joins each connection to one of its own to PostgreSQL, while
// the database is there.
func (d *database) accept() {
	for {
		c, err := d.ln.Accept()
		if err != nil {
			return
		}
		up, err := net.Dial("tcp", d.target)
		if err != nil {
			_ = c.Close()
			continue
		}
		d.mu.Lock()
		if d.gone {
			d.mu.Unlock()
			_ = c.Close()
			_ = up.Close()
			continue
		}
		d.conns[c], d.conns[up] = struct{}{}, struct{}{}
		d.mu.Unlock()
		d.wg.Go(func() { d.pipe(up, c) })
		d.wg.Go(func() { d.pipe(c, up) })
	}
}

// pipe copies src to dst until either ends or the database goes.
func (d *database) pipe(dst, src net.Conn) {
	_, _ = io.Copy(dst, src)
	_ = dst.Close()
	_ = src.Close()
	d.mu.Lock()
	delete(d.conns, dst)
	delete(d.conns, src)
	d.mu.Unlock()
}

// cut closes every connection and refuses new ones.
func (d *database) cut() {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.gone = true
	for c := range d.conns {
		_ = c.Close()
	}
}

// away takes the database away from the server, as a database that went
// away would: every connection drops at once, and new ones are refused.
func (d *database) away() { d.cut() }

// back lets the server connect again.
func (d *database) back() {
	d.mu.Lock()
	d.gone = false
	d.mu.Unlock()
}

// status returns the status GET path answers with.
func (e *env) status(path string) int {
	e.t.Helper()
	status, _ := e.do("GET", path, nil)
	return status
}

// follow reads the run's events after the last of seen from the
// conversation's stream, as a client reconnecting with Last-Event-ID
// does, until a terminal event.
func (e *env) follow(conv string, seen []event) []event {
	e.t.Helper()
	for range 10 {
		if len(seen) > 0 && terminal(seen[len(seen)-1].Type) {
			return seen
		}
		last := int64(0)
		if len(seen) > 0 {
			last = seen[len(seen)-1].ID
		}
		seen = append(seen, e.open(e.request("GET", "/api/v1/conversations/"+conv+"/stream", nil, e.key,
			"Last-Event-ID", strconv.FormatInt(last, 10))).all()...)
	}
	e.t.Fatalf("no terminal event after 10 reconnections: %v", types(seen))
	return nil
}

// TestClusterProcessReconnectsAfterLosingTheDatabase takes the database
// away from a process while its run waits in a tool, and gives it back:
// the process stops the run without failing it, is not ready meanwhile
// (and, past UnhealthyAfter, not healthy), refuses new runs with 503, and
// once the database is back it is ready again without a restart and
// continues the run from its last checkpoint to run.completed, which a
// client reconnecting with Last-Event-ID sees.
func TestClusterProcessReconnectsAfterLosingTheDatabase(t *testing.T) {
	noLeaks(t)
	data := newStorage(t, postgresBackend)
	db := newDatabase(t, data)
	e := newEnv(t, envOptions{backend: postgresBackend, data: data, cluster: true, dsn: db.dsn,
		configure: func(c *apitest.Config) { c.API.UnhealthyAfter = time.Millisecond }})
	s := e.chat(map[string]any{"message": "wait for it"})
	conv, runID := s.header("X-Conversation-ID"), s.header("X-Run-ID")
	<-e.tools.waiting
	s.until("tool.start")

	db.away()
	// The stream, whose run stopped here, reads the store, and so ends
	// before the run's terminal event, saying so: an SSE retry, then
	// stream.reconnect. Its client reconnects.
	seen := s.all()
	last := seen[len(seen)-1]
	if last.Type != "stream.reconnect" || last.str("reason") != "unavailable" || last.str("run_id") != runID ||
		last.str("conversation_id") != conv || last.Data["retry_ms"] != float64(1000) {
		t.Fatalf("the stream ended with %s %s while the database was away, want stream.reconnect (unavailable)", last.Type, last.Raw)
	}
	if !strings.Contains(s.raw.String(), "\nretry: 1000\n") || strings.Contains(s.raw.String(), "id: 0\n") {
		t.Errorf("no SSE retry before stream.reconnect, or an id with it:\n%s", s.raw.String())
	}
	seen = seen[:len(seen)-1]
	waitFor(t, "/readyz 503", func() bool { return e.status("/readyz") == http.StatusServiceUnavailable })
	waitFor(t, "/healthz 503 past UnhealthyAfter", func() bool { return e.status("/healthz") == http.StatusServiceUnavailable })
	for _, path := range []string{"/api/v1/chat", "/api/v1/conversations/" + conv} {
		method, body := "GET", any(nil)
		if path == "/api/v1/chat" {
			method, body = "POST", map[string]any{"message": "hello"}
		}
		status, b := e.do(method, path, body)
		wantError(t, status, b, http.StatusServiceUnavailable)
		if code := jsonOf[apiError](t, b).Error.Code; code != "unavailable" {
			t.Errorf("%s %s: code %q, want unavailable", method, path, code)
		}
	}

	db.back()
	waitFor(t, "/readyz 200", func() bool { return e.status("/readyz") == http.StatusOK })
	if status := e.status("/healthz"); status != http.StatusOK {
		t.Errorf("/healthz %d once the database is back", status)
	}
	// Continued from its last checkpoint: the tool runs again, unless
	// its cancellation was checkpointed as its result before the
	// database went.
	close(e.tools.release)
	evs := e.follow(conv, seen)
	checkRun(t, evs, 1, runID, conv)
	if got := evs[len(evs)-1].Type; got != "run.completed" {
		t.Fatalf("the run ended with %s: %v", got, types(evs))
	}
	if r, err := e.store.GetRun(t.Context(), "alice", runID); err != nil || r.Status != store.RunCompleted {
		t.Errorf("run %+v %v", r, err)
	}
	// New runs start again.
	if evs := e.chat(map[string]any{"message": "hello"}).all(); evs[len(evs)-1].Type != "run.completed" {
		t.Errorf("a new run: %v", types(evs))
	}
	e.close()
}

// TestClusterPeerTakesOverFromAProcessThatLostTheDatabase: of two
// processes, the one that loses its database session for good stops its
// run without failing it; the other claims the run and completes it. The
// first, once the database is back, is ready again and leaves the run to
// its new owner.
func TestClusterPeerTakesOverFromAProcessThatLostTheDatabase(t *testing.T) {
	noLeaks(t)
	data := newStorage(t, postgresBackend)
	b := newEnv(t, envOptions{backend: postgresBackend, data: data, cluster: true})
	db := newDatabase(t, data)
	a := newEnv(t, envOptions{backend: postgresBackend, data: data, cluster: true, dsn: db.dsn})
	s := a.chat(map[string]any{"message": "wait for it"})
	conv, runID := s.header("X-Conversation-ID"), s.header("X-Run-ID")
	<-a.tools.waiting
	s.until("tool.start")
	seen := s.events

	close(b.tools.release) // for b's continuation, if it runs the tool again
	db.away()
	// Not ready, but not to be restarted either, within UnhealthyAfter.
	waitFor(t, "/readyz 503 on the first process", func() bool { return a.status("/readyz") == http.StatusServiceUnavailable })
	if status := a.status("/healthz"); status != http.StatusOK {
		t.Errorf("/healthz %d within UnhealthyAfter of losing the database", status)
	}
	evs := b.follow(conv, seen)
	checkRun(t, evs, 1, runID, conv)
	if got := evs[len(evs)-1].Type; got != "run.completed" {
		t.Fatalf("the run ended with %s: %v", got, types(evs))
	}

	db.back()
	waitFor(t, "/readyz 200 on the first process", func() bool { return a.status("/readyz") == http.StatusOK })
	a.close()
	if len(a.tools.waiting) != 0 {
		t.Error("the first process ran the tool again after the run was taken over")
	}
	if r, err := b.store.GetRun(t.Context(), "alice", runID); err != nil || r.Status != store.RunCompleted {
		t.Errorf("run %+v %v", r, err)
	}
	b.close()
}

// TestClusterRunWaitsOutItsCheckpointsDatabase takes the database away
// from the checkpointer alone, as the run's tool returns: the checkpoint
// cannot be stored, and the run, instead of failing, waits for the
// database and then goes on from its last checkpoint, on the stream that
// was open all along, to run.completed.
func TestClusterRunWaitsOutItsCheckpointsDatabase(t *testing.T) {
	noLeaks(t)
	data := newStorage(t, postgresBackend)
	db := newDatabase(t, data)
	stranded := make(chan struct{}, 1)
	e := newEnv(t, envOptions{backend: postgresBackend, data: data, cluster: true, checkpointDSN: db.dsn,
		configure: func(c *apitest.Config) {
			c.API.Logger = slog.New(logWatch{msg: "the run goes on from its last checkpoint", seen: stranded})
		}})
	s := e.chat(map[string]any{"message": "wait for it"})
	conv, runID := s.header("X-Conversation-ID"), s.header("X-Run-ID")
	<-e.tools.waiting
	s.until("tool.start")

	db.away()
	close(e.tools.release)
	<-stranded // the checkpoint failed; the run tries again every ClaimInterval
	<-stranded
	db.back()
	evs := s.all()
	checkRun(t, evs, 1, runID, conv)
	if got := evs[len(evs)-1].Type; got != "run.completed" {
		t.Fatalf("the run ended with %s: %v", got, types(evs))
	}
	if r, err := e.store.GetRun(t.Context(), "alice", runID); err != nil || r.Status != store.RunCompleted {
		t.Errorf("run %+v %v", r, err)
	}
	e.close()
}

// logWatch is a logger's handler that signals seen when a record whose
// message contains msg is logged: a test's sync point on what a user
// cannot see.
type logWatch struct {
	msg  string
	seen chan struct{}
}

func (w logWatch) Enabled(context.Context, slog.Level) bool { return true }

func (w logWatch) Handle(_ context.Context, r slog.Record) error {
	if strings.Contains(r.Message, w.msg) {
		select {
		case w.seen <- struct{}{}:
		default:
		}
	}
	return nil
}

func (w logWatch) WithAttrs([]slog.Attr) slog.Handler { return w }
func (w logWatch) WithGroup(string) slog.Handler      { return w }

// lockedLog keeps what a test's server logs, for the test to show when
// it fails.
type lockedLog struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestClusterProtocolStreamsSayTheyWereLost: a protocol surface's
// stream whose run stops because the process lost its database ends by
// saying so in its protocol's words (LangGraph: an SSE retry and an
// error event; AG-UI: RUN_ERROR stream_lost; the AI SDK: an error part),
// not by closing as a finished run's stream does; the run completes
// once the database is back.
func TestClusterProtocolStreamsSayTheyWereLost(t *testing.T) {
	const ask = "wait for it"
	surfaces := []struct {
		name string
		// start begins a streamed run of ask on the surface.
		start func(e *env) *http.Response
		// lost tells whether the stream's text ends saying it was lost.
		lost func(text, tail string) bool
	}{
		{"langgraph", func(e *env) *http.Response {
			status, body := e.do("POST", "/langgraph/threads", map[string]any{})
			if status != http.StatusOK {
				t.Fatalf("create thread: %d %s", status, body)
			}
			thread := jsonOf[struct {
				ThreadID string `json:"thread_id"`
			}](t, body).ThreadID
			return e.post(e.key, "/langgraph/threads/"+thread+"/runs/stream", map[string]any{
				"assistant_id": "agent", "stream_mode": []string{"updates"},
				"input": map[string]any{"messages": []map[string]any{{"type": "human", "content": ask}}}})
		}, func(text, tail string) bool {
			return strings.Contains(text, "\nretry: 1000\n") && strings.HasPrefix(tail, "event: error\n") && strings.Contains(tail, `"error":"stream_lost"`)
		}},
		{"ag-ui", func(e *env) *http.Response {
			return e.post(e.key, "/ag-ui", map[string]any{"threadId": "lost-thread", "runId": "lost-run",
				"messages": []map[string]any{{"id": "m1", "role": "user", "content": ask}}})
		}, func(_, tail string) bool {
			return strings.Contains(tail, `"type":"RUN_ERROR"`) && strings.Contains(tail, `"code":"stream_lost"`)
		}},
		{"ai-sdk", func(e *env) *http.Response {
			return e.post(e.key, "/api/ai-sdk/chat", aisdkInput("lost-chat", ask))
		}, func(text, _ string) bool {
			i := strings.LastIndex(text, `"type":"error"`)
			return i >= 0 && strings.Contains(text[i:], "broke off") && !strings.Contains(text[i:], `"type":"finish"`)
		}},
	}
	for _, sf := range surfaces {
		t.Run(sf.name, func(t *testing.T) {
			noLeaks(t)
			data := newStorage(t, postgresBackend)
			db := newDatabase(t, data)
			logs := &lockedLog{}
			e := newEnv(t, envOptions{backend: postgresBackend, data: data, cluster: true, dsn: db.dsn,
				configure: func(c *apitest.Config) { c.API.Logger = slog.New(slog.NewTextHandler(logs, nil)) }})
			t.Cleanup(func() {
				if t.Failed() {
					t.Logf("server logs:\n%s", logs.String())
				}
			})
			resp := sf.start(e)
			defer resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				b, _ := io.ReadAll(resp.Body)
				t.Fatalf("start: %d %s", resp.StatusCode, b)
			}
			<-e.tools.waiting

			db.away()
			raw, err := io.ReadAll(resp.Body)
			if err != nil {
				t.Fatal(err)
			}
			text := strings.TrimRight(string(raw), "\n")
			tail := text[strings.LastIndex(text, "\n\n")+2:]
			if !sf.lost(text, tail) {
				t.Fatalf("the stream ended without saying it was lost; its end:\n%s", text[max(0, len(text)-600):])
			}

			db.back()
			waitFor(t, "/readyz 200", func() bool { return e.status("/readyz") == http.StatusOK })
			close(e.tools.release)
			waitFor(t, "the run to complete", func() bool {
				convs, err := e.store.ListConversations(t.Context(), "alice", store.Page{Limit: 2})
				if err != nil || len(convs.Conversations) != 1 {
					return false
				}
				r, err := e.store.LatestRun(t.Context(), "alice", convs.Conversations[0].ID)
				return err == nil && r.Status == store.RunCompleted
			})
			e.close()
		})
	}
}
