package graph

import (
	"context"
	"errors"
	"fmt"
	"sync"
)

// superstep runs the planned tasks concurrently, merges their updates in
// task order, plans the next step and checkpoints it.
func (r *run[S]) superstep() error {
	tasks := r.tasks
	if err := r.ctx.Err(); err != nil {
		return fmt.Errorf("graph: run stopped before step %d: %w", r.step+1, context.Cause(r.ctx))
	}
	if r.stepsRun >= r.limit {
		names := make([]string, len(tasks))
		for i, t := range tasks {
			names[i] = t.label()
		}
		return &RecursionError{Limit: r.limit, Nodes: names}
	}
	r.stepsRun++
	r.step++
	r.markDeltas()
	parallel := len(tasks) > 1
	for _, t := range tasks {
		if t.restored {
			continue
		}
		if !t.hasInput {
			t.input = r.state
		}
		if parallel {
			r.g.schema.clipSlices(&t.input)
			t.clipped = true
		}
	}
	// A lone task runs here; its events reach the consumer directly, under
	// deliver's lock even if the node emits from goroutines of its own
	// (range-over-func allows yield from another goroutine when calls are
	// never concurrent).
	if parallel {
		r.runSpawned(tasks)
	} else if !tasks[0].restored {
		r.debugStart(tasks[0])
		tasks[0].run()
		r.debugEnd(tasks[0])
	}
	if r.stopped {
		return errStreamClosed
	}
	if r.saveErr != nil {
		return r.saveErr
	}
	if err := r.settle(tasks); err != nil {
		return err
	}
	changed, err := r.merge(tasks)
	if err != nil {
		return err
	}
	after := r.interruptsAfter(tasks)
	// plan hands the finished tasks on to the next step.
	next, err := r.plan(tasks)
	if err != nil {
		return err
	}
	cerr := r.commit(SourceLoop, changed, next, after)
	r.spare = tasks[:0]
	if cerr != nil && !errors.Is(cerr, ErrInterrupted) {
		return cerr
	}
	if err := r.deliverValues(); err != nil {
		return err
	}
	return cerr
}

// runSpawned runs each task in its own goroutine and, meanwhile, passes
// their events to the consumer from this goroutine.
func (r *run[S]) runSpawned(tasks []*task[S]) {
	if r.modes == 0 && r.saver == nil {
		r.runGroup(tasks)
		return
	}
	if cap(r.done) < len(tasks) {
		// Buffered for the whole step, so finishing never waits on us.
		r.done = make(chan *task[S], len(tasks))
	}
	if r.events == nil {
		// Any streamed mode may come from a task: a subgraph run inside a
		// node forwards all of its events.
		if r.modes != 0 {
			r.events = make(chan relay[S], cmp(r.cfg.StreamBuffer, 64))
		}
	}
	// With no node events to relay, this goroutine is free to run one task
	// itself while the others run in theirs.
	var mine *task[S]
	n := 0
	for _, t := range tasks {
		if t.restored {
			continue
		}
		r.debugStart(t)
		if mine == nil && r.events == nil {
			mine = t
			continue
		}
		t.spawned = true
		n++
		go r.work(t)
	}
	if mine != nil {
		mine.run()
		r.debugEnd(mine)
		r.keep(mine)
	}
	for n > 0 {
		select {
		case t := <-r.done:
			n--
			// The task sent its events before it was done: deliver them
			// first, so they come before its end.
			r.drainEvents()
			r.debugEnd(t)
			r.keep(t)
		case rl := <-r.events:
			ev := rl.event()
			_ = r.deliver(&ev)
		}
	}
}

// keep saves a finished task's writes at once, while its siblings still
// run, so that a crash later in the step does not make it run again.
func (r *run[S]) keep(t *task[S]) {
	if r.saver == nil || r.saveErr != nil || (t.err != nil && len(t.interrupts) == 0) {
		return
	}
	ws, err := r.finishedWrites(t)
	if err == nil {
		err = r.putWrites(ws)
	}
	if err != nil {
		r.saveErr = err
		return
	}
	t.saved = true
}

// runGroup runs a step's tasks when nothing needs relaying or saving as
// each finishes: one goroutine per task but the first, which runs here,
// and one wait for them all.
func (r *run[S]) runGroup(tasks []*task[S]) {
	var wg sync.WaitGroup
	for _, t := range tasks[1:] {
		if !t.restored {
			wg.Add(1)
			go t.runIn(&wg)
		}
	}
	if !tasks[0].restored {
		tasks[0].run()
	}
	wg.Wait()
}

func (t *task[S]) runIn(wg *sync.WaitGroup) {
	defer wg.Done()
	t.run()
}

func (r *run[S]) work(t *task[S]) {
	t.run()
	r.done <- t
}

// settle ends a step that did not fully succeed: the writes of tasks that
// finished are saved, so continuing the thread neither loses nor repeats
// them, and the failure or pause is returned.
func (r *run[S]) settle(tasks []*task[S]) error {
	var failed *task[S]
	var pending []PendingInterrupt
	for _, t := range tasks {
		pending = append(pending, t.interrupts...)
		if t.err != nil && failed == nil {
			failed = t
		}
	}
	if failed == nil && pending == nil {
		return nil
	}
	var ws []Write
	for _, t := range tasks {
		if t.restored || t.saved || (t.err != nil && len(t.interrupts) == 0) {
			continue
		}
		tw, err := r.finishedWrites(t)
		if err != nil {
			return err
		}
		ws = append(ws, tw...)
	}
	if err := r.putWrites(ws); err != nil {
		return err
	}
	if r.ctx.Err() != nil {
		return fmt.Errorf("graph: run stopped in step %d: %w", r.step, context.Cause(r.ctx))
	}
	if failed != nil {
		return &NodeError{Node: failed.label(), Step: r.step, Err: failed.err}
	}
	return &InterruptError{Interrupts: pending}
}

// merge applies the tasks' updates to the state in task order, which is
// node-name order: the result never depends on which task finished first.
func (r *run[S]) merge(tasks []*task[S]) (fieldMask, error) {
	sc := r.g.schema
	if len(tasks) > 1 {
		var written fieldMask
		var writer [64]*task[S]
		for _, t := range tasks {
			for i, f := range sc.fields {
				if f.kind != kindReplace || !t.set.has(i) {
					continue
				}
				if written.has(i) {
					return 0, fmt.Errorf("%w: step %d: nodes %s and %s both wrote %s; declare a reducer for it or write it from one node",
						ErrConcurrentUpdate, r.step, writer[i].label(), t.label(), f.name)
				}
				written |= 1 << uint(i)
				writer[i] = t
			}
		}
	}
	var changed fieldMask
	for _, t := range tasks {
		sc.apply(&r.state, &t.upd, t.set)
		if t.ovrMask != 0 {
			sc.overwrite(&r.state, t.ovr, t.ovrMask)
			r.overwritten |= t.ovrMask
		}
		changed |= t.set | t.ovrMask
	}
	if r.modes&ModeUpdates != 0 {
		for _, t := range tasks {
			u := t.upd
			if t.ovr != nil {
				sc.overwrite(&u, t.ovr, t.ovrMask)
			}
			if err := r.deliver(&Event[S]{Mode: ModeUpdates, Namespace: r.ns, Node: t.node.spec.name, Step: r.step, State: u}); err != nil {
				return 0, err
			}
		}
	}
	return changed, nil
}
