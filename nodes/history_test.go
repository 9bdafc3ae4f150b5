package nodes_test

import (
	"fmt"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/trellis-ai/trellis/graph"
	"github.com/trellis-ai/trellis/graph/checkpoint/memory"
	"github.com/trellis-ai/trellis/graph/checkpoint/postgres"
	"github.com/trellis-ai/trellis/graph/checkpoint/sqlite"
	"github.com/trellis-ai/trellis/internal/pgtest"
	"github.com/trellis-ai/trellis/nodes"
)

// historySavers are the three checkpointers, each fresh.
var historySavers = []struct {
	name string
	open func(t *testing.T) graph.Checkpointer
}{
	{"memory", func(t *testing.T) graph.Checkpointer { return memory.New() }},
	{"sqlite", func(t *testing.T) graph.Checkpointer {
		s, err := sqlite.Open(t.Context(), filepath.Join(t.TempDir(), "cp.db"))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = s.Close() })
		return s
	}},
	{"postgres", func(t *testing.T) graph.Checkpointer {
		s, err := postgres.New(t.Context(), pgtest.New(t))
		if err != nil {
			t.Fatal(err)
		}
		return s
	}},
}

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
	for _, be := range historySavers {
		t.Run(be.name, func(t *testing.T) {
			saver := be.open(t)
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
