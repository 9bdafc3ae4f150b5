package nodes

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/tmc/langchaingo/llms"
	"go.opentelemetry.io/otel/codes"

	"github.com/trellis-ai/trellis/graph"
	"github.com/trellis-ai/trellis/operators"
)

// executeTool runs the supervisor's tool calls — one, several in
// parallel, or a workflow of steps with dependencies — after asking for
// every approval they need. Failures are results the model reads, never
// errors of the run.
func (a *Agent) executeTool(ctx context.Context, s ChatState) (ChatState, error) {
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
		documentIDs: s.Input.DocumentIDs, iteration: s.Iteration, steps: steps, rejected: rejected, edited: map[string]bool{}}
	for _, r := range records {
		if r.Decision == DecisionEdit {
			x.edited[r.ToolCallID] = true
		}
	}
	if x.answers, x.resumedFrom, err = answeredQuestions(ctx); err != nil {
		return ChatState{}, err
	}
	if x.resumedFrom != nil {
		resumed = true
	}
	x.sources = a.sources.sources(a.tools.Catalog().Tools)
	// Operators that need a model get the run's; when it cannot be had,
	// nil lets the operator registry use its default.
	x.model, _ = a.models.Model(ctx, s.Input.Model)
	x.run(ctx)
	if q := x.parkedQuestion(); q != nil {
		_, err := graph.Interrupt[questionAnswered](ctx, q)
		return ChatState{}, err
	}

	upd := ChatState{ToolResults: x.results, Approvals: records}
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
	names := make([]string, 0, len(steps))
	next := s.SourceCounter
	for i := range x.results {
		r := &x.results[i]
		names = append(names, r.Tool)
		upd.Messages = append(upd.Messages, Message{Role: RoleTool, ToolCallID: r.ToolCallID, Name: r.Tool, Content: r.Content, Turn: s.Turn})
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
			_ = emit(ctx, &ToolStart{ToolCallID: st.ToolCallID, Tool: st.Tool, Source: SourceClient, Args: argsOrEmpty(st.Args)})
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

// execution is one execute_tool run: its steps and what they produced,
// by step index.
type execution struct {
	a *Agent
	// What the calls need of the state: not the state itself, which would
	// then have to live on the heap.
	conversationID string
	requestID      string
	userID         string
	documentIDs    []string // the request's scope for the document tools
	iteration      int
	steps          []WorkflowStep
	rejected       map[string]string // tool call id → the text the model reads
	edited         map[string]bool
	sources        map[string]string
	model          llms.Model
	results        []ToolResult
	chunks         [][]operators.DataChunk
	direct         [][]DirectResponse

	// answers are the answers to questions the execution parked on
	// before, by elicitation id; resumedFrom is the last parked question,
	// with the calls done by then.
	answers     map[string]questionAnswered
	resumedFrom *parkedQuestion
	// parked is, by step, the question that parked the step's call.
	parked []*Pending
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
	x.parked = make([]*Pending, n)
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
	for left > 0 && !x.parkedAny() {
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
				wg.Go(func() {
					select {
					case sem <- struct{}{}:
						defer func() { <-sem }()
					case <-ctx.Done(): // the call fails at once with ctx's error
					}
					x.call(ctx, c.i, c.args)
				})
			}
			wg.Wait()
		}
		for _, i := range wave {
			if x.parked[i] == nil {
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
	_ = emit(ctx, &ToolStart{ToolCallID: st.ToolCallID, Tool: st.Tool, Source: x.sources[st.Tool], Args: args})
	m := &messenger{ctx: ctx, elicitor: x.a.opts.Elicitor, conversationID: x.conversationID, requestID: x.requestID,
		toolCallID: st.ToolCallID, tool: st.Tool, answers: x.answers}
	start := time.Now()
	ctx, span := x.a.toolSpan(ctx, st.Tool, st.ToolCallID, x.sources[st.Tool])
	if span != nil {
		defer span.End()
	}
	res := x.a.tools.Execute(ctx, st.Tool, args, operators.Call{
		ToolCallID: st.ToolCallID, ConversationID: x.conversationID, UserID: x.userID, DocumentIDs: x.documentIDs,
		Messenger: m, Model: x.model,
	})
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
		_ = emit(ctx, &ToolErrorEvent{ToolCallID: st.ToolCallID, Tool: st.Tool, Error: r.Content, Truncated: res.Truncated})
	} else {
		r.Status, r.Content = ToolSuccess, res.Text()
		_ = emit(ctx, &ToolComplete{ToolCallID: st.ToolCallID, Tool: st.Tool, Result: r.Content, DurationMS: dur, Truncated: res.Truncated})
	}
	if x.edited[st.ToolCallID] {
		r.Content = "(The user edited the arguments before approving; the call ran with " + string(args) + ".)\n" + r.Content
	}
	x.results[i] = r
	x.chunks[i] = res.Chunks
	x.direct[i] = m.shown()
}

// skip records a step that did not run, as a tool.error the model reads.
func (x *execution) skip(ctx context.Context, i int, why string) ToolResult {
	st := x.steps[i]
	text := "Not run: " + why + "."
	_ = emit(ctx, &ToolErrorEvent{ToolCallID: st.ToolCallID, Tool: st.Tool, Error: text})
	return ToolResult{ToolCallID: st.ToolCallID, Tool: st.Tool, Args: st.Args, Status: ToolSkipped, Content: text, Iteration: x.iteration}
}

// parkedAny reports whether a call's question has parked the execution:
// no further wave starts.
func (x *execution) parkedAny() bool {
	return slices.ContainsFunc(x.parked, func(p *Pending) bool { return p != nil })
}

// parkedQuestion is the interrupt payload for the first question that
// parked the execution, with every call finished so far; nil when none
// did. Other calls that parked at the same time ask again when the run
// goes on.
func (x *execution) parkedQuestion() *parkedQuestion {
	k := slices.IndexFunc(x.parked, func(p *Pending) bool { return p != nil })
	if k < 0 {
		return nil
	}
	q := &parkedQuestion{Pending: *x.parked[k]}
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
	_ = emit(ctx, &ToolErrorEvent{ToolCallID: st.ToolCallID, Tool: st.Tool, Error: text})
	return ToolResult{ToolCallID: st.ToolCallID, Tool: st.Tool, Args: st.Args, Status: ToolError, Content: text, Iteration: x.iteration}
}

// reject records a call the user rejected.
func (x *execution) reject(ctx context.Context, i int, text string) ToolResult {
	st := x.steps[i]
	_ = emit(ctx, &ToolErrorEvent{ToolCallID: st.ToolCallID, Tool: st.Tool, Error: text})
	return ToolResult{ToolCallID: st.ToolCallID, Tool: st.Tool, Args: st.Args, Status: ToolRejected, Content: text, Iteration: x.iteration}
}
