package nodes

import (
	"context"
	"time"

	"github.com/trellis-ai/trellis/events"
	"github.com/trellis-ai/trellis/graph"
	"github.com/trellis-ai/trellis/llm"
)

// Node names.
const (
	NodeInitialize    = "initialize"
	NodeSupervisor    = "supervisor"
	NodeExecuteTool   = "execute_tool"
	NodeReflect       = "reflect"
	NodeSynthesize    = "synthesize"
	NodeWrite         = "write"
	NodeStream        = "stream"
	NodeClarify       = "clarify"
	NodeHandleBlocked = "handle_blocked"
)

// build assembles the agent graph (drawn by Agent.Mermaid; see the
// package doc).
func (a *Agent) build() (*graph.Compiled[ChatState], error) {
	g := graph.New[ChatState](schemaFields()...)
	g.AddCommandNode(NodeInitialize, wrapCommand(NodeInitialize, a.tracedCommand(NodeInitialize, a.initialize)), nil)
	g.AddNode(NodeSupervisor, wrap(NodeSupervisor, a.traced(NodeSupervisor, a.supervisor)))
	g.AddNode(NodeExecuteTool, wrap(NodeExecuteTool, a.traced(NodeExecuteTool, a.executeTool)))
	g.AddNode(NodeReflect, wrap(NodeReflect, a.traced(NodeReflect, a.reflect)))
	g.AddNode(NodeSynthesize, wrap(NodeSynthesize, a.traced(NodeSynthesize, a.synthesize)))
	g.AddNode(NodeWrite, wrap(NodeWrite, a.traced(NodeWrite, a.write)))
	g.AddNode(NodeStream, wrap(NodeStream, a.traced(NodeStream, a.stream)))
	g.AddCommandNode(NodeClarify, wrapCommand(NodeClarify, a.tracedCommand(NodeClarify, a.clarify)), nil)
	g.AddNode(NodeHandleBlocked, wrap(NodeHandleBlocked, a.traced(NodeHandleBlocked, a.handleBlocked)))

	g.AddEdge(graph.START, NodeInitialize)
	g.AddEdge(NodeInitialize, NodeSupervisor)
	g.AddConditionalEdges(NodeSupervisor, routeDecision, map[string]string{
		"answer":          NodeWrite,
		"call_tool":       NodeExecuteTool,
		"create_workflow": NodeExecuteTool,
		"clarify":         NodeClarify,
		"blocked":         NodeHandleBlocked,
	})
	g.AddEdge(NodeExecuteTool, NodeReflect)
	g.AddConditionalEdges(NodeReflect, a.routeReflection, map[string]string{
		string(AssessSatisfied):      NodeSynthesize,
		string(AssessNeedMore):       NodeSupervisor,
		string(AssessBlocked):        NodeHandleBlocked,
		string(AssessDirectResponse): NodeStream,
		"max_iterations":             NodeHandleBlocked,
		"client_tools":               NodeStream,
	})
	g.AddEdge(NodeSynthesize, NodeWrite)
	g.AddEdge(NodeHandleBlocked, NodeWrite)
	g.AddEdge(NodeWrite, NodeStream)
	g.AddConditionalEdges(NodeClarify, routeClarify, map[string]string{
		"ask":      NodeStream,
		"answered": NodeSupervisor,
	})
	g.AddConditionalEdges(NodeStream, routeStream, map[string]string{
		"wait": NodeClarify,
		"done": graph.END,
	})
	g.SetBarrier(a.barrier)
	return g.Compile(graph.CompileOptions{Checkpointer: a.saver, Durability: a.opts.Durability})
}

// routeDecision follows the supervisor's decision.
func routeDecision(_ context.Context, s ChatState) (string, error) {
	switch s.Decision.Action {
	case ActionAnswer:
		return "answer", nil
	case ActionCallTool:
		return "call_tool", nil
	case ActionCreateWorkflow:
		return "create_workflow", nil
	case ActionClarify:
		return "clarify", nil
	default:
		return "blocked", nil
	}
}

// routeReflection follows the reflection, sending a need_more that has
// used up the iterations to handle_blocked.
func (a *Agent) routeReflection(_ context.Context, s ChatState) (string, error) {
	if s.Outcome == OutcomeClientTools {
		return "client_tools", nil
	}
	as := s.Reflection.Assessment
	if as == "" {
		as = AssessSatisfied
	}
	if as == AssessNeedMore && s.Iteration >= a.opts.maxIterations() {
		return "max_iterations", nil
	}
	return string(as), nil
}

// routeClarify streams a new question, or goes back to the supervisor once
// it is answered.
func routeClarify(_ context.Context, s ChatState) (string, error) {
	if s.ClarifyQuestion != "" {
		return "ask", nil
	}
	return "answered", nil
}

// routeStream ends the turn, or waits for the answer to the question just
// asked.
func routeStream(_ context.Context, s ChatState) (string, error) {
	if s.Outcome == OutcomeClarify && s.ClarifyQuestion != "" {
		return "wait", nil
	}
	return "done", nil
}

type nodeFunc func(ctx context.Context, s ChatState) (ChatState, error)
type commandFunc func(ctx context.Context, s ChatState) (graph.Command[ChatState], error)

// wrap emits node.start and node.end around a node and names the node for
// model calls (llm.WithNode). A node that fails or pauses emits no
// node.end. It also carries the run's budget across segments: the
// tracker takes the request's limits and adopts the use the state
// records before the node runs, and the node's update records the
// tracker's figures after it.
func wrap(name string, fn nodeFunc) graph.NodeFunc[ChatState] {
	return func(ctx context.Context, s ChatState) (ChatState, error) {
		start := time.Now()
		_ = emit(ctx, &events.NodeStart{Node: name})
		b := budgetFrom(ctx)
		b.adopt(s.Input.Budget)
		b.resume(&s)
		out, err := fn(llm.WithNode(ctx, name), s)
		if err != nil {
			return out, err
		}
		out.BudgetSpent = b.spent()
		_ = emit(ctx, &events.NodeEnd{Node: name, DurationMS: time.Since(start).Milliseconds()})
		return out, nil
	}
}

func wrapCommand(name string, fn commandFunc) graph.CommandFunc[ChatState] {
	return func(ctx context.Context, s ChatState) (graph.Command[ChatState], error) {
		start := time.Now()
		_ = emit(ctx, &events.NodeStart{Node: name})
		out, err := fn(llm.WithNode(ctx, name), s)
		if err != nil {
			return out, err
		}
		_ = emit(ctx, &events.NodeEnd{Node: name, DurationMS: time.Since(start).Milliseconds()})
		return out, nil
	}
}
