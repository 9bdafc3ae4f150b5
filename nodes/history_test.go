package nodes_test

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"

	"github.com/trellis-ai/trellis/graph"
	"github.com/trellis-ai/trellis/graph/checkpoint/sqlite"
	"github.com/trellis-ai/trellis/internal/turnbench"
	"github.com/trellis-ai/trellis/nodes"
)

// talk runs turns first..last of conversation c, each asking "question i".
func talk(t *testing.T, a *nodes.Agent, c string, first, last int) {
	t.Helper()
	for i := first; i <= last; i++ {
		if r := collect(a.Run(t.Context(), c, nodes.Input{Message: fmt.Sprint("question ", i), RequestID: fmt.Sprint("req-", i)})); r.err != nil {
			t.Fatalf("turn %d: %v", i, r.err)
		}
	}
}

// checkWhole checks that the conversation's state holds every turn's
// question and answer, in order, for turns 1..n.
func checkWhole(t *testing.T, s nodes.ChatState, n int) {
	t.Helper()
	if s.MessagesFrom != 0 || s.HistoryPage != "" || len(s.Messages) != 2*n {
		t.Fatalf("state of %d turns: %d messages, from %d, page %q", n, len(s.Messages), s.MessagesFrom, s.HistoryPage)
	}
	for i := 1; i <= n; i++ {
		q, a := s.Messages[2*i-2], s.Messages[2*i-1]
		if q.Content != fmt.Sprint("question ", i) || q.Turn != i || a.Role != nodes.RoleAssistant || a.Turn != i {
			t.Fatalf("turn %d: %+v then %+v", i, q, a)
		}
	}
}

// A long conversation's oldest messages leave the hot state for pages of
// history, so a cold turn decodes a bounded state; the state read
// through the agent still holds the whole conversation, before and after
// a restart, and an edit of a turn whose messages are paged forks from
// it with exactly the turns before it.
func TestHistoryPagesKeepTheWholeConversation(t *testing.T) {
	for _, be := range turnbench.Savers {
		t.Run(be.Name, func(t *testing.T) {
			saver := be.Open(t)
			a, _ := newAgentOn(t, saver, benchAnswerScript)
			const turns = 120
			talk(t, a, "long", 1, turns)
			snap, err := a.State(t.Context(), "long")
			if err != nil {
				t.Fatal(err)
			}
			checkWhole(t, snap.State, turns)
			if from, _ := strconv.Atoi(storedField(t, saver, "long", "MessagesFrom")); from < 64 {
				t.Fatalf("the checkpoint keeps its messages from %d: nothing was paged", from)
			}

			// A new agent (a restart) goes on from the checkpoint.
			b, _ := newAgentOn(t, saver, benchAnswerScript)
			talk(t, b, "long", turns+1, turns+2)
			snap, err = b.State(t.Context(), "long")
			if err != nil {
				t.Fatal(err)
			}
			checkWhole(t, snap.State, turns+2)
			hist, err := b.History(t.Context(), "long", 0, "")
			if err != nil {
				t.Fatal(err)
			}
			for _, h := range hist {
				if h.State.HistoryPage != "" || h.State.MessagesFrom != 0 {
					t.Fatalf("history snapshot %s is not whole", h.CheckpointID)
				}
			}

			// Turn 5's messages are in a page: its edit keeps turns 1-4.
			if r := collect(b.Edit(t.Context(), "long", nodes.Turn{RequestID: "req-5"}, nodes.Input{Message: "question 5", RequestID: "req-5b"})); r.err != nil {
				t.Fatal(r.err)
			}
			snap, err = b.State(t.Context(), "long")
			if err != nil {
				t.Fatal(err)
			}
			checkWhole(t, snap.State, 5)
		})
	}
}

// storedField returns the JSON of field in the newest checkpoint of
// conversation c, as stored.
func storedField(t *testing.T, saver graph.Checkpointer, c, field string) string {
	t.Helper()
	saved, err := saver.Get(t.Context(), graph.Ref{ThreadID: c})
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range saved.Blobs {
		if b.Field == field && b.Version == saved.Checkpoint.Versions[field] {
			return string(b.Data)
		}
	}
	return ""
}

// The store in testdata/history was written by the code before pages of
// history (commit 66e876f): a conversation of 50 turns whose checkpoints
// hold every message. Today's code reads it back whole on every backend
// (on PostgreSQL and memory as copied through the Checkpointer), carries
// it on (its next turn moves the older messages into pages), replays an
// old turn from a checkpoint of that code, and, after a prune that keeps
// every turn's input, still edits a turn whose checkpoint names pages and
// shows the whole conversation; erasing the conversation takes its pages.
func TestHistoryFixtureFromBeforePages(t *testing.T) {
	for _, be := range turnbench.Savers {
		t.Run(be.Name, func(t *testing.T) {
			var saver graph.Checkpointer
			if be.Name == "sqlite" {
				path := filepath.Join(t.TempDir(), "cp.db")
				data, err := os.ReadFile("testdata/history/v0.sqlite")
				if err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(path, data, 0o600); err != nil {
					t.Fatal(err)
				}
				s, err := sqlite.Open(t.Context(), path)
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { _ = s.Close() })
				saver = s
			} else {
				saver = be.Open(t)
				copyFixture(t, saver)
			}
			ctx := t.Context()
			a, _ := newAgentOn(t, saver, benchAnswerScript)
			snap, err := a.State(ctx, "old")
			if err != nil {
				t.Fatal(err)
			}
			checkWhole(t, snap.State, 50)

			talk(t, a, "old", 51, 51)
			if from, _ := strconv.Atoi(storedField(t, saver, "old", "MessagesFrom")); from < 64 {
				t.Fatalf("the first turn of today's code paged nothing (from %d)", from)
			}
			b, _ := newAgentOn(t, saver, benchAnswerScript)
			talk(t, b, "old", 52, 100)
			snap, err = b.State(ctx, "old")
			if err != nil {
				t.Fatal(err)
			}
			checkWhole(t, snap.State, 100)
			if pages, err := saver.List(ctx, graph.ListOptions{ThreadID: "old", Namespace: nodes.HistoryNamespace}); err != nil || len(pages) < 2 {
				t.Fatalf("%d pages of history (%v), want more than one", len(pages), err)
			}

			if r := collect(b.Edit(ctx, "old", nodes.Turn{RequestID: "req-3"}, nodes.Input{Message: "question 3", RequestID: "req-3b"})); r.err != nil {
				t.Fatal(r.err)
			}
			if snap, err = b.State(ctx, "old"); err != nil {
				t.Fatal(err)
			}
			checkWhole(t, snap.State, 3)

			if p, ok := saver.(graph.Pruner); ok {
				if _, err := p.Prune(ctx, graph.PruneOptions{Keep: 1, KeepInputs: true}); err != nil {
					t.Fatal(err)
				}
			}
			// Turn 60's input names the first page, which later ones
			// extend.
			if r := collect(b.Edit(ctx, "old", nodes.Turn{RequestID: "req-60"}, nodes.Input{Message: "question 60", RequestID: "req-60b"})); r.err != nil {
				t.Fatal(r.err)
			}
			if snap, err = b.State(ctx, "old"); err != nil {
				t.Fatal(err)
			}
			checkWhole(t, snap.State, 60)

			if err := b.Delete(ctx, "old"); err != nil {
				t.Fatal(err)
			}
			if cps, err := saver.List(ctx, graph.ListOptions{ThreadID: "old", Namespace: nodes.HistoryNamespace}); err != nil || len(cps) != 0 {
				t.Fatalf("after erasure: %d pages (%v)", len(cps), err)
			}
		})
	}
}

// copyFixture copies every checkpoint of testdata/history/v0.sqlite, with
// its blobs and writes, into saver.
func copyFixture(t *testing.T, saver graph.Checkpointer) {
	t.Helper()
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "v0.db")
	data, err := os.ReadFile("testdata/history/v0.sqlite")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	src, err := sqlite.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	cps, err := src.List(ctx, graph.ListOptions{ThreadID: "old"})
	if err != nil || len(cps) == 0 {
		t.Fatal(len(cps), err)
	}
	for _, cp := range slices.Backward(cps) {
		saved, err := src.Get(ctx, graph.Ref{ThreadID: "old", ID: cp.ID})
		if err != nil {
			t.Fatal(err)
		}
		if err := saver.Put(ctx, saved.Checkpoint, saved.Blobs); err != nil {
			t.Fatal(err)
		}
		if len(saved.Writes) > 0 {
			if err := saver.PutWrites(ctx, graph.Ref{ThreadID: "old", ID: cp.ID}, saved.Writes); err != nil {
				t.Fatal(err)
			}
		}
	}
}
