package graph

import (
	"fmt"
	"runtime/debug"
	"slices"
)

// plan returns the tasks of the next step: nodes triggered by the edges,
// routers, joins and Gotos of the finished tasks, once each, then Send
// tasks, all in node-name order. The finished tasks are free for reuse
// once it returns: some of them may be the next step's.
func (r *run[S]) plan(done []*task[S]) ([]*task[S], error) {
	r.pushes = r.pushes[:0]
	for _, t := range done {
		n := t.node
		for _, j := range n.next {
			r.mark(j)
		}
		for _, j := range n.joins {
			r.arrive(j, n.idx)
		}
		for _, b := range n.branches {
			if err := r.branch(t, b); err != nil {
				r.unmark()
				return nil, err
			}
		}
		gotos, sends := t.routes()
		for _, to := range gotos {
			if err := r.trigger(to, t, "Goto of "); err != nil {
				r.unmark()
				return nil, err
			}
		}
		for _, s := range sends {
			if err := r.push(s, t, "Send of "); err != nil {
				r.unmark()
				return nil, err
			}
		}
	}
	// Nothing reads the finished tasks from here on, so the tasks of a
	// step can be those of the last: a run of single-task steps uses one
	// task in all.
	if len(done) == 1 { // as append(done...) would, but without its bulk copy
		r.free = append(r.free, done[0])
	} else {
		r.free = append(r.free, done...)
	}
	on := r.picked
	if len(on) > 1 {
		slices.Sort(on)
	}
	r.reserve(len(on))
	// Two task lists alternate: the one being planned and the one whose
	// step just ran.
	next := slices.Grow(r.spare[:0], len(on)+len(r.pushes))
	if len(r.pushes) > 1 {
		slices.SortStableFunc(r.pushes, func(a, b *task[S]) int { return a.node.idx - b.node.idx })
	}
	p := 0
	for _, i := range on {
		for ; p < len(r.pushes) && r.pushes[p].node.idx < i; p++ {
			next = append(next, r.pushes[p])
		}
		next = append(next, r.newTask(r.g.nodes[i]))
	}
	next = append(next, r.pushes[p:]...)
	r.unmark()
	r.name(next)
	return next, nil
}

// mark triggers node i for the next step, once however many edges lead
// to it. The marked nodes are listed as well as flagged, so that planning
// a step costs what the step triggers, not what the graph holds.
func (r *run[S]) mark(i int) {
	if !r.triggered[i] {
		r.triggered[i] = true
		r.picked = append(r.picked, i)
	}
}

// unmark forgets what the step being planned triggered.
func (r *run[S]) unmark() {
	for _, i := range r.picked {
		r.triggered[i] = false
	}
	r.picked = r.picked[:0]
}

// name numbers the Send tasks of each node, for their labels.
// sendIdx is the number of Send tasks of the same node before it; one
// count per node keeps a wide fan-out linear.
func (r *run[S]) name(tasks []*task[S]) {
	sent := false
	for _, t := range tasks {
		if !t.hasInput {
			continue
		}
		if r.sendCount == nil {
			r.sendCount = make([]int, len(r.g.nodes))
		}
		t.sendIdx = int32(r.sendCount[t.node.idx])
		r.sendCount[t.node.idx]++
		sent = true
	}
	if sent {
		clear(r.sendCount)
	}
}

// trigger triggers the node named name; an unknown name is an error
// naming what asked for it: what alone, or what and by's label when by
// is set (built only then: a label may be formatted).
func (r *run[S]) trigger(name string, by *task[S], what string) error {
	if name == END {
		return nil
	}
	i, ok := r.g.byName[name]
	if !ok {
		return fmt.Errorf("%w %q in %s (step %d)", ErrUnknownNode, name, r.asker(by, what), r.step)
	}
	r.mark(i)
	return nil
}

func (r *run[S]) asker(by *task[S], what string) string {
	if by == nil {
		return what
	}
	return what + by.label()
}

func (r *run[S]) push(s Send[S], by *task[S], what string) error {
	i, ok := r.g.byName[s.Node]
	if !ok {
		return fmt.Errorf("%w %q in %s (step %d)", ErrUnknownNode, s.Node, r.asker(by, what), r.step)
	}
	t := r.newTask(r.g.nodes[i])
	t.hasInput, t.input = true, s.State
	r.pushes = append(r.pushes, t)
	return nil
}

func (r *run[S]) arrive(j, from int) {
	b := r.barriers[j]
	for k, f := range r.g.joins[j].from {
		if f == from {
			b[k] = true
		}
	}
	if !slices.Contains(b, false) {
		r.mark(r.g.joins[j].to)
		clear(b)
	}
}

// branch evaluates one router of a finished task on the merged state.
func (r *run[S]) branch(t *task[S], b *branchSpec[S]) (err error) {
	defer func() {
		if v := recover(); v != nil {
			err = &PanicError{Value: v, Stack: debug.Stack()}
		}
		if err != nil {
			err = fmt.Errorf("graph: route after %s (step %d): %w", t.label(), r.step, err)
		}
	}()
	what := "router"
	if b.one != nil {
		name, err := b.one(r.ctx, r.state)
		if err != nil {
			return err
		}
		return r.route(b, name, what)
	}
	if b.route != nil {
		names, err := b.route(r.ctx, r.state)
		if err != nil {
			return err
		}
		for _, name := range names {
			if err := r.route(b, name, what); err != nil {
				return err
			}
		}
		return nil
	}
	sends, err := b.sends(r.ctx, r.state)
	if err != nil {
		return err
	}
	for _, s := range sends {
		if err := r.push(s, nil, what); err != nil {
			return err
		}
	}
	return nil
}

func (r *run[S]) route(b *branchSpec[S], name, what string) error {
	if b.pathMap != nil {
		to, ok := b.pathMap[name]
		if !ok {
			return fmt.Errorf("%w: %s answered %q, which its path map lacks", ErrUnknownNode, what, name)
		}
		name = to
	}
	return r.trigger(name, nil, what)
}
