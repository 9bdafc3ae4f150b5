package nodes

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/tmc/langchaingo/llms"
	"go.opentelemetry.io/otel/codes"

	"github.com/trellis-ai/trellis/events"
	"github.com/trellis-ai/trellis/graph"
	"github.com/trellis-ai/trellis/operators"
)

// executeTool runs the supervisor's tool calls — one, several in
// parallel, or a workflow of steps with dependencies — after asking for
// every approval they need. Failures are results the model reads, never
// errors of the run.
func (a *Agent) executeTool(ctx context.Context, s ChatState) (ChatState, error) {
	budgetFrom(ctx).adopt(s.Input.Budget)
	steps := plannedSteps(s.Decision)
	if len(s.Input.ClientTools) > 0 && slices.ContainsFunc(steps, func(st WorkflowStep) bool { return s.Input.clientTool(st.Tool) }) {
		return clientCalls(ctx, &s, steps), nil
	}
	calls := make([]ToolCall, len(steps))
	for i, st := range steps {
		calls[i] = ToolCall{ID: st.ToolCallID, Tool: st.Tool, Args: st.Args, Gate: st.Gate}
	}
	calls, records, rejected, resumed, err := a.approve(ctx, s, calls)
	if err != nil {
		return ChatState{}, err
	}
	for i := range steps {
		steps[i].Args = calls[i].Args
	}

	x := &execution{a: a, conversationID: s.Input.ConversationID, requestID: s.Input.RequestID, userID: s.Input.UserID,
		namespace: s.Input.Namespace, documentIDs: s.Input.DocumentIDs, clientContext: s.Input.Context, noMemory: s.Input.NoMemory,
		iteration: s.Iteration, steps: steps,
		rejected: rejected, edited: map[string]bool{}}
	if len(a.chain.tools) > 0 {
		x.input = s.Input
		for _, t := range a.chain.extraTools(&s) {
			if x.extra == nil {
				x.extra = map[string]Tool{}
			}
			x.extra[t.Def.Function.Name] = t
		}
		for _, st := range steps {
			if _, ok := x.extra[st.Tool]; ok {
				x.delegates = true
			}
		}
	}
	for _, r := range records {
		if r.Decision == events.DecisionEdit {
			x.edited[r.ToolCallID] = true
		}
	}
	if x.answers, x.decided, x.resumedFrom, err = answeredQuestions(ctx); err != nil {
		return ChatState{}, err
	}
	if x.resumedFrom != nil {
		resumed = true
	}
	tt := a.sources.table(a.tools.Catalog().Tools)
	x.sources, x.repeatable = tt.sources, tt.repeatable
	x.board = s.Tasks
	// Operators that need a model get the run's; when it cannot be had,
	// nil lets the operator registry use its default.
	x.model, _ = a.models.Model(ctx, s.Input.Model)
	x.run(ctx)
	if ctx.Err() != nil {
		// The run ended while its calls ran (a cancel, a shutdown, a lost
		// database): their results tell of the cut, not of what the tools
		// did, so none is kept. A call recorded as ended keeps its outcome
		// in the call log for the run's continuation.
		return ChatState{}, context.Cause(ctx)
	}
	if ie := x.halted(); ie != nil {
		return ChatState{}, ie
	}
	if q := x.parkedQuestion(); q != nil {
		_, err := graph.Interrupt[questionAnswered](ctx, q)
		return ChatState{}, err
	}

	upd := ChatState{ToolResults: x.results, Approvals: records, Tasks: x.newBoard()}
	if s.Decision.Action == ActionCreateWorkflow {
		upd.WorkflowSteps = steps
		for i := range upd.WorkflowSteps {
			upd.WorkflowSteps[i].Status = x.results[i].Status
		}
	}
	if len(rejected) > 0 {
		upd.Rejections = s.Rejections + len(rejected)
	}
	if resumed {
		upd.UsageBase = s.TurnUsage
	}
	// A result too long to show whole is summarised for the models; the
	// state keeps it whole, beside its chunks.
	shown, summaries := a.shownResults(ctx, s.Input.Message, x.results)
	upd.Usage = x.usage.Add(summaries)
	upd.TurnUsage = upd.Usage
	upd.BudgetExceeded = x.overBudget
	names := make([]string, 0, len(steps))
	next := s.SourceCounter
	for i := range x.results {
		r := &x.results[i]
		names = append(names, r.Tool)
		content := r.Content
		if shown != nil {
			content = shown[i]
		}
		upd.Messages = append(upd.Messages, Message{Role: RoleTool, ToolCallID: r.ToolCallID, Name: r.Tool, Content: content, Turn: s.Turn})
		for _, c := range x.chunks[i] {
			next++
			r.Sources = append(r.Sources, next)
			upd.DataChunks = append(upd.DataChunks, DataChunk{Number: next, ToolCallID: r.ToolCallID, Source: c.Source, Title: c.Title, Text: c.Text,
				Document: c.Document})
		}
		upd.DirectResponses = append(upd.DirectResponses, x.direct[i]...)
	}
	upd.SourceCounter = next - s.SourceCounter
	upd.CurrentTool = strings.Join(names, ",")
	return upd, nil
}

// clientCalls ends the turn with the decision's calls of client tools,
// unrun: the client runs them and sends the results in a new request. A
// Trellis tool called with them is not run either; the turn never
// hands a Trellis tool to the client, and the model may call it again
// once the client's results are in.
func clientCalls(ctx context.Context, s *ChatState, steps []WorkflowStep) ChatState {
	for _, st := range steps {
		if s.Input.clientTool(st.Tool) {
			_ = emit(ctx, &events.ToolStart{ToolCallID: st.ToolCallID, Tool: st.Tool, Source: SourceClient, Args: argsOrEmpty(st.Args)})
		}
	}
	return ChatState{Outcome: OutcomeClientTools}
}

// plannedSteps returns the decision's calls as workflow steps; plain tool
// calls are steps without dependencies.
func plannedSteps(d Decision) []WorkflowStep {
	if d.Action == ActionCreateWorkflow {
		return slices.Clone(d.Workflow)
	}
	steps := make([]WorkflowStep, len(d.ToolCalls))
	for i, c := range d.ToolCalls {
		steps[i] = WorkflowStep{ID: c.ID, Tool: c.Tool, Args: c.Args, ToolCallID: c.ID, Gate: c.Gate}
	}
	return steps
}

// barrier marks, for graph.DurabilityBoundary, the steps a crash must
// not make run again from further back:
//
//   - an execute_tool step that calls a tool the catalog does not list
//     as read-only or idempotent (the calls the CallLog records): their
//     keys derive from the call ids the supervisor's model chose, so the
//     decision naming them is committed before any starts, and a crash
//     continues from it, where continuing from further back would ask
//     the model again for calls of new ids that would run again;
//   - the step after execute_tool (reflect, or stream for a client's
//     tools): the tools' results, and the budget they spent, are kept,
//     so no finished call runs again or counts twice;
//   - stream, which records the answer and announces it (response.done):
//     the answer a client is told is the one a crash continues from.
//
// Other steps are not barriers: a crash repeats at most their model
// calls.
func (a *Agent) barrier(node string, s *ChatState) bool {
	switch node {
	case NodeReflect, NodeStream:
		return true
	case NodeExecuteTool:
	default:
		return false
	}
	repeatable := a.sources.table(a.tools.Catalog().Tools).repeatable
	if s.Decision.Action == ActionCreateWorkflow {
		for _, st := range s.Decision.Workflow {
			if !repeatable[st.Tool] {
				return true
			}
		}
		return false
	}
	for _, c := range s.Decision.ToolCalls {
		if !repeatable[c.Tool] {
			return true
		}
	}
	return false
}

// execution is one execute_tool run: its steps and what they produced,
// by step index.
type execution struct {
	a *Agent
	// What the calls need of the state: not the state itself, which would
	// then have to live on the heap.
	conversationID string
	requestID      string
	userID         string
	namespace      string   // the agent's path; "" for the root agent
	documentIDs    []string // the request's scope for the document tools
	noMemory       bool     // the request keeps memory out (Input.NoMemory)
	iteration      int
	steps          []WorkflowStep
	rejected       map[string]string // tool call id → the text the model reads
	edited         map[string]bool
	sources        map[string]string
	repeatable     map[string]bool // read-only or idempotent tools (see CallLog)
	model          llms.Model
	results        []ToolResult
	chunks         [][]operators.DataChunk
	direct         [][]DirectResponse

	// clientContext is the request's context object (Input.Context),
	// handed to every call.
	clientContext json.RawMessage

	// answers are the answers to questions the execution parked on
	// before, by elicitation id; resumedFrom is the last parked question,
	// with the calls done by then.
	answers     map[string]questionAnswered
	resumedFrom *parkedQuestion
	// decided are a person's answers to calls that may have run, by
	// the calls' idempotency keys (see CallLog).
	decided map[string]decidedCall
	// parked is, by step, the question that parked the step's call.
	parked []*events.Pending

	// extra are the middleware's tools by name, input what they are told
	// of the turn; halts are, by step, the pauses of their calls (a
	// sub-agent's approval).
	extra map[string]Tool
	input Input
	halts []error
	// delegates: some step calls a middleware's tool (see callKept).
	delegates bool

	mu         sync.Mutex
	usage      events.Usage // the middleware tools' (sub-agents')
	overBudget string       // why a call was not run, when the budget ran out

	// board is the task board before the execution (see writeTodos).
	board TaskBoard
}

// halted returns the pauses of the execution's calls as one interrupt;
// nil when none paused.
func (x *execution) halted() error {
	var all []graph.PendingInterrupt
	for _, err := range x.halts {
		var ie *graph.InterruptError
		if errors.As(err, &ie) {
			all = append(all, ie.Interrupts...)
		}
	}
	if len(all) == 0 {
		return nil
	}
	return &graph.InterruptError{Interrupts: all}
}

// run executes the steps in waves: every step whose dependencies are done
// runs, concurrently with the others of its wave (at most
// MaxParallelTools at once). A step whose dependency did not succeed is
// skipped; a rejected step is not run.
func (x *execution) run(ctx context.Context) {
	n := len(x.steps)
	x.results = make([]ToolResult, n)
	x.chunks = make([][]operators.DataChunk, n)
	x.direct = make([][]DirectResponse, n)
	x.parked = make([]*events.Pending, n)
	x.halts = make([]error, n)
	done := make([]bool, n)
	index := make(map[string]int, n)
	for i, st := range x.steps {
		index[st.ID] = i
	}
	left := n
	if x.resumedFrom != nil { // the calls that finished before a question parked the run
		for _, d := range x.resumedFrom.Done {
			if d.Step >= 0 && d.Step < n && !done[d.Step] {
				x.results[d.Step], x.chunks[d.Step], x.direct[d.Step] = d.Result, d.Chunks, d.Direct
				done[d.Step] = true
				left--
			}
		}
	}
	var sem chan struct{} // made for the first wave of several calls
	type pending struct {
		i    int
		args json.RawMessage
	}
	var calls []pending
	var slots map[string]chan struct{} // per tool with a Parallel bound
	for left > 0 && !x.parkedAny() && !x.haltedAny() {
		var wave []int
		for i, st := range x.steps {
			if done[i] {
				continue
			}
			ready := true
			for _, dep := range st.DependsOn {
				if j, ok := index[dep]; ok && !done[j] {
					ready = false
				}
			}
			if ready {
				wave = append(wave, i)
			}
		}
		if len(wave) == 0 { // a cycle the supervisor's check missed
			for i := range x.steps {
				if !done[i] {
					x.results[i] = x.skip(ctx, i, "its dependencies form a cycle")
					done[i] = true
					left--
				}
			}
			break
		}
		calls = calls[:0]
		for _, i := range wave {
			if msg := x.blocked(i); msg != "" {
				x.results[i] = x.skip(ctx, i, msg)
				continue
			}
			if text, ok := x.rejected[x.steps[i].ToolCallID]; ok {
				x.results[i] = x.reject(ctx, i, text)
				continue
			}
			if text, ok := x.expired(i); ok {
				x.results[i] = x.expire(ctx, i, text)
				continue
			}
			if r, ok := x.undo(ctx, i); ok {
				x.results[i] = r
				continue
			}
			calls = append(calls, pending{i, x.fill(i)})
		}
		if len(calls) == 1 {
			// One call needs no goroutine, nor a slot.
			x.call(ctx, calls[0].i, calls[0].args)
		} else if len(calls) > 1 {
			if sem == nil {
				sem = make(chan struct{}, x.a.opts.maxParallelTools())
			}
			var wg sync.WaitGroup
			for _, c := range calls {
				var slot chan struct{}
				if t, ok := x.extra[x.steps[c.i].Tool]; ok && t.Parallel > 0 {
					if slots == nil {
						slots = map[string]chan struct{}{}
					}
					if slot = slots[t.Def.Function.Name]; slot == nil {
						slot = make(chan struct{}, t.Parallel)
						slots[t.Def.Function.Name] = slot
					}
				}
				wg.Go(func() {
					select {
					case sem <- struct{}{}:
						defer func() { <-sem }()
					case <-ctx.Done(): // the call fails at once with ctx's error
					}
					if slot != nil {
						select {
						case slot <- struct{}{}:
							defer func() { <-slot }()
						case <-ctx.Done():
						}
					}
					x.call(ctx, c.i, c.args)
				})
			}
			wg.Wait()
		}
		for _, i := range wave {
			if x.parked[i] == nil && x.halts[i] == nil {
				done[i] = true
				left--
			}
		}
	}
}

// blocked says why step i cannot run: a dependency that did not succeed.
func (x *execution) blocked(i int) string {
	for _, dep := range x.steps[i].DependsOn {
		for j, st := range x.steps {
			if st.ID == dep && x.results[j].Status != ToolSuccess {
				return fmt.Sprintf("step %q it depends on did not succeed (%s)", dep, x.results[j].Status)
			}
		}
	}
	return ""
}

// fill replaces "{{id}}" in the step's string arguments with the text
// result of step id.
func (x *execution) fill(i int) json.RawMessage {
	args := argsOrEmpty(x.steps[i].Args)
	if len(x.steps[i].DependsOn) == 0 || !bytes.Contains(args, []byte("{{")) {
		return args
	}
	var v any
	if json.Unmarshal(args, &v) != nil {
		return args
	}
	pairs := make([]string, 0, 2*len(x.steps[i].DependsOn))
	for _, dep := range x.steps[i].DependsOn {
		for j, st := range x.steps {
			if st.ID == dep {
				pairs = append(pairs, "{{"+dep+"}}", x.results[j].Content)
			}
		}
	}
	r := strings.NewReplacer(pairs...)
	var walk func(v any) any
	walk = func(v any) any {
		switch v := v.(type) {
		case string:
			return r.Replace(v)
		case []any:
			for k := range v {
				v[k] = walk(v[k])
			}
		case map[string]any:
			for k := range v {
				v[k] = walk(v[k])
			}
		}
		return v
	}
	out, err := json.Marshal(walk(v))
	if err != nil {
		return args
	}
	return out
}

// call runs step i through the provider, between tool.start and
// tool.complete (or tool.error).
func (x *execution) call(ctx context.Context, i int, args json.RawMessage) {
	st := x.steps[i]
	extra, isExtra := x.extra[st.Tool]
	if why := budgetFrom(ctx).call(); why != "" {
		x.mu.Lock()
		x.overBudget = why
		x.mu.Unlock()
		x.results[i] = x.skip(ctx, i, "the run's budget is used up: "+why)
		return
	}
	if st.Tool == WriteTodosTool {
		_ = emit(ctx, &events.ToolStart{ToolCallID: st.ToolCallID, Tool: st.Tool, Source: x.sources[st.Tool], Args: args})
		x.writeTodos(ctx, i, args)
		return
	}
	if !isExtra && !x.a.allows(st.Tool) {
		x.results[i] = x.skip(ctx, i, st.Tool+" is not among this sub-agent's tools")
		return
	}
	if x.noMemory && !isExtra && x.a.memoryTool(st.Tool) {
		x.results[i] = x.skip(ctx, i, "memory is off for this request, so "+st.Tool+" cannot run")
		return
	}
	if !isExtra && x.delegates && x.a.memo != nil {
		x.callKept(ctx, i, args)
		return
	}
	x.callNow(ctx, i, args, extra, isExtra)
}

// callKept runs step i's plain call as a graph of its own, named after
// the call, in an execution that also delegates: when a sub-agent's
// question pauses the execution, the call's outcome is kept in that
// graph's checkpoint, and the execution run again finds it there instead
// of calling the tool twice.
func (x *execution) callKept(ctx context.Context, i int, args json.RawMessage) {
	st := x.steps[i]
	run := func(ctx context.Context) (keptCall, bool) {
		x.callNow(ctx, i, args, Tool{}, false)
		if x.parked[i] != nil {
			return keptCall{}, false
		}
		return keptCall{Result: x.results[i], Chunks: x.chunks[i], Direct: x.direct[i]}, true
	}
	out, err := x.a.memo.Invoke(graph.Child(context.WithValue(ctx, keptKey{}, run), "call:"+st.ToolCallID), &keptCall{}, graph.RunConfig{})
	if err != nil {
		if x.parked[i] == nil && x.results[i].Status == "" {
			x.results[i] = x.skip(ctx, i, "the call could not be kept: "+err.Error())
		}
		return
	}
	x.results[i], x.chunks[i], x.direct[i] = out.Result, out.Chunks, out.Direct
}

// keptCall is a plain call's outcome, the state of the graph callKept
// runs it in.
type keptCall struct {
	Result ToolResult            `json:"result"`
	Chunks []operators.DataChunk `json:"chunks,omitempty"`
	Direct []DirectResponse      `json:"direct,omitempty"`
}

type keptKey struct{}

// errCallParked: the kept call parked on a question; its graph ends
// unfinished, so the call runs again once the question is answered.
var errCallParked = errors.New("nodes: the call parked on a question")

// keptCalls is the graph callKept runs a call in: one node, which runs
// the call its context carries.
func keptCalls() (*graph.Compiled[keptCall], error) {
	g := graph.New[keptCall]()
	g.AddNode("call", func(ctx context.Context, _ keptCall) (keptCall, error) {
		run, _ := ctx.Value(keptKey{}).(func(context.Context) (keptCall, bool))
		if run == nil {
			return keptCall{}, errors.New("nodes: a kept call without its call")
		}
		out, ok := run(ctx)
		if !ok {
			return keptCall{}, errCallParked
		}
		return out, nil
	})
	g.AddEdge(graph.START, "call")
	g.AddEdge("call", graph.END)
	return g.Compile(graph.CompileOptions{})
}

// callNow runs step i's call: a middleware's tool (extra) or the
// provider's.
func (x *execution) callNow(ctx context.Context, i int, args json.RawMessage, extra Tool, isExtra bool) {
	st := x.steps[i]
	source := x.sources[st.Tool]
	if isExtra {
		source = "agent"
	}
	recorded := false
	m := &messenger{call: callContext{Context: ctx, x: x, toolCallID: st.ToolCallID}, elicitor: x.a.opts.Elicitor,
		conversationID: x.conversationID, requestID: x.requestID, tool: st.Tool, answers: x.answers, agent: x.namespace}
	if !isExtra {
		if x.recorded(st.Tool) {
			key := x.callKey(st.ToolCallID)
			if !x.begin(ctx, i, key, args) {
				return
			}
			m.calls, m.call.key, recorded = x.a.opts.Calls, key, true
		}
		ctx = &m.call
	}
	_ = emit(ctx, &events.ToolStart{ToolCallID: st.ToolCallID, Tool: st.Tool, Source: source, Args: args})
	start := time.Now()
	ctx, span := x.a.toolSpan(ctx, st.Tool, st.ToolCallID, source)
	if span != nil {
		defer span.End()
	}
	var res operators.Result
	if isExtra {
		out, err := extra.Run(ctx, ToolRun{ToolCallID: st.ToolCallID, Args: args, Input: x.input})
		if err != nil {
			x.halts[i] = err // its result is unused: the call runs again once the run goes on
			return
		}
		res = out.Result
		x.mu.Lock()
		x.usage = x.usage.Add(out.Usage)
		x.mu.Unlock()
	} else {
		res = x.a.tools.Execute(ctx, st.Tool, args, operators.Call{
			ToolCallID: st.ToolCallID, ConversationID: x.conversationID, UserID: x.userID, DocumentIDs: x.documentIDs,
			Context: x.clientContext, Messenger: m, Model: x.model,
		})
	}
	if q := m.parkedOn(); q != nil {
		x.parked[i] = q // its result is unused: the call runs again once the question is answered
		return
	}
	dur := time.Since(start).Milliseconds()
	r := ToolResult{ToolCallID: st.ToolCallID, Tool: st.Tool, Args: args, Iteration: x.iteration, DurationMS: dur,
		DirectResponse: res.DirectResponse}
	if res.IsError() {
		if span != nil {
			span.SetStatus(codes.Error, res.Error)
		}
		r.Status, r.Content = ToolError, res.Error
		if r.Content == "" {
			r.Content = "the tool failed without saying why"
		}
	} else {
		r.Status, r.Content = ToolSuccess, res.Text()
	}
	shown := r.Content
	if x.edited[st.ToolCallID] {
		r.Content = "(The user edited the arguments before approving; the call ran with " + string(args) + ".)\n" + r.Content
	}
	x.results[i] = r
	x.chunks[i] = res.Chunks
	x.direct[i] = m.shown()
	// The outcome is recorded before the event tells it: a client that
	// saw the call end never sees it asked about after a crash. A call
	// cut short by the run's end (a shutdown, say) may have run: it
	// stays started, for a person to decide.
	if recorded && ctx.Err() == nil {
		x.end(ctx, i, m.call.key)
	}
	if r.Status == ToolError {
		_ = emit(ctx, &events.ToolError{ToolCallID: st.ToolCallID, Tool: st.Tool, Error: shown, Truncated: res.Truncated})
	} else {
		_ = emit(ctx, &events.ToolComplete{ToolCallID: st.ToolCallID, Tool: st.Tool, Result: shown, DurationMS: dur, Truncated: res.Truncated})
	}
}

// skip records a step that did not run, as a tool.error the model reads.
func (x *execution) skip(ctx context.Context, i int, why string) ToolResult {
	st := x.steps[i]
	text := "Not run: " + why + "."
	_ = emit(ctx, &events.ToolError{ToolCallID: st.ToolCallID, Tool: st.Tool, Error: text})
	return ToolResult{ToolCallID: st.ToolCallID, Tool: st.Tool, Args: st.Args, Status: ToolSkipped, Content: text, Iteration: x.iteration}
}

// haltedAny reports whether a middleware tool's call paused the
// execution: no further wave starts.
func (x *execution) haltedAny() bool {
	return slices.ContainsFunc(x.halts, func(err error) bool { return err != nil })
}

// parkedAny reports whether a call's question has parked the execution:
// no further wave starts.
func (x *execution) parkedAny() bool {
	return slices.ContainsFunc(x.parked, func(p *events.Pending) bool { return p != nil })
}

// parkedQuestion is the interrupt payload for the first question that
// parked the execution, with every call finished so far; nil when none
// did. Other calls that parked at the same time ask again when the run
// goes on.
func (x *execution) parkedQuestion() *parkedQuestion {
	k := slices.IndexFunc(x.parked, func(p *events.Pending) bool { return p != nil })
	if k < 0 {
		return nil
	}
	q := &parkedQuestion{Pending: *x.parked[k]}
	if q.Kind == events.PendingUncertainCall {
		q.CallKey = x.callKey(q.ToolCallID)
	}
	for i := range x.steps {
		if x.parked[i] == nil && x.results[i].Status != "" {
			q.Done = append(q.Done, doneCall{Step: i, Result: x.results[i], Chunks: x.chunks[i], Direct: x.direct[i]})
		}
	}
	return q
}

// expired returns, for step i whose call asked a question that could not
// take a late answer, what the model reads instead of the call's result.
func (x *execution) expired(i int) (string, bool) {
	for _, qa := range x.answers {
		q := qa.Question
		if q.ToolCallID != x.steps[i].ToolCallID || q.Replayable {
			continue
		}
		return fmt.Sprintf("Not completed: %s asked the user %q, and the run stopped to wait for the answer. "+
			"The user answered (%s) after the call had ended, and this tool cannot take a late answer, "+
			"so the call was not run again; call it again if it is still needed.", q.Source, q.Message, qa.Action), true
	}
	return "", false
}

// expire records a call whose question expired, as a tool.error the user
// and the model both see.
func (x *execution) expire(ctx context.Context, i int, text string) ToolResult {
	st := x.steps[i]
	_ = emit(ctx, &events.ToolError{ToolCallID: st.ToolCallID, Tool: st.Tool, Error: text})
	return ToolResult{ToolCallID: st.ToolCallID, Tool: st.Tool, Args: st.Args, Status: ToolError, Content: text, Iteration: x.iteration}
}

// reject records a call the user rejected.
func (x *execution) reject(ctx context.Context, i int, text string) ToolResult {
	st := x.steps[i]
	_ = emit(ctx, &events.ToolError{ToolCallID: st.ToolCallID, Tool: st.Tool, Error: text})
	return ToolResult{ToolCallID: st.ToolCallID, Tool: st.Tool, Args: st.Args, Status: ToolRejected, Content: text, Iteration: x.iteration}
}
