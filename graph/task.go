package graph

import (
	"errors"
	"fmt"
	"sync"
	"time"
)

// task is one node execution within a superstep. Its fields are laid
// out so that a wide step's tasks, allocated together, take little room.
type task[S any] struct {
	r    *run[S]
	node *cnode[S]
	// ctx is the context the task's nodes run with. It lives beside the
	// task in its slot, is made with the slot and never written again:
	// contexts a node derives from it (a timeout's timer, say) may
	// outlive the node, and the slot's task is reused by later steps.
	ctx   *taskCtx[S]
	id    string
	input S

	upd     S
	set     fieldMask
	ovrMask fieldMask
	err     error
	// x holds what few tasks have; nil until one of them is set.
	x *taskExtra[S]

	sendIdx    int32
	resumes    int32
	nInterrupt int32
	mu         sync.Mutex // interrupt bookkeeping, if a node calls from goroutines
	hasInput   bool       // input came from a Send
	spawned    bool
	clipped    bool // input's slices were clipped: it is not r.state's bytes
	restored   bool // result loaded from the checkpoint's pending writes
	saved      bool // result stored as pending writes during its step
}

// taskExtra is what a task holds beyond its update: a Command's routing
// and overwrite, interrupts, a debug start time. Kept apart, it leaves a
// task small, and a wide step's tasks are allocated together.
type taskExtra[S any] struct {
	ovr        *S // Command.Overwrite's result, when the node gave one
	gotos      []string
	sends      []Send[S]
	interrupts []PendingInterrupt
	started    time.Duration // since epoch, for a debug task_end
}

// more returns the task's extra fields, making them the first time.
func (t *task[S]) more() *taskExtra[S] {
	if t.x == nil {
		t.x = &taskExtra[S]{}
	}
	return t.x
}

// pending is the interrupts the task raised.
func (t *task[S]) pending() []PendingInterrupt {
	if t.x == nil {
		return nil
	}
	return t.x.interrupts
}

// overwrote is the task's Overwrite result, if any.
func (t *task[S]) overwrote() *S {
	if t.x == nil {
		return nil
	}
	return t.x.ovr
}

// routes are the Gotos and Sends of the task's Command.
func (t *task[S]) routes() ([]string, []Send[S]) {
	if t.x == nil {
		return nil, nil
	}
	return t.x.gotos, t.x.sends
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

// taskSlot is where a task lives for its run, beside the context its
// nodes run with: that context names the run and the slot's task, which
// stay the same for the run's life, so it is built once per slot rather
// than each time a node runs.
type taskSlot[S any] struct {
	t  task[S]
	cx taskCtx[S]
}

func (r *run[S]) newTask(n *cnode[S]) *task[S] {
	var t *task[S]
	switch k := len(r.free); {
	case k > 0:
		t, r.free = r.free[k-1], r.free[:k-1]
		t.reuse()
	default:
		var s *taskSlot[S]
		switch {
		case !r.firstUsed:
			s, r.firstUsed = &r.first, true
		default:
			if len(r.slab) == 0 {
				r.reserve(1)
			}
			s, r.slab = &r.slab[0], r.slab[1:]
		}
		s.cx = taskCtx[S]{Context: r.ctx, t: &s.t}
		t = &s.t
		t.ctx = &s.cx
	}
	t.r, t.node = r, n
	return t
}

// reuse readies a finished task for another node of the run. Its input
// and update stay as they are: whatever runs the task writes both before
// anything reads them (superstep or push sets the input, the node's
// return or a restored write the update), and clearing two copies of the
// state, pointer by pointer while the collector runs, cost more than the
// step's own copies. The rest is cleared where it is set, so that a
// field already clear is not written at all.
func (t *task[S]) reuse() {
	if t.id != "" {
		t.id = ""
	}
	if t.x != nil {
		*t.x = taskExtra[S]{}
	}
	if t.err != nil {
		t.err = nil
	}
	t.set, t.ovrMask = 0, 0
	t.sendIdx, t.resumes, t.nInterrupt = 0, 0, 0
	t.hasInput, t.spawned, t.clipped, t.restored, t.saved = false, false, false, false, false
}

// reserve makes room for n new tasks in one allocation, so a wide step
// does not allocate its tasks one by one. The run's first task takes the
// slot inside the run itself.
func (r *run[S]) reserve(n int) {
	short := n - len(r.free) - len(r.slab)
	if !r.firstUsed {
		short--
	}
	if short > 0 { // the slots left over are made again with the new ones
		r.slab = make([]taskSlot[S], short+len(r.slab))
	}
}

// run executes the task's node with its policies and records the result.
// Its frame, and invoke's, stay small: a task runs in a fresh goroutine,
// and a deep first call would grow and copy its stack every time.
func (t *task[S]) run() {
	o := &t.node.spec.opts
	if f := t.node.spec.plainFn; f != nil && t.node.cache == nil && o.retry == nil && o.timeout == 0 {
		t.nInterrupt = 0
		if t.x != nil {
			t.x.interrupts = nil
		}
		t.finish(nil, t.invokePlain(f))
		return
	}
	t.runWithPolicies()
}

func (t *task[S]) runWithPolicies() {
	cmd, err := t.call()
	t.finish(&cmd, err)
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
	if err != nil && len(t.pending()) == 0 {
		t.adoptInterrupts(err)
	}
	if len(t.pending()) > 0 {
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
	t.route(cmd)
}

// route records a Command's Gotos and Sends.
func (t *task[S]) route(cmd *Command[S]) {
	if cmd.Goto != nil || cmd.Send != nil {
		x := t.more()
		x.gotos, x.sends = cmd.Goto, cmd.Send
	}
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
		t.more().ovr = &t.input
		t.ovrMask = sc.changed(&t.r.state, &t.input)
		return
	}
	ovr := t.input
	fn(&ovr)
	t.more().ovr = &ovr
	t.ovrMask = sc.changed(&t.input, &ovr)
}

// adoptInterrupts makes a subgraph's pause inside this node the task's
// own, answered through this task. It is apart from finish because
// errors.As moves its target to the heap, on every call.
func (t *task[S]) adoptInterrupts(err error) {
	var ie *InterruptError
	if errors.As(err, &ie) {
		for _, in := range ie.Interrupts {
			in.TaskID = t.id
			x := t.more()
			x.interrupts = append(x.interrupts, in)
		}
	}
}
