package graph_test

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/trellis-ai/trellis/graph"
	"github.com/trellis-ai/trellis/graph/checkpoint/memory"
	"github.com/trellis-ai/trellis/graph/checkpoint/postgres"
	"github.com/trellis-ai/trellis/graph/checkpoint/sqlite"
	"github.com/trellis-ai/trellis/internal/pgtest"
)

// turnSizes are the conversation lengths, in prior turns, at which
// BenchmarkTurn measures one more turn.
var turnSizes = []int{10, 100, 1000, 10000}

// turnText is a turn's input: a chat message's length.
var turnText = "a question of about the length people ask in a chat, " + strings.Repeat("word ", 10)

// BenchmarkTurn measures one more turn of compatGraph — two nodes, each
// appending a message — on a thread that already has n turns, on each
// backend: "hot" continues the state the thread's previous run left in
// the graph's cache, "cold" loads the thread from the store every turn
// (as every turn did before the cache, and as a turn still does after a
// restart or when another process wrote the thread).
func BenchmarkTurn(b *testing.B) {
	backends := []struct {
		name string
		open func(b *testing.B) graph.Checkpointer
	}{
		{"memory", func(b *testing.B) graph.Checkpointer { return memory.New() }},
		{"sqlite", func(b *testing.B) graph.Checkpointer {
			s, err := sqlite.Open(b.Context(), filepath.Join(b.TempDir(), "turns.db"))
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { s.Close() })
			return s
		}},
		{"postgres", func(b *testing.B) graph.Checkpointer {
			s, err := postgres.New(b.Context(), pgtest.New(b))
			if err != nil {
				b.Fatal(err)
			}
			return s
		}},
	}
	for _, be := range backends {
		b.Run(be.name, func(b *testing.B) {
			saver := be.open(b)
			turn := func(c *graph.Compiled[compatState], thread string) error {
				_, err := c.Invoke(context.Background(), &compatState{Last: turnText}, graph.RunConfig{ThreadID: thread})
				return err
			}
			tmpl := compatGraph(b, saver, graph.ThreadCacheLimits{})
			at := buildTurns(b, saver, turnSizes, func(thread string) error { return turn(tmpl, thread) })
			for _, mode := range []struct {
				name   string
				limits graph.ThreadCacheLimits
			}{{"hot", graph.ThreadCacheLimits{}}, {"cold", graph.ThreadCacheLimits{Threads: -1}}} {
				for _, n := range turnSizes {
					b.Run(fmt.Sprintf("%s/n=%d", mode.name, n), func(b *testing.B) {
						c := compatGraph(b, saver, mode.limits)
						benchTurns(b, saver, at[n], n, mode.limits.Threads >= 0, func(thread string) error { return turn(c, thread) })
					})
				}
			}
		})
	}
}

// buildTurns runs turns on a template thread through the real path and
// returns, per size in sizes, the id of its newest checkpoint once it had
// that many turns.
func buildTurns(b *testing.B, saver graph.Checkpointer, sizes []int, turn func(thread string) error) map[int]string {
	const template = "template"
	at := map[int]string{}
	for i := 1; i <= sizes[len(sizes)-1]; i++ {
		if err := turn(template); err != nil {
			b.Fatal(err)
		}
		for _, n := range sizes {
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

var benchThreads atomic.Int64

// benchTurns times turns on copies of the template thread at checkpoint
// from, which has n turns. A copy serves at most n/10 timed turns (at
// least one), so what is measured is a turn at n to 1.1 n. Copying, and
// with warm the untimed first turn that loads the copy into the graph's
// cache, happen with the timer stopped.
//
// A copy is the checkpoint and every blob it reaches, in one Put: all
// that a turn reads of a thread.
func benchTurns(b *testing.B, saver graph.Checkpointer, from string, n int, warm bool, turn func(thread string) error) {
	ctx := context.Background()
	saved, err := saver.Get(ctx, graph.Ref{ThreadID: "template", ID: from})
	if err != nil {
		b.Fatal(err)
	}
	budget := max(1, n/10)
	left := 0
	var thread string
	b.ReportAllocs()
	for b.Loop() {
		if left == 0 {
			b.StopTimer()
			thread = fmt.Sprint("copy-", benchThreads.Add(1))
			cp := saved.Checkpoint
			cp.ThreadID = thread
			if err := saver.Put(ctx, cp, saved.Blobs); err != nil {
				b.Fatal(err)
			}
			if warm {
				if err := turn(thread); err != nil {
					b.Fatal(err)
				}
			}
			left = budget
			b.StartTimer()
		}
		if err := turn(thread); err != nil {
			b.Fatal(err)
		}
		left--
	}
}
