package e2e_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/trellis-ai/trellis/api"
	"github.com/trellis-ai/trellis/api/apitest"
	"github.com/trellis-ai/trellis/api/metrics"
	"github.com/trellis-ai/trellis/api/web"
	"github.com/trellis-ai/trellis/api/web/webtest"
	"github.com/trellis-ai/trellis/events"
	"github.com/trellis-ai/trellis/graph/checkpoint/sqlite"
	"github.com/trellis-ai/trellis/llm"
	"github.com/trellis-ai/trellis/operators"
	"github.com/trellis-ai/trellis/runs"
	"github.com/trellis-ai/trellis/store/sqlitestore"
)

// server is the real Trellis server under test: api.New with a SQLite
// store and checkpointer in the test's temporary directory, a scripted
// model, the test tools, and the web page at "/", served by httptest on
// loopback in local mode (no API keys).
type server struct {
	t     *testing.T
	URL   string
	model *llm.Scripted
	// deleted gets the path of each delete_file call that ran.
	deleted chan string
	// booked gets what the book_table tool received from the user.
	booked chan booking
	// local is the provider's registry of local tools, for options that
	// add tools.
	local *operators.Registry

	mu   sync.Mutex
	reqs []request
	// stop runs after the server's shutdown, before its databases close.
	stop []func()
}

// request is one request the server got, as the recorder saw it.
type request struct {
	Method, Path, LastEventID string
}

// booking is what book_table received from its three questions.
type booking struct {
	Name     string
	Guests   int
	Seating  string
	Allergy  bool
	Time     string
	Confirm  bool
	Declined bool
}

// newServer starts the server with the scripted model replaying
// testdata/<script>. A cleanup shuts it down as trellis serve does and
// closes its databases; it runs after the browser's cleanup, since the
// browser is started later.
func newServer(t *testing.T, script string, opts ...func(*server, *apitest.Config)) *server {
	t.Helper()
	ctx := context.Background()
	dbPath := filepath.Join(t.TempDir(), "trellis.db")
	st, err := sqlitestore.Open(ctx, dbPath)
	if err != nil {
		t.Fatal(err)
	}
	saver, err := sqlite.Open(ctx, filepath.Join(filepath.Dir(dbPath), "checkpoints.db"))
	if err != nil {
		st.Close()
		t.Fatal(err)
	}
	sc, err := llm.LoadScript(filepath.Join("testdata", script))
	if err != nil {
		t.Fatal(err)
	}
	model := llm.NewScripted(sc)
	models, err := llm.NewRegistry(llm.Config{
		// It thinks where its script says so, as TRELLIS_MODEL=scripted: configures it.
		Models:     []llm.ModelConfig{{ID: "scripted", Provider: llm.ProviderScripted, Instance: model, ToolCalling: true, Thinking: true}},
		Resilience: llm.ResilienceConfig{Disabled: true},
	})
	if err != nil {
		t.Fatal(err)
	}
	s := &server{t: t, model: model, deleted: make(chan string, 16), booked: make(chan booking, 16)}
	collector := metrics.New()
	cfg := apitest.Config{
		Runs: runs.Config{Checkpointer: saver, Models: models, Tools: s.tools(collector)},
		API:  api.Config{Store: st, Metrics: collector, Web: web.Handler(), Limits: api.Limits{RatePerMinute: -1}},
	}
	for _, o := range opts {
		o(s, &cfg)
	}
	srv, err := apitest.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(s.record(srv.Handler()))
	s.URL = ts.URL
	t.Cleanup(func() {
		sctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
		defer cancel()
		if err := srv.Shutdown(sctx); err != nil {
			t.Errorf("shutdown: %v", err)
		}
		ts.CloseClientConnections()
		ts.Close()
		for _, stop := range s.stop {
			stop()
		}
		saver.Close()
		st.Close()
	})
	return s
}

// tools is the one provider: the built-ins (calculator needs approval by
// the policy), delete_file (needs approval by its own spec) and
// book_table (asks the user three questions).
func (s *server) tools(metrics *metrics.Collector) *operators.Provider {
	local := operators.NewRegistry()
	s.local = local
	p := operators.NewProvider(operators.ProviderConfig{Local: local, OnBreakerChange: metrics.BreakerChanged,
		Approval: operators.ApprovalPolicy{Tools: []string{"calculator"}}})
	local.MustAdd(operators.Builtins(operators.BuiltinConfig{Info: operators.SelfInfo{Name: "Trellis", Version: "e2e"}, Tools: p})...)
	local.MustAdd(
		operators.NewTool("delete_file", "Deletes a file.", func(ctx context.Context, c operators.Call, in pathIn) (operators.Result, error) {
			s.deleted <- in.Path
			return operators.TextResult("deleted " + in.Path), nil
		}, operators.RequiresApproval()),
		operators.NewTool("book_table", "Books a table at the restaurant; asks the user for the details.", s.bookTable),
	)
	return p
}

type pathIn struct {
	Path string `json:"path" jsonschema:"the file to delete"`
}

type emptyIn struct{}

// bookingSchema is what book_table asks first, with Elicit.
var bookingSchema = &jsonschema.Schema{
	Type: "object",
	Properties: map[string]*jsonschema.Schema{
		"name":    {Type: "string", Title: "Name for the booking", MinLength: jsonschema.Ptr(2)},
		"guests":  {Type: "integer", Title: "Guests", Minimum: jsonschema.Ptr(1.0), Maximum: jsonschema.Ptr(12.0), Default: json.RawMessage("2")},
		"seating": {Type: "string", Title: "Seating", Enum: []any{"indoor", "terrace"}},
		"allergy": {Type: "boolean", Title: "Someone has a food allergy", Description: "The kitchen will call you."},
	},
	Required:      []string{"name", "guests", "seating"},
	PropertyOrder: []string{"name", "guests", "seating", "allergy"},
}

// bookTable asks for the booking's details (Elicit), a time (Choose) and a
// last yes (Confirm), sends what it got to s.booked, and shows the
// booking to the user directly.
func (s *server) bookTable(ctx context.Context, c operators.Call, _ emptyIn) (operators.Result, error) {
	var b booking
	resp, err := c.Elicit(ctx, "Who is the table for?", bookingSchema)
	if err != nil {
		return operators.Result{}, err
	}
	if resp.Action != events.ElicitAccept {
		b.Declined = true
		s.booked <- b
		return operators.TextResult("the user did not give the details (" + string(resp.Action) + ")"), nil
	}
	if err := json.Unmarshal(resp.Content, &b); err != nil {
		return operators.Result{}, fmt.Errorf("book_table: the answer %s: %w", resp.Content, err)
	}
	if b.Time, err = c.Choose(ctx, "Which time?", []string{"18:00", "19:30", "21:00"}); err != nil {
		return operators.Result{}, err
	}
	if b.Confirm, err = c.Confirm(ctx, fmt.Sprintf("Book a %s table for %d at %s under %s?", b.Seating, b.Guests, b.Time, b.Name)); err != nil {
		return operators.Result{}, err
	}
	s.booked <- b
	if !b.Confirm {
		return operators.TextResult("the user changed their mind"), nil
	}
	summary := fmt.Sprintf("Booked: %s, %d guests, %s, at %s.", b.Name, b.Guests, b.Seating, b.Time)
	if err := c.SendText(ctx, summary); err != nil {
		return operators.Result{}, err
	}
	return operators.TextResult(summary), nil
}

// record notes each request before serving it.
func (s *server) record(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.reqs = append(s.reqs, request{Method: r.Method, Path: r.URL.Path, LastEventID: r.Header.Get("Last-Event-ID")})
		s.mu.Unlock()
		h.ServeHTTP(w, r)
	})
}

// requests returns the recorded requests with method and path.
func (s *server) requests(method, path string) []request {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []request
	for _, r := range s.reqs {
		if r.Method == method && r.Path == path {
			out = append(out, r)
		}
	}
	return out
}

// checkScript fails the test when a step of the script was never used.
func (s *server) checkScript() {
	s.t.Helper()
	if left := s.model.Unconsumed(); len(left) > 0 {
		s.t.Errorf("unused script steps: %q", left)
	}
}

// conversation is GET /api/v1/conversations/{id}, the fields the tests
// check.
type conversation struct {
	ID       string `json:"id"`
	Messages []struct {
		Role    string `json:"role"`
		Content string `json:"content"`
		RunID   string `json:"run_id"`
	} `json:"messages"`
	Runs []struct {
		ID          string         `json:"id"`
		Status      string         `json:"status"`
		UserMessage string         `json:"user_message"`
		Usage       map[string]int `json:"usage"`
		CompletedAt *time.Time     `json:"completed_at"`
		Events      []storedEvent  `json:"events"`
	} `json:"runs"`
}

type storedEvent struct {
	Seq  int64  `json:"seq"`
	Type string `json:"type"`
}

// getJSON gets path from the server's API and decodes its JSON answer.
func getJSON[T any](s *server, path string) T {
	s.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, "GET", s.URL+path, nil)
	if err != nil {
		s.t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		s.t.Fatalf("GET %s: %v", path, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		s.t.Fatalf("GET %s: %d %s %v", path, resp.StatusCode, body, err)
	}
	var v T
	if err := json.Unmarshal(body, &v); err != nil {
		s.t.Fatalf("GET %s: decode %s: %v", path, body, err)
	}
	return v
}

// conversation gets the conversation the page shows.
func (s *server) conversation(p *webtest.Page) conversation {
	s.t.Helper()
	return getJSON[conversation](s, "/api/v1/conversations/"+conversationID(s.t, p))
}

// conversationID reads the current conversation's id from the page's
// location (#/c/<id>).
func conversationID(t *testing.T, p *webtest.Page) string {
	t.Helper()
	hash := webtest.Eval[string](p, "decodeURIComponent(location.hash)")
	id, ok := strings.CutPrefix(hash, "#/c/")
	if !ok || id == "" {
		t.Fatalf("the page shows no conversation (location.hash %q)", hash)
	}
	return id
}

// receive waits for a value on ch, at most 20 s.
func receive[T any](t *testing.T, what string, ch <-chan T) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(20 * time.Second):
		t.Fatalf("timed out waiting for %s", what)
		panic("unreachable")
	}
}

// open starts a browser for the test and opens the page s serves.
func open(t *testing.T, s *server) *webtest.Page {
	t.Helper()
	return webtest.Open(t, webtest.Browser(t), s.URL)
}

// turn is the selector of the n-th turn of the transcript, from 1.
func turn(n int) string {
	return fmt.Sprintf("#transcript > li.turn:nth-of-type(%d)", n)
}

// waitState waits until the turn matching css has data-state state.
func waitState(p *webtest.Page, css, state string) {
	p.WaitJS("the turn is "+state, `(sel, want) => document.querySelector(sel)?.dataset.state === want`, css, state)
}

// openAll opens every details element matching css, so a screenshot shows
// what they hold.
func openAll(p *webtest.Page, css string) {
	webtest.Eval[bool](p, `(document.querySelectorAll(`+strconv.Quote(css)+`).forEach((d) => { d.open = true }), true)`)
}

// post sends a POST with no body to the server's API and returns the
// status.
func post(t *testing.T, s *server, path string) int {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, "POST", s.URL+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("POST %s: %v", path, err)
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	return resp.StatusCode
}
