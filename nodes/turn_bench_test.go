package nodes_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/trellis-ai/trellis/events"
	"github.com/trellis-ai/trellis/graph"
	"github.com/trellis-ai/trellis/internal/turnbench"
	"github.com/trellis-ai/trellis/llm"
	"github.com/trellis-ai/trellis/nodes"
)

// BenchmarkAgentTurn measures one more turn of the agent's answer path
// (initialize → supervisor → write → stream, scripted model) on a
// conversation that already has n turns, on each backend: "hot" continues
// the state the previous turn left in the agent graph's thread cache,
// "cold" is a turn of a freshly made agent, which loads the conversation
// from the store (as every turn did before the cache, and as a turn still
// does after a restart or when another process ran the previous one).
func BenchmarkAgentTurn(b *testing.B) {
	for _, be := range turnbench.Savers {
		b.Run(be.Name, func(b *testing.B) {
			saver := be.Open(b)
			tmpl := turnAgent(b, saver)
			at := turnbench.Build(b, saver, func(conversation string) error { return agentTurn(tmpl, conversation) })
			for _, hot := range []bool{true, false} {
				mode := map[bool]string{true: "hot", false: "cold"}[hot]
				for _, n := range turnbench.Sizes {
					b.Run(fmt.Sprintf("%s/n=%d", mode, n), func(b *testing.B) {
						a := turnAgent(b, saver)
						turnbench.Run(b, saver, at[n], n, hot, func(conversation string) error { return agentTurn(a, conversation) },
							func() { a = turnAgent(b, saver) }, nodes.HistoryNamespace)
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

func agentTurn(a *nodes.Agent, conversation string) error {
	var final events.Event
	for ev, err := range a.Run(context.Background(), conversation, nodes.Input{Message: turnbench.Message}) {
		if err != nil {
			return err
		}
		final = ev
	}
	if final.Type != events.TypeRunCompleted {
		return fmt.Errorf("turn ended with %s", final.Type)
	}
	return nil
}
