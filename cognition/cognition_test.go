package cognition_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"go.uber.org/goleak"

	"github.com/trellis-ai/trellis/cognition"
	"github.com/trellis-ai/trellis/internal/jobs"
	"github.com/trellis-ai/trellis/internal/pgtest"
	"github.com/trellis-ai/trellis/store"
	"github.com/trellis-ai/trellis/store/pgstore"
	"github.com/trellis-ai/trellis/store/sqlitestore"
	"github.com/trellis-ai/trellis/store/sqlitestore/sqlitetest"
)

func TestMain(m *testing.M) {
	// A crash test's child process is this binary, told what to be.
	if spec := os.Getenv(childEnv); spec != "" {
		runChild(spec)
		return
	}
	goleak.VerifyTestMain(m)
}

// rig is the service on a real backend, with its job queue (not
// started unless a test starts it).
type rig struct {
	st    cognition.Store
	svc   *cognition.Service
	queue *jobs.Queue
}

type backend struct {
	name string
	open func(t testing.TB) (cognition.Store, func(t testing.TB, ws *jobs.Workers, cfg jobs.Config) *jobs.Queue)
}

func backends() []backend {
	return []backend{
		{"sqlite", func(t testing.TB) (cognition.Store, func(testing.TB, *jobs.Workers, jobs.Config) *jobs.Queue) {
			dir := t.TempDir()
			st, err := sqlitestore.Open(t.Context(), sqlitetest.Fresh(t, filepath.Join(dir, "trellis.db")))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { st.Close() })
			return st, func(t testing.TB, ws *jobs.Workers, cfg jobs.Config) *jobs.Queue {
				q, err := jobs.SQLite(t.Context(), filepath.Join(dir, "jobs.db"), ws, cfg)
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { q.Close() })
				return q
			}
		}},
		{"postgres", func(t testing.TB) (cognition.Store, func(testing.TB, *jobs.Workers, jobs.Config) *jobs.Queue) {
			if os.Getenv("TRELLIS_TEST_DATABASE") == "" {
				t.Skip("TRELLIS_TEST_DATABASE is not set")
			}
			pool := pgtest.New(t)
			st, err := pgstore.New(t.Context(), pool)
			if err != nil {
				t.Fatal(err)
			}
			return st, func(t testing.TB, ws *jobs.Workers, cfg jobs.Config) *jobs.Queue {
				jp, err := pgxpool.NewWithConfig(t.Context(), pool.Config())
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(jp.Close)
				q, err := jobs.Postgres(t.Context(), jp, ws, cfg)
				if err != nil {
					t.Fatal(err)
				}
				return q
			}
		}},
	}
}

func newRig(t *testing.T, b backend, cfg cognition.Config) rig {
	st, openQueue := b.open(t)
	cfg.Store = st
	if cfg.Budget == 0 {
		// These tests check what the context holds; TestContextBudget
		// checks the budget. A machine shared by parallel tests takes
		// longer than 100 ms for a first query now and then.
		cfg.Budget = 10 * time.Second
	}
	svc, err := cognition.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(svc.Close)
	ws := jobs.NewWorkers()
	svc.Register(ws)
	q := openQueue(t, ws, jobs.Config{PollInterval: 50 * time.Millisecond, Periodic: svc.Periodic()})
	svc.Attach(q)
	return rig{st: st, svc: svc, queue: q}
}

func startQueue(t *testing.T, q *jobs.Queue) {
	if err := q.Start(context.WithoutCancel(t.Context())); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = q.Stop(ctx)
	})
}

func TestJaccardAndMerge(t *testing.T) {
	for _, tc := range []struct {
		a, b []string
		want float64
	}{
		{nil, nil, 0},
		{[]string{"go"}, nil, 0},
		{[]string{"go", "sql"}, []string{"sql", "go"}, 1},
		{[]string{"go", "sql", "index"}, []string{"go", "sql", "index", "btree"}, 0.75},
		{[]string{"go", "sql", "index"}, []string{"go", "sql", "btree"}, 0.5},
		{[]string{"a", "a", "b"}, []string{"b", "b"}, 0.5},
	} {
		if got := cognition.Jaccard(tc.a, tc.b); got != tc.want {
			t.Errorf("Jaccard(%v, %v) = %v, want %v", tc.a, tc.b, got, tc.want)
		}
	}
	ms := []store.Memory{
		{ID: "m1", Topics: []string{"go", "sql", "index"}},
		{ID: "m2", Topics: []string{"rust", "wasm"}},
	}
	for _, tc := range []struct {
		topics []string
		want   string // "" is no merge
	}{
		{[]string{"go", "sql", "index", "btree"}, "m1"}, // 0.75
		{[]string{"go", "sql", "btree"}, ""},            // 0.5
		{[]string{"rust", "wasm"}, "m2"},                // 1
		{[]string{"rust", "wasm", "simd"}, ""},          // 0.67: just under
		{nil, ""},
	} {
		got := ""
		if i, ok := cognition.Nearest(ms, tc.topics, 0.7); ok {
			got = ms[i].ID
		}
		if got != tc.want {
			t.Errorf("Nearest(%v) = %q, want %q", tc.topics, got, tc.want)
		}
	}
	merged := cognition.Merge(store.Memory{Topics: []string{"go", "sql"}, Importance: 0.6},
		store.NewMemory{Summary: "new", Topics: []string{"sql", "btree"}, Importance: 0.4})
	if merged.Summary != "new" || !slices.Equal(merged.Topics, []string{"go", "sql", "btree"}) || merged.Importance != 0.65 {
		t.Errorf("Merge = %+v", merged)
	}
}

func TestSignals(t *testing.T) {
	for _, tc := range []struct {
		msg       string
		prefs     map[string]string
		facts     []string
		novice    bool
		expert    bool
		technical bool
	}{
		{msg: "I prefer short answers.", prefs: map[string]string{"style": "concise"}},
		{msg: "Please always give me detailed explanations", prefs: map[string]string{"style": "detailed"}},
		{msg: "I like metric units", prefs: map[string]string{"metric": "metric units"}},
		{msg: "Remember that my dog is called Rex.", facts: []string{"my dog is called Rex"}},
		// A fact ends with its sentence: the preference after it is one.
		{msg: "Remember that my cat is called Tom. I prefer answers in German.", facts: []string{"my cat is called Tom"},
			prefs: map[string]string{"german": "answers in German"}},
		{msg: "Remember that my server is 10.0.0.1!", facts: []string{"my server is 10.0.0.1"}},
		{msg: "I'm a beginner: what is a pointer?", prefs: map[string]string{"expertise": "novice"}, novice: true},
		{msg: "How do I optimize the latency of this implementation?", novice: true, expert: true},
		{msg: "which sql index makes this query fast", technical: true},
		{msg: "hello there"},
	} {
		s := cognition.Signals(tc.msg)
		if tc.prefs == nil {
			tc.prefs = map[string]string{}
		}
		if !mapsEqual(s.Preferences, tc.prefs) || !slices.Equal(s.Facts, tc.facts) ||
			(s.Novice > 0) != tc.novice || (s.Expert > 0) != tc.expert || (s.Technical > 0) != tc.technical {
			t.Errorf("Signals(%q) = %+v", tc.msg, s)
		}
	}
}

// TestSignalsPlainPhrasings: the phrasings a newcomer types keep each
// stated thing apart (a preference, a place), and interests hold what the
// user asks about: not the verbs of an order ("buy", "paint"), not the
// request's own words ("plan", "help"), not what they state of themself.
func TestSignalsPlainPhrasings(t *testing.T) {
	for _, tc := range []struct {
		msg       string
		prefs     map[string]string
		interests []string
	}{
		{msg: "I prefer answers in bullet points and I live in Lisbon",
			prefs: map[string]string{"format": "answers in bullet points", "location": "Lisbon"}},
		{msg: "I prefer answers in bullet points, and I live in Lisbon.",
			prefs: map[string]string{"format": "answers in bullet points", "location": "Lisbon"}},
		{msg: "I live in Lisbon and I prefer short answers",
			prefs: map[string]string{"location": "Lisbon", "style": "concise"}},
		{msg: "I'm from Porto, please keep it brief", prefs: map[string]string{"location": "Porto", "style": "concise"}},
		{msg: "I am based in New York with my family", prefs: map[string]string{"location": "New York"}},
		{msg: "I like metric units but I live in Ohio", prefs: map[string]string{"metric": "metric units", "location": "Ohio"}},
		{msg: "I want shorter answers", prefs: map[string]string{"style": "concise"}},
		{msg: "I want answers in bullet points", prefs: map[string]string{"format": "answers in bullet points"}},
		{msg: "I need you to answer in a table", prefs: map[string]string{"format": "you to answer in a table"}},
		{msg: "I need a plan for the launch", interests: []string{"launch"}},
		{msg: "make a plan for the shed: buy wood; build the frame, then paint it", interests: []string{"shed", "wood", "frame"}},
		{msg: "plan a 3-step trip", interests: []string{"trip"}},
		{msg: "help me plan a trip to Paris", interests: []string{"trip", "paris"}},
		{msg: "Book flights to Paris", interests: []string{"flight", "paris"}},
		{msg: "How do I install postgres?", interests: []string{"postgres"}},
		{msg: "can you explain goroutines and channels?", interests: []string{"goroutines", "channel"}},
		{msg: "Postgres is slow when I join big tables", interests: []string{"postgres", "slow", "big", "tables"}},
		{msg: "bamboo or pine for a trellis?", interests: []string{"bamboo", "pine", "trellis"}},
		{msg: "I'm learning Rust", interests: []string{"rust"}},
		{msg: "Remember that my boat is called Nautilus."},
	} {
		s := cognition.Signals(tc.msg)
		if tc.prefs == nil {
			tc.prefs = map[string]string{}
		}
		if !mapsEqual(s.Preferences, tc.prefs) || !slices.Equal(s.Topics, tc.interests) {
			t.Errorf("Signals(%q): preferences %q, interests %q; want %q, %q", tc.msg, s.Preferences, s.Topics, tc.prefs, tc.interests)
		}
	}
	// The profile keeps them as the user stated them.
	p := store.Profile{Patterns: map[string]int{}, Preferences: map[string]string{}}
	cognition.Infer(&p, cognition.Signals("I prefer answers in bullet points and I live in Lisbon"), nil)
	cognition.Infer(&p, cognition.Signals("make a plan for the shed: buy wood; build the frame, then paint it"), nil)
	if p.Preferences["format"] != "answers in bullet points" || p.Preferences["location"] != "Lisbon" || len(p.Preferences) != 2 ||
		!slices.Equal(p.Interests, []string{"shed", "wood", "frame"}) {
		t.Errorf("profile: preferences %q, interests %q", p.Preferences, p.Interests)
	}
}

func mapsEqual(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// Explicit statements win over inference, whatever comes after.
func TestInferExplicitWins(t *testing.T) {
	p := store.Profile{Patterns: map[string]int{}, Preferences: map[string]string{}}
	cognition.Infer(&p, cognition.Signals("I prefer short answers"), nil)
	for range 5 {
		cognition.Infer(&p, cognition.Signals(strings.Repeat("please explain in great depth how this works ", 5)), nil)
	}
	if p.Style != "concise" {
		t.Errorf("style = %q after a stated preference for short answers", p.Style)
	}
	q := store.Profile{Patterns: map[string]int{}, Preferences: map[string]string{}}
	for range 3 {
		cognition.Infer(&q, cognition.Signals("optimize the architecture for throughput and latency"), nil)
	}
	if q.Expertise != "expert" {
		t.Errorf("expertise = %q after expert signals", q.Expertise)
	}
	cognition.Infer(&q, cognition.Signals("I'm a beginner"), nil)
	if q.Expertise != "novice" {
		t.Errorf("expertise = %q after the user said they are a beginner", q.Expertise)
	}
	if !slices.Contains(q.Interests, "architecture") {
		t.Errorf("interests = %v", q.Interests)
	}
}

func TestRank(t *testing.T) {
	now := time.Now()
	hit := func(id string, score, importance float64, age time.Duration) store.MemoryHit {
		return store.MemoryHit{Memory: store.Memory{ID: id, Importance: importance, LastAccessed: now.Add(-age)}, Score: score}
	}
	got := cognition.Rank([]store.MemoryHit{
		hit("unmatched-important", 0, 1, 0),
		hit("best-match", 4, 0.5, 0),
		hit("weak-match-old", 1, 0.5, 365*24*time.Hour),
		hit("weak-match-new", 1, 0.5, 0),
	}, now, 3)
	var ids []string
	for _, m := range got {
		ids = append(ids, m.ID)
	}
	if want := []string{"best-match", "weak-match-new", "unmatched-important"}; !slices.Equal(ids, want) {
		t.Errorf("Rank = %v, want %v", ids, want)
	}
}

// Learning on each backend: a stated preference and a fact reach the
// profile and the memory, a repeat merges, the context carries them and
// isolates users, and recalls are counted off the request path.
func TestLearnAndContext(t *testing.T) {
	for _, b := range backends() {
		t.Run(b.name, func(t *testing.T) {
			r := newRig(t, b, cognition.Config{})
			ctx := t.Context()
			turn := cognition.Turn{UserID: "alice", ConversationID: "c1", RequestID: "r1", Outcome: "answered",
				Query: "I prefer short answers. Remember that my postgres cluster runs version 17.",
				Tools: []cognition.ToolOutcome{{Tool: "search", Status: "success"}, {Tool: "search", Status: "error"}}}
			if err := r.svc.Learn(ctx, turn); err != nil {
				t.Fatal(err)
			}
			p, err := r.svc.Profile(ctx, "alice")
			if err != nil {
				t.Fatal(err)
			}
			if p.Style != "concise" || p.Preferences["style"] != "concise" {
				t.Errorf("profile = %+v", p)
			}
			page, err := r.svc.Memories(ctx, "alice", store.Page{})
			if err != nil {
				t.Fatal(err)
			}
			if len(page.Memories) != 1 || page.Memories[0].Summary != "my postgres cluster runs version 17" {
				t.Fatalf("memories = %+v, want the fact (the turn's memory)", page.Memories)
			}
			if err := r.svc.Learn(ctx, cognition.Turn{UserID: "alice", RequestID: "r2", Outcome: "answered", Query: "how do tides work?"}); err != nil {
				t.Fatal(err)
			}
			// The same fact again merges, it does not duplicate.
			if err := r.svc.Remember(ctx, "alice", "c2", "my postgres cluster runs version 17"); err != nil {
				t.Fatal(err)
			}
			if page, _ := r.svc.Memories(ctx, "alice", store.Page{}); len(page.Memories) != 2 {
				t.Errorf("after remembering again: %d memories, want 2", len(page.Memories))
			}
			c, err := r.svc.Context(ctx, "alice", "which postgres version do I run?")
			if err != nil {
				t.Fatal(err)
			}
			text := c.Text()
			for _, want := range []string{"Style preference: concise", "my postgres cluster runs version 17"} {
				if !strings.Contains(text, want) {
					t.Errorf("context lacks %q:\n%s", want, text)
				}
			}
			if c.Memories[0].Summary != "my postgres cluster runs version 17" {
				t.Errorf("best memory = %q", c.Memories[0].Summary)
			}
			bc, err := r.svc.Context(ctx, "bob", "which postgres version do I run?")
			if err != nil {
				t.Fatal(err)
			}
			if len(bc.Memories) != 0 || strings.Contains(bc.Text(), "postgres") || strings.Contains(bc.Text(), "concise") {
				t.Errorf("bob's context = %q", bc.Text())
			}
			// The recall is recorded in the background.
			deadline := time.Now().Add(10 * time.Second)
			for {
				page, _ := r.svc.Memories(ctx, "alice", store.Page{})
				if slices.ContainsFunc(page.Memories, func(m store.Memory) bool { return m.AccessCount > 0 }) {
					break
				}
				if time.Now().After(deadline) {
					t.Fatal("no recall was recorded")
				}
				time.Sleep(20 * time.Millisecond)
			}
			stats, notes, err := r.svc.Identity(ctx)
			if err != nil {
				t.Fatal(err)
			}
			// Two answers: 0.7 (one of two tool calls failed) and 0.9.
			want := []store.ToolStat{{Tool: store.AgentTool, Calls: 2, ConfidenceSum: 1.6}, {Tool: "search", Calls: 2, Failures: 1}}
			if len(stats) != 2 || stats[0].Calls != 2 || stats[1] != want[1] || stats[0].ConfidenceSum < 1.59 || stats[0].ConfidenceSum > 1.61 {
				t.Errorf("stats = %+v, want %+v", stats, want)
			}
			if len(notes) == 0 || !strings.Contains(notes[0], "2 answers so far, mean confidence 0.80") {
				t.Errorf("notes = %v", notes)
			}
		})
	}
}

// The learning job runs on the queue; ForgetAll cancels those still
// queued and erases what was learnt.
func TestLearningJobsAndForget(t *testing.T) {
	for _, b := range backends() {
		t.Run(b.name, func(t *testing.T) {
			r := newRig(t, b, cognition.Config{})
			ctx := t.Context()
			queued := cognition.Turn{UserID: "bob", RequestID: "q1", Query: "remember that I live in Lyon", Outcome: "answered"}
			if err := r.svc.EnqueueLearning(ctx, queued); err != nil {
				t.Fatal(err)
			}
			ids, err := r.queue.Unfinished(ctx, queued.Kind(), "user_id", "bob")
			if err != nil || len(ids) != 1 {
				t.Fatalf("queued = %v, %v", ids, err)
			}
			if _, err := r.svc.ForgetAll(ctx, "bob"); err != nil {
				t.Fatal(err)
			}
			if st, _, _ := r.queue.JobState(ctx, ids[0]); st != jobs.StateCancelled {
				t.Errorf("bob's queued learning is %s after ForgetAll", st)
			}
			startQueue(t, r.queue)
			if err := r.svc.EnqueueLearning(ctx, cognition.Turn{UserID: "alice", RequestID: "a1", Query: "remember that I live in Paris", Outcome: "answered"}); err != nil {
				t.Fatal(err)
			}
			deadline := time.Now().Add(30 * time.Second)
			for {
				page, err := r.svc.Memories(ctx, "alice", store.Page{})
				if err != nil {
					t.Fatal(err)
				}
				if len(page.Memories) > 0 {
					break
				}
				if time.Now().After(deadline) {
					t.Fatal("the learning job did not run")
				}
				time.Sleep(50 * time.Millisecond)
			}
			if page, _ := r.svc.Memories(ctx, "bob", store.Page{}); len(page.Memories) != 0 {
				t.Errorf("bob's cancelled learning ran: %+v", page.Memories)
			}
			n, err := r.svc.ForgetAll(ctx, "alice")
			if err != nil || n == 0 {
				t.Fatalf("ForgetAll = %d, %v", n, err)
			}
			if page, _ := r.svc.Memories(ctx, "alice", store.Page{}); len(page.Memories) != 0 {
				t.Errorf("memories after ForgetAll: %+v", page.Memories)
			}
		})
	}
}

// Pruning keeps MaxMemories per user, the most important, as a periodic
// job.
func TestPruneJob(t *testing.T) {
	for _, b := range backends() {
		t.Run(b.name, func(t *testing.T) {
			r := newRig(t, b, cognition.Config{MaxMemories: 2, PruneEvery: 200 * time.Millisecond})
			ctx := t.Context()
			for i, imp := range []float64{0.2, 0.9, 0.5, 0.1} {
				if _, err := r.st.AddMemory(ctx, store.NewMemory{UserID: "alice", Summary: "memory " + string(rune('a'+i)), Importance: imp}); err != nil {
					t.Fatal(err)
				}
			}
			startQueue(t, r.queue)
			deadline := time.Now().Add(30 * time.Second)
			for {
				page, _ := r.svc.Memories(ctx, "alice", store.Page{})
				if len(page.Memories) == 2 {
					imps := []float64{page.Memories[0].Importance, page.Memories[1].Importance}
					slices.Sort(imps)
					if !slices.Equal(imps, []float64{0.5, 0.9}) {
						t.Errorf("kept %v, want the two most important", imps)
					}
					return
				}
				if time.Now().After(deadline) {
					t.Fatalf("%d memories after 30 s of pruning", len(page.Memories))
				}
				time.Sleep(50 * time.Millisecond)
			}
		})
	}
}

// The budget is hard: a store slower than it fails the context, and the
// failure is counted as a timeout.
func TestContextBudget(t *testing.T) {
	b := backends()[0]
	st, _ := b.open(t)
	var mu sync.Mutex
	var reasons []string
	svc, err := cognition.New(cognition.Config{Store: slowStore{st}, Budget: 20 * time.Millisecond,
		OnContextFailure: func(r string) { mu.Lock(); reasons = append(reasons, r); mu.Unlock() }})
	if err != nil {
		t.Fatal(err)
	}
	defer svc.Close()
	start := time.Now()
	text, err := svc.ContextText(t.Context(), "alice", "anything")
	if err == nil || text != "" || !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("ContextText = %q, %v; want a deadline error", text, err)
	}
	if d := time.Since(start); d > time.Second {
		t.Errorf("ContextText took %v with a 20 ms budget", d)
	}
	mu.Lock()
	defer mu.Unlock()
	if !slices.Equal(reasons, []string{"timeout"}) {
		t.Errorf("failures told = %v", reasons)
	}
}

// slowStore's profile reads wait for their context to end.
type slowStore struct{ cognition.Store }

func (s slowStore) GetProfile(ctx context.Context, _ string) (store.Profile, error) {
	<-ctx.Done()
	return store.Profile{}, ctx.Err()
}

func TestParseExtraction(t *testing.T) {
	e, err := cognition.ParseExtraction("Sure:\n```json\n{\"memories\": [{\"event\": \"add\", \"text\": \"lives in Lyon\"}, {\"event\": \"UPDATE\", \"id\": \"m1\", \"text\": \"x\"}, {\"event\": \"maybe\"}, {\"event\": \"NONE\"}], \"style\": \"concise\"}\n```")
	if err != nil {
		t.Fatal(err)
	}
	if len(e.Memories) != 2 || e.Memories[0].Event != cognition.EventAdd || e.Memories[1].ID != "m1" || e.Style != "concise" {
		t.Errorf("ParseExtraction = %+v", e)
	}
	if _, err := cognition.ParseExtraction("no json here"); err == nil {
		t.Error("a reply without JSON parsed")
	}
}

func FuzzParseExtraction(f *testing.F) {
	f.Add(`{"memories": [{"event": "ADD", "text": "x"}]}`)
	f.Add(`}{`)
	f.Add("```{\"preferences\": {\"a\": \"b\"}}```")
	f.Fuzz(func(t *testing.T, s string) {
		e, err := cognition.ParseExtraction(s)
		if err != nil {
			return
		}
		for _, d := range e.Memories {
			if d.Event != cognition.EventAdd && d.Event != cognition.EventUpdate && d.Event != cognition.EventDelete {
				t.Fatalf("kept event %q", d.Event)
			}
		}
	})
}

func FuzzSignals(f *testing.F) {
	f.Add("I prefer short answers. Remember that I live in Lyon.")
	f.Add("I'm a beginner: what is a pointer?")
	f.Fuzz(func(t *testing.T, s string) {
		sig := cognition.Signals(s)
		p := store.Profile{Patterns: map[string]int{}, Preferences: map[string]string{}}
		cognition.Infer(&p, sig, nil)
		if len(p.Interests) > 10 {
			t.Fatalf("%d interests", len(p.Interests))
		}
	})
}
