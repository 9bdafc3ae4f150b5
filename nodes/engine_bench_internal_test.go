package nodes

import (
	"context"
	"strconv"
	"testing"

	"github.com/trellis-ai/trellis/events"
	"github.com/trellis-ai/trellis/graph"
	"github.com/trellis-ai/trellis/graph/checkpoint/memory"
)

// BenchmarkEngineFloor runs the answer path's shape — four nodes with
// ChatState, custom and message events, in-memory checkpoints — with
// nodes that do nothing but return a like update: the engine's share of
// the agent's overhead.
func BenchmarkEngineFloor(b *testing.B) { engineFloor(b, true, graph.ModeCustom|graph.ModeMessages) }

func BenchmarkEngineFloorNoCheckpoint(b *testing.B) {
	engineFloor(b, false, graph.ModeCustom|graph.ModeMessages)
}

func BenchmarkEngineFloorNoEvents(b *testing.B) { engineFloor(b, true, 0) }

func engineFloor(b *testing.B, persist bool, modes graph.Mode) {
	g := graph.New[ChatState](schemaFields()...)
	node := func(name string, upd func(s ChatState) ChatState) {
		g.AddNode(name, func(ctx context.Context, s ChatState) (ChatState, error) {
			_ = emit(ctx, &events.NodeStart{Node: name})
			u := upd(s)
			_ = emit(ctx, &events.NodeEnd{Node: name})
			return u, nil
		})
	}
	node("initialize", func(s ChatState) ChatState {
		return ChatState{Turn: 1, Messages: []Message{{Role: RoleUser, Content: s.Input.Message, Turn: 1}}}
	})
	node("supervisor", func(s ChatState) ChatState {
		return ChatState{Decision: Decision{Action: ActionAnswer}, Iteration: 1, Actions: []ActionRecord{{Iteration: 1, Action: ActionAnswer}}}
	})
	node("write", func(s ChatState) ChatState {
		_ = graph.EmitMessage(context.Background(), graph.MessageChunk{Text: "x"})
		return ChatState{FinalResponse: "Hello there, friend.", Outcome: OutcomeAnswered}
	})
	node("stream", func(s ChatState) ChatState {
		return ChatState{Messages: []Message{{Role: RoleAssistant, Content: s.FinalResponse, Turn: 1}}}
	})
	g.AddEdge(graph.START, "initialize")
	g.AddEdge("initialize", "supervisor")
	g.AddEdge("supervisor", "write")
	g.AddEdge("write", "stream")
	g.AddEdge("stream", graph.END)
	opts := graph.CompileOptions{}
	if persist {
		opts.Checkpointer = memory.New()
	}
	c, err := g.Compile(opts)
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		for _, err := range c.Stream(ctx, &ChatState{Input: Input{Message: "hi"}}, graph.RunConfig{
			ThreadID: "t" + strconv.Itoa(i), Modes: modes, StreamBuffer: 16}) {
			if err != nil {
				b.Fatal(err)
			}
		}
	}
}
