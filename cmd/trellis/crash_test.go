package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/trellis-ai/trellis/internal/sqlopen"
)

// crashEnv is one database and one MCP server (testdata/countserver),
// shared by the trellis serve processes a crash test starts in turn.
type crashEnv struct {
	t     *testing.T
	env   []string
	count string // the count server's file of side effects
	// hold is the file the count server's charge and stamp wait on
	// while it exists.
	hold string
	// data is the SQLite data directory; dsn the PostgreSQL database.
	data, dsn string
}

// countServerDir holds the count server countServer built, if it did;
// TestMain removes it.
var countServerDir string

// countServer builds testdata/countserver once a process: every crash
// test runs the same binary, with files of its own to count in and to
// hold on.
var countServer = sync.OnceValues(func() (string, error) {
	dir, err := os.MkdirTemp("", "trellis-countserver-")
	if err != nil {
		return "", err
	}
	countServerDir = dir
	bin := filepath.Join(dir, "countserver")
	if out, err := exec.Command("go", "build", "-o", bin, "./testdata/countserver").CombinedOutput(); err != nil {
		return "", fmt.Errorf("%w\n%s", err, out)
	}
	return bin, nil
})

func newCrashEnv(t *testing.T, db string) *crashEnv {
	t.Helper()
	dir := t.TempDir()
	bin, err := countServer()
	if err != nil {
		t.Fatalf("building the count server: %v", err)
	}
	e := &crashEnv{t: t, count: filepath.Join(dir, "effects"), hold: filepath.Join(dir, "hold")}
	cfg, _ := json.Marshal(map[string]any{"mcpServers": map[string]any{"count": map[string]any{
		"command": bin, "env": map[string]string{"COUNT_FILE": e.count, "HOLD_FILE": e.hold}, "requireApproval": []string{"write"},
	}}})
	cfgPath := filepath.Join(dir, "mcp.json")
	if err := os.WriteFile(cfgPath, cfg, 0o600); err != nil {
		t.Fatal(err)
	}
	script, err := filepath.Abs("testdata/crash.json")
	if err != nil {
		t.Fatal(err)
	}
	e.env = []string{"TRELLIS_MODEL=scripted:" + script, "TRELLIS_MCP_CONFIG=" + cfgPath, "TRELLIS_APPROVAL_TOOLS="}
	switch db {
	case "sqlite":
		e.data = filepath.Join(dir, "data")
		e.env = append(e.env, "TRELLIS_DATA_DIR="+e.data)
	case "postgres":
		e.dsn = pgDSN(t)
		e.env = append(e.env, "DATABASE_URL="+e.dsn)
	}
	return e
}

// holdMessages keeps the record from storing messages until the
// returned func is called: it takes the lock of the messages table on
// PostgreSQL, and the write lock of the whole record on SQLite (its
// checkpoints, in their own file, are stored on).
func (e *crashEnv) holdMessages() (release func()) {
	e.t.Helper()
	return e.holdWrites(`LOCK TABLE messages IN EXCLUSIVE MODE`, "trellis.db")
}

// holdCheckpoints takes the write lock of the checkpoint tables, as a
// transaction that has not committed yet holds it, and returns what
// releases it: until then no checkpoint is stored (on SQLite, for the
// server's busy timeout of 10 s at most), while the chat store writes
// on.
func (e *crashEnv) holdCheckpoints() (release func()) {
	e.t.Helper()
	return e.holdWrites(`LOCK TABLE checkpoints, checkpoint_blobs, checkpoint_writes IN EXCLUSIVE MODE`, "checkpoints.db")
}

// holdWrites takes a write lock as a transaction that has not committed
// yet holds it, and returns what releases it: on PostgreSQL the one the
// statement lock takes, on SQLite the one of the data directory's file.
func (e *crashEnv) holdWrites(lock, file string) (release func()) {
	e.t.Helper()
	ctx := context.Background()
	if e.dsn != "" {
		conn, err := pgx.Connect(ctx, e.dsn)
		if err != nil {
			e.t.Fatal(err)
		}
		tx, err := conn.Begin(ctx)
		if err == nil {
			_, err = tx.Exec(ctx, lock)
		}
		if err != nil {
			e.t.Fatal(err)
		}
		return func() {
			_ = tx.Rollback(ctx)
			_ = conn.Close(ctx)
		}
	}
	db, err := sqlopen.SQLite(filepath.Join(e.data, file))
	if err != nil {
		e.t.Fatal(err)
	}
	tx, err := db.BeginTx(ctx, nil) // BEGIN IMMEDIATE: the write lock
	if err != nil {
		e.t.Fatal(err)
	}
	return func() {
		_ = tx.Rollback()
		_ = db.Close()
	}
}

func (e *crashEnv) start() *child { return startServe(e.t, e.env...) }

// startConnected starts a process and waits, 30 s at most, until the
// count server's tools are listed: a chat sent before would find no tool
// of that name yet, and a call to it needs approval (fail closed).
func (e *crashEnv) startConnected() *child {
	c := e.start()
	deadline := time.Now().Add(30 * time.Second)
	for {
		var got struct {
			Tools []struct {
				Name      string
				Available bool
			}
		}
		err := json.NewDecoder(c.do("GET", "/api/v1/tools", nil).Body).Decode(&got)
		n := 0
		for _, tool := range got.Tools {
			if (tool.Name == "write" || tool.Name == "ask_name") && tool.Available {
				n++
			}
		}
		if err == nil && n == 2 {
			return c
		}
		if time.Now().After(deadline) {
			e.t.Fatalf("the count server's tools were not listed: %+v %v\n%s", got, err, c.logs.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// effects counts the side effects the count server recorded that start
// with prefix.
func (e *crashEnv) effects(prefix string) int {
	b, err := os.ReadFile(e.count)
	if os.IsNotExist(err) {
		return 0
	}
	if err != nil {
		e.t.Fatal(err)
	}
	n := 0
	for line := range strings.Lines(string(b)) {
		if strings.HasPrefix(line, prefix) {
			n++
		}
	}
	return n
}

// runStatus waits, 30 s at most, until the conversation's only run has
// the status, polling the API (the processes are separate).
func runStatus(t *testing.T, c *child, conv, status string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		var got struct{ Runs []struct{ Status string } }
		err := json.NewDecoder(c.do("GET", "/api/v1/conversations/"+conv, nil).Body).Decode(&got)
		if err == nil && len(got.Runs) == 1 && got.Runs[0].Status == status {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the run did not become %s: %+v %v\n%s", status, got, err, c.logs.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// pendingIDs lists the ids of what waits for the user (kind "approvals",
// "elicitations", "clarifications" or "uncertain_calls") in the
// conversation.
func pendingIDs(t *testing.T, c *child, kind, conv string) []string {
	t.Helper()
	path, idField := "/api/v1/approvals/pending", "approval_id"
	switch kind {
	case "uncertain_calls":
		path, idField = "/api/v1/uncertain-calls/pending", "uncertain_call_id"
	case "elicitations":
		path, idField = "/api/v1/elicitation/pending", "elicitation_id"
	case "clarifications":
		path, idField = "/api/v1/clarifications/pending", "clarification_id"
	}
	var list map[string][]map[string]any
	if err := json.NewDecoder(c.do("GET", path+"?conversation_id="+conv, nil).Body).Decode(&list); err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, p := range list[kind] {
		id, _ := p[idField].(string)
		ids = append(ids, id)
	}
	return ids
}

// followToEnd reads the run's events from the last one seen until
// run.completed, reconnecting after each terminal event, and checks that
// the ids run on without a gap across every process.
func followToEnd(t *testing.T, c *child, conv, runID string, seen []event) []event {
	t.Helper()
	for len(seen) < 1000 && seen[len(seen)-1].typ != "run.completed" {
		r := c.do("GET", "/api/v1/conversations/"+conv+"/stream", nil, "Last-Event-ID", strconv.FormatInt(seen[len(seen)-1].id, 10))
		if r.StatusCode == http.StatusNoContent {
			t.Fatalf("the run ended with %s", seen[len(seen)-1].typ)
		}
		seen = append(seen, sseEvents(t, r, nil)...)
	}
	var typs []string
	for i, e := range seen {
		typs = append(typs, e.typ)
		if e.id != int64(i+1) || e.data["run_id"] != runID {
			t.Fatalf("event %d: id %d run %v; events %v", i, e.id, e.data["run_id"], typs)
		}
	}
	if typs[len(typs)-1] != "run.completed" {
		t.Fatalf("events: %v", typs)
	}
	return seen
}

// An approval asked for a tool of an MCP server survives crashes at the
// worst moments — while the run waits on its open stream, and while it
// is parked — and the gated tool never runs until a human says yes,
// though every restarted process recovers the run before the server has
// reconnected. Once approved, it runs exactly once.
func TestCrashWhileAnMCPToolAwaitsApproval(t *testing.T) {
	t.Parallel()
	for _, db := range []string{"sqlite", "postgres"} {
		t.Run(db, func(t *testing.T) {
			e := newCrashEnv(t, db)
			first := e.startConnected()
			resp := first.do("POST", "/api/v1/chat", map[string]any{"message": "write a note"})
			conv, runID := resp.Header.Get("X-Conversation-ID"), resp.Header.Get("X-Run-ID")
			seen := sseEvents(t, resp, func(ev event) bool { return ev.typ == "approval.required" })
			approval, _ := seen[len(seen)-1].data["approval_id"].(string)
			if approval == "" || seen[len(seen)-1].data["tool"] != "write" {
				t.Fatalf("no approval of write: %+v", seen[len(seen)-1])
			}
			first.stop(syscall.SIGKILL) // waiting on the open stream

			second := e.start()
			runStatus(t, second, conv, "interrupted") // recovered, and parked again on the same approval
			if ids := pendingIDs(t, second, "approvals", conv); len(ids) != 1 || ids[0] != approval {
				t.Fatalf("pending approvals after a crash: %v, want [%s]", ids, approval)
			}
			second.stop(syscall.SIGKILL) // parked

			third := e.start()
			if ids := pendingIDs(t, third, "approvals", conv); len(ids) != 1 || ids[0] != approval {
				t.Fatalf("pending approvals after a second crash: %v, want [%s]", ids, approval)
			}
			if n := e.effects("write"); n != 0 {
				t.Fatalf("the gated tool ran %d times with nobody approving it", n)
			}
			if r := third.do("POST", "/api/v1/approvals/"+approval, map[string]any{"decision": "approve"}); r.StatusCode != http.StatusOK {
				b, _ := io.ReadAll(r.Body)
				t.Fatalf("approve: %d %s", r.StatusCode, b)
			}
			seen = followToEnd(t, third, conv, runID, seen)
			if n := e.effects("write n1"); n != 1 {
				t.Errorf("the approved tool ran %d times, want once", n)
			}
			for _, ev := range seen {
				if ev.typ == "tool.error" {
					t.Errorf("a tool failed on the way: %v", ev.data)
				}
			}
			third.stop(syscall.SIGTERM)
		})
	}
}

// A tool's question survives crashes — while the tool waits for the
// answer on the open stream, and while the run is parked on it — and an
// answer given to a process started after them is delivered: the MCP
// call is issued again with it, and the tool acts once.
func TestCrashWhileAnMCPToolAsks(t *testing.T) {
	t.Parallel()
	for _, db := range []string{"sqlite", "postgres"} {
		t.Run(db, func(t *testing.T) {
			e := newCrashEnv(t, db)
			first := e.startConnected()
			resp := first.do("POST", "/api/v1/chat", map[string]any{"message": "greet me by name"})
			conv, runID := resp.Header.Get("X-Conversation-ID"), resp.Header.Get("X-Run-ID")
			seen := sseEvents(t, resp, func(ev event) bool { return ev.typ == "elicitation.request" })
			question, _ := seen[len(seen)-1].data["elicitation_id"].(string)
			if question == "" {
				t.Fatalf("no question: %+v", seen[len(seen)-1])
			}
			first.stop(syscall.SIGKILL) // the tool waits for the answer

			second := e.start()
			runStatus(t, second, conv, "interrupted") // recovered: the tool asked again, nobody watched, the run parked
			if ids := pendingIDs(t, second, "elicitations", conv); len(ids) != 1 || ids[0] != question {
				t.Fatalf("pending questions after a crash: %v, want [%s]", ids, question)
			}
			second.stop(syscall.SIGKILL) // parked on the question

			third := e.start()
			r := third.do("POST", "/api/v1/elicitation/respond", map[string]any{"elicitation_id": question, "action": "accept", "content": map[string]any{"name": "Ada"}})
			if r.StatusCode != http.StatusOK {
				b, _ := io.ReadAll(r.Body)
				t.Fatalf("answer: %d %s", r.StatusCode, b)
			}
			seen = followToEnd(t, third, conv, runID, seen)
			var result string
			for _, ev := range seen {
				if ev.typ == "tool.complete" {
					result, _ = ev.data["result"].(string)
				}
			}
			if result != "hello Ada" {
				t.Errorf("tool result %q, want %q", result, "hello Ada")
			}
			if n := e.effects("ask Ada"); n != 1 {
				t.Errorf("the tool acted %d times, want once", n)
			}
			if ids := pendingIDs(t, third, "elicitations", conv); len(ids) != 0 {
				t.Errorf("still pending: %v", ids)
			}
			third.stop(syscall.SIGTERM)
		})
	}
}

// A clarifying question survives a crash of the process its run parked
// in: the next process lists it pending under the same id, and the
// user's next message, sent to that process, answers it.
func TestCrashWhileAClarificationWaits(t *testing.T) {
	t.Parallel()
	for _, db := range []string{"sqlite", "postgres"} {
		t.Run(db, func(t *testing.T) {
			e := newCrashEnv(t, db)
			first := e.start()
			resp := first.do("POST", "/api/v1/chat", map[string]any{"message": "book a table for two"})
			conv := resp.Header.Get("X-Conversation-ID")
			seen := sseEvents(t, resp, nil)
			last := seen[len(seen)-1]
			question, _ := last.data["clarification_id"].(string)
			if last.typ != "run.interrupted" || question == "" {
				t.Fatalf("the run ended with %s %v", last.typ, last.data)
			}
			first.stop(syscall.SIGKILL)

			second := e.start()
			if ids := pendingIDs(t, second, "clarifications", conv); len(ids) != 1 || ids[0] != question {
				t.Fatalf("pending questions after a crash: %v, want [%s]", ids, question)
			}
			r := second.do("POST", "/api/v1/chat/sync", map[string]any{"message": "Oslo", "conversation_id": conv})
			var res struct{ Status string }
			if err := json.NewDecoder(r.Body).Decode(&res); err != nil || r.StatusCode != http.StatusOK || res.Status != "completed" {
				t.Fatalf("the answer: %d %+v %v\n%s", r.StatusCode, res, err, second.logs.String())
			}
			if ids := pendingIDs(t, second, "clarifications", conv); len(ids) != 0 {
				t.Errorf("still pending after the answer: %v", ids)
			}
			second.stop(syscall.SIGTERM)
		})
	}
}

// A run's budget holds across a crash: of a budget of two tool calls, one
// is spent before the process is killed (SIGKILL once reflect started,
// so after the step that made the call was checkpointed, while reflect
// waits on the model), and of the two calls the supervisor plans in the
// process that recovers the run, one runs and the other is refused. (A
// process killed inside the step that makes a call runs that step again:
// a tool's call is at least once, and the budget counts what the
// checkpoints saw.)
func TestCrashKeepsTheBudgetSpent(t *testing.T) {
	t.Parallel()
	for _, db := range []string{"sqlite", "postgres"} {
		t.Run(db, func(t *testing.T) {
			e := newCrashEnv(t, db)
			first := e.start()
			resp := first.do("POST", "/api/v1/chat", map[string]any{"message": "tally three sums",
				"budget": map[string]any{"max_tool_calls": 2}})
			conv := resp.Header.Get("X-Conversation-ID")
			seen := sseEvents(t, resp, func(ev event) bool { return ev.typ == "node.start" && ev.data["node"] == "reflect" })
			if last := seen[len(seen)-1]; last.typ != "node.start" {
				t.Fatalf("the run ended with %s %v", last.typ, last.data)
			}
			first.stop(syscall.SIGKILL)

			second := e.start()
			runID, _ := seen[0].data["run_id"].(string)
			seen = followToEnd(t, second, conv, runID, seen)
			var results int
			var done map[string]any
			for _, ev := range seen {
				switch ev.typ {
				case "tool.complete":
					results++
				case "response.done":
					done = ev.data
				}
			}
			b, _ := done["budget"].(map[string]any)
			if b["exceeded"] != "tool_calls" || b["tool_calls"] != float64(2) || results != 2 {
				t.Errorf("budget %v, %d tools run; want tool_calls exceeded at 2, 2 tools run", b, results)
			}
			second.stop(syscall.SIGTERM)
		})
	}
}

// A sync chat's events wait to be stored with its end, since nobody
// streams them. A process killed while they wait loses only events
// nobody was sent, and the process that continues the run stores a
// whole log: run.started first, ids without a gap, one run.completed.
func TestCrashWhileASyncRunsEventsWait(t *testing.T) {
	t.Parallel()
	for _, db := range []string{"sqlite", "postgres"} {
		t.Run(db, func(t *testing.T) {
			e := newCrashEnv(t, db)
			first := e.start()
			body, _ := json.Marshal(map[string]any{"message": "tally three sums", "budget": map[string]any{"max_tool_calls": 2}})
			answered := make(chan struct{})
			go func() {
				defer close(answered)
				// Killed under it: the request fails, and nobody was sent an event.
				if resp, err := http.Post(first.url+"/api/v1/chat/sync", "application/json", bytes.NewReader(body)); err == nil {
					resp.Body.Close()
				}
			}()
			// Killed once the turn's first checkpoint is stored, while the
			// run's first events still wait for EventDelay. (Killed before
			// it, the run starts again: TestCrashBeforeARunsFirstCheckpoint.)
			var conv string
			for deadline := time.Now().Add(30 * time.Second); ; {
				if conv == "" {
					var list struct{ Conversations []struct{ ID string } }
					if json.NewDecoder(first.do("GET", "/api/v1/conversations", nil).Body).Decode(&list) == nil && len(list.Conversations) == 1 {
						conv = list.Conversations[0].ID
					}
				} else {
					var state struct {
						Checkpoint struct {
							ID string `json:"checkpoint_id"`
						} `json:"checkpoint"`
					}
					if json.NewDecoder(first.do("GET", "/langgraph/threads/"+conv+"/state", nil).Body).Decode(&state) == nil && state.Checkpoint.ID != "" {
						break
					}
				}
				if time.Now().After(deadline) {
					t.Fatalf("no turn started\n%s", first.logs.String())
				}
			}
			first.stop(syscall.SIGKILL)
			<-answered

			second := e.start()
			runStatus(t, second, conv, "completed")
			seen := sseEvents(t, second.do("GET", "/api/v1/conversations/"+conv+"/stream?after=0", nil), nil)
			var typs []string
			counts := map[string]int{}
			for i, ev := range seen {
				typs = append(typs, ev.typ)
				counts[ev.typ]++
				if ev.id != int64(i+1) {
					t.Fatalf("event %d has id %d: %v", i, ev.id, typs)
				}
			}
			if len(typs) == 0 || typs[0] != "run.started" || typs[len(typs)-1] != "run.completed" ||
				counts["run.started"] != 1 || counts["run.completed"] != 1 {
				t.Errorf("the run's stored events: %v", typs)
			}
			second.stop(syscall.SIGTERM)
		})
	}
}

// A sync run stores its answer and response.done with its end, in one
// transaction. A process killed after the run's last checkpoint (its
// graph had ended) and before that transaction committed leaves
// neither: the next process continues the run from its end, says the
// answer again, and stores it once, with one response.done.
func TestCrashBeforeASyncRunsEnd(t *testing.T) {
	t.Parallel()
	for _, db := range []string{"sqlite", "postgres"} {
		t.Run(db, func(t *testing.T) {
			e := newCrashEnv(t, db)
			first := e.start()
			answered := make(chan struct{})
			go func() {
				defer close(answered)
				// Killed under it: the request fails, and nobody was told the answer.
				body := strings.NewReader(`{"message": "slow answer"}`)
				if resp, err := http.Post(first.url+"/api/v1/chat/sync", "application/json", body); err == nil {
					resp.Body.Close()
				}
			}()
			var conv string
			for deadline := time.Now().Add(30 * time.Second); conv == ""; {
				var list struct{ Conversations []struct{ ID string } }
				if json.NewDecoder(first.do("GET", "/api/v1/conversations", nil).Body).Decode(&list) == nil && len(list.Conversations) == 1 {
					conv = list.Conversations[0].ID
				}
				if time.Now().After(deadline) {
					t.Fatalf("no turn started\n%s", first.logs.String())
				}
			}
			// The supervisor's model answers after 1.5 s; the turn then
			// ends, its checkpoints stored, and its end waits on the lock.
			release := e.holdMessages()
			defer release()
			for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
				var state struct {
					Values struct{ Messages []json.RawMessage } `json:"values"`
					Next   []string                             `json:"next"`
				}
				if json.NewDecoder(first.do("GET", "/langgraph/threads/"+conv+"/state", nil).Body).Decode(&state) == nil &&
					len(state.Next) == 0 && len(state.Values.Messages) == 2 {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("the turn's graph did not end\n%s", first.logs.String())
				}
			}
			time.Sleep(300 * time.Millisecond) // the run's end is stored, and waits
			first.stop(syscall.SIGKILL)
			release()
			<-answered

			second := e.start()
			runStatus(t, second, conv, "completed")
			if answers := assistantAnswers(t, second, conv); !slices.Equal(answers, []string{"Done."}) {
				t.Errorf("answers %q, want one", answers)
			}
			seen := sseEvents(t, second.do("GET", "/api/v1/conversations/"+conv+"/stream?after=0", nil), nil)
			if n := len(of(seen, "response.done")); n != 1 || seen[len(seen)-1].typ != "run.completed" || of(seen, "response.done")[0].data["content"] != "Done." {
				t.Errorf("the run's stored events: %v", types(seen))
			}
			second.stop(syscall.SIGTERM)
		})
	}
}

// A streamed run stores its answer with its response.done as soon as it
// says it, if the batch before is written by then (else they go with
// the run's end), and its end after its last checkpoint. A process
// killed while the end waits (on the usage record's lock) leaves the
// run running, and the answer stored or not: the next process
// continues the run from its end and says the answer again, which it
// stores if it is not, and drops with its response.done if it is, so
// neither is stored twice. On SQLite one lock holds the whole record,
// so the answer cannot be let through and the end held;
// TestCrashBeforeASyncRunsEnd holds both there.
func TestCrashBeforeAStreamedRunsEnd(t *testing.T) {
	t.Parallel()
	e := newCrashEnv(t, "postgres")
	first := e.start()
	release := e.holdWrites(`LOCK TABLE usage_days IN EXCLUSIVE MODE`, "")
	defer release()
	resp := first.do("POST", "/api/v1/chat", map[string]any{"message": "slow answer"})
	defer resp.Body.Close()
	conv := resp.Header.Get("X-Conversation-ID")
	waitForSQL(t, e.dsn, "the run's end waits on the lock", `SELECT EXISTS (SELECT 1 FROM pg_stat_activity
WHERE datname = current_database() AND wait_event_type = 'Lock' AND starts_with(query, 'INSERT INTO usage_days'))`)
	first.stop(syscall.SIGKILL)
	release()

	second := e.start()
	runStatus(t, second, conv, "completed")
	if answers := assistantAnswers(t, second, conv); !slices.Equal(answers, []string{"Done."}) {
		t.Errorf("answers %q, want one", answers)
	}
	stored := sseEvents(t, second.do("GET", "/api/v1/conversations/"+conv+"/stream?after=0", nil), nil)
	if n := len(of(stored, "response.done")); n != 1 || stored[len(stored)-1].typ != "run.completed" {
		t.Errorf("the run's stored events: %v", types(stored))
	}
	second.stop(syscall.SIGTERM)
}

// waitForSQL waits, 30 s at most, until query, which reads one
// boolean, reads true in the database of dsn; what names the wait.
func waitForSQL(t *testing.T, dsn, what, query string, args ...any) {
	t.Helper()
	conn, err := pgx.Connect(t.Context(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		var ok bool
		err := conn.QueryRow(t.Context(), query, args...).Scan(&ok)
		if err == nil && ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within 30 s (%v)", what, err)
		}
	}
}

// A process killed after storing a run and before the run's first
// checkpoint (the checkpoint tables are locked, so none can be stored)
// leaves nothing of the turn but the run and the user's message. The
// next process starts the run again from its stored input: a new
// conversation's first message and a later message of an older one are
// both answered, each by a run of its own, and neither run fails nor
// takes up the turn before it.
func TestCrashBeforeARunsFirstCheckpoint(t *testing.T) {
	t.Parallel()
	for _, db := range []string{"sqlite", "postgres"} {
		t.Run(db, func(t *testing.T) {
			e := newCrashEnv(t, db)
			e.env = append(e.env, "TRELLIS_RATE_PER_MINUTE=-1") // it polls
			app := fmt.Sprintf("trellis_crash_%016x", rand.Uint64())
			env := e.env
			if db == "postgres" {
				env = append(slices.Clone(env), "DATABASE_URL="+e.dsn+"&application_name="+app) // the last one counts
			}
			first := startServe(t, env...)
			r := first.do("POST", "/api/v1/chat/sync", map[string]any{"message": "hello"})
			var turn1 struct {
				ConversationID string `json:"conversation_id"`
				Status         string
			}
			if err := json.NewDecoder(r.Body).Decode(&turn1); err != nil || turn1.Status != "completed" {
				t.Fatalf("the first turn: %+v %v", turn1, err)
			}
			old := turn1.ConversationID

			release := e.holdCheckpoints()
			defer release()
			var sent sync.WaitGroup
			for _, body := range []map[string]any{{"message": "hello again", "conversation_id": old}, {"message": "hi there"}} {
				b, _ := json.Marshal(body)
				sent.Go(func() {
					// Killed under it: the request fails.
					if resp, err := http.Post(first.url+"/api/v1/chat/sync", "application/json", bytes.NewReader(b)); err == nil {
						resp.Body.Close()
					}
				})
			}
			var fresh string
			for deadline := time.Now().Add(8 * time.Second); ; {
				runs := map[string][]string{}
				var list struct{ Conversations []struct{ ID string } }
				if json.NewDecoder(first.do("GET", "/api/v1/conversations", nil).Body).Decode(&list) == nil {
					for _, c := range list.Conversations {
						runs[c.ID] = conversationRuns(t, first, c.ID).statuses()
						if c.ID != old {
							fresh = c.ID
						}
					}
				}
				if len(runs) == 2 && slices.Equal(runs[old], []string{"completed", "running"}) && slices.Equal(runs[fresh], []string{"running"}) {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("the two runs did not start: %v\n%s", runs, first.logs.String())
				}
				time.Sleep(20 * time.Millisecond)
			}
			first.stop(syscall.SIGKILL)
			sent.Wait()
			if db == "postgres" {
				// A dead client's session lives on until PostgreSQL
				// notices, and would store the checkpoint it sent once
				// the lock is gone. The case here is the one where
				// nothing was stored, so end those sessions first.
				terminate(t, e.dsn, app)
			}
			release()

			second := e.start()
			for _, tc := range []struct {
				conv, message string
				runs          int
			}{{old, "hello again", 2}, {fresh, "hi there", 1}} {
				var c convRuns
				for deadline := time.Now().Add(30 * time.Second); ; {
					c = conversationRuns(t, second, tc.conv)
					if st := c.statuses(); len(st) == tc.runs && st[tc.runs-1] != "running" {
						break
					}
					if time.Now().After(deadline) {
						t.Fatalf("the run was not taken up: %+v\n%s", c, second.logs.String())
					}
					time.Sleep(50 * time.Millisecond)
				}
				last := c.Runs[tc.runs-1]
				var answers []string
				for _, m := range c.Messages {
					if m.RunID == last.ID && m.Role == "assistant" {
						answers = append(answers, m.Content)
					}
				}
				if last.Status != "completed" || last.UserMessage != tc.message || !slices.Equal(answers, []string{"Done."}) {
					t.Errorf("%s: run %+v, answers %q\n%s", tc.message, last, answers, second.logs.String())
				}
			}
			second.stop(syscall.SIGTERM)
		})
	}
}

// terminate ends the PostgreSQL sessions of application app, and
// whatever they were doing.
func terminate(t *testing.T, dsn, app string) {
	t.Helper()
	ctx := t.Context()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(ctx, `SELECT pg_terminate_backend(pid, 5000) FROM pg_stat_activity WHERE application_name = $1`, app); err != nil {
		t.Fatal(err)
	}
}

// convRuns is what GET /api/v1/conversations/{id} says of its runs and
// messages.
type convRuns struct {
	Runs []struct {
		ID              string
		Status          string
		UserMessage     string `json:"user_message"`
		Superseded      bool
		ParentID        string `json:"parent_id"`
		Events          []runEvent
		EventsTruncated bool `json:"events_truncated"`
	}
	Messages []struct {
		RunID   string `json:"run_id"`
		Role    string
		Content string
	}
}

// runEvent is a run's event as its conversation shows it.
type runEvent struct {
	Seq  int64
	Type string
}

func (c convRuns) statuses() []string {
	var out []string
	for _, r := range c.Runs {
		out = append(out, r.Status)
	}
	return out
}

func conversationRuns(t *testing.T, c *child, conv string) convRuns {
	t.Helper()
	var got convRuns
	if err := json.NewDecoder(c.do("GET", "/api/v1/conversations/"+conv, nil).Body).Decode(&got); err != nil {
		t.Fatal(err)
	}
	return got
}

// effectLines returns the count server's recorded side effects that
// start with prefix, whole.
func (e *crashEnv) effectLines(prefix string) []string {
	b, err := os.ReadFile(e.count)
	if err != nil && !os.IsNotExist(err) {
		e.t.Fatal(err)
	}
	var out []string
	for line := range strings.Lines(string(b)) {
		if strings.HasPrefix(line, prefix) {
			out = append(out, strings.TrimSpace(line))
		}
	}
	return out
}

// awaitEffects waits, 30 s at most, until n side effects starting with
// prefix are recorded.
func (e *crashEnv) awaitEffects(prefix string, n int) {
	e.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for e.effects(prefix) < n {
		if time.Now().After(deadline) {
			e.t.Fatalf("%d side effects %q, want %d", e.effects(prefix), prefix, n)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// inCall sends message as a new chat to c, reads its stream to its
// tool.start and waits until the call's side effect (a line starting
// with effect) is recorded: the turn is inside its call (with
// holdCalls, held there). It returns the conversation, the run and the
// events read.
func (e *crashEnv) inCall(c *child, message, effect string) (conv, runID string, seen []event) {
	e.t.Helper()
	resp := c.do("POST", "/api/v1/chat", map[string]any{"message": message})
	conv, runID = resp.Header.Get("X-Conversation-ID"), resp.Header.Get("X-Run-ID")
	seen = sseEvents(e.t, resp, func(ev event) bool { return ev.typ == "tool.start" })
	e.awaitEffects(effect, 1)
	return conv, runID, seen
}

// parkedOnUncertainCall makes a run that may have charged: message is
// sent to a first process, which is killed while the charge (a side
// effect starting with effect) is inside its call; a second process
// recovers the run and parks it on an uncertain call. It returns the
// second process, the conversation and the run.
func (e *crashEnv) parkedOnUncertainCall(message, effect string) (b *child, conv, runID string) {
	e.t.Helper()
	release := e.holdCalls()
	a := e.startConnected()
	conv, runID, _ = e.inCall(a, message, effect)
	a.stop(syscall.SIGKILL)
	release()
	b = e.startConnected()
	runStatus(e.t, b, conv, "interrupted")
	return b, conv, runID
}

// holdCalls makes the count server's charge and stamp wait inside the call
// until the returned func is called.
func (e *crashEnv) holdCalls() (release func()) {
	e.t.Helper()
	if err := os.WriteFile(e.hold, nil, 0o600); err != nil {
		e.t.Fatal(err)
	}
	return func() {
		if err := os.Remove(e.hold); err != nil && !os.IsNotExist(err) {
			e.t.Fatal(err)
		}
	}
}

// A call of a tool that is neither read-only nor idempotent, cut off by
// a crash after its side effect, is never started again on its own: the
// recovered run parks, each such call is put to the person as an
// uncertain call, and their answers do what they say — retry runs it
// exactly once more, with the same idempotency key; skip and fail run
// nothing, and the model is told. The answers come through the native
// API (fail), LangGraph's HumanInTheLoopMiddleware interrupt (approve:
// retry) and AG-UI's interrupt (skip), each of which shows the call.
func TestCrashWhileANonIdempotentToolRuns(t *testing.T) {
	t.Parallel()
	for _, db := range []string{"sqlite", "postgres"} {
		t.Run(db, func(t *testing.T) {
			e := newCrashEnv(t, db)
			release := e.holdCalls()
			first := e.startConnected()
			type chat struct {
				note, conv, runID, decision string
				seen                        []event
			}
			chats := []*chat{{note: "alpha", decision: "retry"}, {note: "beta", decision: "skip"}, {note: "gamma", decision: "fail"}}
			for _, c := range chats {
				c.conv, c.runID, c.seen = e.inCall(first, "charge "+c.note, "charge "+c.note+" ")
			}
			first.stop(syscall.SIGKILL) // every charge is inside its call, its side effect done
			release()

			second := e.start()
			for _, c := range chats {
				runStatus(t, second, c.conv, "interrupted")
				ids := pendingIDs(t, second, "uncertain_calls", c.conv)
				if len(ids) != 1 {
					t.Fatalf("%s: uncertain calls after a crash: %v, want one", c.note, ids)
				}
				if n := e.effects("charge " + c.note + " "); n != 1 {
					t.Fatalf("%s: the call ran %d times before anybody answered, want once", c.note, n)
				}
				if r := second.do("POST", "/api/v1/uncertain-calls/"+ids[0], map[string]any{"decision": "maybe"}); r.StatusCode != http.StatusBadRequest {
					t.Errorf("an unknown decision: %d, want 400", r.StatusCode)
				}
				answerUncertainCall(t, second, c.conv, ids[0], c.decision)
				if r := second.do("POST", "/api/v1/uncertain-calls/"+ids[0], map[string]any{"decision": c.decision}); r.StatusCode != http.StatusConflict {
					t.Errorf("a second answer: %d, want 409", r.StatusCode)
				}
				c.seen = followToEnd(t, second, c.conv, c.runID, c.seen)
				var asked, resolved bool
				var result string
				for _, ev := range c.seen {
					switch ev.typ {
					case "tool.uncertain":
						asked = ev.data["uncertain_call_id"] == ids[0] && ev.data["tool"] == "charge"
					case "uncertain_call.resolved":
						resolved = ev.data["uncertain_call_id"] == ids[0] && ev.data["decision"] == c.decision
					case "tool.complete":
						result, _ = ev.data["result"].(string)
					case "tool.error":
						result, _ = ev.data["error"].(string)
					}
				}
				if !asked {
					t.Errorf("%s: the stream never announced the uncertain call %s", c.note, ids[0])
				}
				if !resolved {
					t.Errorf("%s: the stream never told the decision %s on %s (uncertain_call.resolved)", c.note, c.decision, ids[0])
				}
				lines := e.effectLines("charge " + c.note + " ")
				switch c.decision {
				case "retry":
					if len(lines) != 2 || lines[0] != lines[1] || strings.HasSuffix(lines[0], " ") {
						t.Errorf("retried: side effects %q, want two, with one idempotency key", lines)
					}
					if result != "charge done: alpha" {
						t.Errorf("retried: result %q", result)
					}
				case "skip":
					if len(lines) != 1 || !strings.Contains(result, "skip") {
						t.Errorf("skipped: side effects %q, result %q: want one, and the model told it was skipped", lines, result)
					}
				case "fail":
					if len(lines) != 1 || !strings.HasPrefix(result, "Failed:") {
						t.Errorf("failed: side effects %q, result %q: want one, and the model told it failed", lines, result)
					}
				}
			}
			second.stop(syscall.SIGTERM)
		})
	}
}

// A call of an idempotent tool cut off by a crash is simply run again
// by the recovered run, with the same idempotency key, and nobody is
// asked.
func TestCrashWhileAnIdempotentToolRuns(t *testing.T) {
	t.Parallel()
	for _, db := range []string{"sqlite", "postgres"} {
		t.Run(db, func(t *testing.T) {
			e := newCrashEnv(t, db)
			release := e.holdCalls()
			first := e.startConnected()
			conv, runID, seen := e.inCall(first, "stamp the record", "stamp s1 ")
			first.stop(syscall.SIGKILL)
			release()

			second := e.start()
			seen = followToEnd(t, second, conv, runID, seen)
			lines := e.effectLines("stamp s1 ")
			if len(lines) != 2 || lines[0] != lines[1] || strings.HasSuffix(lines[0], "s1") {
				t.Errorf("side effects %q, want two with one idempotency key", lines)
			}
			for _, ev := range seen {
				if ev.typ == "tool.uncertain" {
					t.Errorf("an idempotent call was put to the person: %v", ev.data)
				}
			}
			if ids := pendingIDs(t, second, "uncertain_calls", conv); len(ids) != 0 {
				t.Errorf("uncertain calls: %v", ids)
			}
			second.stop(syscall.SIGTERM)
		})
	}
}

// answerUncertainCall answers the conversation's uncertain call id, the
// one it waits on, with decision: retry through the LangGraph adapter,
// skip through AG-UI, fail through the native API. The adapters must
// show the call as they show an approval first.
func answerUncertainCall(t *testing.T, c *child, conv, id, decision string) {
	t.Helper()
	var r *http.Response
	switch decision {
	case "retry":
		var thread struct {
			Interrupts map[string][]struct {
				ID    string `json:"id"`
				Value struct {
					ActionRequests []struct{ Name, Description string } `json:"action_requests"`
				} `json:"value"`
			} `json:"interrupts"`
		}
		if err := json.NewDecoder(c.do("GET", "/langgraph/threads/"+conv, nil).Body).Decode(&thread); err != nil {
			t.Fatal(err)
		}
		var shown bool
		for _, ins := range thread.Interrupts {
			for _, in := range ins {
				shown = shown || in.ID == id && len(in.Value.ActionRequests) == 1 && in.Value.ActionRequests[0].Name == "charge" &&
					strings.Contains(in.Value.ActionRequests[0].Description, "may have run")
			}
		}
		if !shown {
			t.Errorf("the LangGraph thread does not show the uncertain call %s: %+v", id, thread)
		}
		r = c.do("POST", "/langgraph/threads/"+conv+"/runs/wait", map[string]any{"assistant_id": "agent",
			"command": map[string]any{"resume": map[string]any{"decisions": []map[string]any{{"type": "approve"}}}}})
	case "skip":
		r = c.do("POST", "/ag-ui", map[string]any{"threadId": conv, "runId": "ag-run-1", "messages": []any{},
			"resume": []map[string]any{{"interruptId": id, "status": "resolved", "payload": map[string]any{"decision": "skip"}}}})
	default:
		r = c.do("POST", "/api/v1/uncertain-calls/"+id, map[string]any{"decision": decision})
	}
	b, _ := io.ReadAll(r.Body)
	if r.StatusCode != http.StatusOK {
		t.Fatalf("answer %s: %d %s", decision, r.StatusCode, b)
	}
	if decision == "skip" && !bytes.Contains(b, []byte("RUN_FINISHED")) {
		t.Errorf("the AG-UI resume did not stream the run to its end: %s", b)
	}
}

// A call that ended before the crash, though its step's checkpoint was
// never stored, is not run again and nobody is asked: its recorded
// outcome is its result.
func TestCrashAfterANonIdempotentToolEnded(t *testing.T) {
	t.Parallel()
	for _, db := range []string{"sqlite", "postgres"} {
		t.Run(db, func(t *testing.T) {
			e := newCrashEnv(t, db)
			release := e.holdCalls()
			first := e.startConnected()
			resp := first.do("POST", "/api/v1/chat", map[string]any{"message": "charge alpha"})
			conv, runID := resp.Header.Get("X-Conversation-ID"), resp.Header.Get("X-Run-ID")
			seen := sseEvents(t, resp, func(ev event) bool { return ev.typ == "tool.start" })
			e.awaitEffects("charge alpha ", 1)
			unlock := e.holdCheckpoints() // the step that ran the call is never checkpointed
			release()
			seen = append(seen, sseEvents(t, resp, func(ev event) bool { return ev.typ == "tool.complete" })...)
			first.stop(syscall.SIGKILL)
			unlock()

			second := e.start()
			seen = followToEnd(t, second, conv, runID, seen)
			if n := e.effects("charge alpha "); n != 1 {
				t.Errorf("the call ran %d times, want once", n)
			}
			var results []string
			for _, ev := range seen {
				switch ev.typ {
				case "tool.uncertain":
					t.Errorf("a call that had ended was put to the person: %v", ev.data)
				case "tool.complete":
					r, _ := ev.data["result"].(string)
					results = append(results, r)
				}
			}
			if len(results) == 0 || results[len(results)-1] != "charge done: alpha" {
				t.Errorf("tool results %q, want the recorded one last", results)
			}
			second.stop(syscall.SIGTERM)
		})
	}
}

// assistantAnswers is the conversation's assistant messages, as c's API
// lists them.
func assistantAnswers(t *testing.T, c *child, conv string) []string {
	t.Helper()
	var got struct {
		Messages []struct{ Role, Content string }
	}
	if err := json.NewDecoder(c.do("GET", "/api/v1/conversations/"+conv, nil).Body).Decode(&got); err != nil {
		t.Fatal(err)
	}
	var answers []string
	for _, m := range got.Messages {
		if m.Role == "assistant" {
			answers = append(answers, m.Content)
		}
	}
	return answers
}

// A run whose clarifying question's deadline let it go on answers a
// second time: the question, then the answer it went on to. A crash
// after that answer's barrier was committed and before the answer was
// stored continues the run from the barrier, and the next process
// stores the answer: it is not taken for the question said again. The
// question is stored once, and so is the answer.
func TestCrashBeforeTheAnswerOfAContinuedRun(t *testing.T) {
	t.Parallel()
	for _, db := range []string{"sqlite", "postgres"} {
		t.Run(db, func(t *testing.T) {
			t.Parallel() // each backend has its own processes and database; most of it is waiting for the deadline
			e := newCrashEnv(t, db)
			e.env = append(e.env, "TRELLIS_CLARIFICATION_TIMEOUT=1s", "TRELLIS_CLARIFICATION_EXPIRY=continue")
			first := e.start()
			resp := first.do("POST", "/api/v1/chat", map[string]any{"message": "book a table slowly"})
			conv, runID := resp.Header.Get("X-Conversation-ID"), resp.Header.Get("X-Run-ID")
			seen := sseEvents(t, resp, nil)
			if last := seen[len(seen)-1]; last.typ != "run.interrupted" || last.data["reason"] != "clarification" {
				t.Fatalf("the run did not ask: %v", last)
			}
			// The deadline lets the run go on; it writes its answer for
			// 1.5 s, then commits stream's barrier and stores the answer,
			// which waits on the lock.
			r := first.do("GET", "/api/v1/conversations/"+conv+"/stream", nil, "Last-Event-ID", strconv.FormatInt(seen[len(seen)-1].id, 10))
			seen = append(seen, sseEvents(t, r, func(ev event) bool { return ev.typ == "node.start" && ev.data["node"] == "write" })...)
			release := e.holdMessages()
			time.Sleep(2500 * time.Millisecond)
			first.stop(syscall.SIGKILL)
			release()

			second := e.start()
			seen = followToEnd(t, second, conv, runID, seen)
			if n := len(of(seen, "response.done")); n != 2 {
				t.Errorf("response.done %d times, want the question's and the answer's: %v", n, types(seen))
			}
			// The kill came after stream's barrier: the next process
			// goes on from there, and does not write the answer again.
			writes := 0
			for _, ev := range of(seen, "node.start") {
				if ev.data["node"] == "write" {
					writes++
				}
			}
			if writes != 1 {
				t.Errorf("the answer was written %d times, want once: %v", writes, types(seen))
			}
			if answers, want := assistantAnswers(t, second, conv), []string{"In which city?", "Booked."}; !slices.Equal(answers, want) {
				t.Errorf("answers %q, want %q", answers, want)
			}
			second.stop(syscall.SIGTERM)
		})
	}
}

// Under the default durability (boundary) a turn writes no checkpoint
// between its input's and its first barrier. A crash while that barrier
// is being committed — before a call of a tool with side effects
// starts, before an approval is announced, before the answer is
// recorded — continues the turn from its input: its model calls run
// again, the tool runs once, the approval is asked and answerable, the
// answer is recorded once, and the events the client was told stay
// where they were, the new ones numbered after them.
func TestCrashAtABarrier(t *testing.T) {
	t.Parallel()
	for _, db := range []string{"sqlite", "postgres"} {
		t.Run(db, func(t *testing.T) {
			e := newCrashEnv(t, db)
			for _, tc := range []struct{ message, effect string }{
				{"slow charge", "charge delta "},
				{"slow approval", "write n2"},
				{"slow answer", ""},
			} {
				first := e.startConnected()
				resp := first.do("POST", "/api/v1/chat", map[string]any{"message": tc.message})
				conv, runID := resp.Header.Get("X-Conversation-ID"), resp.Header.Get("X-Run-ID")
				// The supervisor's model answers after 1.5 s: its step
				// started, the input's checkpoint is stored; none other
				// can be until the lock is released.
				seen := sseEvents(t, resp, func(ev event) bool { return ev.typ == "node.start" && ev.data["node"] == "supervisor" })
				release := e.holdCheckpoints()
				time.Sleep(2500 * time.Millisecond) // the barrier waits on the lock
				first.stop(syscall.SIGKILL)
				release()
				if tc.effect != "" && e.effects(tc.effect) != 0 {
					t.Fatalf("%s: the tool ran before its barrier was stored", tc.message)
				}

				second := e.start()
				if tc.message == "slow approval" {
					runStatus(t, second, conv, "interrupted")
					ids := pendingIDs(t, second, "approvals", conv)
					if len(ids) != 1 {
						t.Fatalf("%s: pending approvals %v, want one", tc.message, ids)
					}
					if r := second.do("POST", "/api/v1/approvals/"+ids[0], map[string]any{"decision": "approve"}); r.StatusCode != http.StatusOK {
						b, _ := io.ReadAll(r.Body)
						t.Fatalf("approve: %d %s", r.StatusCode, b)
					}
				}
				seen = followToEnd(t, second, conv, runID, seen)
				if tc.effect != "" {
					if n := e.effects(tc.effect); n != 1 {
						t.Errorf("%s: the tool ran %d times, want once", tc.message, n)
					}
				}
				if answers := assistantAnswers(t, second, conv); !slices.Equal(answers, []string{"Done."}) {
					t.Errorf("%s: answers %q, want one", tc.message, answers)
				}
				second.stop(syscall.SIGTERM)
			}
		})
	}
}
