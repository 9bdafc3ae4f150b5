package sandbox

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"reflect"
	"runtime"
	"runtime/metrics"
	"strings"
	"time"

	"github.com/dlclark/regexp2/v2"
	"github.com/dop251/goja"
	"github.com/dop251/goja/ast"
	"github.com/dop251/goja/parser"

	"github.com/trellis-ai/trellis/internal/textcut"
)

// Defaults of [Limits].
const (
	DefaultTime   = 5 * time.Second
	DefaultMemory = 64 << 20
	DefaultOutput = 64 << 10
	// MaxSource is the longest program accepted, in bytes.
	MaxSource = 64 << 10
	// MaxNesting is the deepest a program's brackets may nest, and
	// maxArrows the most arrow functions it may hold: goja parses and
	// compiles both in time that grows with the square of their count,
	// before any limit of a run applies.
	MaxNesting = 256
	maxArrows  = 1000
	// maxTreeDepth bounds the depth of the program's syntax tree, for
	// nesting without brackets (unary operators, chains of blocks'
	// statements) that compiles in time and Go stack that grow with it.
	maxTreeDepth = 2000
	// MaxCallDepth is the deepest the program's calls may nest.
	MaxCallDepth = 1000
	// MaxDepth is the deepest a value JSON parses or stringifies may nest,
	// and an array flat flattens.
	MaxDepth = 1000
	// regexpTimeout bounds one regular-expression match, which runs in Go
	// where the interpreter cannot interrupt it.
	regexpTimeout = time.Second
	// sampleEvery is how often the watchdog looks at the heap.
	sampleEvery = time.Millisecond
)

// The limits' errors, which callers tell apart with errors.Is. A run
// cancelled by its context ends with the context's error instead.
var (
	ErrTimeLimit   = errors.New("sandbox: the program ran past its time limit")
	ErrMemoryLimit = errors.New("sandbox: the program went past its memory limit")
	ErrOutputLimit = errors.New("sandbox: the program's output went past its limit")
	ErrCallDepth   = errors.New("sandbox: the program's calls nested too deep")
	ErrSource      = errors.New("sandbox: the program is not accepted")
	// ErrThrown is a program that ended by an uncaught exception or a
	// syntax error; the error's text is the exception's.
	ErrThrown = errors.New("sandbox: the program threw")
	// ErrBusy is a Tool's call that found every slot (Limits.Concurrent)
	// taken for as long as a program may run.
	ErrBusy = errors.New("sandbox: every slot for programs is taken")
)

func init() {
	// goja compiles every regular expression it cannot give Go's regexp
	// with regexp2, which nothing else in this module uses: a match that
	// backtracks forever ends at this timeout instead.
	regexp2.DefaultMatchTimeout = regexpTimeout
}

// Limits bounds one run. Zero fields take the defaults.
type Limits struct {
	// Time is the wall time the program may run.
	Time time.Duration
	// Memory is how far, in bytes, the process' heap may grow while the
	// program runs; it also sizes the longest string (in characters) and
	// the longest array (Memory/8 elements) a built-in makes in one step.
	Memory int64
	// Output is the most bytes of console output kept, and separately of
	// the final value shown.
	Output int
	// Concurrent is how many programs one [Tool] runs at once; a call
	// waits at most Time for a slot, then fails with ErrBusy. A program
	// that loops to its time limit keeps a CPU busy all that while, and
	// the memory watchdog reads the one process heap that programs
	// running together share: DefaultConcurrent leaves the rest of the
	// CPUs to the service's requests. Run itself does not count.
	Concurrent int
}

// DefaultConcurrent is half the CPUs the process may use
// (GOMAXPROCS), at least one.
func DefaultConcurrent() int { return max(1, runtime.GOMAXPROCS(0)/2) }

func (l Limits) withDefaults() Limits {
	if l.Time <= 0 {
		l.Time = DefaultTime
	}
	if l.Memory <= 0 {
		l.Memory = DefaultMemory
	}
	if l.Output <= 0 {
		l.Output = DefaultOutput
	}
	if l.Concurrent <= 0 {
		l.Concurrent = DefaultConcurrent()
	}
	return l
}

// Files is the file API a program gets as the global `files`:
// files.list(dir), files.read(path) and files.write(path, text). Paths are
// the implementation's to check; its errors are thrown into the program as
// JavaScript errors.
type Files interface {
	List(ctx context.Context, dir string) ([]string, error)
	Read(ctx context.Context, path string) (string, error)
	Write(ctx context.Context, path, content string) error
}

// Result is what a program left: its console output and its final value.
type Result struct {
	// Output is what console.log and its kin wrote, at most Limits.Output
	// bytes.
	Output string `json:"output"`
	// Value is the program's completion value as console.log would show
	// it, "" when it is undefined, at most Limits.Output bytes.
	Value string `json:"value,omitempty"`
	// Truncated is set when Output or Value was cut at the limit.
	Truncated bool `json:"truncated,omitempty"`
}

//go:embed prelude.js
var preludeSource string

// prelude is compiled once: compiling is the slow part of a runtime's
// set-up, and a program is safe to run in many runtimes.
var prelude = goja.MustCompile("prelude.js", preludeSource, true)

// Run runs code under limits, with files (nil for none) as its file API.
// The error is one of the sentinels above (wrapped with detail), or ctx's
// error when ctx ended first; the Result holds what the program wrote
// before it stopped either way.
func Run(ctx context.Context, code string, limits Limits, files Files) (Result, error) {
	limits = limits.withDefaults()
	if err := ctx.Err(); err != nil {
		return Result{}, err
	}
	prog, err := compile(code)
	if err != nil {
		return Result{}, err
	}
	rt := goja.New()
	rt.SetMaxCallStackSize(MaxCallDepth)
	out := &output{limit: limits.Output, rt: rt}
	show, err := setUp(ctx, rt, limits, files, out)
	if err != nil {
		return Result{}, err
	}

	w := startWatchdog(ctx, rt, limits)
	v, runErr := rt.RunProgram(prog)
	var res Result
	if runErr == nil {
		res.Value, runErr = render(rt, show, v)
	}
	reason := w.stop()
	res.Output, res.Truncated = out.b.String(), out.cut
	if len(res.Value) > limits.Output {
		res.Value, res.Truncated = textcut.Head(res.Value, limits.Output), true
	}
	if runErr == nil {
		return res, nil
	}
	var interrupted *goja.InterruptedError
	if errors.As(runErr, &interrupted) {
		if e, ok := interrupted.Value().(error); ok {
			return res, e
		}
	}
	if reason != nil {
		return res, reason
	}
	var deep *goja.StackOverflowError
	if errors.As(runErr, &deep) {
		return res, fmt.Errorf("%w: more than %d calls", ErrCallDepth, MaxCallDepth)
	}
	var exc *goja.Exception
	if errors.As(runErr, &exc) {
		return res, fmt.Errorf("%w: %s", ErrThrown, exc.Error())
	}
	return res, fmt.Errorf("%w: %v", ErrThrown, runErr)
}

// compile parses code and refuses what the sandbox does not run: a
// program too long, and BigInt literals, whose operators allocate
// without bound in one step.
func compile(code string) (*goja.Program, error) {
	if len(code) > MaxSource {
		return nil, fmt.Errorf("%w: %d bytes is longer than %d", ErrSource, len(code), MaxSource)
	}
	if d := bracketDepth(code); d > MaxNesting {
		return nil, fmt.Errorf("%w: its brackets nest deeper than %d", ErrSource, MaxNesting)
	}
	if n := strings.Count(code, "=>"); n > maxArrows {
		return nil, fmt.Errorf("%w: %d arrow functions are more than %d", ErrSource, n, maxArrows)
	}
	tree, err := goja.Parse("program.js", code, parser.WithDisableSourceMaps)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrThrown, err)
	}
	if err := (&treeCheck{guarded: map[*ast.ObjectPattern]bool{}}).walk(reflect.ValueOf(tree), 0); err != nil {
		return nil, err
	}
	prog, err := goja.CompileAST(tree, false)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrThrown, err)
	}
	return prog, nil
}

// bracketDepth is how deep the brackets of code nest, counted over the
// raw text: a bracket inside a string or a comment counts too, which can
// only refuse a program, never let a deeper one through.
func bracketDepth(code string) int {
	depth, deepest := 0, 0
	for i := 0; i < len(code); i++ {
		switch code[i] {
		case '(', '[', '{':
			depth++
			deepest = max(deepest, depth)
		case ')', ']', '}':
			depth = max(depth-1, 0)
		}
	}
	return deepest
}

// spreadGuard names the prelude's check of a value whose properties an
// object spread or an object rest copies: "#spread" is no identifier a
// program can write, so none can shadow or reach it by name.
const spreadGuard = "#spread"

// guarded is e passed through the spread guard.
func guarded(e ast.Expression) ast.Expression {
	return &ast.CallExpression{Callee: &ast.Identifier{Name: spreadGuard, Idx: e.Idx0()},
		LeftParenthesis: e.Idx0(), ArgumentList: []ast.Expression{e}, RightParenthesis: e.Idx1()}
}

// treeCheck refuses a syntax tree nested deeper than maxTreeDepth or
// holding a BigInt literal, whose operators allocate without bound in one
// step. It also rewrites the tree so that the values an object spread
// ({...s}) or an object rest (const {...r} = s) copies go through the
// spread guard first: they copy a string's characters, one property
// each, in Go. An object rest whose value no expression gives — in a
// parameter, a loop's head, or nested in another pattern — is refused.
type treeCheck struct {
	// guarded holds the object patterns whose value is guarded.
	guarded map[*ast.ObjectPattern]bool
}

// restPattern is t when it is an object pattern with a rest element.
func restPattern(t ast.Node) (*ast.ObjectPattern, bool) {
	p, ok := t.(*ast.ObjectPattern)
	return p, ok && p.Rest != nil
}

// walk checks v, depth being the number of nodes above it.
func (c *treeCheck) walk(v reflect.Value, depth int) error {
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		if v.IsNil() {
			return nil
		}
		switch n := v.Interface().(type) {
		case *ast.SpreadElement:
			n.Expression = guarded(n.Expression)
		case *ast.Binding:
			if p, ok := restPattern(n.Target); ok && n.Initializer != nil {
				n.Initializer, c.guarded[p] = guarded(n.Initializer), true
			}
		case *ast.AssignExpression:
			if p, ok := restPattern(n.Left); ok {
				n.Right, c.guarded[p] = guarded(n.Right), true
			}
		case *ast.ObjectPattern:
			if n.Rest != nil && !c.guarded[n] {
				return fmt.Errorf("%w: an object rest ({...r}) in a parameter, a loop's head or a nested pattern is not available in the sandbox", ErrSource)
			}
		}
		if n, ok := v.Interface().(*ast.NumberLiteral); ok {
			if _, big := n.Value.(interface{ BitLen() int }); big {
				return fmt.Errorf("%w: BigInt is not available in the sandbox", ErrSource)
			}
			return nil
		}
		if v.Kind() == reflect.Pointer && v.Elem().Kind() == reflect.Struct {
			if depth++; depth > maxTreeDepth {
				return fmt.Errorf("%w: its syntax nests deeper than %d", ErrSource, maxTreeDepth)
			}
		}
		return c.walk(v.Elem(), depth)
	case reflect.Struct:
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				if err := c.walk(v.Field(i), depth); err != nil {
					return err
				}
			}
		}
	case reflect.Slice:
		for i := range v.Len() {
			if err := c.walk(v.Index(i), depth); err != nil {
				return err
			}
		}
	}
	return nil
}

// setUp runs the prelude in rt and gives the program its globals; it
// returns the prelude's show, which renders a value as console.log does.
func setUp(ctx context.Context, rt *goja.Runtime, limits Limits, files Files, out *output) (goja.Callable, error) {
	v, err := rt.RunProgram(prelude)
	if err != nil {
		return nil, fmt.Errorf("sandbox: prelude: %w", err)
	}
	init, _ := goja.AssertFunction(v)
	shown, err := init(goja.Undefined(), rt.GlobalObject(), rt.ToValue(limits.Memory), rt.ToValue(limits.Memory/8),
		rt.ToValue(MaxDepth), rt.ToValue(jsonDepth), rt.ToValue(out.write), rt.ToValue(func(what string) {
			rt.Interrupt(fmt.Errorf("%w of %d bytes: %s", ErrMemoryLimit, limits.Memory, what))
		}))
	if err != nil {
		return nil, fmt.Errorf("sandbox: prelude: %w", err)
	}
	show, _ := goja.AssertFunction(shown)
	if files != nil {
		if err := exposeFiles(ctx, rt, files, limits); err != nil {
			return nil, err
		}
	}
	return show, nil
}

// exposeFiles gives the program files.list, files.read and files.write.
func exposeFiles(ctx context.Context, rt *goja.Runtime, files Files, limits Limits) error {
	obj := rt.NewObject()
	fail := func(err error) { panic(rt.NewGoError(err)) }
	set := func(name string, fn func(goja.FunctionCall) goja.Value) error {
		return obj.Set(name, fn)
	}
	err := errors.Join(
		set("list", func(c goja.FunctionCall) goja.Value {
			names, err := files.List(ctx, c.Argument(0).String())
			if err != nil {
				fail(err)
			}
			return rt.ToValue(names)
		}),
		set("read", func(c goja.FunctionCall) goja.Value {
			s, err := files.Read(ctx, c.Argument(0).String())
			if err != nil {
				fail(err)
			}
			if int64(len(s)) > limits.Memory {
				fail(fmt.Errorf("%w: the file is %d bytes", ErrMemoryLimit, len(s)))
			}
			return rt.ToValue(s)
		}),
		set("write", func(c goja.FunctionCall) goja.Value {
			if err := files.Write(ctx, c.Argument(0).String(), c.Argument(1).String()); err != nil {
				fail(err)
			}
			return goja.Undefined()
		}),
	)
	if err != nil {
		return fmt.Errorf("sandbox: files: %w", err)
	}
	return rt.Set("files", obj)
}

// render shows the program's final value as console.log would.
func render(rt *goja.Runtime, show goja.Callable, v goja.Value) (string, error) {
	if v == nil || goja.IsUndefined(v) {
		return "", nil
	}
	s, err := show(goja.Undefined(), v)
	if err != nil {
		return "", err
	}
	return s.String(), nil
}

// output keeps console output up to its limit; past it, it stops the
// program.
type output struct {
	limit int
	rt    *goja.Runtime
	b     strings.Builder
	cut   bool
}

func (o *output) write(s string) {
	if o.cut {
		return
	}
	if room := o.limit - o.b.Len(); len(s) > room {
		o.b.WriteString(textcut.Head(s, room))
		o.cut = true
		o.rt.Interrupt(fmt.Errorf("%w of %d bytes", ErrOutputLimit, o.limit))
		return
	}
	o.b.WriteString(s)
}

// jsonDepth is the deepest nesting of brackets in a JSON text, outside
// its strings: counted in Go so that a deep text costs no recursion.
func jsonDepth(s string) int {
	depth, deepest, inString, escaped := 0, 0, false, false
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case inString && escaped:
			escaped = false
		case inString && c == '\\':
			escaped = true
		case c == '"':
			inString = !inString
		case inString:
		case c == '[' || c == '{':
			depth++
			deepest = max(deepest, depth)
		case c == ']' || c == '}':
			depth--
		}
	}
	return deepest
}

// watchdog interrupts a runtime when its time is up, its context ends, or
// the heap has grown past the memory limit.
type watchdog struct {
	done   chan struct{}
	exited chan struct{}
	reason error
}

func startWatchdog(ctx context.Context, rt *goja.Runtime, limits Limits) *watchdog {
	w := &watchdog{done: make(chan struct{}), exited: make(chan struct{})}
	sample := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	heap := func() int64 {
		metrics.Read(sample)
		return int64(sample[0].Value.Uint64())
	}
	// Growth is counted from the lowest heap seen since the run began: a
	// collection that frees what was garbage before the run must not
	// hand the program that room too.
	low := heap()
	go func() {
		defer close(w.exited)
		timer := time.NewTimer(limits.Time)
		defer timer.Stop()
		tick := time.NewTicker(sampleEvery)
		defer tick.Stop()
		for {
			select {
			case <-w.done:
				return
			case <-ctx.Done():
				w.interrupt(rt, ctx.Err())
				return
			case <-timer.C:
				w.interrupt(rt, fmt.Errorf("%w of %s", ErrTimeLimit, limits.Time))
				return
			case <-tick.C:
				now := heap()
				low = min(low, now)
				if grown := now - low; grown > limits.Memory {
					w.interrupt(rt, fmt.Errorf("%w of %d bytes (the heap grew by %d)", ErrMemoryLimit, limits.Memory, grown))
					return
				}
			}
		}
	}()
	return w
}

func (w *watchdog) interrupt(rt *goja.Runtime, reason error) {
	w.reason = reason
	rt.Interrupt(reason)
}

// stop ends the watchdog and returns why it interrupted the runtime, if
// it did.
func (w *watchdog) stop() error {
	close(w.done)
	<-w.exited
	return w.reason
}
