package nodes

import (
	"context"
	"encoding/json"
	"runtime/debug"
	"strings"
	"sync"

	"github.com/tmc/langchaingo/llms"

	"github.com/trellis-ai/trellis/events"
	"github.com/trellis-ai/trellis/graph"
	"github.com/trellis-ai/trellis/operators"
)

// Middleware extends the agent without the agent's nodes knowing it by
// name. A middleware is any value with a Name that implements one or
// more of the hooks below, found by type assertion: TurnStarter,
// Prompter, ToolSource, BeforeModel and AfterModel.
//
// The chain is Options.Middleware after the built-ins the agent adds in
// front (see Options.Middleware). It is applied as a sandwich: StartTurn,
// Prompt, Tools and BeforeModel run first to last; AfterModel runs last
// to first, so the first middleware wraps all the others.
type Middleware interface {
	// Name identifies the middleware in logs.
	Name() string
}

// TurnStarter is a middleware that prepares each turn: initialize calls
// StartTurn with the state before the user's message is added. It
// returns what to set on the turn's state (applied after the per-turn
// fields are reset, in chain order), or nil. The hooks of a chain run
// concurrently; each bounds its own work. An error is logged and the turn
// goes on without that middleware's part; so does a panic.
type TurnStarter interface {
	StartTurn(ctx context.Context, s *ChatState) (func(*ChatState), error)
}

// Prompter is a middleware that adds to the system prompt: Prompt writes
// its section (starting with a blank line) for a model call of node, or
// nothing.
type Prompter interface {
	Prompt(b *strings.Builder, s *ChatState, node string)
}

// ToolSource is a middleware that contributes tools the supervisor may
// call beside the provider's. Tools may depend on the state (a tool
// offered only at some depth); nil means none now.
type ToolSource interface {
	Tools(s *ChatState) []Tool
}

// BeforeModel is a middleware that sees, and may change, each model call
// before it is made: its messages, its options. It may stop the call by
// returning an error, or pause the run by returning graph.Interrupt's.
type BeforeModel interface {
	BeforeModel(ctx context.Context, c *ModelCall) error
}

// AfterModel is a middleware that sees, and may change, each model
// call's response (ModelCall.Response) before the node reads it. It may
// fail the call, or pause the run by returning graph.Interrupt's.
type AfterModel interface {
	AfterModel(ctx context.Context, c *ModelCall) error
}

// ModelCall is one model call of a node, as the middleware sees it.
type ModelCall struct {
	// Node is the calling node (supervisor, reflect, write).
	Node string
	// State is the node's input; read it, never change it.
	State *ChatState
	// System is the system prompt, middleware sections included.
	System string
	// Messages are what the model sees of the conversation; the window
	// middleware narrows them.
	Messages []Message
	// Options are the call's options.
	Options []llms.CallOption
	// Response is the model's reply, for AfterModel.
	Response *llms.ContentResponse

	// historyTools offers the agent's tools (with tool choice none) if
	// Messages hold tool calls or results once BeforeModel has run: some
	// providers refuse those without tool definitions.
	historyTools bool
}

// Tool is a tool a middleware contributes.
type Tool struct {
	// Def is the tool as the model sees it.
	Def llms.Tool
	// Summary is its line in the supervisor's tool list.
	Summary string
	// Run runs a call. A Go error ends the call without a result: return
	// only a pause (graph.Interrupt's error, or a run's that wraps it),
	// which pauses the whole execution; failures are error Results.
	Run func(ctx context.Context, c ToolRun) (ToolOutput, error)
	// Parallel bounds how many calls of the tool one execution runs at
	// once; 0 means as many as Options.MaxParallelTools allows.
	Parallel int
}

// ToolRun is one call of a middleware's tool.
type ToolRun struct {
	ToolCallID string
	Args       json.RawMessage
	// Input is the calling agent's turn input.
	Input Input
}

// ToolOutput is what a middleware's tool returns.
type ToolOutput struct {
	operators.Result
	// Usage is the model usage the call spent (a sub-agent's), added to
	// the turn's.
	Usage events.Usage
}

// chain is an agent's middleware, sorted by hook once.
type chain struct {
	all     []Middleware
	starts  []turnStarter
	prompts []Prompter
	tools   []ToolSource
	before  []BeforeModel
	after   []AfterModel
}

func newChain(ms []Middleware) chain {
	c := chain{all: ms}
	for _, m := range ms {
		if h, ok := m.(TurnStarter); ok {
			c.starts = append(c.starts, turnStarter{h})
		}
		if h, ok := m.(Prompter); ok {
			c.prompts = append(c.prompts, h)
		}
		if h, ok := m.(ToolSource); ok {
			c.tools = append(c.tools, h)
		}
		if h, ok := m.(BeforeModel); ok {
			c.before = append(c.before, h)
		}
		if h, ok := m.(AfterModel); ok {
			c.after = append(c.after, h)
		}
	}
	return c
}

// startTurn runs every TurnStarter (concurrently when there are several)
// and returns what they set, in chain order; nil when none sets anything.
func (c *chain) startTurn(ctx context.Context, s *ChatState, logFail func(name string, err error)) []func(*ChatState) {
	run := func(i int) func(*ChatState) {
		set, err := c.starts[i].startTurn(ctx, s)
		if err != nil {
			logFail(c.starts[i].TurnStarter.(Middleware).Name(), err)
			return nil
		}
		return set
	}
	if len(c.starts) == 1 {
		if set := run(0); set != nil {
			return []func(*ChatState){set}
		}
		return nil
	}
	sets := make([]func(*ChatState), len(c.starts))
	var wg sync.WaitGroup
	for i := range c.starts {
		wg.Go(func() { sets[i] = run(i) })
	}
	wg.Wait()
	return sets
}

// turnStarter is a chain's TurnStarter. Its hook may run on a goroutine
// of its own, where the engine's recovery does not reach and a panic
// would end the process: a panic is that middleware's failure.
type turnStarter struct{ TurnStarter }

func (t turnStarter) startTurn(ctx context.Context, s *ChatState) (_ func(*ChatState), err error) {
	defer caught(&err)
	return t.StartTurn(ctx, s)
}

// caught turns a panic on a goroutine a node starts into *err, as the
// engine does for a node's own goroutine.
func caught(err *error) {
	if v := recover(); v != nil {
		*err = &graph.PanicError{Value: v, Stack: debug.Stack()}
	}
}

// prompt writes every Prompter's section.
func (c *chain) prompt(b *strings.Builder, s *ChatState, node string) {
	for _, p := range c.prompts {
		p.Prompt(b, s, node)
	}
}

// extraTools lists the middleware's tools for s; nil when none.
func (c *chain) extraTools(s *ChatState) []Tool {
	var out []Tool
	for _, t := range c.tools {
		out = append(out, t.Tools(s)...)
	}
	return out
}

// beforeModel runs the BeforeModel hooks first to last.
func (c *chain) beforeModel(ctx context.Context, mc *ModelCall) error {
	for _, h := range c.before {
		if err := h.BeforeModel(ctx, mc); err != nil {
			return err
		}
	}
	return nil
}

// afterModel runs the AfterModel hooks last to first.
func (c *chain) afterModel(ctx context.Context, mc *ModelCall) error {
	for i := len(c.after) - 1; i >= 0; i-- {
		if err := c.after[i].AfterModel(ctx, mc); err != nil {
			return err
		}
	}
	return nil
}
