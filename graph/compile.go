package graph

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
)

// DefaultRecursionLimit is the number of supersteps a run may take unless
// RunConfig or CompileOptions say otherwise; LangGraph's default too.
const DefaultRecursionLimit = 10000

// CompileOptions configures a compiled graph. The zero value runs without
// persistence.
type CompileOptions struct {
	// Checkpointer saves a checkpoint after every superstep of runs that
	// have a thread id. Interrupts and the thread API need one.
	Checkpointer Checkpointer
	// InterruptBefore and InterruptAfter pause every run before or after
	// these nodes.
	InterruptBefore []string
	InterruptAfter  []string
	// RecursionLimit caps supersteps per run; 0 means DefaultRecursionLimit.
	RecursionLimit int
	// MaxConcurrency bounds how many tasks of one superstep run at once,
	// like errgroup's SetLimit: a step with more tasks (a wide Send
	// fan-out, say) starts the rest, in task order, as running ones
	// finish. A retried task keeps its place through all its attempts.
	// The merge order stays the task order. 0 or less means no limit:
	// every task of a step runs at once. A subgraph's steps are bounded by
	// its own graph's option.
	MaxConcurrency int
	// ThreadCache bounds the states that finished runs leave in memory
	// for the next run on their thread, which then continues from memory
	// instead of loading the thread from the Checkpointer. The zero value
	// keeps up to 1024 threads and 64 MiB.
	ThreadCache ThreadCacheLimits
	// Durability says when runs write their checkpoints (see Durability);
	// a run's RunConfig.Durability overrides it. DurabilityDefault means
	// DurabilitySync.
	Durability Durability
}

// Compiled is a validated graph, ready to run. It is safe for concurrent
// use: runs share nothing but the checkpointer, the node caches and the
// thread cache.
type Compiled[S any] struct {
	schema *schema[S]
	nodes  []*cnode[S] // sorted by name: the merge and run order
	byName map[string]int
	start  cnode[S] // START's outgoing edges
	joins  []cjoin
	opts   CompileOptions
	before []bool // per node: static interrupt before
	after  []bool
	spec   *StateGraph[S] // for drawing
	// barrier is the graph's Barrier, as it was when compiled.
	barrier Barrier[S]
	// scratch holds *saveScratch[S] that finished runs left for later ones.
	scratch sync.Pool
	// locals holds *runLocal[S] that finished runs left for later ones.
	locals sync.Pool
	// threads is nil without a checkpointer or with the cache turned off.
	threads *threadCache[S]
}

type cnode[S any] struct {
	spec     *nodeSpec[S]
	idx      int
	next     []int // static successors; END is dropped
	branches []*branchSpec[S]
	joins    []int // joins this node is a source of
	cache    *resultCache[S]
}

type cjoin struct {
	key  string // stable name for the checkpoint's Barriers
	to   int
	from []int
}

// Compile validates the graph and returns it ready to run. All problems
// are reported together.
func (g *StateGraph[S]) Compile(opts CompileOptions) (*Compiled[S], error) {
	errs := slices.Clone(g.errs)
	if g.schema == nil {
		return nil, errors.Join(errs...)
	}
	c := &Compiled[S]{schema: g.schema, byName: map[string]int{}, opts: opts, spec: g, barrier: g.barrier}
	names := slices.Sorted(slices.Values(g.order))
	for i, name := range names {
		c.byName[name] = i
		n := &cnode[S]{spec: g.nodes[name], idx: i}
		if p := n.spec.opts.cache; p != nil {
			n.cache = newResultCache[S](*p)
		}
		c.nodes = append(c.nodes, n)
	}
	known := func(name string, what string) bool {
		if name == END {
			return true
		}
		if _, ok := c.byName[name]; ok {
			return true
		}
		errs = append(errs, fmt.Errorf("graph: %s names unknown node %q", what, name))
		return false
	}
	source := func(name, what string) *cnode[S] {
		if name == START {
			return &c.start
		}
		if name == END {
			errs = append(errs, fmt.Errorf("graph: %s starts at END", what))
			return nil
		}
		if !known(name, what) {
			return nil
		}
		return c.nodes[c.byName[name]]
	}
	for _, e := range g.edges {
		from := source(e[0], fmt.Sprintf("edge %s → %s", e[0], e[1]))
		if from == nil || !known(e[1], fmt.Sprintf("edge %s → %s", e[0], e[1])) {
			continue
		}
		if e[1] == START {
			errs = append(errs, fmt.Errorf("graph: edge %s → START: nothing may lead to START", e[0]))
			continue
		}
		if e[1] != END && !slices.Contains(from.next, c.byName[e[1]]) {
			from.next = append(from.next, c.byName[e[1]])
		}
		if e[1] == END {
			from.next = append(from.next, -1)
		}
	}
	for i := range g.branches {
		b := &g.branches[i]
		what := "conditional edges from " + b.from
		from := source(b.from, what)
		for _, t := range b.targets {
			known(t, what)
		}
		if from != nil {
			from.branches = append(from.branches, b)
		}
	}
	for _, j := range g.joins {
		what := fmt.Sprintf("join %v → %s", j.from, j.to)
		cj := cjoin{key: strings.Join(j.from, ",") + "->" + j.to}
		ok := known(j.to, what) && j.to != END
		if len(j.from) < 2 {
			errs = append(errs, fmt.Errorf("graph: %s needs at least two sources", what))
			ok = false
		}
		for _, f := range j.from {
			if f == START || !known(f, what) || f == END {
				ok = false
				continue
			}
			cj.from = append(cj.from, c.byName[f])
		}
		if !ok {
			continue
		}
		cj.to = c.byName[j.to]
		for _, f := range cj.from {
			c.nodes[f].joins = append(c.nodes[f].joins, len(c.joins))
		}
		c.joins = append(c.joins, cj)
	}
	for _, n := range c.nodes {
		for _, t := range n.spec.targets {
			known(t, "command node "+n.spec.name)
		}
	}
	c.before = c.flags(opts.InterruptBefore, "InterruptBefore", &errs)
	c.after = c.flags(opts.InterruptAfter, "InterruptAfter", &errs)
	if len(errs) == 0 {
		errs = append(errs, c.checkPaths()...)
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	for _, n := range c.nodes {
		n.next = slices.DeleteFunc(n.next, func(i int) bool { return i < 0 })
	}
	c.start.next = slices.DeleteFunc(c.start.next, func(i int) bool { return i < 0 })
	if opts.Checkpointer != nil {
		c.threads = newThreadCache[S](opts.ThreadCache)
	}
	return c, nil
}

func (c *Compiled[S]) flags(names []string, what string, errs *[]error) []bool {
	if len(names) == 0 {
		return nil
	}
	f := make([]bool, len(c.nodes))
	for _, name := range names {
		i, ok := c.byName[name]
		if !ok {
			*errs = append(*errs, fmt.Errorf("graph: %s names unknown node %q", what, name))
			continue
		}
		f[i] = true
	}
	return f
}

// checkPaths reports nodes START cannot reach and nodes that cannot reach
// END. Routers without a path map, and command nodes without targets, may
// lead anywhere.
func (c *Compiled[S]) checkPaths() []error {
	const end = -1
	n := len(c.nodes)
	all := make([]int, 0, n+1)
	for i := range n {
		all = append(all, i)
	}
	all = append(all, end)
	succ := func(x *cnode[S]) []int {
		out := slices.Clone(x.next)
		for _, b := range x.branches {
			if b.targets == nil {
				return all
			}
			for _, t := range b.targets {
				out = append(out, c.index(t))
			}
		}
		for _, j := range x.joins {
			out = append(out, c.joins[j].to)
		}
		if x.spec != nil && !x.spec.plain {
			if x.spec.targets == nil {
				return all
			}
			for _, t := range x.spec.targets {
				out = append(out, c.index(t))
			}
		}
		return out
	}
	edges := make([][]int, n)
	for i, x := range c.nodes {
		edges[i] = succ(x)
	}
	var errs []error
	startSucc := succ(&c.start)
	if len(startSucc) == 0 {
		return []error{errors.New("graph: START has no outgoing edge; add one with AddEdge(START, ...)")}
	}
	seen := make([]bool, n)
	var walk func(int)
	walk = func(i int) {
		if i == end || seen[i] {
			return
		}
		seen[i] = true
		for _, j := range edges[i] {
			walk(j)
		}
	}
	for _, j := range startSucc {
		walk(j)
	}
	reachesEnd := make([]bool, n)
	for changed := true; changed; {
		changed = false
		for i := range n {
			if reachesEnd[i] {
				continue
			}
			for _, j := range edges[i] {
				if j == end || reachesEnd[j] {
					reachesEnd[i], changed = true, true
					break
				}
			}
		}
	}
	for i, x := range c.nodes {
		name := x.spec.name
		switch {
		case !seen[i]:
			errs = append(errs, fmt.Errorf("graph: node %q is unreachable from START", name))
		case len(edges[i]) == 0:
			errs = append(errs, fmt.Errorf("graph: node %q has no outgoing edge; add one, to END if it finishes the run", name))
		case !reachesEnd[i]:
			errs = append(errs, fmt.Errorf("graph: node %q has no way to END", name))
		}
	}
	return errs
}

func (c *Compiled[S]) index(name string) int {
	if name == END {
		return -1
	}
	return c.byName[name]
}
