package graph

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
)

// AddSubgraph adds a compiled graph over the same state type as a node.
// It runs on a copy of the parent's state; the fields it changes replace
// the parent's, reducers bypassed, since the subgraph already merged them.
// Its events reach the parent's stream under the namespace "name:task",
// its checkpoints share the parent's checkpointer and thread under that
// namespace, and its interrupts pause the parent until answered.
//
// A node may also run a graph over another state type by calling its
// Invoke or Stream with an empty RunConfig: the same linking applies, and
// its values and updates reach the parent's stream in Event.Data.
func (g *StateGraph[S]) AddSubgraph(name string, sub *Compiled[S], opts ...NodeOption) {
	g.add(name, func(ctx context.Context, s S) (Command[S], error) {
		final, err := sub.Invoke(ctx, &s, RunConfig{})
		if err != nil {
			return Command[S]{}, err
		}
		return Command[S]{Overwrite: func(p *S) {
			sub.schema.overwrite(p, &final, sub.schema.changed(&s, &final))
		}}, nil
	}, true, nil, opts)
	if n, ok := g.nodes[name]; ok {
		n.sub = sub
	}
}

// Child names the graph run a node starts with the returned context:
// its namespace is the node's with name added, instead of the node's
// alone. A node that runs several graphs (side by side, or one after
// another) gives each its own name, so each keeps its own checkpoints:
// when the node runs again after a pause or a crash, a named run that
// had finished returns its final state without running anything again,
// and one that had paused picks up where it stopped. name must be unique
// among the node's runs and stable across its re-runs; it applies only
// to a run started by the node whose context ctx is, not to runs nested
// deeper.
func Child(ctx context.Context, name string) context.Context {
	t := taskFrom(ctx)
	if t == nil || name == "" {
		return ctx
	}
	return context.WithValue(ctx, childKey{}, childName{t: t, name: name})
}

type childKey struct{}

// childName is Child's name for the runs of task t.
type childName struct {
	t    taskHandle
	name string
}

// subgraphRef lets drawing reach a subgraph without knowing its type.
type subgraphRef interface {
	mermaidBody(prefix string) string
}

// parentLink is what a graph run inside a node inherits from the run of
// that node: persistence, namespace, resume values and the event stream.
type parentLink struct {
	saver  Checkpointer
	thread string
	runID  string
	ns     []string
	resume map[string]json.RawMessage
	modes  Mode
	// forward passes one of the child's events (an Event of the child's
	// state type) to the parent's stream.
	forward func(ev foreignEvent) error
}

// foreignEvent is an Event of any state type.
type foreignEvent interface {
	parts() (mode Mode, ns []string, node string, step int, data any)
}

func (e Event[S]) parts() (Mode, []string, string, int, any) {
	if e.Mode == ModeValues || e.Mode == ModeUpdates {
		return e.Mode, e.Namespace, e.Node, e.Step, e.State
	}
	return e.Mode, e.Namespace, e.Node, e.Step, e.Data
}

func (t *task[S]) childLink(ctx context.Context) *parentLink {
	r := t.r
	id := t.id
	if id == "" {
		id = fmt.Sprintf("%d.%s", r.step, t.label())
	}
	ns := append(slices.Clip(r.ns), t.node.spec.name+":"+id)
	if c, ok := ctx.Value(childKey{}).(childName); ok && c.t == taskHandle(t) {
		ns = append(ns, c.name)
	}
	return &parentLink{
		saver: r.saver, thread: r.thread, runID: r.runID, resume: r.resume, modes: r.modes,
		ns:      ns,
		forward: t.forwardChild,
	}
}
