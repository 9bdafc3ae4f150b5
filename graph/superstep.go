package graph

import (
	"context"
	"errors"
	"fmt"
	"math/bits"
	"slices"
	"sync"
	"sync/atomic"
)

// superstep runs the planned tasks concurrently (as many at once as the
// run's MaxConcurrency allows), merges their updates in task order, plans
// the next step and checkpoints it.
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
// their events to the consumer from this goroutine. Under a concurrency
// limit it starts the tasks in order, the next as soon as one finishes.
func (r *run[S]) runSpawned(tasks []*task[S]) {
	if r.modes == 0 && r.saver == nil {
		r.runGroup(tasks)
		return
	}
	limit := len(tasks)
	if r.maxConc > 0 {
		limit = min(r.maxConc, limit)
	}
	if cap(r.done) < limit {
		// Buffered for every task that may run at once, so finishing never
		// waits on us.
		r.done = make(chan *task[S], limit)
	}
	if r.events == nil {
		// Any streamed mode may come from a task: a subgraph run inside a
		// node forwards all of its events.
		if r.modes != 0 {
			r.events = make(chan relay[S], cmp(r.cfg.StreamBuffer, 64))
		}
	}
	// With no node events to relay and every task running at once, this
	// goroutine is free to run one task itself while the others run in
	// theirs. Under a limit it only starts tasks, so that a finished
	// task's place is filled at once.
	var mine *task[S]
	k := 0
	if r.events == nil && limit == len(tasks) {
		for k < len(tasks) && tasks[k].restored {
			k++
		}
		if k < len(tasks) {
			mine = tasks[k]
			r.debugStart(mine)
			k++
		}
	}
	k, n := r.spawn(tasks, k, 0, limit)
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
			if k < len(tasks) {
				k, n = r.spawn(tasks, k, n, limit)
			}
		case rl := <-r.events:
			ev := rl.event()
			_ = r.deliver(&ev)
		}
	}
}

// spawn starts tasks from tasks[k] on, in order and each in a goroutine of
// its own, until limit tasks run or none is left; it returns the next task
// to start and how many run. Once the run is cancelled it starts no more:
// the tasks left fail with the cancellation's cause.
func (r *run[S]) spawn(tasks []*task[S], k, n, limit int) (int, int) {
	for ; k < len(tasks) && n < limit; k++ {
		t := tasks[k]
		if t.restored {
			continue
		}
		if r.ctx.Err() != nil {
			t.err = context.Cause(r.ctx)
			continue
		}
		r.debugStart(t)
		t.spawned = true
		n++
		go r.work(t)
	}
	return k, n
}

// keep saves a finished task's writes at once, while its siblings still
// run, so that a crash later in the step does not make it run again.
// A step whose checkpoint an exit- or boundary-mode run holds leaves
// them to settle: the writes would name a checkpoint not written, and a
// crash loses the step anyway. A step planned by a written checkpoint
// (a barrier's) keeps them as in sync mode.
func (r *run[S]) keep(t *task[S]) {
	if r.saver == nil || r.durable.holding() || r.saveErr != nil || (t.err != nil && len(t.pending()) == 0) {
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
// each finishes. This goroutine and helpers take the tasks in order, one
// at a time, until none is left (see share). Under a concurrency limit
// that the step exceeds, runPool runs them instead.
func (r *run[S]) runGroup(tasks []*task[S]) {
	if r.maxConc > 0 && r.maxConc < len(tasks) {
		r.runPool(tasks)
		return
	}
	sh := r.parallel()
	sh.tasks = tasks
	sh.next.Store(0)
	sh.starting.Store(false)
	r.share()
	sh.group.Wait()
	sh.tasks = nil
}

// parallel is the state of a step whose tasks runGroup shares out, or
// runPool pools.
type parallel[S any] struct {
	group sync.WaitGroup // the helpers
	tasks []*task[S]
	next  atomic.Int64 // the next task to take
	// starting is set while a helper has been started but has not yet
	// taken a task.
	starting atomic.Bool
}

func (r *run[S]) parallel() *parallel[S] {
	if r.par == nil {
		r.par = &parallel[S]{}
	}
	return r.par
}

// share takes the step's next task and runs it until none is left.
// Before running a task it starts a helper, which does the same, if tasks
// are left and no helper is starting already. So every task gets a
// goroutine of its own, at once, when the tasks block or run long —
// a runner takes another task only once its own has finished, and while
// tasks are left one more runner is always on its way — while a step of
// small tasks runs on this goroutine and a helper or two instead of
// starting one goroutine per task. Once the run is cancelled it runs no
// more: the tasks left fail with the cancellation's cause.
func (r *run[S]) share() {
	sh := r.par
	for {
		i := int(sh.next.Add(1) - 1)
		if i >= len(sh.tasks) {
			return
		}
		if i+1 < len(sh.tasks) && sh.starting.CompareAndSwap(false, true) {
			sh.group.Add(1)
			go r.help()
		}
		switch t := sh.tasks[i]; {
		case t.restored:
		case r.ctx.Err() != nil:
			t.err = context.Cause(r.ctx)
		default:
			t.run()
		}
	}
}

func (r *run[S]) help() {
	defer r.par.group.Done()
	r.par.starting.Store(false)
	r.share()
}

// runPool runs a step's tasks on as many goroutines as the limit allows,
// this one among them, each taking the next task in order until none is
// left: a wide fan-out starts a few goroutines, not one per task.
func (r *run[S]) runPool(tasks []*task[S]) {
	p := r.parallel()
	p.next.Store(0)
	for range r.maxConc - 1 {
		p.group.Go(func() { r.take(tasks, &p.next) })
	}
	r.take(tasks, &p.next)
	p.group.Wait()
}

// take runs the pool's next task until none is left. Once the run is
// cancelled it runs no more: the tasks left fail with the cancellation's
// cause.
func (r *run[S]) take(tasks []*task[S], next *atomic.Int64) {
	for {
		i := next.Add(1) - 1
		if i >= int64(len(tasks)) {
			return
		}
		t := tasks[i]
		switch {
		case t.restored:
		case r.ctx.Err() != nil:
			t.err = context.Cause(r.ctx)
		default:
			t.run()
		}
	}
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
		pending = append(pending, t.pending()...)
		if t.err != nil && failed == nil {
			failed = t
		}
	}
	if failed == nil && pending == nil {
		return nil
	}
	var ws []Write
	for _, t := range tasks {
		if t.restored || t.saved || (t.err != nil && len(t.pending()) == 0) {
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
		for k, t := range tasks {
			mine := t.set & sc.replaced
			if both := mine & written; both != 0 {
				return 0, r.concurrentUpdate(tasks[:k], t, both)
			}
			written |= mine
		}
	}
	var changed fieldMask
	for _, t := range tasks {
		sc.apply(&r.state, &t.upd, t.set)
		if t.ovrMask != 0 {
			sc.overwrite(&r.state, t.overwrote(), t.ovrMask)
			r.overwritten |= t.ovrMask
		}
		changed |= t.set | t.ovrMask
	}
	if r.modes&ModeUpdates != 0 {
		for _, t := range tasks {
			var err error
			if t.overwrote() != nil {
				err = r.deliverOverwritten(t)
			} else {
				err = r.deliver(&Event[S]{Mode: ModeUpdates, Namespace: r.ns, Node: t.node.spec.name, Step: r.step, State: t.upd})
			}
			if err != nil {
				return 0, err
			}
		}
	}
	return changed, nil
}

// concurrentUpdate reports that t wrote a field without a reducer that a
// task before it in the step wrote too; both holds such fields.
func (r *run[S]) concurrentUpdate(before []*task[S], t *task[S], both fieldMask) error {
	i := bits.TrailingZeros64(uint64(both))
	k := slices.IndexFunc(before, func(o *task[S]) bool { return o.set.has(i) })
	return fmt.Errorf("%w: step %d: nodes %s and %s both wrote %s; declare a reducer for it or write it from one node",
		ErrConcurrentUpdate, r.step, before[k].label(), t.label(), r.g.schema.fields[i].name)
}

// deliverOverwritten delivers the update of a task that overwrote fields
// as well: what it wrote either way. The event is built apart from
// merge's, because overwriting it may go through reflect, which would
// move every update event to the heap.
func (r *run[S]) deliverOverwritten(t *task[S]) error {
	ev := &Event[S]{Mode: ModeUpdates, Namespace: r.ns, Node: t.node.spec.name, Step: r.step, State: t.upd}
	r.g.schema.overwrite(&ev.State, t.overwrote(), t.ovrMask)
	return r.deliver(ev)
}
