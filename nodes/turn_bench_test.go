package nodes_test

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
	"github.com/trellis-ai/trellis/llm"
	"github.com/trellis-ai/trellis/nodes"
)

// turnSizes are the conversation lengths, in prior turns, at which
// BenchmarkAgentTurn measures one more turn.
var turnSizes = []int{10, 100, 1000, 10000}

// turnMessage is a turn's user message: a chat message's length.
var turnMessage = "a question of about the length people ask in a chat, " + strings.Repeat("word ", 10)

// BenchmarkAgentTurn measures one more turn of the agent's answer path
// (initialize → supervisor → write → stream, scripted model) on a
// conversation that already has n turns, on each backend: "hot" continues
// the state the previous turn left in the agent graph's thread cache,
// "cold" is a turn of a freshly made agent, which loads the conversation
// from the store (as every turn did before the cache, and as a turn still
// does after a restart or when another process ran the previous one).
func BenchmarkAgentTurn(b *testing.B) {
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
			at := buildAgentTurns(b, saver)
			for _, hot := range []bool{true, false} {
				mode := map[bool]string{true: "hot", false: "cold"}[hot]
				for _, n := range turnSizes {
					b.Run(fmt.Sprintf("%s/n=%d", mode, n), func(b *testing.B) {
						benchAgentTurns(b, saver, at[n], n, hot)
					})
				}
			}
		})
	}
}

func turnAgent(b *testing.B, saver graph.Checkpointer) *nodes.Agent {
	sc, err := llm.ParseScript([]byte(benchAnswerScript))
	if err != nil {
		b.Fatal(err)
	}
	reg, err := llm.NewRegistry(llm.Config{
		Models:     []llm.ModelConfig{{ID: "scripted", Provider: llm.ProviderScripted, Instance: llm.NewScripted(sc), ToolCalling: true}},
		Resilience: llm.ResilienceConfig{Disabled: true},
	})
	if err != nil {
		b.Fatal(err)
	}
	tools, _ := testTools(b)
	a, err := nodes.New(reg, tools, saver, nodes.Options{})
	if err != nil {
		b.Fatal(err)
	}
	return a
}

func agentTurn(b *testing.B, a *nodes.Agent, conversation string) {
	var final nodes.Event
	for ev, err := range a.Run(context.Background(), conversation, nodes.Input{Message: turnMessage}) {
		if err != nil {
			b.Fatal(err)
		}
		final = ev
	}
	if final.Type != nodes.EventRunCompleted {
		b.Fatalf("turn ended with %s", final.Type)
	}
}

// buildAgentTurns runs turns on a template conversation through the real
// path and returns, per size in turnSizes, the id of its newest
// checkpoint once it had that many turns.
func buildAgentTurns(b *testing.B, saver graph.Checkpointer) map[int]string {
	const template = "template"
	a := turnAgent(b, saver)
	at := map[int]string{}
	for i := 1; i <= turnSizes[len(turnSizes)-1]; i++ {
		agentTurn(b, a, template)
		for _, n := range turnSizes {
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

var benchConversations atomic.Int64

// benchAgentTurns times turns on copies of the template conversation at
// checkpoint from, which has n turns. A copy serves at most n/10 timed
// turns (at least one), so what is measured is a turn at n to 1.1 n.
// Copying, the untimed first turn that loads a copy into the cache (hot),
// and making a fresh agent before each turn (cold) happen with the timer
// stopped.
//
// A copy is the checkpoint and every blob it reaches, in one Put: all
// that a turn reads of a conversation.
func benchAgentTurns(b *testing.B, saver graph.Checkpointer, from string, n int, hot bool) {
	ctx := context.Background()
	saved, err := saver.Get(ctx, graph.Ref{ThreadID: "template", ID: from})
	if err != nil {
		b.Fatal(err)
	}
	a := turnAgent(b, saver)
	budget := max(1, n/10)
	left := 0
	var conversation string
	b.ReportAllocs()
	for b.Loop() {
		if left == 0 || !hot {
			b.StopTimer()
			if left == 0 {
				conversation = fmt.Sprint("copy-", benchConversations.Add(1))
				cp := saved.Checkpoint
				cp.ThreadID = conversation
				if err := saver.Put(ctx, cp, saved.Blobs); err != nil {
					b.Fatal(err)
				}
				left = budget
				if hot {
					agentTurn(b, a, conversation)
				}
			}
			if !hot {
				a = turnAgent(b, saver)
			}
			b.StartTimer()
		}
		agentTurn(b, a, conversation)
		left--
	}
}
