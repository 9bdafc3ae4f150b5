package cognition_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/tmc/langchaingo/llms/openai"

	"github.com/trellis-ai/trellis/cognition"
	"github.com/trellis-ai/trellis/internal/jobs"
	"github.com/trellis-ai/trellis/internal/pgtest"
	"github.com/trellis-ai/trellis/llm/llmtest"
	"github.com/trellis-ai/trellis/store"
	"github.com/trellis-ai/trellis/store/pgstore"
	"github.com/trellis-ai/trellis/store/sqlitestore"
)

const childEnv = "TRELLIS_COGNITION_TEST_CHILD"

// crashTurn is the turn the crash tests learn from: one fact to remember,
// so exactly one memory is its lesson.
var crashTurn = cognition.Turn{UserID: "alice", ConversationID: "c1", RequestID: "r1",
	Query: "Remember that I live in Lisbon.", Answer: "Noted.", Outcome: "answered"}

// place is where one test's processes keep everything: a SQLite
// directory, or a PostgreSQL URL and schema.
type place struct {
	Backend, Dir, DSN, Schema string
}

// child is what a child process is told to be.
type child struct {
	place
	// Mode is "learn" (work the queue until killed) or "enqueue" (enqueue
	// crashTurn with no worker running, say so, and wait to be killed).
	Mode string
	// ModelURL, when set, is an OpenAI-compatible server the learning
	// jobs' extraction model talks to; unset, the rules learn.
	ModelURL     string
	LearnTimeout time.Duration
	RescueAfter  time.Duration
}

// open opens the place's record and a queue (not started) for a
// cognition service built from ccfg.
func (p place) open(ctx context.Context, ccfg cognition.Config, jcfg jobs.Config) (*cognition.Service, *jobs.Queue, cognition.Store, func(), error) {
	var pool *pgxpool.Pool
	closeAll := func() {}
	switch p.Backend {
	case "sqlite":
		st, err := sqlitestore.Open(ctx, filepath.Join(p.Dir, "trellis.db"))
		if err != nil {
			return nil, nil, nil, nil, err
		}
		ccfg.Store, closeAll = st, func() { st.Close() }
	case "postgres":
		cfg, err := pgxpool.ParseConfig(p.DSN)
		if err != nil {
			return nil, nil, nil, nil, err
		}
		cfg.ConnConfig.RuntimeParams["search_path"] = p.Schema
		if pool, err = pgxpool.NewWithConfig(ctx, cfg); err != nil {
			return nil, nil, nil, nil, err
		}
		st, err := pgstore.New(ctx, pool)
		if err != nil {
			pool.Close()
			return nil, nil, nil, nil, err
		}
		ccfg.Store, closeAll = st, pool.Close
	}
	svc, err := cognition.New(ccfg)
	if err != nil {
		closeAll()
		return nil, nil, nil, nil, err
	}
	ws := jobs.NewWorkers()
	svc.Register(ws)
	jcfg.PollInterval = 50 * time.Millisecond
	var q *jobs.Queue
	if p.Backend == "sqlite" {
		q, err = jobs.SQLite(ctx, filepath.Join(p.Dir, "jobs.db"), ws, jcfg)
	} else {
		q, err = jobs.Postgres(ctx, pool, ws, jcfg)
	}
	if err != nil {
		svc.Close()
		closeAll()
		return nil, nil, nil, nil, err
	}
	svc.Attach(q)
	return svc, q, ccfg.Store, func() { q.Close(); svc.Close(); closeAll() }, nil
}

// runChild is a child process: it does what spec says, then waits to be
// killed.
func runChild(spec string) {
	var c child
	if err := json.Unmarshal([]byte(spec), &c); err != nil {
		panic(err)
	}
	ctx := context.Background()
	ccfg := cognition.Config{LearnTimeout: c.LearnTimeout}
	if c.ModelURL != "" {
		m, err := openai.New(openai.WithBaseURL(c.ModelURL), openai.WithToken("test"), openai.WithModel("extractor"))
		if err != nil {
			panic(err)
		}
		ccfg.Extractor = cognition.ModelExtractor{Model: m}
	}
	svc, q, _, _, err := c.open(ctx, ccfg, jobs.Config{JobTimeout: c.LearnTimeout, RescueAfter: c.RescueAfter})
	if err != nil {
		panic(err)
	}
	switch c.Mode {
	case "learn":
		if err := q.Start(ctx); err != nil {
			panic(err)
		}
	case "enqueue":
		if err := svc.EnqueueLearning(ctx, crashTurn); err != nil {
			panic(err)
		}
		// The job is committed: the parent may kill now.
		if err := os.WriteFile(filepath.Join(c.Dir, "enqueued"), nil, 0o644); err != nil {
			panic(err)
		}
	}
	select {}
}

// start starts a child process; it is killed when the test ends, if the
// test has not killed it before.
func start(t *testing.T, c child) *exec.Cmd {
	t.Helper()
	spec, err := json.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), childEnv+"="+string(spec))
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var once sync.Once
	kill := func() { once.Do(func() { cmd.Process.Kill(); cmd.Wait() }) }
	t.Cleanup(kill)
	return cmd
}

// sigkill kills the child with SIGKILL (os.Process.Kill) and reaps it.
func sigkill(cmd *exec.Cmd) {
	cmd.Process.Kill()
	cmd.Wait()
}

// newPlace is a fresh database on the backend.
func newPlace(t *testing.T, backend string) place {
	p := place{Backend: backend, Dir: t.TempDir()}
	if backend == "postgres" {
		if os.Getenv("TRELLIS_TEST_DATABASE") == "" {
			t.Skip("TRELLIS_TEST_DATABASE is not set")
		}
		pool := pgtest.New(t)
		p.DSN, p.Schema = pool.Config().ConnString(), pool.Config().ConnConfig.RuntimeParams["search_path"]
	}
	return p
}

// learnedOnce waits until the learning job is completed, then asserts it
// took attempts attempts, left one memory holding each of want and no
// other, and answers answers in the agent's stats: a job run twice would
// leave twice as many.
func learnedOnce(t *testing.T, q *jobs.Queue, rec cognition.Store, id int64, attempts int, want []string, answers int64) {
	t.Helper()
	ctx := t.Context()
	deadline := time.Now().Add(2 * time.Minute)
	for {
		state, n, err := q.JobState(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if state == jobs.StateCompleted {
			if n != attempts {
				t.Fatalf("the job completed at attempt %d, want %d", n, attempts)
			}
			break
		}
		if state == jobs.StateCancelled || state == jobs.StateDiscarded || time.Now().After(deadline) {
			t.Fatalf("the job was not run after the restart: %s, attempt %d", state, n)
		}
		time.Sleep(50 * time.Millisecond)
	}
	page, err := rec.ListMemories(ctx, crashTurn.UserID, store.Page{Limit: store.MaxLimit})
	if err != nil {
		t.Fatal(err)
	}
	ms := page.Memories
	found := len(ms) == len(want)
	for _, w := range want {
		found = found && slices.ContainsFunc(ms, func(m store.Memory) bool { return strings.Contains(m.Summary, w) })
	}
	if !found {
		t.Fatalf("memories after the restart: %+v, want one holding each of %q", ms, want)
	}
	stats, err := rec.ToolStats(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var calls int64
	for _, s := range stats {
		if s.Tool == store.AgentTool {
			calls = s.Calls
		}
	}
	if calls != answers {
		t.Fatalf("the agent's stats count %d answers, want %d: %+v", calls, answers, stats)
	}
}

// noMemories asserts that nothing was learnt yet.
func noMemories(t *testing.T, rec cognition.Store) {
	t.Helper()
	page, err := rec.ListMemories(t.Context(), crashTurn.UserID, store.Page{Limit: store.MaxLimit})
	if err != nil || len(page.Memories) != 0 {
		t.Fatalf("memories before the restart: %+v, %v", page.Memories, err)
	}
}

// heldModel is the extraction model of a crash test: it holds its first
// request until the process that sent it is dead, then refuses it, and
// answers the later ones with one answer.
type heldModel struct {
	srv              *llmtest.OpenAIServer
	reached, release chan struct{}
	releaseOnce      sync.Once
}

func holdFirst(t *testing.T, answer string) *heldModel {
	m := &heldModel{reached: make(chan struct{}), release: make(chan struct{})}
	m.srv = llmtest.NewOpenAIServerFunc(t, func(req llmtest.Request, n int) llmtest.Response {
		if n == 1 {
			close(m.reached)
			<-m.release
			return llmtest.Response{Status: 500, ErrorMessage: "too late"}
		}
		return llmtest.Response{Text: answer}
	})
	t.Cleanup(m.free)
	return m
}

func (m *heldModel) free() { m.releaseOnce.Do(func() { close(m.release) }) }

// killWhileExtracting starts a child that works the queue, kills it
// (SIGKILL) while the model holds its extraction, and checks that job id
// is left running at its first attempt with nothing learned.
func (m *heldModel) killWhileExtracting(t *testing.T, p place, q *jobs.Queue, rec cognition.Store, id int64) {
	t.Helper()
	first := start(t, child{place: p, Mode: "learn", ModelURL: m.srv.BaseURL()})
	select {
	case <-m.reached:
	case <-time.After(60 * time.Second):
		t.Fatal("the child never asked the model")
	}
	sigkill(first)
	m.free()
	if state, n, err := q.JobState(t.Context(), id); err != nil || state != jobs.StateRunning || n != 1 {
		t.Fatalf("after the kill the job is %s at attempt %d (%v), want running at 1", state, n, err)
	}
	noMemories(t, rec)
}

// rescue starts the child that takes over the dead child's job once its
// lease runs out.
func (m *heldModel) rescue(t *testing.T, p place) {
	start(t, child{place: p, Mode: "learn", ModelURL: m.srv.BaseURL(),
		LearnTimeout: 10 * time.Second, RescueAfter: 11 * time.Second})
}

// A process killed (SIGKILL) while a learning job waits on the model's
// extraction leaves the job running; the next process rescues it, asks
// the model again, and the user has the one memory the model extracted.
func TestCrashWhileLearningResumes(t *testing.T) {
	if testing.Short() {
		t.Skip("waits for the dead process's lease to run out")
	}
	for _, backend := range []string{"sqlite", "postgres"} {
		t.Run(backend, func(t *testing.T) {
			t.Parallel()
			p := newPlace(t, backend)
			ctx := t.Context()
			m := holdFirst(t, `{"memories": [{"event": "ADD", "text": "The user lives in Lisbon"}], "preferences": {}}`)

			// Enqueue through a queue that is not started: the child takes
			// the job.
			svc, q, rec, closeAll, err := p.open(ctx, cognition.Config{}, jobs.Config{})
			if err != nil {
				t.Fatal(err)
			}
			defer closeAll()
			if err := svc.EnqueueLearning(ctx, crashTurn); err != nil {
				t.Fatal(err)
			}
			ids, err := q.Unfinished(ctx, crashTurn.Kind(), "user_id", crashTurn.UserID)
			if err != nil || len(ids) != 1 {
				t.Fatalf("learning jobs: %v, %v", ids, err)
			}

			m.killWhileExtracting(t, p, q, rec, ids[0])
			m.rescue(t, p)
			learnedOnce(t, q, rec, ids[0], 2, []string{"The user lives in Lisbon"}, 1)
			if n := len(m.srv.Requests()); n != 2 {
				t.Fatalf("the model was asked %d times, want 2 (one before the kill, one after)", n)
			}
		})
	}
}

// A process killed (SIGKILL) right after it enqueued a learning job, before
// any worker claimed it, loses nothing: the next process learns the turn.
func TestCrashAfterEnqueueLearns(t *testing.T) {
	for _, backend := range []string{"sqlite", "postgres"} {
		t.Run(backend, func(t *testing.T) {
			t.Parallel()
			p := newPlace(t, backend)
			ctx := t.Context()
			first := start(t, child{place: p, Mode: "enqueue"})
			marker := filepath.Join(p.Dir, "enqueued")
			deadline := time.Now().Add(60 * time.Second)
			for {
				_, err := os.Stat(marker)
				if err == nil {
					break
				}
				if !errors.Is(err, os.ErrNotExist) || time.Now().After(deadline) {
					t.Fatalf("the child never enqueued: %v", err)
				}
				time.Sleep(20 * time.Millisecond)
			}
			sigkill(first)

			_, q, rec, closeAll, err := p.open(ctx, cognition.Config{}, jobs.Config{})
			if err != nil {
				t.Fatal(err)
			}
			defer closeAll()
			ids, err := q.Unfinished(ctx, crashTurn.Kind(), "user_id", crashTurn.UserID)
			if err != nil || len(ids) != 1 {
				t.Fatalf("learning jobs after the kill: %v, %v", ids, err)
			}
			if state, _, err := q.JobState(ctx, ids[0]); err != nil || state != jobs.StateAvailable {
				t.Fatalf("after the kill the job is %s (%v), want available", state, err)
			}
			noMemories(t, rec)

			start(t, child{place: p, Mode: "learn"})
			learnedOnce(t, q, rec, ids[0], 1, []string{"Lisbon"}, 1)
		})
	}
}

// A process killed (SIGKILL) while a conversation's learning job waits on
// the model's one extraction for several turns leaves the job running and
// none of the turns learned; the next process rescues it, asks the model
// again with every turn, and learns each turn exactly once: the model's
// memory, one answer each in the agent's stats, the turns counted once in
// the profile, and nothing left to learn.
func TestCrashWhileLearningAConversationResumes(t *testing.T) {
	if testing.Short() {
		t.Skip("waits for the dead process's lease to run out")
	}
	turns := adaTurns
	const lesson = "Ada lives in Lisbon and likes tea"
	for _, backend := range []string{"sqlite", "postgres"} {
		t.Run(backend, func(t *testing.T) {
			t.Parallel()
			p := newPlace(t, backend)
			ctx := t.Context()
			m := holdFirst(t, `{"memories": [{"event": "ADD", "text": "`+lesson+`"}], "preferences": {}}`)

			svc, q, rec, closeAll, err := p.open(ctx, cognition.Config{LearnAfter: -1}, jobs.Config{})
			if err != nil {
				t.Fatal(err)
			}
			defer closeAll()
			conv := record(t, rec.(store.Store), crashTurn.UserID, turns)
			if err := svc.LearnLater(ctx, crashTurn.UserID, conv, len(turns)); err != nil {
				t.Fatal(err)
			}
			ids, err := q.Unfinished(ctx, cognition.Pending{}.Kind(), "conversation_id", conv)
			if err != nil || len(ids) != 1 {
				t.Fatalf("learning jobs: %v, %v", ids, err)
			}

			m.killWhileExtracting(t, p, q, rec, ids[0])
			if left, err := rec.UnlearnedTurns(ctx, crashTurn.UserID, conv, store.MaxLimit); err != nil || len(left) != len(turns) {
				t.Fatalf("turns left to learn after the kill: %d (%v), want %d", len(left), err, len(turns))
			}
			m.rescue(t, p)
			// The model's memory, and each turn's episode.
			want := []string{lesson}
			for _, tr := range turns {
				want = append(want, "Asked: "+tr.query)
			}
			learnedOnce(t, q, rec, ids[0], 2, want, int64(len(turns)))
			reqs := m.srv.Requests()
			if len(reqs) != 2 {
				t.Fatalf("the model was asked %d times, want 2 (one before the kill, one after)", len(reqs))
			}
			for _, tr := range turns {
				if !strings.Contains(string(reqs[1].Raw), tr.query) {
					t.Errorf("the rescued extraction was not shown %q", tr.query)
				}
			}
			prof, err := rec.GetProfile(ctx, crashTurn.UserID)
			if err != nil || prof.Patterns["turns"] != len(turns) {
				t.Errorf("profile after the restart: %+v (%v), want %d turns counted once", prof, err, len(turns))
			}
			if left, err := rec.UnlearnedTurns(ctx, crashTurn.UserID, conv, store.MaxLimit); err != nil || len(left) != 0 {
				t.Errorf("turns left to learn after the restart: %d (%v), want none", len(left), err)
			}
		})
	}
}
