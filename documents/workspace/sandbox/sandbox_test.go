package sandbox_test

import (
	"context"
	"errors"
	"maps"
	"runtime/metrics"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/trellis-ai/trellis/documents/workspace/sandbox"
)

func run(t *testing.T, code string, limits sandbox.Limits) (sandbox.Result, error) {
	t.Helper()
	return sandbox.Run(t.Context(), code, limits, nil)
}

func TestRunValueAndOutput(t *testing.T) {
	for _, tc := range []struct{ code, output, value string }{
		{"1+2", "", "3"},
		{"console.log('hi', 2, {a: [1, 2]}, null); [1, 2, 3].map(x => x * 2)", "hi 2 {\"a\":[1,2]} null\n", "[2,4,6]"},
		{"let s = 0; for (let i = 0; i < 1000; i++) s += i; s", "", "499500"},
		{"'text'", "", "text"},
		{"undefined", "", ""},
		{"(function f() {})", "", "[Function: f]"},
		{"JSON.stringify({a: {b: [1, 2]}}, null, 1)", "", "{\n \"a\": {\n  \"b\": [\n   1,\n   2\n  ]\n }\n}"},
		{"JSON.stringify({a: 1, b: 2, c: 3}, ['a', 'c'])", "", `{"a":1,"c":3}`},
		{"JSON.parse('[[1],{\"x\":\"]]]\"}]')[1].x", "", "]]]"},
		{"'a-b-c'.split('-').join('+') + 'x'.repeat(3) + '7'.padStart(3, '0')", "", "a+b+cxxx007"},
		{"'aaa'.replace(/a/g, '[$&]')", "", "[a][a][a]"},
		{"[[1, [2, [3]]]].flat(Infinity)", "", "[1,2,3]"},
		{"const {a, ...rest} = {...{a: 1, b: 2}, c: 3}; let r; ({...r} = 'ab'); [a, rest, r, {...'xy'}]", "", `[1,{"b":2,"c":3},{"0":"a","1":"b"},{"0":"x","1":"y"}]`},
		{"let r; Promise.resolve(5).then(v => { r = v }); (async () => { await null; console.log('async', r) })(); 0", "async 5\n", "0"},
	} {
		res, err := run(t, tc.code, sandbox.Limits{})
		if err != nil {
			t.Errorf("%s: %v", tc.code, err)
			continue
		}
		if res.Output != tc.output || res.Value != tc.value || res.Truncated {
			t.Errorf("%s: got %+v, want output %q value %q", tc.code, res, tc.output, tc.value)
		}
	}
}

func TestRunThrows(t *testing.T) {
	res, err := run(t, "console.log('before'); throw new Error('boom')", sandbox.Limits{})
	if !errors.Is(err, sandbox.ErrThrown) || !strings.Contains(err.Error(), "Error: boom") {
		t.Fatalf("err = %v, want ErrThrown naming the error", err)
	}
	if res.Output != "before\n" {
		t.Errorf("output = %q, want what was printed before the throw", res.Output)
	}
	if _, err := run(t, "let = ;", sandbox.Limits{}); !errors.Is(err, sandbox.ErrThrown) || !strings.Contains(err.Error(), "SyntaxError") {
		t.Errorf("syntax error: err = %v", err)
	}
}

// heapWatch samples the process' heap until stopped and reports its
// largest growth over the first sample.
func heapWatch() (stop func() int64) {
	sample := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	read := func() int64 { metrics.Read(sample); return int64(sample[0].Value.Uint64()) }
	base := read()
	var peak atomic.Int64
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			select {
			case <-done:
				return
			case <-time.After(200 * time.Microsecond):
				peak.Store(max(peak.Load(), read()-base))
			}
		}
	})
	return func() int64 { close(done); wg.Wait(); return peak.Load() }
}

func TestRunLimits(t *testing.T) {
	const memory = 32 << 20
	for _, tc := range []struct {
		name, code string
		want       error
	}{
		{"infinite loop", "for (;;) {}", sandbox.ErrTimeLimit},
		{"infinite loop that catches", "for (;;) { try { for (;;) {} } catch (e) {} }", sandbox.ErrTimeLimit},
		{"async loop", "(async () => { for (;;) await null })()", sandbox.ErrTimeLimit},
		{"deep recursion", "function f(n) { return f(n + 1) + 1 } f(0)", sandbox.ErrCallDepth},
		{"recursion that catches", "function f() { try { return f() } catch (e) { return f() } } f()", sandbox.ErrCallDepth},
		{"growing array", "const a = []; for (let i = 0;; i++) a.push('x'.repeat(1000) + i)", sandbox.ErrMemoryLimit},
		{"doubling string", "let s = 'x'; for (;;) s += s", sandbox.ErrMemoryLimit},
		{"repeat", "'x'.repeat(2 ** 31)", sandbox.ErrMemoryLimit},
		{"repeat caught", "try { 'xy'.repeat(1e9) } catch (e) {} 'went on'", sandbox.ErrMemoryLimit},
		{"padEnd", "''.padEnd(1e9, 'ab')", sandbox.ErrMemoryLimit},
		{"fill", "new Array(1e9).fill(0)", sandbox.ErrMemoryLimit},
		{"sparse join", "const a = []; a.length = 2 ** 32 - 1; a.join('xx')", sandbox.ErrMemoryLimit},
		{"array-like", "Array.prototype.indexOf.call({length: 2 ** 40}, 1)", sandbox.ErrMemoryLimit},
		{"Array.from", "Array.from({length: 1e9})", sandbox.ErrMemoryLimit},
		{"replace", "const s = 'a'.repeat(1e5); s.replace(/a/g, '$`')", sandbox.ErrMemoryLimit},
		{"split", "'x'.repeat(2e7).split('')", sandbox.ErrMemoryLimit},
		{"spread of a sparse array", "const a = []; a.length = 2 ** 32 - 1; Math.max(...a)", sandbox.ErrMemoryLimit},
		{"apply of a sparse array", "const a = []; a[2 ** 32 - 2] = 1; Math.max.apply(null, a)", sandbox.ErrMemoryLimit},
		{"spread through arguments' iterator", "Array.prototype[Symbol.iterator] = (function () { return arguments })()[Symbol.iterator]; " +
			"const a = []; a.length = 2 ** 32 - 1; [...a]", sandbox.ErrMemoryLimit},
		{"object spread of a long string", "const s = 'x'.repeat(3e7); ({...s})", sandbox.ErrMemoryLimit},
		{"object rest of a long string", "const {...r} = 'x'.repeat(3e7)", sandbox.ErrMemoryLimit},
		{"object rest in a parameter", "(({...r}) => r)('x'.repeat(3e7))", sandbox.ErrSource},
		{"Set of a sparse array", "const a = []; a.length = 2 ** 32 - 1; new Set(a)", sandbox.ErrMemoryLimit},
		{"keys of a long string", "Object.keys('x'.repeat(3e7))", sandbox.ErrMemoryLimit},
		{"spread of a long string", "[...'x'.repeat(3e7)]", sandbox.ErrMemoryLimit},
		{"output loop", "for (;;) console.log('all work and no play')", sandbox.ErrOutputLimit},
		{"one huge line", "console.log('y'.repeat(1e6))", sandbox.ErrOutputLimit},
		{"BigInt", "2n ** 100000000n", sandbox.ErrSource},
		{"too long", strings.Repeat(" ", sandbox.MaxSource+1), sandbox.ErrSource},
		// Nesting that goja would parse or compile in quadratic time and
		// deep Go recursion, before any limit applies.
		{"deep brackets", strings.Repeat("{", 20000) + strings.Repeat("}", 20000), sandbox.ErrSource},
		{"deep unary", strings.Repeat("- ", 30000) + "1", sandbox.ErrSource},
		{"deep arrows", strings.Repeat("a=>", 20000) + "1", sandbox.ErrSource},
		{"deep conditionals", strings.Repeat("a?b:", 16000) + "1", sandbox.ErrSource},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// Programs that must stop at the memory limit get time enough
			// to reach it on a busy machine.
			limits := sandbox.Limits{Time: 20 * time.Second, Memory: memory, Output: 1 << 10}
			if tc.want == sandbox.ErrTimeLimit {
				limits.Time = 300 * time.Millisecond
			}
			stop := heapWatch()
			start := time.Now()
			res, err := run(t, tc.code, limits)
			took, grew := time.Since(start), stop()
			if !errors.Is(err, tc.want) {
				t.Fatalf("err = %v, want %v", err, tc.want)
			}
			if took > limits.Time+time.Second {
				t.Errorf("took %s with a time limit of %s", took, limits.Time)
			}
			// The heap may pass the limit by what one instruction
			// allocates before the watchdog's next look (a string twice
			// the largest the program holds), never by much more.
			if grew > 8*memory {
				t.Errorf("the heap grew by %d MiB with a limit of %d MiB", grew>>20, memory>>20)
			}
			if len(res.Output) > limits.Output {
				t.Errorf("output of %d bytes past the limit of %d", len(res.Output), limits.Output)
			}
			if tc.want == sandbox.ErrOutputLimit && (len(res.Output) != limits.Output || !res.Truncated) {
				t.Errorf("output of %d bytes (truncated %v), want it cut at %d", len(res.Output), res.Truncated, limits.Output)
			}
		})
	}
}

// TestRunNestingIsCatchable: nesting too deep for a built-in that would
// recurse in Go is a RangeError the program may catch and go on from.
func TestRunNestingIsCatchable(t *testing.T) {
	for _, code := range []string{
		"JSON.parse('['.repeat(1e5))",
		"let o = {}; for (let i = 0; i < 1e5; i++) o = {o}; JSON.stringify(o)",
		"let o = {}; for (let i = 0; i < 1e5; i++) o = {o}; JSON.stringify({toJSON() { return o }})",
		"let o = {}; for (let i = 0; i < 1e5; i++) o = {o}; JSON.stringify(1, (k, v) => k === '' ? o : v)",
		"let a = []; for (let i = 0; i < 1e5; i++) a = [a]; a.flat(Infinity)",
		"let o = {}; for (let i = 0; i < 1e5; i++) o = {o}; console.log(o)",
	} {
		res, err := run(t, "try { "+code+"; 'no error' } catch (e) { e.name }", sandbox.Limits{})
		if err != nil || res.Value != "RangeError" {
			t.Errorf("%s: %+v, %v; want a RangeError caught", code, res, err)
		}
	}
}

// TestRunDeepToString: an array nested deeper than the call stack turned
// into a string recurses through the interpreter, which stops it.
func TestRunDeepToString(t *testing.T) {
	_, err := run(t, "let a = []; for (let i = 0; i < 1e5; i++) a = [a]; String(a)", sandbox.Limits{})
	if !errors.Is(err, sandbox.ErrCallDepth) {
		t.Errorf("err = %v, want ErrCallDepth", err)
	}
}

func TestRunValueTruncated(t *testing.T) {
	res, err := run(t, "'é'.repeat(3000)", sandbox.Limits{Output: 1001})
	if err != nil {
		t.Fatal(err)
	}
	if !res.Truncated || len(res.Value) != 1000 || !strings.HasPrefix(strings.Repeat("é", 600), res.Value) {
		t.Errorf("value of %d bytes (truncated %v), want 1000 bytes of whole characters", len(res.Value), res.Truncated)
	}
}

// TestRunNoEscape: nothing outside the language reaches the program.
func TestRunNoEscape(t *testing.T) {
	for _, name := range []string{"require", "module", "exports", "process", "fetch", "XMLHttpRequest", "WebSocket",
		"setTimeout", "setInterval", "setImmediate", "queueMicrotask", "Deno", "Bun", "files", "ArrayBuffer",
		"Uint8Array", "DataView", "SharedArrayBuffer", "BigInt", "WeakRef"} {
		res, err := run(t, "typeof "+name, sandbox.Limits{})
		if err != nil || res.Value != "undefined" {
			t.Errorf("typeof %s = %q, %v; want undefined", name, res.Value, err)
		}
	}
	for _, code := range []string{
		"eval('1')",
		"new Function('return 1')()",
		"(function () {}).constructor('return this')()",
		"(function* () {}).constructor('yield 1')",
		"(async function () {}).constructor('return 1')",
		"Reflect.construct(Object.getPrototypeOf(() => 1).constructor, ['return 1'])",
	} {
		if _, err := run(t, code, sandbox.Limits{}); !errors.Is(err, sandbox.ErrThrown) || !strings.Contains(err.Error(), "code generation") {
			t.Errorf("%s: err = %v, want code generation refused", code, err)
		}
	}
	for _, code := range []string{"import fs from 'fs'", "import('fs')", "require('fs')", "fetch('http://127.0.0.1/')",
		"process.exit(1)", "setTimeout(() => {}, 1)", "files.read('/etc/passwd')"} {
		if res, err := run(t, code, sandbox.Limits{}); err == nil {
			t.Errorf("%s ran: %+v", code, res)
		}
	}
}

// TestRunRegexpTimeout: a match that would backtrack for ever (a
// lookahead sends the pattern to regexp2, which backtracks) ends at the
// sandbox's regular-expression timeout, as a failed match.
func TestRunRegexpTimeout(t *testing.T) {
	start := time.Now()
	res, err := run(t, "/^(?=(a+)+$)/.test('a'.repeat(40) + '!')", sandbox.Limits{Time: time.Minute})
	if err != nil || res.Value != "false" {
		t.Fatalf("%+v, %v; want false", res, err)
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("took %s", took)
	}
}

// memFiles is a map of paths to contents: the file API the workspace will
// give, in a test.
type memFiles struct {
	mu    sync.Mutex
	files map[string]string
	read  chan struct{}
}

func (m *memFiles) List(_ context.Context, dir string) ([]string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Sorted(maps.Keys(m.files)), nil
}

func (m *memFiles) Read(_ context.Context, path string) (string, error) {
	if m.read != nil {
		close(m.read)
		m.read = nil
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	s, ok := m.files[path]
	if !ok {
		return "", errors.New("no file " + path)
	}
	return s, nil
}

func (m *memFiles) Write(_ context.Context, path, content string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.files[path] = content
	return nil
}

func TestRunFiles(t *testing.T) {
	files := &memFiles{files: map[string]string{"notes.md": "one\ntwo\n"}}
	res, err := sandbox.Run(t.Context(), `
		const lines = files.read('notes.md').trim().split('\n');
		files.write('count.txt', String(lines.length));
		let missing;
		try { files.read('nope') } catch (e) { missing = e.message }
		[files.list(''), missing]`, sandbox.Limits{}, files)
	if err != nil {
		t.Fatal(err)
	}
	if res.Value != `[["count.txt","notes.md"],"no file nope"]` || files.files["count.txt"] != "2" {
		t.Errorf("value %q, files %v", res.Value, files.files)
	}
}

// TestRunCancelled: cancelling the run's context stops the program in the
// middle of its loop, long before its time limit; TestMain's leak check
// proves the watchdog is gone with it.
func TestRunCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	started := make(chan struct{})
	files := &memFiles{files: map[string]string{"x": ""}, read: started}
	go func() {
		<-started
		cancel()
	}()
	start := time.Now()
	_, err := sandbox.Run(ctx, "files.read('x'); let n = 0; for (;;) n++", sandbox.Limits{Time: time.Minute}, files)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("stopped after %s", took)
	}
	if _, err := sandbox.Run(ctx, "1", sandbox.Limits{}, nil); !errors.Is(err, context.Canceled) {
		t.Errorf("a run on an ended context: err = %v", err)
	}
}
