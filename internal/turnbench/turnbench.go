package turnbench

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/trellis-ai/trellis/graph"
	"github.com/trellis-ai/trellis/graph/checkpoint/memory"
	"github.com/trellis-ai/trellis/graph/checkpoint/postgres"
	"github.com/trellis-ai/trellis/graph/checkpoint/sqlite"
	"github.com/trellis-ai/trellis/internal/pgtest"
)

// Sizes are the conversation lengths, in prior turns, at which one more
// turn is measured.
var Sizes = []int{10, 100, 1000, 10000}

// Message is a turn's user message: a chat message's length.
var Message = "a question of about the length people ask in a chat, " + strings.Repeat("word ", 10)

// Saver is a checkpoint backend to measure (or test) on.
type Saver struct {
	Name string
	Open func(tb testing.TB) graph.Checkpointer
}

// Savers are memory, SQLite in a temporary file, and PostgreSQL in a
// schema of its own (skipped without a database, see pgtest).
var Savers = []Saver{
	{"memory", func(tb testing.TB) graph.Checkpointer { return memory.New() }},
	{"sqlite", func(tb testing.TB) graph.Checkpointer {
		s, err := sqlite.Open(tb.Context(), filepath.Join(tb.TempDir(), "turns.db"))
		if err != nil {
			tb.Fatal(err)
		}
		tb.Cleanup(func() { s.Close() })
		return s
	}},
	{"postgres", func(tb testing.TB) graph.Checkpointer {
		s, err := postgres.New(tb.Context(), pgtest.New(tb))
		if err != nil {
			tb.Fatal(err)
		}
		return s
	}},
}

// template is the thread Build grows and Run copies.
const template = "template"

// Build runs turns on the template thread through the real path, up to
// the largest of Sizes, and returns, per size, the id of the thread's
// newest checkpoint once it had that many turns.
func Build(b *testing.B, saver graph.Checkpointer, turn func(thread string) error) map[int]string {
	at := map[int]string{}
	for i := 1; i <= Sizes[len(Sizes)-1]; i++ {
		if err := turn(template); err != nil {
			b.Fatal(err)
		}
		for _, n := range Sizes {
			if n == i {
				cps, err := saver.List(context.Background(), graph.ListOptions{ThreadID: template, Limit: 1})
				if err != nil || len(cps) != 1 {
					b.Fatal(cps, err)
				}
				at[n] = cps[0].ID
			}
		}
	}
	return at
}

var copies atomic.Int64

// Run times turns on copies of the template thread at checkpoint from,
// which has n turns. A copy serves at most n/10 timed turns (at least
// one), so what is measured is a turn at n to 1.1 n. With hot, an untimed
// first turn on each copy loads it into the cache that the timed ones
// continue from; without, cold (if not nil) runs untimed before every
// timed turn, to forget what the last one left. Copying happens with the
// timer stopped too.
//
// A copy is the checkpoint and every blob it reaches, in one Put: all
// that a turn reads of a thread; and every checkpoint of the template's
// namespaces spaces written before it, which its state may name (the
// agent's pages of history), each with the blobs it introduced.
func Run(b *testing.B, saver graph.Checkpointer, from string, n int, hot bool, turn func(thread string) error, cold func(), spaces ...string) {
	ctx := context.Background()
	saved, err := saver.Get(ctx, graph.Ref{ThreadID: template, ID: from})
	if err != nil {
		b.Fatal(err)
	}
	var others []*graph.Saved
	for _, ns := range spaces {
		others = append(others, namespace(b, saver, ns, from)...)
	}
	budget := max(1, n/10)
	left := 0
	var thread string
	b.ReportAllocs()
	for b.Loop() {
		if left == 0 || (!hot && cold != nil) {
			b.StopTimer()
			if left == 0 {
				thread = fmt.Sprint("copy-", copies.Add(1))
				cp := saved.Checkpoint
				cp.ThreadID = thread
				if err := saver.Put(ctx, cp, saved.Blobs); err != nil {
					b.Fatal(err)
				}
				for _, o := range others {
					cp := o.Checkpoint
					cp.ThreadID = thread
					if err := saver.Put(ctx, cp, o.Blobs); err != nil {
						b.Fatal(err)
					}
				}
				left = budget
				if hot {
					if err := turn(thread); err != nil {
						b.Fatal(err)
					}
				}
			}
			if !hot && cold != nil {
				cold()
			}
			b.StartTimer()
		}
		if err := turn(thread); err != nil {
			b.Fatal(err)
		}
		left--
	}
}

// namespace returns every checkpoint of the template's namespace ns older
// than checkpoint before, each with the blobs whose version is its id:
// those it introduced. The template has no forks, so the newest one's
// chains reach every blob of the others.
func namespace(b *testing.B, saver graph.Checkpointer, ns, before string) []*graph.Saved {
	ctx := context.Background()
	cps, err := saver.List(ctx, graph.ListOptions{ThreadID: template, Namespace: ns, Before: before})
	if err != nil || len(cps) == 0 {
		return nil
	}
	newest, err := saver.Get(ctx, graph.Ref{ThreadID: template, Namespace: ns, ID: cps[0].ID})
	if err != nil {
		b.Fatal(err)
	}
	out := make([]*graph.Saved, 0, len(cps))
	for _, cp := range cps {
		out = append(out, &graph.Saved{Checkpoint: cp,
			Blobs: slices.DeleteFunc(slices.Clone(newest.Blobs), func(bl graph.Blob) bool { return bl.Version != cp.ID })})
	}
	return out
}
