package graph_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/trellis-ai/trellis/graph"
	"github.com/trellis-ai/trellis/internal/turnbench"
)

// BenchmarkTurn measures one more turn of compatGraph — two nodes, each
// appending a message — on a thread that already has n turns, on each
// backend: "hot" continues the state the thread's previous run left in
// the graph's cache, "cold" loads the thread from the store every turn
// (as every turn did before the cache, and as a turn still does after a
// restart or when another process wrote the thread).
func BenchmarkTurn(b *testing.B) {
	for _, be := range turnbench.Savers {
		b.Run(be.Name, func(b *testing.B) {
			saver := be.Open(b)
			turn := func(c *graph.Compiled[compatState], thread string) error {
				_, err := c.Invoke(context.Background(), &compatState{Last: turnbench.Message}, graph.RunConfig{ThreadID: thread})
				return err
			}
			tmpl := compatGraph(b, saver, graph.ThreadCacheLimits{})
			at := turnbench.Build(b, saver, func(thread string) error { return turn(tmpl, thread) })
			for _, mode := range []struct {
				name   string
				limits graph.ThreadCacheLimits
			}{{"hot", graph.ThreadCacheLimits{}}, {"cold", graph.ThreadCacheLimits{Threads: -1}}} {
				for _, n := range turnbench.Sizes {
					b.Run(fmt.Sprintf("%s/n=%d", mode.name, n), func(b *testing.B) {
						c := compatGraph(b, saver, mode.limits)
						turnbench.Run(b, saver, at[n], n, mode.limits.Threads >= 0, func(thread string) error { return turn(c, thread) }, nil)
					})
				}
			}
		})
	}
}
