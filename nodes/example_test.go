package nodes_test

import (
	"context"
	"fmt"
	"strings"

	"github.com/trellis-ai/trellis/events"
	"github.com/trellis-ai/trellis/llm"
	"github.com/trellis-ai/trellis/nodes"
	"github.com/trellis-ai/trellis/operators"
)

// An agent over the offline model and the built-in tools answers an
// arithmetic question by calling the calculator.
func Example() {
	models, err := llm.NewRegistry(llm.Config{}) // only the offline model
	if err != nil {
		panic(err)
	}
	local := operators.NewRegistry()
	local.MustAdd(operators.Calculator())
	tools := operators.NewProvider(operators.ProviderConfig{Local: local})
	agent, err := nodes.New(models, tools, nil, nodes.Options{}) // nil: in-memory checkpoints
	if err != nil {
		panic(err)
	}
	var types []string
	for ev, err := range agent.Run(context.Background(), "conversation-1", nodes.Input{Message: "What is 2+2*3?"}) {
		if err != nil {
			panic(err)
		}
		switch d := ev.Data.(type) {
		case *events.NodeStart, *events.NodeEnd, *events.ResponseChunk:
		case *events.ResponseDone:
			types = append(types, ev.Type+" "+d.Content)
		default:
			types = append(types, ev.Type)
		}
	}
	fmt.Println(strings.Join(types, "\n"))
	// Output:
	// supervisor.thinking
	// supervisor.decided
	// tool.start
	// tool.complete
	// response.done 2+2*3 = 8
	// run.completed
}
