package nodes

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/tmc/langchaingo/llms"

	"github.com/trellis-ai/trellis/events"
	"github.com/trellis-ai/trellis/graph"
	"github.com/trellis-ai/trellis/operators"
)

// SubAgent defines an agent the supervisor may delegate a self-contained
// job to, through the task tool.
type SubAgent struct {
	// Name is how the supervisor names it: letters, digits, '_' and '-'.
	Name string `json:"name"`
	// Description tells the supervisor what it is for.
	Description string `json:"description"`
	// SystemPrompt opens its model calls; "" means the parent's.
	SystemPrompt string `json:"system_prompt,omitempty"`
	// Tools are the tools it may call, by name; empty means every tool of
	// the parent's. Approval is the parent's policy, whatever the list.
	Tools []string `json:"tools,omitempty"`
	// Model is the model (id or alias) it decides and writes with; ""
	// means the run's.
	Model string `json:"model,omitempty"`
}

// SubAgents configure delegation. A sub-agent runs as a subgraph of the
// execute_tool node that calls it, with its own message history and its
// own checkpoints in the parent's thread; its events reach the parent's
// stream (Event.Namespace names it), its approvals and questions pause the
// whole run like the parent's own, and its final answer is the task
// call's result.
type SubAgents struct {
	// Agents are the sub-agents; none disables the task tool.
	Agents []SubAgent `json:"agents"`
	// MaxDepth bounds nesting: the root agent is depth 0, and the task
	// tool is offered to agents shallower than MaxDepth. 0 means 2.
	MaxDepth int `json:"max_depth,omitempty"`
	// MaxParallel bounds the sub-agents one execution runs at once. 0
	// means 4.
	MaxParallel int `json:"max_parallel,omitempty"`
}

// TaskTool is the name of the tool that delegates to a sub-agent.
const TaskTool = "task"

// agentSegment marks a sub-agent's part of a graph namespace, so that
// events can be told by agent (see agentPath).
const agentSegment = "@"

// ErrBadSubAgent: a sub-agent definition is unusable.
var ErrBadSubAgent = errors.New("nodes: bad sub-agent definition")

// subagentMiddleware contributes the task tool and runs sub-agents.
type subagentMiddleware struct {
	defs     []SubAgent
	agents   map[string]*Agent
	maxDepth int
	parallel int
	tool     Tool
	// memo is every agent's graph for plain calls beside delegations.
	memo *graph.Compiled[keptCall]
}

func (*subagentMiddleware) Name() string { return "subagents" }

// Tools offers the task tool to agents shallower than MaxDepth.
func (m *subagentMiddleware) Tools(s *ChatState) []Tool {
	if depth(s.Input.Namespace) >= m.maxDepth {
		return nil
	}
	return []Tool{m.tool}
}

// depth is an agent path's depth: 0 for the root.
func depth(path string) int {
	if path == "" {
		return 0
	}
	return strings.Count(path, "/") + 1
}

// newSubagents checks the definitions and builds the middleware; its
// agents are built by the caller (each with the middleware itself, for
// nesting).
func newSubagents(cfg SubAgents) (*subagentMiddleware, error) {
	m := &subagentMiddleware{defs: slices.Clone(cfg.Agents), agents: map[string]*Agent{},
		maxDepth: positive(cfg.MaxDepth, 2), parallel: positive(cfg.MaxParallel, 4)}
	names := make([]string, 0, len(m.defs))
	var summary strings.Builder
	summary.WriteString("- " + TaskTool + " [sub-agents]: Delegate a self-contained job to a sub-agent, which works on it alone and returns its answer. Sub-agents:")
	for _, d := range m.defs {
		if d.Name == "" || strings.ContainsFunc(d.Name, func(r rune) bool {
			return !(r == '_' || r == '-' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9')
		}) {
			return nil, fmt.Errorf("%w: name %q: use letters, digits, '_' and '-'", ErrBadSubAgent, d.Name)
		}
		if slices.Contains(names, d.Name) {
			return nil, fmt.Errorf("%w: name %q is used twice", ErrBadSubAgent, d.Name)
		}
		names = append(names, d.Name)
		fmt.Fprintf(&summary, " %s (%s);", d.Name, d.Description)
	}
	m.tool = Tool{
		Summary: strings.TrimSuffix(summary.String(), ";"),
		Def: llms.Tool{Type: "function", Function: &llms.FunctionDefinition{
			Name: TaskTool,
			Description: "Delegate a self-contained job to a sub-agent. It has its own conversation and tools, sees nothing of yours, " +
				"and returns its final answer as this call's result. Several task calls run in parallel.",
			Parameters: map[string]any{
				"type": "object",
				"properties": map[string]any{
					"agent": map[string]any{"type": "string", "enum": names, "description": "The sub-agent to delegate to."},
					"task":  map[string]any{"type": "string", "description": "The whole job, with everything the sub-agent needs to know."},
				},
				"required": []string{"agent", "task"},
			},
		}},
		Run:      m.run,
		Parallel: m.parallel,
	}
	return m, nil
}

// taskArgs are the task tool's arguments.
type taskArgs struct {
	Agent string `json:"agent"`
	Task  string `json:"task"`
}

// run delegates one job: the sub-agent's graph runs inside the calling
// node under its own namespace (its checkpoints kept apart, so a run
// continued after a pause or a crash finds a finished sub-agent's answer
// without running it again, and a paused one where it stopped).
func (m *subagentMiddleware) run(ctx context.Context, c ToolRun) (ToolOutput, error) {
	var args taskArgs
	if err := json.Unmarshal(argsOrEmpty(c.Args), &args); err != nil {
		return ToolOutput{Result: operators.Errorf("the task tool's arguments are not {\"agent\", \"task\"}: %v", err)}, nil
	}
	child := m.agents[args.Agent]
	if child == nil {
		names := make([]string, len(m.defs))
		for i, d := range m.defs {
			names[i] = d.Name
		}
		return ToolOutput{Result: operators.Errorf("there is no sub-agent %q; choose one of %s", args.Agent, strings.Join(names, ", "))}, nil
	}
	if strings.TrimSpace(args.Task) == "" {
		return ToolOutput{Result: operators.Errorf("the task is empty: say what the sub-agent is to do")}, nil
	}
	seg := args.Agent + ":" + c.ToolCallID
	path := seg
	if p := c.Input.Namespace; p != "" {
		path = p + "/" + seg
	}
	_ = emit(ctx, &events.SubagentStart{Subagent: args.Agent, Task: args.Task, Namespace: path})
	in := c.Input
	in = Input{Message: strings.TrimSpace(args.Task), ConversationID: in.ConversationID, RequestID: in.RequestID, UserID: in.UserID,
		Model: cmp.Or(child.def.Model, in.Model), DocumentIDs: in.DocumentIDs, Context: in.Context, NoMemory: in.NoMemory,
		Namespace: path}
	final, err := child.graph.Invoke(graph.Child(ctx, agentSegment+seg), &ChatState{Input: in}, graph.RunConfig{})
	switch {
	case errors.Is(err, graph.ErrInterrupted):
		return ToolOutput{}, err // the whole run waits for the sub-agent's question
	case err != nil && ctx.Err() != nil:
		_ = emit(ctx, &events.SubagentEnd{Subagent: args.Agent, Namespace: path, Status: events.SubagentCancelled})
		return ToolOutput{Result: operators.Errorf("the sub-agent %s was cancelled", args.Agent)}, nil
	case err != nil:
		_ = emit(ctx, &events.SubagentEnd{Subagent: args.Agent, Namespace: path, Status: events.SubagentFailed, Result: err.Error()})
		return ToolOutput{Result: operators.Errorf("the sub-agent %s failed: %v", args.Agent, err)}, nil
	}
	status := events.SubagentCompleted
	if final.Outcome == OutcomeBlocked {
		status = events.SubagentBlocked
	}
	_ = emit(ctx, &events.SubagentEnd{Subagent: args.Agent, Namespace: path, Status: status, Result: final.FinalResponse})
	text := final.FinalResponse
	if status == events.SubagentBlocked {
		text = "The sub-agent " + args.Agent + " could not finish: " + text
	}
	return ToolOutput{Result: operators.TextResult(text), Usage: final.TurnUsage}, nil
}

// agentPath reads the agent path out of an event's namespace: the
// sub-agents' segments, joined with "/"; "" for the root agent's events.
func agentPath(ns []string) string {
	var b strings.Builder
	for _, seg := range ns {
		if name, ok := strings.CutPrefix(seg, agentSegment); ok {
			if b.Len() > 0 {
				b.WriteByte('/')
			}
			b.WriteString(name)
		}
	}
	return b.String()
}

// buildSubagents makes the middleware and one agent per definition, each
// over the parent's models, tools, checkpointer and policies, with the
// middleware itself (so it may delegate further, to MaxDepth).
func (a *Agent) buildSubagents() (*subagentMiddleware, error) {
	m, err := newSubagents(a.opts.SubAgents)
	if err != nil {
		return nil, err
	}
	if m.memo, err = keptCalls(); err != nil {
		return nil, fmt.Errorf("nodes: build the kept calls' graph: %w", err)
	}
	for _, d := range m.defs {
		opts := a.opts
		opts.SystemPrompt = cmp.Or(d.SystemPrompt, a.opts.SystemPrompt)
		opts.SupervisorModel = cmp.Or(d.Model, a.opts.SupervisorModel)
		opts.ReflectModel = cmp.Or(d.Model, a.opts.ReflectModel)
		// What a sub-agent says is the task call's result, not a message
		// of the conversation, and nothing to learn from.
		opts.Hooks = Hooks{}
		child := &Agent{models: a.models, tools: a.tools, saver: a.saver, opts: opts, log: a.log, def: d, memo: m.memo}
		if len(d.Tools) > 0 {
			child.allow = map[string]bool{}
			for _, t := range d.Tools {
				child.allow[t] = true
			}
		}
		child.chain = newChain(a.middleware(child, m))
		if child.graph, err = child.build(); err != nil {
			return nil, fmt.Errorf("nodes: build sub-agent %s: %w", d.Name, err)
		}
		m.agents[d.Name] = child
	}
	return m, nil
}

// ParseSubAgents reads a sub-agents file: a JSON object {"agents":
// [{"name", "description", "system_prompt", "tools", "model"}, …],
// "max_depth", "max_parallel"}, unknown fields refused. Errors match
// ErrBadSubAgent.
func ParseSubAgents(data []byte) (SubAgents, error) {
	var cfg SubAgents
	dec := json.NewDecoder(strings.NewReader(string(data)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&cfg); err != nil {
		return SubAgents{}, fmt.Errorf("%w: %w", ErrBadSubAgent, err)
	}
	if dec.More() {
		return SubAgents{}, fmt.Errorf("%w: data after the object", ErrBadSubAgent)
	}
	if cfg.MaxDepth < 0 || cfg.MaxParallel < 0 {
		return SubAgents{}, fmt.Errorf("%w: max_depth and max_parallel must not be negative", ErrBadSubAgent)
	}
	for _, d := range cfg.Agents {
		if strings.TrimSpace(d.Description) == "" {
			return SubAgents{}, fmt.Errorf("%w: sub-agent %q needs a description (the supervisor chooses by it)", ErrBadSubAgent, d.Name)
		}
	}
	if _, err := newSubagents(cfg); err != nil {
		return SubAgents{}, err
	}
	return cfg, nil
}
