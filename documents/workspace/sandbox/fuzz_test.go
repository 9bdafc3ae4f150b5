package sandbox_test

import (
	"errors"
	"testing"
	"time"

	"github.com/trellis-ai/trellis/documents/workspace/sandbox"
)

// FuzzRun runs hostile programs: whatever they do, a run ends within its
// time limit (and a grace for what one step does), keeps its output
// within the limit, and ends with a value or one of the sandbox's errors.
func FuzzRun(f *testing.F) {
	for _, seed := range []string{
		"for (;;) {}",
		"function f() { return f() } f()",
		"let s = 'x'; for (;;) s += s",
		"const a = []; for (;;) a.push({})",
		"'x'.repeat(1e9)",
		"new Array(1e9).fill(1)",
		"for (;;) console.log('x'.repeat(100))",
		"JSON.parse('['.repeat(1e5))",
		"let o = {}; for (let i = 0; i < 1e5; i++) o = {o}; JSON.stringify(o)",
		"const a = []; a.length = 2 ** 32 - 1; [...a]",
		"(async () => { for (;;) await null })()",
		"Array.prototype.join.call({length: 2 ** 40}, 'x')",
		"eval('1')",
		"2n ** 99999999n",
		"/^(?=(a+)+$)/.test('a'.repeat(30) + '!')",
		"Array.prototype[Symbol.iterator] = (function () { return arguments })()[Symbol.iterator]; [...Array(2 ** 32 - 1)]",
		"throw 1",
		"- - - - - - - - 1",
		"a => b => c => d",
		"[1, 2, 3].map(x => x * x)",
	} {
		f.Add(seed)
	}
	limits := sandbox.Limits{Time: 200 * time.Millisecond, Memory: 16 << 20, Output: 1 << 10}
	f.Fuzz(func(t *testing.T, code string) {
		start := time.Now()
		res, err := sandbox.Run(t.Context(), code, limits, nil)
		if took := time.Since(start); took > limits.Time+3*time.Second {
			t.Errorf("ran %s with a limit of %s", took, limits.Time)
		}
		if len(res.Output) > limits.Output || len(res.Value) > limits.Output {
			t.Errorf("output %d bytes, value %d, past the limit of %d", len(res.Output), len(res.Value), limits.Output)
		}
		if err != nil && !errors.Is(err, sandbox.ErrTimeLimit) && !errors.Is(err, sandbox.ErrMemoryLimit) &&
			!errors.Is(err, sandbox.ErrOutputLimit) && !errors.Is(err, sandbox.ErrCallDepth) &&
			!errors.Is(err, sandbox.ErrSource) && !errors.Is(err, sandbox.ErrThrown) {
			t.Errorf("err = %v, not one of the sandbox's", err)
		}
	})
}
