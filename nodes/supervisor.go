package nodes

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"

	"github.com/tmc/langchaingo/llms"

	"github.com/trellis-ai/trellis/events"
	"github.com/trellis-ai/trellis/llm"
)

// supervisor makes one structured decision: ANSWER, CALL_TOOL,
// CREATE_WORKFLOW or CLARIFY. A reply that does not parse gets one repair
// call showing the model its output and the error; a second failure, or
// the iteration limit, records BLOCKED.
func (a *Agent) supervisor(ctx context.Context, s ChatState) (ChatState, error) {
	iteration := s.Iteration + 1
	if s.Iteration >= a.opts.maxIterations() {
		d := Decision{Action: ActionBlocked, Reasoning: fmt.Sprintf("reached the limit of %d steps for one message", a.opts.maxIterations())}
		return a.decided(ctx, &s, d, iteration, events.Usage{}), nil
	}
	budgetFrom(ctx).adopt(s.Input.Budget)
	if why := budgetFrom(ctx).exceeded(); why != "" {
		d := Decision{Action: ActionBlocked, Reasoning: "reached the run's budget: " + why}
		upd := a.decided(ctx, &s, d, iteration, events.Usage{})
		upd.BudgetExceeded = why
		return upd, nil
	}
	_ = emit(ctx, &events.SupervisorThinking{Message: "Deciding how to handle your request…"})
	modelName := cmp.Or(a.opts.SupervisorModel, s.Input.Model)
	model, err := a.models.Model(ctx, modelName)
	if err != nil {
		return ChatState{}, fmt.Errorf("nodes: supervisor: %w", err)
	}
	summaries, defs := a.catalog(&s)
	var tools []llms.Tool
	if extra := a.chain.extraTools(&s); len(extra) > 0 || a.allow != nil {
		tools = withTool(defs, decideTool, writeTodosDef)
		for _, t := range extra {
			tools = append(tools, t.Def)
			summaries += t.Summary + "\n"
		}
	} else {
		tools = a.decideTools.with(defs, decideTool, writeTodosDef)
	}
	if len(s.Input.ClientTools) > 0 {
		summaries, tools = withClientTools(summaries, tools, s.Input.ClientTools)
	}
	mc := &ModelCall{Node: NodeSupervisor, State: &s, System: a.supervisorSystem(&s, iteration, summaries),
		Options: append([]llms.CallOption{llms.WithTools(tools)}, a.thinking(ctx, modelName)...)}
	resp, err := a.callModel(ctx, model, mc)
	if err != nil {
		return ChatState{}, fmt.Errorf("nodes: supervisor: %w", err)
	}
	usage := llm.UsageFrom(resp)
	text, calls := llm.TextFrom(resp), llm.ToolCallsFrom(resp)
	d, perr := parseDecision(text, calls)
	if perr != nil {
		mc = &ModelCall{Node: NodeSupervisor, State: &s, System: mc.System, Options: mc.Options}
		resp, err = a.callModel(ctx, model, mc, badReply(text, calls), llms.TextParts(llms.ChatMessageTypeHuman, repairPrompt(perr)))
		if err != nil {
			return ChatState{}, fmt.Errorf("nodes: supervisor repair: %w", err)
		}
		usage = usage.Add(llm.UsageFrom(resp))
		if d, err = parseDecision(llm.TextFrom(resp), llm.ToolCallsFrom(resp)); err != nil {
			d = Decision{Action: ActionBlocked, Reasoning: fmt.Sprintf("could not make a usable decision (%v; after a repair attempt: %v)", perr, err)}
		}
	}
	return a.decided(ctx, &s, d, iteration, usage), nil
}

// decided names the decision's calls, emits supervisor.decided and
// returns the update.
func (a *Agent) decided(ctx context.Context, s *ChatState, d Decision, iteration int, usage events.Usage) ChatState {
	var extra []Tool
	if len(a.chain.tools) > 0 {
		extra = a.chain.extraTools(s)
	}
	gate := func(tool string) Gate {
		// A middleware's tool asks nothing itself (a sub-agent asks for
		// its own calls), and a tool a sub-agent may not call, or a
		// memory tool with memory off, will not run.
		if slices.ContainsFunc(extra, func(t Tool) bool { return t.Def.Function.Name == tool }) || !a.allows(tool) || (s.Input.NoMemory && a.memoryTool(tool)) {
			return GateNone
		}
		return a.gate(tool)
	}
	var tools []string
	var calls []ToolCall
	switch d.Action {
	case ActionCallTool:
		for i := range d.ToolCalls {
			c := &d.ToolCalls[i]
			if c.ID == "" {
				c.ID = fmt.Sprintf("call_t%d_i%d_%d", s.Turn, iteration, i+1)
			}
			c.Gate = gate(c.Tool)
			tools = append(tools, c.Tool)
		}
		calls = d.ToolCalls
	case ActionCreateWorkflow:
		for i := range d.Workflow {
			st := &d.Workflow[i]
			st.ToolCallID = fmt.Sprintf("wf_t%d_i%d_%s", s.Turn, iteration, st.ID)
			st.Gate = gate(st.Tool)
			tools = append(tools, st.Tool)
			calls = append(calls, ToolCall{ID: st.ToolCallID, Tool: st.Tool, Args: st.Args, Gate: st.Gate})
		}
	}
	_ = emit(ctx, &events.SupervisorDecided{Action: strings.ToLower(string(d.Action)), Tools: nonNil(tools), Reasoning: d.Reasoning})
	upd := ChatState{
		Decision:  d,
		Iteration: iteration,
		Actions:   []ActionRecord{{Iteration: iteration, Action: d.Action, Tools: tools, Reasoning: d.Reasoning}},
		Usage:     usage,
		TurnUsage: usage,
	}
	if len(calls) > 0 {
		upd.Messages = []Message{{Role: RoleAssistant, Content: d.Reasoning, ToolCalls: calls, Turn: s.Turn}}
	}
	return upd
}

// withClientTools adds the client's tools to the supervisor's summaries
// and definitions, in new values: both are shared. A client tool named
// like one of Trellis' hides it for the turn (providers refuse two
// functions of one name, and the client asked for its own).
func withClientTools(summaries string, defs []llms.Tool, tools []ClientTool) (string, []llms.Tool) {
	var b strings.Builder
	b.WriteString(summaries)
	out := make([]llms.Tool, 0, len(defs)+len(tools))
	for _, d := range defs {
		if d.Function == nil || !slices.ContainsFunc(tools, func(t ClientTool) bool { return t.Name == d.Function.Name }) {
			out = append(out, d)
		}
	}
	for _, t := range tools {
		fmt.Fprintf(&b, "\n- %s [client]: %s", t.Name, t.Description)
		params := map[string]any{"type": "object", "properties": map[string]any{}}
		if len(t.Parameters) > 0 {
			// The adapter checked the schema is a JSON object.
			_ = json.Unmarshal(t.Parameters, &params)
		}
		out = append(out, llms.Tool{Type: "function", Function: &llms.FunctionDefinition{
			Name: t.Name, Description: t.Description, Parameters: params}})
	}
	return b.String(), out
}

// badReply is the model's unusable reply, shown back to it for repair.
func badReply(text string, calls []llms.ToolCall) llms.MessageContent {
	var b strings.Builder
	b.WriteString(text)
	for _, c := range calls {
		if c.FunctionCall != nil {
			fmt.Fprintf(&b, "\n[call %s %s]", c.FunctionCall.Name, c.FunctionCall.Arguments)
		}
	}
	if b.Len() == 0 {
		b.WriteString("(empty reply)")
	}
	return llms.TextParts(llms.ChatMessageTypeAI, b.String())
}

// withTool returns defs and the agent's own tools ts, in a new slice:
// defs is the provider's catalog and shared.
func withTool(defs []llms.Tool, ts ...llms.Tool) []llms.Tool {
	out := make([]llms.Tool, 0, len(defs)+len(ts))
	return append(append(out, defs...), ts...)
}

// toolsWith keeps withTool's result for the catalog it was made from, so
// that a node calling it with the same catalog every time (the provider
// caches it until the tools change) builds the list once. Like the
// catalog, the list is shared and never modified.
type toolsWith struct {
	last atomic.Pointer[toolsWithEntry]
}

type toolsWithEntry struct {
	defs []llms.Tool // the catalog's list; holding it keeps its array from reuse
	out  []llms.Tool
}

// with returns withTool(defs, ts...), ts being the same tools on every
// call.
func (c *toolsWith) with(defs []llms.Tool, ts ...llms.Tool) []llms.Tool {
	if e := c.last.Load(); e != nil && sameList(e.defs, defs) {
		return e.out
	}
	out := withTool(defs, ts...)
	c.last.Store(&toolsWithEntry{defs: defs, out: out})
	return out
}

// sameList reports whether a and b are the same list: the same array and
// length. A catalog's list is never modified, so that is equality.
func sameList(a, b []llms.Tool) bool {
	return len(a) == len(b) && (len(a) == 0 || &a[0] == &b[0])
}

func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}
