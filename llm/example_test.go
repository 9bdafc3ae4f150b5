package llm_test

import (
	"context"
	"fmt"

	"github.com/tmc/langchaingo/llms"

	"github.com/trellis-ai/trellis/llm"
)

// With nothing configured, every name resolves to the offline model, which
// still calls tools for what it recognises.
func Example() {
	ctx := context.Background()
	reg, err := llm.NewRegistry(llm.Config{})
	if err != nil {
		panic(err)
	}
	model, err := reg.Model(ctx, "fast")
	if err != nil {
		panic(err)
	}
	calculator := llms.Tool{Type: "function", Function: &llms.FunctionDefinition{Name: "calculator"}}
	resp, err := model.GenerateContent(ctx,
		[]llms.MessageContent{llms.TextParts(llms.ChatMessageTypeHuman, "What is 6*7?")},
		llms.WithTools([]llms.Tool{calculator}))
	if err != nil {
		panic(err)
	}
	for _, c := range llm.ToolCallsFrom(resp) {
		fmt.Println(c.FunctionCall.Name, c.FunctionCall.Arguments)
	}
	// Output: calculator {"expression":"6*7"}
}

func ExampleNewScripted() {
	script, err := llm.ParseScript([]byte(`{"steps": [
		{"match": {"node": "write"}, "reply": {"text": "Hello from the script."}}
	]}`))
	if err != nil {
		panic(err)
	}
	model := llm.NewScripted(script)
	ctx := llm.WithNode(context.Background(), "write")
	text, err := model.Call(ctx, "hi",
		llms.WithStreamingFunc(func(_ context.Context, chunk []byte) error {
			fmt.Printf("chunk %q\n", chunk)
			return nil
		}))
	fmt.Println(text, err)
	// Output:
	// chunk "Hello "
	// chunk "from "
	// chunk "the "
	// chunk "script."
	// Hello from the script. <nil>
}
