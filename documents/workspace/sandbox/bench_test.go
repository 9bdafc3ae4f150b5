package sandbox_test

import (
	"testing"

	"github.com/trellis-ai/trellis/documents/workspace/sandbox"
)

// BenchmarkRunSmall is run_code's start-up: a fresh runtime, the prelude,
// a small program and its value (issue 29's target: 5 ms).
func BenchmarkRunSmall(b *testing.B) {
	for b.Loop() {
		res, err := sandbox.Run(b.Context(), "const xs = [1, 2, 3]; console.log(xs.length); xs.map(x => x * 2)", sandbox.Limits{}, nil)
		if err != nil || res.Value != "[2,4,6]" {
			b.Fatal(res, err)
		}
	}
}
