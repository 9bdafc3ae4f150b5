package operators_test

import (
	"context"
	"fmt"
	"strings"

	"github.com/trellis-ai/trellis/operators"
)

// Adding a tool: a function, an input struct, one registration.
func ExampleNewTool() {
	type greetIn struct {
		Name  string `json:"name" jsonschema:"who to greet"`
		Shout bool   `json:"shout,omitempty" jsonschema:"greet loudly"`
	}
	greet := operators.NewTool("greet", "Greets someone by name.",
		func(ctx context.Context, call operators.Call, in greetIn) (operators.Result, error) {
			if in.Shout {
				return operators.TextResult(strings.ToUpper("hello, " + in.Name + "!")), nil
			}
			return operators.TextResult("Hello, " + in.Name + "."), nil
		}, operators.ReadOnly())

	local := operators.NewRegistry()
	local.MustAdd(greet)
	p := operators.NewProvider(operators.ProviderConfig{Local: local})

	ctx := context.Background()
	fmt.Println(p.Execute(ctx, "greet", []byte(`{"name":"Ada"}`), operators.Call{}).Text())
	fmt.Println(p.Execute(ctx, "greet", []byte(`{"name":"Ada","shout":true}`), operators.Call{}).Text())
	fmt.Println(p.Execute(ctx, "greet", []byte(`{"nam":"Ada"}`), operators.Call{}).Text())
	// Output:
	// Hello, Ada.
	// HELLO, ADA!
	// error: operators: invalid arguments for greet: unexpected additional properties ["nam"]; expected name (string, required), shout (boolean)
}
