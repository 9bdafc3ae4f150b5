package main

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/trellis-ai/trellis/events"
	"github.com/trellis-ai/trellis/graph"
	"github.com/trellis-ai/trellis/graph/checkpoint/postgres"
	"github.com/trellis-ai/trellis/graph/checkpoint/sqlite"
	"github.com/trellis-ai/trellis/internal/jobs"
	"github.com/trellis-ai/trellis/internal/pgtest"
	"github.com/trellis-ai/trellis/llm"
	"github.com/trellis-ai/trellis/nodes"
)

// TestSummaryJobSurvivesARestart: a process that asked for a summary
// and died before working the job leaves it in the queue; the next
// process over the same databases writes the summary with the (offline)
// fast model, and its next turn's prompt holds turn 1's facts.
func TestSummaryJobSurvivesARestart(t *testing.T) {
	t.Parallel()
	type backend struct {
		saver func(t *testing.T) graph.Checkpointer
		queue func(t *testing.T, ws *jobs.Workers) *jobs.Queue
	}
	dir := t.TempDir()
	cfg := jobs.Config{PollInterval: 50 * time.Millisecond}
	backends := map[string]backend{
		"sqlite": {
			saver: func(t *testing.T) graph.Checkpointer {
				s, err := sqlite.Open(t.Context(), filepath.Join(dir, "checkpoints.db"))
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { s.Close() })
				return s
			},
			queue: func(t *testing.T, ws *jobs.Workers) *jobs.Queue {
				q, err := jobs.SQLite(t.Context(), filepath.Join(dir, "jobs.db"), ws, cfg)
				if err != nil {
					t.Fatal(err)
				}
				return q
			},
		},
	}
	var pool *pgxpool.Pool // the PostgreSQL database both "processes" share
	backends["postgres"] = backend{
		saver: func(t *testing.T) graph.Checkpointer {
			if pool == nil {
				pool = pgtest.New(t)
			}
			s, err := postgres.New(t.Context(), pool)
			if err != nil {
				t.Fatal(err)
			}
			return s
		},
		queue: func(t *testing.T, ws *jobs.Workers) *jobs.Queue {
			q, err := jobs.Postgres(t.Context(), pool, ws, cfg)
			if err != nil {
				t.Fatal(err)
			}
			return q
		},
	}
	for name, be := range backends {
		t.Run(name, func(t *testing.T) {
			models, err := llm.NewRegistry(llm.Config{})
			if err != nil {
				t.Fatal(err)
			}
			window := nodes.Window{SummarizeAt: 300, Messages: 6}

			// The first process: turns until one asks for a summary, and
			// a queue that never works it.
			saver := be.saver(t)
			ws1 := jobs.NewWorkers()
			sums1, err := openSummaries(models, saver, window, ws1, nil)
			if err != nil {
				t.Fatal(err)
			}
			q1 := be.queue(t, ws1)
			sums1.Attach(q1)
			asked := 0
			w1 := window
			w1.AskSummary = func(ctx context.Context, conv string, ask nodes.SummaryAsk) error {
				asked++
				return sums1.ask(ctx, conv, ask)
			}
			a1, err := nodes.New(models, nil, saver, nodes.Options{Window: w1})
			if err != nil {
				t.Fatal(err)
			}
			conv := "conv-" + name
			msgs := []string{"My name is Priya Raman. Our project is called Bluefin and its budget is 42,000 euros."}
			for n := 0; asked == 0; n++ {
				if n == 30 {
					t.Fatal("no summary asked for in 30 turns")
				}
				msg := "tell me something nice about the weather, please"
				if n < len(msgs) {
					msg = msgs[n]
				}
				summaryTurn(t, a1, conv, msg)
			}
			if err := q1.Close(); err != nil {
				t.Fatal(err)
			}

			// The next process: its queue works the job left behind.
			saver = be.saver(t)
			ws2 := jobs.NewWorkers()
			sums2, err := openSummaries(models, saver, window, ws2, nil)
			if err != nil {
				t.Fatal(err)
			}
			q2 := be.queue(t, ws2)
			sums2.Attach(q2)
			if err := q2.Start(t.Context()); err != nil {
				t.Fatal(err)
			}
			defer func() {
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				defer cancel()
				if err := q2.Stop(ctx); err != nil {
					t.Error(err)
				}
				q2.Close()
			}()
			deadline := time.Now().Add(20 * time.Second)
			for {
				info, err := q2.Newest(t.Context(), summaryArgs{}.Kind(), "conversation_id", conv)
				if err == nil && info.State == jobs.StateCompleted {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("the summary job did not complete: %+v, %v", info, err)
				}
				time.Sleep(50 * time.Millisecond)
			}
			w2 := window
			w2.AskSummary = sums2.ask
			a2, err := nodes.New(models, nil, saver, nodes.Options{Window: w2})
			if err != nil {
				t.Fatal(err)
			}
			summaryTurn(t, a2, conv, "what do you know about me?")
			snap, err := a2.State(t.Context(), conv)
			if err != nil {
				t.Fatal(err)
			}
			for _, f := range []string{"Priya Raman", "Bluefin", "42,000 euros"} {
				if !strings.Contains(snap.State.ModelSummary, f) {
					t.Errorf("the model summary lacks %q: %q", f, snap.State.ModelSummary)
				}
			}
		})
	}
}

func summaryTurn(t *testing.T, a *nodes.Agent, conv, msg string) {
	t.Helper()
	var last events.Event
	for ev, err := range a.Run(t.Context(), conv, nodes.Input{Message: msg}) {
		if err != nil {
			t.Fatal(err)
		}
		last = ev
	}
	if last.Type != events.TypeRunCompleted {
		t.Fatalf("the turn ended with %s", last.Type)
	}
}

// TestSummaryJobFallsBackWhenTheModelFails: with a fast model that
// always fails, the summary job is retried, and its last attempt keeps
// the extractive summary, which the next turn adopts.
func TestSummaryJobFallsBackWhenTheModelFails(t *testing.T) {
	t.Parallel()
	broken, err := llm.ParseScript([]byte(`{"steps": [{"match": {"node": "no such node"}, "reply": {"text": "never"}}]}`))
	if err != nil {
		t.Fatal(err)
	}
	models, err := llm.NewRegistry(llm.Config{Models: []llm.ModelConfig{llm.OfflineConfig(),
		{ID: "broken", Aliases: []string{"fast"}, Provider: llm.ProviderScripted, Instance: llm.NewScripted(broken)}},
		Resilience: llm.ResilienceConfig{Disabled: true}})
	if err != nil {
		t.Fatal(err)
	}
	saver, err := sqlite.Open(t.Context(), filepath.Join(t.TempDir(), "checkpoints.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer saver.Close()
	window := nodes.Window{SummarizeAt: 300, Messages: 6}
	ws := jobs.NewWorkers()
	sums, err := openSummaries(models, saver, window, ws, nil)
	if err != nil {
		t.Fatal(err)
	}
	q, err := jobs.SQLite(t.Context(), filepath.Join(t.TempDir(), "jobs.db"), ws, jobs.Config{PollInterval: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	sums.Attach(q)
	if err := q.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	defer func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := q.Stop(ctx); err != nil {
			t.Error(err)
		}
		q.Close()
	}()
	asked := 0
	window.AskSummary = func(ctx context.Context, conv string, ask nodes.SummaryAsk) error {
		asked++
		return sums.ask(ctx, conv, ask)
	}
	a, err := nodes.New(models, nil, saver, nodes.Options{Window: window})
	if err != nil {
		t.Fatal(err)
	}
	summaryTurn(t, a, "c", "My name is Priya Raman. Our project is called Bluefin.")
	for n := 0; asked == 0; n++ {
		if n == 30 {
			t.Fatal("no summary asked for in 30 turns")
		}
		summaryTurn(t, a, "c", "tell me something nice about the weather, please")
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		info, err := q.Newest(t.Context(), summaryArgs{}.Kind(), "conversation_id", "c")
		if err == nil && info.State == jobs.StateCompleted {
			if info.Attempt != summaryAttempts || !strings.Contains(info.Err, "summary model failed") {
				t.Errorf("the job completed at attempt %d (last error %q), want %d attempts", info.Attempt, info.Err, summaryAttempts)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the summary job did not complete: %+v, %v", info, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	summaryTurn(t, a, "c", "and now?")
	snap, err := a.State(t.Context(), "c")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(snap.State.ModelSummary, "- User: My name is Priya Raman. Our project is called Bluefin.") {
		t.Errorf("the model summary is not the extractive fallback: %q", snap.State.ModelSummary)
	}
}
