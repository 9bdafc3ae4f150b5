package graph

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime/debug"
	"slices"
	"sync"
	"time"

	"github.com/failsafe-go/failsafe-go"
)

// Write indexes of the reserved channels; state fields use 0 and up.
const (
	idxDone      = -1
	idxOverwrite = -3
	idxGoto      = -4
	idxSend      = -5
	idxInterrupt = -100  // minus the interrupt's order in its task
	idxResume    = -1000 // minus the answer's order in its task
)

// ChannelOverwrite holds a task's Overwrite result: a JSON object from
// field name to value.
const ChannelOverwrite = "__overwrite__"

// task is one node execution within a superstep.
type task[S any] struct {
	r        *run[S]
	node     *cnode[S]
	id       string
	sendIdx  int
	hasInput bool // input came from a Send
	input    S
	// ctx is made afresh each time the task runs and never changed after:
	// contexts a node derives from it (a timeout's timer, say) may outlive
	// the node, and the task itself is reused by later steps.
	ctx     *taskCtx
	spawned bool

	upd      S
	set      fieldMask
	ovr      *S // Command.Overwrite's result, when the node gave one
	ovrMask  fieldMask
	clipped  bool // input's slices were clipped: it is not r.state's bytes
	gotos    []string
	sends    []Send[S]
	err      error
	restored bool // result loaded from the checkpoint's pending writes
	saved    bool // result stored as pending writes during its step
	resumes  int
	started  time.Time
	took     time.Duration

	mu         sync.Mutex // interrupt bookkeeping, if a node calls from goroutines
	nInterrupt int
	interrupts []PendingInterrupt
}

func (t *task[S]) label() string {
	if t.node.spec == nil {
		return START
	}
	if t.hasInput {
		return fmt.Sprintf("%s#%d", t.node.spec.name, t.sendIdx)
	}
	return t.node.spec.name
}

func (r *run[S]) newTask(n *cnode[S]) *task[S] {
	var t *task[S]
	switch k := len(r.free); {
	case k > 0:
		t, r.free = r.free[k-1], r.free[:k-1]
		*t = task[S]{}
	default:
		if len(r.slab) == 0 {
			r.reserve(1)
		}
		t, r.slab = &r.slab[0], r.slab[1:]
	}
	t.r, t.node = r, n
	return t
}

// reserve makes room for n new tasks in one allocation, so a wide step
// does not allocate its tasks one by one.
func (r *run[S]) reserve(n int) {
	if short := n - len(r.free) - len(r.slab); short > 0 {
		r.slab = make([]task[S], short)
	}
}

// name numbers the Send tasks of each node, for their labels.
func (r *run[S]) name(tasks []*task[S]) {
	for i, t := range tasks {
		if !t.hasInput {
			continue
		}
		for _, u := range tasks[:i] {
			if u.hasInput && u.node == t.node {
				t.sendIdx++
			}
		}
	}
}

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

func (r *run[S]) drainEvents() {
	for {
		select {
		case rl := <-r.events:
			ev := rl.event()
			_ = r.deliver(&ev)
		default:
			return
		}
	}
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

func (r *run[S]) debugStart(t *task[S]) {
	if r.modes&ModeDebug != 0 {
		t.started = time.Now()
		_ = r.deliver(&Event[S]{Mode: ModeDebug, Namespace: r.ns, Node: t.node.spec.name, Step: r.step, Data: DebugEvent{Kind: DebugTaskStart, TaskID: t.id}})
	}
}

func (r *run[S]) debugEnd(t *task[S]) {
	if r.modes&ModeDebug != 0 {
		d := DebugEvent{Kind: DebugTaskEnd, TaskID: t.id, Duration: time.Since(t.started)}
		if t.err != nil {
			d.Err = t.err.Error()
		}
		_ = r.deliver(&Event[S]{Mode: ModeDebug, Namespace: r.ns, Node: t.node.spec.name, Step: r.step, Data: d})
	}
}

// run executes the task's node with its policies and records the result.
// Its frame, and invoke's, stay small: a task runs in a fresh goroutine,
// and a deep first call would grow and copy its stack every time.
func (t *task[S]) run() {
	t.ctx = &taskCtx{Context: t.r.ctx, t: t}
	o := &t.node.spec.opts
	if f := t.node.spec.plainFn; f != nil && t.node.cache == nil && o.retry == nil && o.timeout == 0 {
		t.nInterrupt, t.interrupts = 0, nil
		t.finish(nil, t.invokePlain(f))
		return
	}
	t.runWithPolicies()
}

func (t *task[S]) runWithPolicies() {
	cmd, err := t.call()
	t.finish(&cmd, err)
}

// applyOverwrite runs a Command's Overwrite on a copy of the task's input
// and records which fields it changed.
//
// The input is not needed once the node has returned, so when it is a
// byte-for-byte copy of the run's state — neither a Send's input nor
// clipped for a parallel step — Overwrite runs on the input itself and is
// compared with the state, which stays as it was until the step merges:
// that saves a copy of the state on the heap.
func (t *task[S]) applyOverwrite(fn func(*S)) {
	sc := t.r.g.schema
	if !t.hasInput && !t.clipped {
		fn(&t.input)
		t.ovr = &t.input
		t.ovrMask = sc.changed(&t.r.state, t.ovr)
		return
	}
	ovr := t.input
	fn(&ovr)
	t.ovr = &ovr
	t.ovrMask = sc.changed(&t.input, t.ovr)
}

// adoptInterrupts makes a subgraph's pause inside this node the task's
// own, answered through this task. It is apart from finish because
// errors.As moves its target to the heap, on every call.
func (t *task[S]) adoptInterrupts(err error) {
	var ie *InterruptError
	if errors.As(err, &ie) {
		for _, in := range ie.Interrupts {
			in.TaskID = t.id
			t.interrupts = append(t.interrupts, in)
		}
	}
}

// invokePlain runs a NodeFunc with no policy, its update going straight
// into the task.
func (t *task[S]) invokePlain(f NodeFunc[S]) (err error) {
	defer recoverPanic(&err)
	t.upd, err = f(t.ctx, t.input)
	return err
}

// finish records a node's result, or its failure or pause. A nil cmd means
// the update is already in t.upd.
func (t *task[S]) finish(cmd *Command[S], err error) {
	if err != nil && len(t.interrupts) == 0 {
		t.adoptInterrupts(err)
	}
	if len(t.interrupts) > 0 {
		t.err = nil
		return
	}
	t.err = err
	if err != nil {
		return
	}
	sc := t.r.g.schema
	if cmd == nil {
		t.set = sc.setFields(&t.upd)
		return
	}
	t.upd = cmd.Update
	t.set = sc.setFields(&t.upd)
	if cmd.Overwrite != nil {
		t.applyOverwrite(cmd.Overwrite)
	}
	t.gotos, t.sends = cmd.Goto, cmd.Send
}

// call, attempts and attempt keep the common path's frames small: a task
// runs in a fresh goroutine, whose stack would otherwise grow (and be
// copied) for the cache and retry machinery on every step.
func (t *task[S]) call() (Command[S], error) {
	if t.node.cache != nil {
		return t.cached()
	}
	return t.attempts()
}

func (t *task[S]) cached() (Command[S], error) {
	c := t.node.cache
	key, err := cacheKey(&t.input)
	if err != nil {
		return Command[S]{}, err
	}
	if cmd, ok := c.get(key, time.Now()); ok {
		return cmd, nil
	}
	cmd, err := t.attempts()
	if err == nil && len(t.interrupts) == 0 {
		c.put(key, cmd, time.Now())
	}
	return cmd, err
}

func (t *task[S]) attempts() (Command[S], error) {
	if t.node.spec.opts.retry != nil {
		return t.retried()
	}
	return t.attempt(t.ctx)
}

func (t *task[S]) retried() (Command[S], error) {
	p := t.node.spec.opts.retry
	var cmd Command[S]
	_, err := failsafe.With[any](p).WithContext(t.ctx).GetWithExecution(func(e failsafe.Execution[any]) (any, error) {
		c, err := t.attempt(e.Context())
		if len(t.interrupts) > 0 {
			return nil, nil // a pause is not a failure to retry
		}
		cmd = c
		return nil, err
	})
	return cmd, err
}

func (t *task[S]) attempt(ctx context.Context) (Command[S], error) {
	t.mu.Lock()
	t.nInterrupt, t.interrupts = 0, nil
	t.mu.Unlock()
	if d := t.node.spec.opts.timeout; d > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, d)
		defer cancel()
	}
	return t.invoke(ctx)
}

// invoke calls the node, turning a panic into an error. A plain node is
// called directly, without the Command wrapper's extra frame.
func (t *task[S]) invoke(ctx context.Context) (cmd Command[S], err error) {
	defer recoverPanic(&err)
	if f := t.node.spec.plainFn; f != nil {
		cmd.Update, err = f(ctx, t.input)
		return cmd, err
	}
	return t.node.spec.fn(ctx, t.input)
}

func recoverPanic(err *error) {
	if v := recover(); v != nil {
		*err = &PanicError{Value: v, Stack: debug.Stack()}
	}
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

// plan returns the tasks of the next step: nodes triggered by the edges,
// routers, joins and Gotos of the finished tasks, once each, then Send
// tasks, all in node-name order. The finished tasks are free for reuse
// once it returns: some of them may be the next step's.
func (r *run[S]) plan(done []*task[S]) ([]*task[S], error) {
	clear(r.triggered)
	r.pushes = r.pushes[:0]
	for _, t := range done {
		n := t.node
		for _, j := range n.next {
			r.triggered[j] = true
		}
		for _, j := range n.joins {
			r.arrive(j, n.idx)
		}
		for _, b := range n.branches {
			if err := r.branch(t, b); err != nil {
				return nil, err
			}
		}
		for _, to := range t.gotos {
			if err := r.trigger(to, "Goto of "+t.label()); err != nil {
				return nil, err
			}
		}
		for _, s := range t.sends {
			if err := r.push(s, "Send of "+t.label()); err != nil {
				return nil, err
			}
		}
	}
	// Nothing reads the finished tasks from here on, so the tasks of a
	// step can be those of the last: a run of single-task steps uses one
	// task in all.
	r.free = append(r.free, done...)
	n := 0
	for _, on := range r.triggered {
		if on {
			n++
		}
	}
	r.reserve(n)
	// Two task lists alternate: the one being planned and the one whose
	// step just ran.
	next := slices.Grow(r.spare[:0], n+len(r.pushes))
	slices.SortStableFunc(r.pushes, func(a, b *task[S]) int { return a.node.idx - b.node.idx })
	p := 0
	for i, on := range r.triggered {
		if on {
			next = append(next, r.newTask(r.g.nodes[i]))
		}
		for ; p < len(r.pushes) && r.pushes[p].node.idx == i; p++ {
			next = append(next, r.pushes[p])
		}
	}
	r.name(next)
	return next, nil
}

func (r *run[S]) trigger(name, what string) error {
	if name == END {
		return nil
	}
	i, ok := r.g.byName[name]
	if !ok {
		return fmt.Errorf("%w %q in %s (step %d)", ErrUnknownNode, name, what, r.step)
	}
	r.triggered[i] = true
	return nil
}

func (r *run[S]) push(s Send[S], what string) error {
	i, ok := r.g.byName[s.Node]
	if !ok {
		return fmt.Errorf("%w %q in %s (step %d)", ErrUnknownNode, s.Node, what, r.step)
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
		r.triggered[r.g.joins[j].to] = true
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
		if err := r.push(s, what); err != nil {
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
	return r.trigger(name, what)
}

// emit and the methods below are what nodes reach through their context.
func (t *task[S]) emit(mode Mode, data any) error {
	r := t.r
	if r.modes&mode == 0 {
		return nil
	}
	return t.send(&Event[S]{Mode: mode, Namespace: r.ns, Node: t.node.spec.name, Step: r.step, Data: data})
}

func (t *task[S]) send(ev *Event[S]) error {
	if !t.spawned {
		return t.r.deliver(ev)
	}
	rl := relay[S]{mode: ev.Mode, ns: ev.Namespace, node: ev.Node, step: ev.Step, data: ev.Data}
	if ev.Mode&(ModeValues|ModeUpdates) != 0 {
		// A copy, not &ev.State: the event is the caller's, and keeping a
		// pointer into it would move every event to the heap, custom ones
		// too.
		st := ev.State
		rl.state = &st
	}
	select {
	case t.r.events <- rl:
		return nil
	case <-t.r.ctx.Done():
		return context.Cause(t.r.ctx)
	}
}

// relay is an event on its way from a task's goroutine to the run's. The
// state travels by pointer, and only in the events that carry one, so the
// buffer costs the same whatever the size of S.
type relay[S any] struct {
	mode  Mode
	ns    []string
	node  string
	step  int
	data  any
	state *S
}

func (rl relay[S]) event() Event[S] {
	ev := Event[S]{Mode: rl.mode, Namespace: rl.ns, Node: rl.node, Step: rl.step, Data: rl.data}
	if rl.state != nil {
		ev.State = *rl.state
	}
	return ev
}

func (t *task[S]) interrupt(payload any) (json.RawMessage, error) {
	r := t.r
	t.mu.Lock()
	defer t.mu.Unlock()
	k := t.nInterrupt
	t.nInterrupt++
	id := hashID(r.nsKey, t.id, fmt.Sprint(k))
	if v, ok := r.resume[id]; ok {
		return v, nil
	}
	if r.saver == nil {
		return nil, fmt.Errorf("graph: Interrupt in node %s: %w", t.label(), ErrNoCheckpointer)
	}
	raw, err := json.Marshal(payload)
	if err != nil {
		return nil, fmt.Errorf("graph: encode interrupt payload of %s: %w", t.label(), err)
	}
	in := PendingInterrupt{ID: id, Node: t.node.spec.name, TaskID: t.id, Namespace: r.nsKey, Payload: raw}
	t.interrupts = append(t.interrupts, in)
	return nil, &InterruptError{Interrupts: []PendingInterrupt{in}}
}

func (t *task[S]) resumed() bool {
	r := t.r
	if len(r.resume) == 0 { // most runs: no id to hash
		return false
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	_, ok := r.resume[hashID(r.nsKey, t.id, fmt.Sprint(t.nInterrupt))]
	return ok
}

func (t *task[S]) childLink() *parentLink {
	r := t.r
	id := t.id
	if id == "" {
		id = fmt.Sprintf("%d.%s", r.step, t.label())
	}
	return &parentLink{
		saver: r.saver, thread: r.thread, resume: r.resume, modes: r.modes,
		ns:      append(slices.Clip(r.ns), t.node.spec.name+":"+id),
		forward: t.forwardChild,
	}
}

func (t *task[S]) forwardChild(fe foreignEvent) error {
	if ev, ok := fe.(Event[S]); ok {
		return t.send(&ev)
	}
	mode, ns, node, step, data := fe.parts()
	return t.send(&Event[S]{Mode: mode, Namespace: ns, Node: node, Step: step, Data: data})
}

// finishedWrites encodes what a task that finished or paused leaves for
// the next attempt at its step.
func (r *run[S]) finishedWrites(t *task[S]) ([]Write, error) {
	if len(t.interrupts) == 0 {
		return r.taskWrites(t)
	}
	var ws []Write
	for k, in := range t.interrupts {
		raw, err := json.Marshal(in)
		if err != nil {
			return nil, fmt.Errorf("graph: encode interrupt of %s: %w", t.label(), err)
		}
		ws = append(ws, Write{TaskID: t.id, Index: idxInterrupt - k, Channel: ChannelInterrupt, Value: raw})
	}
	return ws, nil
}

// taskWrites encodes a finished task's result as pending writes.
func (r *run[S]) taskWrites(t *task[S]) ([]Write, error) {
	sc := r.g.schema
	ws := []Write{{TaskID: t.id, Index: idxDone, Channel: ChannelDone, Value: []byte("null")}}
	for i, f := range sc.fields {
		if t.set.has(i) {
			data, err := sc.encodeField(&t.upd, i, 0)
			if err != nil {
				return nil, err
			}
			ws = append(ws, Write{TaskID: t.id, Index: len(ws) - 1, Channel: f.name, Value: data})
		}
	}
	add := func(idx int, channel string, v any) error {
		raw, err := json.Marshal(v)
		if err != nil {
			return fmt.Errorf("graph: encode %s of %s: %w", channel, t.label(), err)
		}
		ws = append(ws, Write{TaskID: t.id, Index: idx, Channel: channel, Value: raw})
		return nil
	}
	if t.ovrMask != 0 {
		obj := map[string]json.RawMessage{}
		for i, f := range sc.fields {
			if t.ovrMask.has(i) {
				data, err := sc.encodeField(t.ovr, i, 0)
				if err != nil {
					return nil, err
				}
				obj[f.name] = data
			}
		}
		if err := add(idxOverwrite, ChannelOverwrite, obj); err != nil {
			return nil, err
		}
	}
	if len(t.gotos) > 0 {
		if err := add(idxGoto, ChannelGoto, t.gotos); err != nil {
			return nil, err
		}
	}
	if len(t.sends) > 0 {
		if err := add(idxSend, ChannelSend, t.sends); err != nil {
			return nil, err
		}
	}
	return ws, nil
}

type resumeWrite struct {
	ID    string `json:"id"`
	Value any    `json:"value"`
}

type resumeValue struct {
	ID    string          `json:"id"`
	Value json.RawMessage `json:"value"`
}

// applyWrites restores the results of tasks that finished before the run
// stopped, and returns the interrupts still waiting for an answer.
func (r *run[S]) applyWrites(ws []Write) ([]PendingInterrupt, error) {
	sc := r.g.schema
	var raised []PendingInterrupt
	for _, w := range ws {
		k := slices.IndexFunc(r.tasks, func(t *task[S]) bool { return t.id == w.TaskID })
		if k < 0 {
			continue
		}
		t := r.tasks[k]
		bad := func(err error) error {
			return fmt.Errorf("graph: thread %s: saved %s write of task %s: %w", r.thread, w.Channel, t.label(), err)
		}
		switch w.Channel {
		case ChannelDone:
			t.restored = true
		case ChannelInterrupt:
			var in PendingInterrupt
			if err := json.Unmarshal(w.Value, &in); err != nil {
				return nil, bad(err)
			}
			raised = append(raised, in)
		case ChannelResume:
			var rv resumeValue
			if err := json.Unmarshal(w.Value, &rv); err != nil {
				return nil, bad(err)
			}
			r.resume[rv.ID] = rv.Value
			t.resumes++
		case ChannelGoto:
			if err := json.Unmarshal(w.Value, &t.gotos); err != nil {
				return nil, bad(err)
			}
		case ChannelSend:
			if err := json.Unmarshal(w.Value, &t.sends); err != nil {
				return nil, bad(err)
			}
		case ChannelOverwrite:
			var obj map[string]json.RawMessage
			if err := json.Unmarshal(w.Value, &obj); err != nil {
				return nil, bad(err)
			}
			ovr := r.state
			t.ovr = &ovr
			for name, data := range obj {
				if i, ok := sc.byName[name]; ok {
					if err := sc.decodeField(t.ovr, i, data, false); err != nil {
						return nil, bad(err)
					}
					t.ovrMask |= 1 << uint(i)
				}
			}
		default:
			if i, ok := sc.byName[w.Channel]; ok {
				if err := sc.decodeField(&t.upd, i, w.Value, false); err != nil {
					return nil, bad(err)
				}
				t.set |= 1 << uint(i)
			}
		}
	}
	var pending []PendingInterrupt
	for _, in := range raised {
		if _, answered := r.resume[in.ID]; !answered {
			pending = append(pending, in)
		}
	}
	return pending, nil
}

// decodeState rebuilds a state from a checkpoint's blobs, following delta
// chains back to their full value.
func (c *Compiled[S]) decodeState(saved *Saved) (S, error) {
	var s S
	type key struct{ field, version string }
	blobs := make(map[key]*Blob, len(saved.Blobs))
	for i := range saved.Blobs {
		b := &saved.Blobs[i]
		blobs[key{b.Field, b.Version}] = b
	}
	cp := &saved.Checkpoint
	for _, name := range slices.Sorted(mapsKeys(cp.Versions)) {
		i, ok := c.schema.byName[name]
		if !ok {
			continue // a field the state type no longer has
		}
		var chain []*Blob
		for v := cp.Versions[name]; ; {
			b := blobs[key{name, v}]
			if b == nil {
				return s, fmt.Errorf("graph: checkpoint %s: no stored value for field %s version %s", cp.ID, name, v)
			}
			if len(chain) > len(saved.Blobs) {
				return s, fmt.Errorf("graph: checkpoint %s: field %s: delta chain loops", cp.ID, name)
			}
			chain = append(chain, b)
			if !b.Delta || b.Base == "" {
				break
			}
			v = b.Base
		}
		for k := len(chain) - 1; k >= 0; k-- {
			if err := c.schema.decodeField(&s, i, chain[k].Data, chain[k].Delta); err != nil {
				return s, fmt.Errorf("graph: checkpoint %s: %w", cp.ID, err)
			}
		}
	}
	return s, nil
}
