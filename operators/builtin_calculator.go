package operators

import (
	"context"
	"fmt"
)

type calculatorIn struct {
	Expression string `json:"expression" jsonschema:"the arithmetic expression, e.g. (2+3)*sqrt(16) or 2^100"`
}

// Calculator is the calculator tool: it evaluates an arithmetic expression
// with [Calculate]. A malformed expression is an error result that names
// the position.
func Calculator() Tool {
	return NewTool("calculator",
		"Evaluates an arithmetic expression exactly: + - * / % ^ and parentheses, "+
			"functions sqrt, log, ln, log10, log2, exp, sin, cos, tan, asin, acos, atan, abs, floor, ceil, round, min, max, factorial, "+
			"constants pi and e. Integers are exact at any size (2^100, 100!). Use it for any arithmetic instead of computing in your head.",
		func(_ context.Context, _ Call, in calculatorIn) (Result, error) {
			v, err := Calculate(in.Expression)
			if err != nil {
				return Result{}, fmt.Errorf("calculator: %q: %w", in.Expression, err)
			}
			return TextResult(v), nil
		}, ReadOnly())
}
