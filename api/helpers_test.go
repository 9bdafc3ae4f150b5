package api_test

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"io"
	"iter"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
	sse "github.com/tmaxmax/go-sse"
	"go.uber.org/goleak"

	"github.com/trellis-ai/trellis/api"
	"github.com/trellis-ai/trellis/api/apitest"
	"github.com/trellis-ai/trellis/api/metrics"
	"github.com/trellis-ai/trellis/api/middleware"
	"github.com/trellis-ai/trellis/events"
	"github.com/trellis-ai/trellis/graph"
	"github.com/trellis-ai/trellis/graph/checkpoint/postgres"
	"github.com/trellis-ai/trellis/graph/checkpoint/sqlite"
	"github.com/trellis-ai/trellis/internal/pgtest"
	"github.com/trellis-ai/trellis/llm"
	"github.com/trellis-ai/trellis/operators"
	"github.com/trellis-ai/trellis/runs"
	"github.com/trellis-ai/trellis/store"
	"github.com/trellis-ai/trellis/store/pgstore"
	"github.com/trellis-ai/trellis/store/sqlitestore"
	"github.com/trellis-ai/trellis/store/sqlitestore/sqlitetest"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m,
		// The SQLite driver's and database/sql's goroutines end with
		// their database; these stay for the process.
		goleak.IgnoreTopFunction("github.com/jackc/pgx/v5/pgxpool.(*Pool).backgroundHealthCheck"),
		goleak.IgnoreAnyFunction("database/sql.(*DB).connectionOpener"),
	)
}

// Keys of the test users.
const (
	aliceKey = "key-alice"
	bobKey   = "key-bob"
)

// backend names a storage backend the tests run on.
type backend string

const (
	sqliteBackend   backend = "sqlite"
	postgresBackend backend = "postgres"
)

var backends = []backend{sqliteBackend, postgresBackend}

// storage is one backend's database, which several servers may open in
// turn (a restart).
type storage struct {
	kind backend
	path string // SQLite file
	dsn  string // Postgres
}

func newStorage(t testing.TB, kind backend) *storage {
	t.Helper()
	s := &storage{kind: kind}
	switch kind {
	case sqliteBackend:
		s.path = sqlitetest.Fresh(t, filepath.Join(t.TempDir(), "trellis.db"))
	case postgresBackend:
		pool := pgtest.New(t) // makes the schema; dropped at cleanup
		cc := pool.Config().ConnConfig
		s.dsn = pool.Config().ConnString()
		if sp := cc.RuntimeParams["search_path"]; sp != "" && !strings.Contains(s.dsn, "search_path") {
			sep := "?"
			if strings.Contains(s.dsn, "?") {
				sep = "&"
			}
			s.dsn += sep + "search_path=" + sp
		}
		pool.Close()
	}
	return s
}

// open opens the database; dsn and checkpointDSN, when set, are the
// Postgres URLs the store and the checkpointer connect with instead of
// s.dsn (as another role, say).
func (s *storage) open(t testing.TB, dsn, checkpointDSN string) (store.Store, graph.Checkpointer, func()) {
	t.Helper()
	ctx := context.Background()
	switch s.kind {
	case postgresBackend:
		st, err := pgstore.Open(ctx, cmp.Or(dsn, s.dsn))
		if err != nil {
			t.Fatal(err)
		}
		// As trellis serve opens it (cmd/trellis checkpointPool): the
		// checkpoints commit without waiting for the WAL flush.
		sep := "?"
		if strings.Contains(s.dsn, "?") {
			sep = "&"
		}
		saver, err := postgres.Open(ctx, cmp.Or(checkpointDSN, s.dsn+sep+"synchronous_commit=off"))
		if err != nil {
			t.Fatal(err)
		}
		return st, saver, func() { saver.Close(); st.Close() }
	default:
		st, err := sqlitestore.Open(ctx, s.path)
		if err != nil {
			t.Fatal(err)
		}
		saver, err := sqlite.Open(ctx, strings.TrimSuffix(s.path, "trellis.db")+"checkpoints.db")
		if err != nil {
			t.Fatal(err)
		}
		return st, saver, func() { saver.Close(); st.Close() }
	}
}

// tools are the test tools' controls.
type tools struct {
	// waiting gets a value each time the wait tool starts; release
	// lets every wait tool call return.
	waiting chan string
	release chan struct{}
	deleted chan string
}

type emptyIn struct{}

type pathIn struct {
	Path string `json:"path" jsonschema:"the file to delete"`
}

// newProvider has the built-ins and four tools: delete_file (needs
// approval), wait (read-only; blocks until released or cancelled),
// settle (blocks as wait does, but is neither read-only nor idempotent)
// and ask (asks the user for their name).
func newProvider(metrics *metrics.Collector, questions operators.Expiry, approval ...string) (*operators.Provider, *tools) {
	tl := &tools{waiting: make(chan string, 16), release: make(chan struct{}), deleted: make(chan string, 16)}
	local := operators.NewRegistry()
	p := operators.NewProvider(operators.ProviderConfig{Local: local, OnBreakerChange: metrics.BreakerChanged,
		Approval: operators.ApprovalPolicy{Tools: approval}, ElicitationExpiry: questions})
	local.MustAdd(operators.Builtins(operators.BuiltinConfig{Info: operators.SelfInfo{Name: "Trellis", Version: "test"}, Tools: p})...)
	nameSchema := &jsonschema.Schema{Type: "object", Properties: map[string]*jsonschema.Schema{
		"name": {Type: "string", MinLength: jsonschema.Ptr(1)},
	}, Required: []string{"name"}}
	local.MustAdd(
		operators.NewTool("delete_file", "Deletes a file.", func(ctx context.Context, c operators.Call, in pathIn) (operators.Result, error) {
			tl.deleted <- in.Path
			return operators.TextResult("deleted " + in.Path), nil
		}, operators.RequiresApproval()),
		operators.NewTool("wait", "Waits until released.", func(ctx context.Context, c operators.Call, _ emptyIn) (operators.Result, error) {
			tl.waiting <- c.ToolCallID
			select {
			case <-tl.release:
				return operators.TextResult("released"), nil
			case <-ctx.Done():
				return operators.Result{}, ctx.Err()
			}
		}, operators.ReadOnly()), // it acts on nothing: a run taken over mid-call runs it again
		operators.NewTool("settle", "Settles the bill once released.", func(ctx context.Context, c operators.Call, _ emptyIn) (operators.Result, error) {
			tl.waiting <- c.ToolCallID
			select {
			case <-tl.release:
				return operators.TextResult("settled"), nil
			case <-ctx.Done():
				return operators.Result{}, ctx.Err()
			}
		}), // neither read-only nor idempotent: a run taken over mid-call asks a person
		operators.NewTool("ask", "Asks the user for their name.", func(ctx context.Context, c operators.Call, _ emptyIn) (operators.Result, error) {
			resp, err := c.Elicit(ctx, "What is your name?", nameSchema)
			if err != nil {
				return operators.Result{}, err
			}
			switch resp.Action {
			case events.ElicitAccept:
				var v struct{ Name string }
				_ = json.Unmarshal(resp.Content, &v)
				return operators.TextResult("hello " + v.Name), nil
			default:
				return operators.TextResult("the user would not say (" + string(resp.Action) + ")"), nil
			}
		}),
	)
	return p, tl
}

// env is a server under test with its clients.
type env struct {
	t     testing.TB
	srv   *api.Server
	ts    *httptest.Server
	store store.Store
	tools *tools
	// model is the scripted model, whose calls a test may read.
	model *llm.Scripted
	data  *storage
	// closeDB closes the store and checkpointer after the server.
	closeDB func()
	// key is the bearer key requests use unless told otherwise.
	key string
}

type envOptions struct {
	backend   backend
	data      *storage // reuse a database (a restart)
	local     bool     // no keys
	configure func(*apitest.Config)
	approval  []string
	// questionExpiry is the deadline of the tools' questions.
	questionExpiry operators.Expiry
	// cluster (Postgres only) makes the server one process of several
	// sharing the database: it listens as its owner (see api.Cluster).
	cluster bool
	// dsn and checkpointDSN (Postgres only), when set, are how the
	// server's store and checkpointer connect to data.
	dsn, checkpointDSN string
	// script, when set, is the scripted model's script (JSON) in place
	// of testdata/agent.json.
	script string
}

func newEnv(t testing.TB, o envOptions) *env {
	t.Helper()
	if o.backend == "" {
		o.backend = sqliteBackend
	}
	if o.data == nil {
		o.data = newStorage(t, o.backend)
	}
	st, saver, closeDB := o.data.open(t, o.dsn, o.checkpointDSN)
	script, err := llm.LoadScript("testdata/agent.json")
	if o.script != "" {
		script, err = llm.ParseScript([]byte(o.script))
	}
	if err != nil {
		t.Fatal(err)
	}
	model := llm.NewScripted(script)
	models, err := llm.NewRegistry(llm.Config{
		// It thinks where its script says so, as TRELLIS_MODEL=scripted: configures it.
		Models:     []llm.ModelConfig{{ID: "scripted", Provider: llm.ProviderScripted, Instance: model, ToolCalling: true, Thinking: true}},
		Resilience: llm.ResilienceConfig{Disabled: true},
	})
	if err != nil {
		t.Fatal(err)
	}
	collector := metrics.New()
	provider, tl := newProvider(collector, o.questionExpiry, o.approval...)
	cfg := apitest.Config{
		Runs: runs.Config{Models: models, Tools: provider, Checkpointer: saver},
		API:  api.Config{Store: st, Metrics: collector, Limits: api.Limits{RatePerMinute: -1}, Heartbeat: 50 * time.Millisecond},
	}
	if !o.local {
		cfg.API.Keys = map[middleware.APIKey]string{aliceKey: "alice", bobKey: "bob"}
	}
	if o.cluster {
		pg := st.(*pgstore.Store)
		owner := apitest.Owner() + ":" + t.Name()
		l, err := pg.Listen(t.Context(), owner)
		if err != nil {
			t.Fatal(err)
		}
		cfg.Runs.Cluster, cfg.Runs.Notices, cfg.Runs.Owner, cfg.Runs.ClaimInterval = pg, l, owner, 100*time.Millisecond
		closeStore := closeDB
		closeDB = func() {
			_ = l.Close()
			closeStore()
		}
	}
	if o.configure != nil {
		o.configure(&cfg)
	}
	srv, err := apitest.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	e := &env{t: t, srv: srv, ts: httptest.NewServer(srv.Handler()), store: st, tools: tl, model: model, data: o.data, closeDB: closeDB,
		key: aliceKey}
	if o.local {
		e.key = ""
	}
	t.Cleanup(func() { e.close() })
	return e
}

// close shuts the server down as serve does; a second call does nothing.
func (e *env) close() {
	if e.ts == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	select {
	case <-e.tools.release:
	default:
		close(e.tools.release)
	}
	if err := e.srv.Shutdown(ctx); err != nil {
		e.t.Errorf("shutdown: %v", err)
	}
	e.ts.CloseClientConnections()
	e.ts.Close()
	e.ts = nil
	e.closeDB()
}

// request makes a request with e's key (key "" sends none).
func (e *env) request(method, path string, body any, key string, headers ...string) *http.Request {
	e.t.Helper()
	var r io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		r = strings.NewReader(b)
	case []byte:
		r = bytes.NewReader(b)
	default:
		j, err := json.Marshal(b)
		if err != nil {
			e.t.Fatal(err)
		}
		r = bytes.NewReader(j)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	e.t.Cleanup(cancel)
	req, err := http.NewRequestWithContext(ctx, method, e.ts.URL+path, r)
	if err != nil {
		e.t.Fatal(err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	for i := 0; i+1 < len(headers); i += 2 {
		if headers[i+1] == "" {
			req.Header.Del(headers[i])
		} else {
			req.Header.Set(headers[i], headers[i+1])
		}
	}
	return req
}

// do sends a request as e's user and returns the status and body.
func (e *env) do(method, path string, body any, headers ...string) (int, []byte) {
	e.t.Helper()
	return e.doAs(e.key, method, path, body, headers...)
}

func (e *env) doAs(key, method, path string, body any, headers ...string) (int, []byte) {
	e.t.Helper()
	resp, err := e.ts.Client().Do(e.request(method, path, body, key, headers...))
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		e.t.Fatal(err)
	}
	return resp.StatusCode, b
}

// reply is an answered request.
type reply struct {
	status int
	header http.Header
	body   []byte
}

// send sends req with c.
func send(t testing.TB, c *http.Client, req *http.Request) reply {
	t.Helper()
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return reply{resp.StatusCode, resp.Header, b}
}

// jsonOf decodes b.
func jsonOf[T any](t testing.TB, b []byte) T {
	t.Helper()
	var v T
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatalf("decode %s: %v", b, err)
	}
	return v
}

// event is one SSE event, as the go-sse client parsed it.
type event struct {
	ID   int64
	Type string
	Data map[string]any
	Raw  string
	// LastID is the client's Last-Event-ID after the event.
	LastID string
}

func (ev event) str(field string) string {
	s, _ := ev.Data[field].(string)
	return s
}

// stream is an open SSE response.
type stream struct {
	t      testing.TB
	resp   *http.Response
	raw    *bytes.Buffer // what was read of the body, as sent
	next   func() (sse.Event, error, bool)
	stop   func()
	events []event
}

// open sends req and, expecting an SSE response, starts reading it.
func (e *env) open(req *http.Request) *stream {
	e.t.Helper()
	resp, err := e.ts.Client().Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		e.t.Fatalf("%s %s: %d %s", req.Method, req.URL.Path, resp.StatusCode, b)
	}
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		e.t.Fatalf("Content-Type %q", ct)
	}
	s := &stream{t: e.t, resp: resp, raw: &bytes.Buffer{}}
	body := io.TeeReader(resp.Body, s.raw)
	s.next, s.stop = iter.Pull2(iter.Seq2[sse.Event, error](sse.Read(body, &sse.ReadConfig{MaxEventSize: 1 << 20})))
	e.t.Cleanup(s.close)
	return s
}

// chat starts a run with POST /chat as e's user.
func (e *env) chat(body any) *stream {
	e.t.Helper()
	return e.open(e.request("POST", "/api/v1/chat", body, e.key))
}

// read returns the next event; ok is false at the end of the stream.
func (s *stream) read() (event, bool) {
	s.t.Helper()
	ev, err, ok := s.next()
	if !ok {
		return event{}, false
	}
	if err != nil {
		s.t.Fatalf("reading the stream: %v", err)
	}
	out := event{Type: ev.Type, Raw: ev.Data, LastID: ev.LastEventID}
	if ev.Type != "document.status" && ev.Type != "stream.reconnect" { // no run's: they have no id
		id, err := strconv.ParseInt(ev.LastEventID, 10, 64)
		if err != nil {
			s.t.Fatalf("event id %q: %v", ev.LastEventID, err)
		}
		out.ID = id
	}
	if err := json.Unmarshal([]byte(ev.Data), &out.Data); err != nil {
		s.t.Fatalf("event data %q: %v", ev.Data, err)
	}
	s.events = append(s.events, out)
	return out, true
}

// until reads up to and including the first event of type typ.
func (s *stream) until(typ string) event {
	s.t.Helper()
	for {
		ev, ok := s.read()
		if !ok {
			s.t.Fatalf("the stream ended before %s; got %v", typ, types(s.events))
		}
		if ev.Type == typ {
			return ev
		}
	}
}

// all reads to the end of the stream.
func (s *stream) all() []event {
	s.t.Helper()
	for {
		if _, ok := s.read(); !ok {
			return s.events
		}
	}
}

func (s *stream) close() {
	s.stop()
	s.resp.Body.Close()
}

func (s *stream) header(k string) string { return s.resp.Header.Get(k) }

func types(evs []event) []string {
	out := make([]string, len(evs))
	for i, e := range evs {
		out[i] = e.Type
	}
	return out
}

// checkRun checks the SSE contract on one run's events: ids from first,
// consecutive; every data object names its type, seq, run and
// conversation and a UTC time; exactly one terminal event, the last.
func checkRun(t testing.TB, evs []event, first int64, runID, conversationID string) {
	t.Helper()
	if len(evs) == 0 {
		t.Fatal("no events")
	}
	for i, ev := range evs {
		if ev.ID != first+int64(i) {
			t.Fatalf("event %d has id %d, want %d: %v", i, ev.ID, first+int64(i), types(evs))
		}
		if seq, _ := ev.Data["seq"].(float64); int64(seq) != ev.ID {
			t.Errorf("event %d: seq %v, id %d", i, ev.Data["seq"], ev.ID)
		}
		if ev.str("type") != ev.Type || ev.str("run_id") != runID || ev.str("conversation_id") != conversationID {
			t.Errorf("event %d envelope: %s", i, ev.Raw)
		}
		if ts, err := time.Parse(time.RFC3339Nano, ev.str("ts")); err != nil || !strings.HasSuffix(ev.str("ts"), "Z") || ts.IsZero() {
			t.Errorf("event %d ts %q", i, ev.str("ts"))
		}
		if terminal(ev.Type) != (i == len(evs)-1) {
			t.Errorf("terminal events must be exactly the last: %v", types(evs))
		}
	}
}

func terminal(typ string) bool {
	switch typ {
	case "run.completed", "run.interrupted", "run.cancelled", "run.failed":
		return true
	}
	return false
}

// apiError is API.md's error body.
type apiError struct {
	Error struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

// wantError checks a status and the error shape.
func wantError(t testing.TB, status int, body []byte, wantStatus int) {
	t.Helper()
	if status != wantStatus {
		t.Fatalf("status %d, want %d: %s", status, wantStatus, body)
	}
	e := jsonOf[apiError](t, body)
	if e.Error.Code == "" || e.Error.Message == "" {
		t.Errorf("error body %s", body)
	}
}

// waitFor polls cond until it holds or 10 s pass; for state another
// goroutine changes with nothing to wait on (a store record).
func waitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func readAll(resp *http.Response) ([]byte, error) { return io.ReadAll(resp.Body) }

// messagesOf returns the messages of a conversation of a few runs: one
// page of ListRuns holds them all.
func messagesOf(t *testing.T, st store.Store, user, conversationID string) []store.Message {
	t.Helper()
	p, err := st.ListRuns(t.Context(), user, conversationID, store.RunQuery{Limit: store.MaxRunLimit})
	if err != nil || p.NextCursor != "" {
		t.Fatalf("ListRuns of %s: %v (next %q)", conversationID, err, p.NextCursor)
	}
	return p.Messages
}
