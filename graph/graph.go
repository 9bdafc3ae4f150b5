package graph

import (
	"context"
	"fmt"
	"time"

	"github.com/failsafe-go/failsafe-go/retrypolicy"
)

// START and END are the virtual first and last nodes of every graph.
const (
	START = "__start__"
	END   = "__end__"
)

// NodeFunc is a step of the graph. It receives a copy of the state and
// returns a partial update: every non-zero field of the returned value is
// merged into the state through that field's reducer; zero fields are left
// alone. To set a field to its zero value, or to bypass its reducer, return
// a Command with Overwrite from a command node.
type NodeFunc[S any] func(ctx context.Context, state S) (S, error)

// CommandFunc is a node that also decides where the graph goes next.
type CommandFunc[S any] func(ctx context.Context, state S) (Command[S], error)

// Command is what a command node returns: an update plus routing.
type Command[S any] struct {
	// Update is merged like a NodeFunc's result.
	Update S
	// Overwrite, when set, is called on a copy of the node's input state;
	// the fields it changes are stored as they are, reducers bypassed, after
	// Update is merged. It is how a node clears a field or replaces a list.
	Overwrite func(*S)
	// Goto names nodes to run in the next step, in addition to the node's
	// edges. END is allowed and does nothing.
	Goto []string
	// Send starts one task per Send in the next step.
	Send []Send[S]
}

// Send starts a task of Node with its own input instead of the graph's
// state: the map step of map/reduce. The task's update merges into the
// graph's state as usual.
type Send[S any] struct {
	Node  string
	State S
}

// Router picks the next node after a node, reading the state as merged at
// the end of the step. With a path map, it returns keys of the map.
type Router[S any] func(ctx context.Context, state S) (string, error)

// MultiRouter is a Router that picks several next nodes, all run in the
// next step.
type MultiRouter[S any] func(ctx context.Context, state S) ([]string, error)

// SendRouter fans out to tasks with their own inputs.
type SendRouter[S any] func(ctx context.Context, state S) ([]Send[S], error)

// StateGraph builds a graph over the state type S. Build it, then Compile
// it; building mistakes are all reported by Compile.
type StateGraph[S any] struct {
	schema   *schema[S]
	errs     []error
	nodes    map[string]*nodeSpec[S]
	order    []string
	edges    [][2]string
	joins    []joinSpec
	branches []branchSpec[S]
	barrier  Barrier[S]
}

// Barrier marks, for DurabilityBoundary, a step that a crash must not
// make run again from further back: one that does what must not happen
// twice, or what a person must see once. It is asked, between steps and
// on the run's goroutine, for each task of the step about to run, with
// the task's node and the state the task will be given (its Send
// argument, or the run's state), which it must not change; true for any
// task writes the checkpoint that plans the step, and commits it, before
// the step starts.
type Barrier[S any] func(node string, input *S) bool

// SetBarrier sets the graph's Barrier; the last call wins, and nil (the
// default) marks no step, so that DurabilityBoundary is DurabilityExit.
// Other durability modes write every step's checkpoint and never ask.
func (g *StateGraph[S]) SetBarrier(b Barrier[S]) { g.barrier = b }

type nodeSpec[S any] struct {
	name    string
	fn      CommandFunc[S]
	plain   bool // routes only by edges: a NodeFunc or a subgraph
	plainFn NodeFunc[S]
	targets []string // where a command node may go; nil means anywhere
	opts    nodeOptions
	sub     subgraphRef // set by AddSubgraph, for drawing
}

type joinSpec struct {
	from []string
	to   string
}

type branchSpec[S any] struct {
	from    string
	one     Router[S] // exactly one of one, route and sends is set
	route   MultiRouter[S]
	sends   SendRouter[S]
	pathMap map[string]string // label → node
	targets []string          // declared destinations; nil means anywhere
}

// New starts a graph over the struct type S, declaring how its fields merge
// updates. An undeclared field takes the newest non-zero value written to
// it; two nodes writing it in the same step is an error.
func New[S any](fields ...Field[S]) *StateGraph[S] {
	g := &StateGraph[S]{nodes: map[string]*nodeSpec[S]{}}
	sc, err := newSchema(fields)
	if err != nil {
		g.errs = append(g.errs, err)
	}
	g.schema = sc
	return g
}

// NodeOption configures one node.
type NodeOption func(*nodeOptions)

type nodeOptions struct {
	retry   retrypolicy.RetryPolicy[any]
	timeout time.Duration
	cache   *CachePolicy
}

// WithRetry retries the node under a failsafe-go retry policy: attempts,
// backoff with jitter, and which errors are retried are the policy's.
// Interrupts and cancellation are never retried.
func WithRetry(p retrypolicy.RetryPolicy[any]) NodeOption {
	return func(o *nodeOptions) { o.retry = p }
}

// WithTimeout bounds each attempt of the node; the node's context is
// cancelled when it expires and the attempt fails with
// context.DeadlineExceeded.
func WithTimeout(d time.Duration) NodeOption {
	return func(o *nodeOptions) { o.timeout = d }
}

// WithCache reuses the node's result for an input seen before.
func WithCache(p CachePolicy) NodeOption {
	return func(o *nodeOptions) { o.cache = &p }
}

// AddNode adds a node.
func (g *StateGraph[S]) AddNode(name string, fn NodeFunc[S], opts ...NodeOption) {
	g.add(name, func(ctx context.Context, s S) (Command[S], error) {
		u, err := fn(ctx, s)
		return Command[S]{Update: u}, err
	}, true, nil, opts)
	if n, ok := g.nodes[name]; ok && n.plainFn == nil {
		n.plainFn = fn
	}
}

// AddCommandNode adds a node that returns a Command. targets lists where
// its Goto and Send may lead, for validation and drawing; leave it empty
// to allow any node.
func (g *StateGraph[S]) AddCommandNode(name string, fn CommandFunc[S], targets []string, opts ...NodeOption) {
	g.add(name, fn, false, targets, opts)
}

func (g *StateGraph[S]) add(name string, fn CommandFunc[S], plain bool, targets []string, opts []NodeOption) {
	if err := validName(name); err != nil {
		g.errs = append(g.errs, fmt.Errorf("graph: add node: %w", err))
		return
	}
	if _, dup := g.nodes[name]; dup {
		g.errs = append(g.errs, fmt.Errorf("graph: node %q added twice", name))
		return
	}
	n := &nodeSpec[S]{name: name, fn: fn, plain: plain, targets: targets}
	for _, o := range opts {
		o(&n.opts)
	}
	g.nodes[name] = n
	g.order = append(g.order, name)
}

// AddEdge runs to after from, in the next step.
func (g *StateGraph[S]) AddEdge(from, to string) {
	g.edges = append(g.edges, [2]string{from, to})
}

// AddJoin runs to once every node in from has finished since it last ran:
// a barrier for branches of different lengths.
func (g *StateGraph[S]) AddJoin(from []string, to string) {
	g.joins = append(g.joins, joinSpec{from: append([]string(nil), from...), to: to})
}

// AddConditionalEdges routes from a node by a Router. pathMap maps the
// router's answers to node names and gives the drawing its labels; with a
// nil map the answers are node names.
func (g *StateGraph[S]) AddConditionalEdges(from string, route Router[S], pathMap map[string]string) {
	g.addBranch(branchSpec[S]{from: from, one: route, pathMap: pathMap})
}

// AddMultiConditionalEdges routes from a node to every node its router
// returns, all run in the next step.
func (g *StateGraph[S]) AddMultiConditionalEdges(from string, route MultiRouter[S], pathMap map[string]string) {
	g.addBranch(branchSpec[S]{from: from, route: route, pathMap: pathMap})
}

func (g *StateGraph[S]) addBranch(b branchSpec[S]) {
	if b.pathMap != nil {
		for _, to := range b.pathMap {
			b.targets = append(b.targets, to)
		}
	}
	g.branches = append(g.branches, b)
}

// AddSends fans out from a node: each Send its router returns becomes a
// task in the next step. targets lists the nodes it may send to; leave it
// empty to allow any node.
func (g *StateGraph[S]) AddSends(from string, route SendRouter[S], targets ...string) {
	g.branches = append(g.branches, branchSpec[S]{from: from, sends: route, targets: targets})
}
