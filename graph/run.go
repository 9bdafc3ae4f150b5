package graph

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
	"unsafe"

	"github.com/trellis-ai/trellis/internal/ids"
)

// RunConfig configures one run. The zero value runs once, without
// persistence, yielding no events.
type RunConfig struct {
	// ThreadID names the conversation the run belongs to; with a
	// checkpointer, runs on one thread continue from each other.
	ThreadID string
	// CheckpointID runs from this checkpoint instead of the thread's newest:
	// a fork. New checkpoints branch from it; old history stays.
	CheckpointID string
	// Resume answers the one pending interrupt of the thread.
	Resume any
	// ResumeByID answers pending interrupts by id, when several are pending.
	ResumeByID map[string]any
	// Modes selects what Stream yields.
	Modes Mode
	// Durability says when this run writes its checkpoints (see
	// Durability); DurabilityDefault means the graph's mode.
	Durability Durability
	// NewThread tells the run that its thread has no checkpoint yet (its
	// caller just created it), so a run with an input does not look for
	// one. Set on a thread that has checkpoints, the run starts over
	// from its input alone, as a root beside them.
	NewThread bool
	// InterruptBefore and InterruptAfter add static interrupts to those
	// given at compile time, for this run.
	InterruptBefore []string
	InterruptAfter  []string
	// RecursionLimit caps this run's supersteps; 0 means the graph's limit.
	RecursionLimit int
	// MaxConcurrency bounds how many tasks of one superstep run at once,
	// for this run (see CompileOptions.MaxConcurrency); 0 means the
	// graph's bound, and a negative value lifts it.
	MaxConcurrency int
	// StreamBuffer is how many events nodes may emit ahead of the consumer
	// before Emit blocks; 0 means 64.
	StreamBuffer int
	// RunID names the caller's run. Every checkpoint the run writes, its
	// subgraphs' too, records it in Checkpoint.RunID.
	RunID string
	// Newest, when set, is the thread's newest checkpoint as the caller
	// has just listed it (ListOptions{ThreadID, Limit: 1}), nothing
	// having written the thread since: a run with an input that
	// continues the state its thread's last run left in this process
	// takes it for the List it would make to check that state is still
	// the newest. The run may change it. Nil: the run lists it itself.
	Newest *Checkpoint
	// DeferInput lets a run in exit or boundary mode write its input's
	// checkpoint with its next one (one PutBatch where the checkpointer
	// is a BatchPutter) rather than before its first step: one write a
	// run fewer. Set it only when the caller keeps the run's input and,
	// should the process die before that next checkpoint, starts the run
	// again from it: the thread is then as it was before the run, which
	// the run's input never reached. The history is the same either way,
	// but until that write a ModeDebug event names a checkpoint the
	// checkpointer does not have yet.
	DeferInput bool
}

var errStreamClosed = errors.New("graph: stream consumer stopped")

// Stream runs the graph and yields its events as they happen.
//
// A nil input continues the thread from its checkpoint (after a crash, or
// with RunConfig.Resume after an interrupt); it fails, never starting
// afresh, when the checkpoint cannot be loaded. A non-nil input is merged
// into the thread's state, if any, and the run starts from START.
//
// The iterator is single-use. When the run fails or pauses, the last pair
// carries the error (an *InterruptError for a pause) and nothing follows
// it. Breaking out of the loop cancels the run and returns once every node
// has stopped; the checkpoint of the last finished step remains.
func (c *Compiled[S]) Stream(ctx context.Context, input *S, cfg RunConfig) iter.Seq2[Event[S], error] {
	return func(yield func(Event[S], error) bool) {
		r := c.newRun(ctx, cfg, yield)
		defer r.cancel(nil)
		_, err := r.execute(input)
		r.releaseScratch()
		r.releaseLocal()
		r.leaveState(err)
		if err != nil && !r.stopped {
			yield(Event[S]{}, err)
		}
	}
}

// Invoke runs the graph to its end, or to an interrupt, and returns the
// final state. A pause returns the state so far and an *InterruptError.
// See Stream for what a nil input means.
func (c *Compiled[S]) Invoke(ctx context.Context, input *S, cfg RunConfig) (S, error) {
	cfg.Modes = 0
	r := c.newRun(ctx, cfg, nil)
	defer r.cancel(nil)
	s, err := r.execute(input)
	r.releaseScratch()
	r.releaseLocal()
	if r.leaveState(err) {
		// The next run on the thread appends to the cached state's slices
		// in place; the caller's copy gets no spare capacity to append
		// into, so its appends never meet the next run's.
		r.g.schema.clipSlices(&s)
	}
	return s, err
}

// run is the state of one run: everything a superstep reads and writes.
// Its own fields are what a node can reach through its context (events,
// interrupts, subgraphs) and what outlives the run's steps; the rest is
// in its runLocal, which later runs of the graph reuse.
type run[S any] struct {
	*runLocal[S]

	g      *Compiled[S]
	ctx    context.Context
	cancel context.CancelCauseFunc
	// runID is the caller's RunConfig.RunID, or the parent run's.
	runID string

	modes Mode
	// firstUsed says the slot first is taken.
	firstUsed bool
	yield     func(Event[S], error) bool
	link      *parentLink // set when this run is a subgraph of a node
	stopped   bool
	// emitMu serialises delivery: a lone task's node, or a subgraph it
	// runs, may emit from goroutines of its own, and yield must never be
	// called concurrently.
	emitMu sync.Mutex
	events chan relay[S]

	state S
	step  int

	// Persistence; saver is nil when the run has no thread.
	saver    Checkpointer
	thread   string
	ns       []string
	nsKey    string
	parentID string
	resume   map[string]json.RawMessage
	// kept is what the run knows of how its thread is stored: each
	// field's stored size and each append field's delta chain. It is the
	// thread cache entry the run's state goes into when the run ends, if
	// the run caches. nil until the run loads or saves a checkpoint.
	kept *threadEntry[S]

	// first is the slot of the run's first task, made with the run: a
	// run of single-task steps needs no other.
	first taskSlot[S]
}

// runLocal is the part of a run that only the run's own goroutine, and
// the goroutines running a step's tasks while it waits, use: its config,
// the planning lists, the step bookkeeping. No node reaches it through
// its context, so once the run is over it serves a later run of the same
// graph (through Compiled.locals), its lists grown already: a short
// run's allocation is then its run's few words, not all of this.
type runLocal[S any] struct {
	cfg   RunConfig
	limit int
	// maxConc bounds the tasks of a step that run at once; 0 is no bound.
	maxConc int
	before  []bool
	after   []bool

	done chan *task[S]
	// par is what runGroup and runPool use, made on the first step that
	// they run: most runs have none.
	par *parallel[S]

	stepsRun  int
	tasks     []*task[S]
	free      []*task[S]
	spare     []*task[S]
	slab      []taskSlot[S]
	triggered []bool // per node, while plan runs
	picked    []int  // the triggered nodes, in the order plan met them
	pushes    []*task[S]
	sendCount []int // per node, while name numbers Send tasks
	barriers  [][]bool

	saveCtx     context.Context
	scratch     *saveScratch[S] // see saveScratch; nil until the first save
	marked      bool            // markDeltas has run: scratch.deltaFrom is this run's
	saveErr     error
	versions    map[string]string
	overwritten fieldMask
	// durable is how a run not in sync mode writes its checkpoints; nil
	// in sync mode.
	durable *durable
}

// saveScratch is what writing checkpoints reuses from step to step: the
// encoder and its buffer, the blob and task lists, the version map, the
// lengths of append fields. None of it reaches a node, and savers keep
// none of it, so once a run is over its scratch serves a later run of the
// same graph (through Compiled.scratch) instead of being built again:
// grown buffers and maps were a good part of what a short run allocated.
type saveScratch[S any] struct {
	enc       fieldEncoder[S]
	blobs     []Blob
	ends      []int
	specs     []TaskSpec
	versions  map[string]string
	deltaFrom []int
}

// takeLocal gives the run the runLocal of a finished run of the graph,
// or a new one.
func (r *run[S]) takeLocal() {
	l, _ := r.g.locals.Get().(*runLocal[S])
	if l == nil {
		l = &runLocal[S]{triggered: make([]bool, len(r.g.nodes))}
		if len(r.g.joins) > 0 {
			l.barriers = make([][]bool, len(r.g.joins))
			for i, j := range r.g.joins {
				l.barriers[i] = make([]bool, len(j.from))
			}
		}
	}
	r.runLocal = l
}

// releaseLocal hands the run's runLocal on once the run is over: every
// goroutine of the run has stopped. It keeps its lists, emptied, and
// nothing else of the run's; lists a wide step grew are left to the
// collector with it. The task slots stay the run's: a slot holds the
// context its nodes ran with, which a node may have kept.
func (r *run[S]) releaseLocal() {
	l := r.runLocal
	if l == nil {
		return
	}
	r.runLocal = nil
	// A step that failed midway may leave its task list as both the
	// current and the spare one: that array goes back once.
	spare := l.spare
	if cap(spare) > 0 && cap(l.tasks) > 0 && unsafe.SliceData(spare[:1]) == unsafe.SliceData(l.tasks[:1]) {
		spare = nil
	}
	for _, t := range [...][]*task[S]{l.tasks, spare, l.free, l.pushes} {
		if cap(t) > maxPooledTasks {
			return
		}
	}
	for _, b := range l.barriers {
		clear(b)
	}
	clear(l.triggered)
	l.tasks, l.spare, l.free, l.pushes = clearTasks(l.tasks), clearTasks(spare), clearTasks(l.free), clearTasks(l.pushes)
	l.picked = l.picked[:0]
	l.forget()
	r.g.locals.Put(l)
}

// forget clears what a runLocal holds of its run, field by field and
// only where set: copying a whole zero value over it writes every
// pointer through the collector's barrier.
func (l *runLocal[S]) forget() {
	l.cfg = RunConfig{}
	l.before, l.after, l.slab = nil, nil, nil
	l.stepsRun, l.limit, l.maxConc = 0, 0, 0
	if l.saveCtx != nil {
		l.saveCtx = nil
	}
	if l.scratch != nil {
		l.scratch = nil
	}
	if l.saveErr != nil {
		l.saveErr = nil
	}
	if l.versions != nil {
		l.versions = nil
	}
	if l.durable != nil {
		l.durable = nil
	}
	l.marked, l.overwritten = false, 0
}

// maxPooledTasks bounds the task lists a finished run leaves for later
// ones: a rare wide fan-out's are not kept.
const maxPooledTasks = 1024

func clearTasks[S any](l []*task[S]) []*task[S] {
	clear(l[:cap(l)])
	return l[:0]
}

// saving returns the run's scratch, taking one from the graph's pool the
// first time.
func (r *run[S]) saving() *saveScratch[S] {
	if r.scratch == nil {
		sc, _ := r.g.scratch.Get().(*saveScratch[S])
		if sc == nil {
			sc = &saveScratch[S]{deltaFrom: make([]int, len(r.g.schema.fields))}
		}
		clear(sc.versions)
		r.scratch = sc
	}
	return r.scratch
}

// releaseScratch hands the scratch on once the run is over: every
// goroutine of the run has stopped and every save has returned.
func (r *run[S]) releaseScratch() {
	sc := r.scratch
	if sc == nil {
		return
	}
	r.scratch = nil
	if len(sc.versions) > 64 || sc.enc.buf.Cap() > 64<<10 {
		return // the pool keeps no rare huge one
	}
	clear(sc.blobs[:cap(sc.blobs)]) // no references to field names and bytes
	clear(sc.specs[:cap(sc.specs)])
	r.g.scratch.Put(sc)
}

func (c *Compiled[S]) newRun(ctx context.Context, cfg RunConfig, yield func(Event[S], error) bool) *run[S] {
	// Set field by field: a composite literal would be copied into the
	// new run whole, every word through the collector's write barrier.
	r := new(run[S])
	r.g, r.yield, r.modes, r.runID = c, yield, cfg.Modes, cfg.RunID
	r.takeLocal()
	r.cfg, r.before, r.after = cfg, c.before, c.after
	r.ctx, r.cancel = context.WithCancelCause(ctx)
	if cfg.ThreadID == "" {
		if t := taskFrom(ctx); t != nil {
			r.link = t.childLink(ctx)
			r.modes = r.link.modes
			r.saver, r.thread, r.ns = r.link.saver, r.link.thread, r.link.ns
			r.nsKey = strings.Join(r.ns, "|")
			if r.runID == "" {
				r.runID = r.link.runID
			}
		}
	} else if c.opts.Checkpointer != nil {
		r.saver, r.thread = c.opts.Checkpointer, cfg.ThreadID
	}
	r.limit = cmp(cfg.RecursionLimit, c.opts.RecursionLimit, DefaultRecursionLimit)
	r.maxConc = c.opts.MaxConcurrency
	if cfg.MaxConcurrency != 0 {
		r.maxConc = cfg.MaxConcurrency
	}
	r.maxConc = max(r.maxConc, 0)
	if len(cfg.InterruptBefore)+len(cfg.InterruptAfter) > 0 {
		r.before = c.mergeFlags(c.before, cfg.InterruptBefore)
		r.after = c.mergeFlags(c.after, cfg.InterruptAfter)
	}
	return r
}

func cmp(vals ...int) int {
	for _, v := range vals {
		if v > 0 {
			return v
		}
	}
	return 0
}

func (c *Compiled[S]) mergeFlags(base []bool, names []string) []bool {
	f := make([]bool, len(c.nodes))
	copy(f, base)
	for _, n := range names {
		if i, ok := c.byName[n]; ok {
			f[i] = true
		}
	}
	return f
}

// execute runs supersteps until no task is left, a node fails, or the run
// pauses or is stopped.
func (r *run[S]) execute(input *S) (S, error) {
	if r.cfg.ThreadID != "" && r.g.opts.Checkpointer == nil && (input == nil || r.cfg.Resume != nil || r.cfg.ResumeByID != nil) {
		return r.state, fmt.Errorf("graph: continue thread %s: %w", r.cfg.ThreadID, ErrNoCheckpointer)
	}
	// The thread's run writes as its durability says; a subgraph's run
	// inside a node writes its checkpoints at once.
	if r.saver != nil && r.link == nil {
		switch r.durability() {
		case DurabilityExit:
			r.durable = &durable{exit: true}
		case DurabilityBoundary:
			r.durable = &durable{exit: true, barrier: true}
		case DurabilityAsync:
			r.durable = &durable{bg: newBackground(r.saver, r.saveContext(), r.thread)}
		}
	}
	var err error
	if input != nil {
		err = r.start(input)
	} else {
		err = r.continueThread()
	}
	for err == nil && len(r.tasks) > 0 {
		err = r.superstep()
	}
	// A run in exit or boundary mode that stopped short (failed, cancelled, broken
	// out of) saves where it got to, as a run in sync mode has.
	if ferr := r.flushHeld(); ferr != nil && err == nil {
		err = ferr
	}
	if ferr := r.flushInput(); ferr != nil && err == nil {
		err = ferr
	}
	// A run in async mode returns once its checkpoints are written.
	if bg := r.durable.background(); bg != nil {
		if berr := bg.close(); berr != nil && err == nil {
			err = berr
		}
	}
	if r.stopped {
		return r.state, errStreamClosed
	}
	return r.state, err
}

// start merges the input into the thread's state and plans START's edges.
func (r *run[S]) start(input *S) error {
	// A thread its caller has just created has nothing to take or load.
	fresh := r.cfg.NewThread && r.link == nil && r.cfg.CheckpointID == ""
	hit := false
	if !fresh {
		var err error
		if hit, err = r.takeState(); err != nil {
			return err
		}
	}
	if r.saver != nil && !fresh && !hit {
		saved, err := r.saver.Get(r.ctx, Ref{ThreadID: r.thread, Namespace: r.nsKey, ID: r.cfg.CheckpointID})
		switch {
		case err == nil:
			if err := r.restore(saved); err != nil {
				return err
			}
			if r.link != nil && len(saved.Checkpoint.Tasks) > 0 {
				// A subgraph whose parent task runs again after a pause or a
				// crash picks up where it stopped.
				return r.resumeTasks(saved, true)
			}
			if r.link != nil {
				// It had finished; its state is the result.
				return nil
			}
		case errors.Is(err, ErrCheckpointNotFound) && r.cfg.CheckpointID == "":
		default:
			return fmt.Errorf("graph: load thread %s: %w", r.thread, err)
		}
	}
	r.step++
	// The input is merged from a copy in the start task, which lives on
	// the heap anyway: reducers are functions the compiler cannot see
	// into, so merging from input itself would move every caller's input
	// to the heap.
	// The start task's slot and those of the nodes START's edges trigger
	// are made at once: the start task is free again by then.
	r.reserve(max(1, len(r.g.start.next)))
	startTask := r.newTask(&r.g.start)
	startTask.upd = *input
	mask := r.g.schema.setFields(&startTask.upd)
	r.markDeltas()
	r.g.schema.apply(&r.state, &startTask.upd, mask)
	if err := r.deliverValues(); err != nil {
		return err
	}
	// No task is planned yet: the current list holds the start task
	// while the spare one gets the first step's.
	done := append(r.tasks[:0], startTask)
	next, err := r.plan(done)
	if err != nil {
		return err
	}
	r.spare = done[:0]
	return r.commit(SourceInput, mask, next, nil)
}

// continueThread loads the thread's checkpoint and plans its pending tasks,
// answering interrupts with the run's resume values.
func (r *run[S]) continueThread() error {
	if r.saver == nil {
		return fmt.Errorf("graph: a nil input continues a thread: %w", ErrNoCheckpointer)
	}
	ref := Ref{ThreadID: r.thread, Namespace: r.nsKey, ID: r.cfg.CheckpointID}
	saved, err := r.saver.Get(r.ctx, ref)
	if err != nil {
		return fmt.Errorf("graph: continue thread %s: %w", r.thread, err)
	}
	if err := r.restore(saved); err != nil {
		return err
	}
	latest := true
	if r.cfg.CheckpointID != "" {
		newest, err := r.saver.List(r.ctx, ListOptions{ThreadID: r.thread, Namespace: r.nsKey, Limit: 1})
		if err != nil {
			return fmt.Errorf("graph: continue thread %s: %w", r.thread, err)
		}
		latest = len(newest) == 1 && newest[0].ID == saved.Checkpoint.ID
	}
	return r.resumeTasks(saved, latest)
}

// restore sets the run's state and versions from a checkpoint.
func (r *run[S]) restore(saved *Saved) error {
	kept := r.newEntry()
	state, err := r.g.decodeState(saved, kept)
	if err != nil {
		return err
	}
	r.kept = kept
	r.restoreCheckpoint(&saved.Checkpoint, state)
	return nil
}

// restoreCheckpoint sets the run's state, versions, step and joins'
// arrivals to those of cp, whose state is state.
func (r *run[S]) restoreCheckpoint(cp *Checkpoint, state S) {
	r.state, r.versions, r.parentID, r.step = state, cp.Versions, cp.ID, cp.Step
	for i, j := range r.g.joins {
		for k, from := range j.from {
			r.barriers[i][k] = slices.Contains(cp.Barriers[j.key], r.g.nodes[from].spec.name)
		}
	}
}

// newEntry returns an entry for the run's bookkeeping, one the thread
// cache evicted if it has one.
func (r *run[S]) newEntry() *threadEntry[S] {
	if r.g.threads != nil {
		return r.g.threads.entry(len(r.g.schema.fields))
	}
	return newThreadEntry[S](len(r.g.schema.fields))
}

// caches reports whether the run leaves its state in the thread cache
// when it ends: root runs on a thread do, subgraphs' runs do not.
func (r *run[S]) caches() bool {
	return r.g.threads != nil && r.saver != nil && r.link == nil
}

// takeState continues the thread from the state its last run left in the
// cache, if that is still the state of the thread's newest checkpoint,
// which one List of a single checkpoint tells (or RunConfig.Newest, the
// caller's). A fork, from an older checkpoint, loads it from the saver as
// always.
func (r *run[S]) takeState() (bool, error) {
	if !r.caches() || r.cfg.CheckpointID != "" {
		return false, nil
	}
	key := threadKey{r.thread, r.nsKey}
	if !r.g.threads.has(key) {
		return false, nil
	}
	newest := r.cfg.Newest
	if newest == nil || newest.ThreadID != r.thread || newest.Namespace != r.nsKey {
		cps, err := r.saver.List(r.ctx, ListOptions{ThreadID: r.thread, Namespace: r.nsKey, Limit: 1})
		if err != nil {
			return false, fmt.Errorf("graph: load thread %s: %w", r.thread, err)
		}
		if len(cps) == 0 {
			r.g.threads.drop(key)
			return false, nil
		}
		newest = &cps[0]
	}
	e := r.g.threads.take(key, newest.ID)
	if e == nil {
		return false, nil
	}
	r.restoreCheckpoint(newest, e.state)
	var none S
	e.state, r.kept = none, e
	return true, nil
}

// leaveState leaves the run's state in the thread cache for the next run
// on the thread, when it is the state of the checkpoint saved last: the
// run ended, or paused at an interrupt before merging its step, but did
// not fail or stop midway through one. It reports whether it did.
func (r *run[S]) leaveState(err error) bool {
	e := r.kept
	if !r.caches() || e == nil || r.parentID == "" || (err != nil && !errors.Is(err, ErrInterrupted)) {
		return false
	}
	e.key, e.checkpoint, e.state = threadKey{r.thread, r.nsKey}, r.parentID, r.state
	r.g.threads.put(e)
	return true
}

// resumeTasks turns a checkpoint's planned tasks into this run's tasks.
// From the newest checkpoint, tasks that finished before the run stopped
// keep their saved writes instead of running again.
func (r *run[S]) resumeTasks(saved *Saved, latest bool) error {
	cp := &saved.Checkpoint
	for _, spec := range cp.Tasks {
		i, ok := r.g.byName[spec.Node]
		if !ok {
			return fmt.Errorf("graph: checkpoint %s plans node %q, which this graph lacks", cp.ID, spec.Node)
		}
		t := r.newTask(r.g.nodes[i])
		t.id = spec.ID
		// Both are decoded into, field by field: nothing of a reused
		// task's may stay.
		var zero S
		t.input, t.upd = zero, zero
		if len(spec.Input) > 0 {
			t.hasInput = true
			if err := json.Unmarshal(spec.Input, &t.input); err != nil {
				return fmt.Errorf("graph: checkpoint %s: decode Send input of %s: %w", cp.ID, spec.Node, err)
			}
		}
		r.tasks = append(r.tasks, t)
	}
	r.name(r.tasks)
	var pending []PendingInterrupt
	r.resume = map[string]json.RawMessage{}
	if r.link != nil {
		r.resume = r.link.resume
	}
	if latest {
		var err error
		if pending, err = r.applyWrites(saved.Writes); err != nil {
			return err
		}
	}
	return r.answer(pending)
}

// answer records the run's resume values against the pending interrupts,
// durably, before anything runs again.
func (r *run[S]) answer(pending []PendingInterrupt) error {
	if r.link != nil || (r.cfg.Resume == nil && r.cfg.ResumeByID == nil) {
		return nil
	}
	values := map[string]any{}
	switch {
	case r.cfg.Resume != nil && len(pending) == 1:
		values[pending[0].ID] = r.cfg.Resume
	case r.cfg.Resume != nil && len(pending) == 0:
		return fmt.Errorf("graph: resume thread %s: %w: nothing is pending", r.thread, ErrUnknownInterrupt)
	case r.cfg.Resume != nil:
		return fmt.Errorf("graph: resume thread %s: %d interrupts are pending; answer them by id with ResumeByID", r.thread, len(pending))
	}
	for id, v := range r.cfg.ResumeByID {
		values[id] = v
	}
	byTask := map[string][]Write{}
	for _, id := range slices.Sorted(mapsKeys(values)) {
		k := slices.IndexFunc(pending, func(p PendingInterrupt) bool { return p.ID == id })
		if k < 0 {
			return fmt.Errorf("graph: resume thread %s: %w: %s", r.thread, ErrUnknownInterrupt, id)
		}
		raw, err := json.Marshal(resumeWrite{ID: id, Value: values[id]})
		if err != nil {
			return fmt.Errorf("graph: encode resume value for %s: %w", id, err)
		}
		task := pending[k].TaskID
		byTask[task] = append(byTask[task], Write{TaskID: task, Index: idxResume - len(byTask[task]) - r.resumeCount(task), Channel: ChannelResume, Value: raw})
		var rv resumeValue
		_ = json.Unmarshal(raw, &rv)
		r.resume[id] = rv.Value
	}
	var all []Write
	for _, t := range slices.Sorted(mapsKeys(byTask)) {
		all = append(all, byTask[t]...)
	}
	return r.putWrites(all)
}

// resumeCount is how many resume writes a task already has, so new ones
// get fresh indexes.
func (r *run[S]) resumeCount(taskID string) int {
	n := 0
	for _, t := range r.tasks {
		if t.id == taskID {
			n = int(t.resumes)
		}
	}
	return n
}

func mapsKeys[K comparable, V any](m map[K]V) iter.Seq[K] {
	return func(yield func(K) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// deliver passes an event to the consumer, from the run's own goroutine.
// Events travel by pointer up to here: with the state inside, an Event is
// as large as S, and a node's custom event used to be copied whole at
// every call on its way.
func (r *run[S]) deliver(ev *Event[S]) error {
	if r.modes&ev.Mode == 0 {
		return nil
	}
	r.emitMu.Lock()
	defer r.emitMu.Unlock()
	if r.stopped {
		return nil
	}
	if r.link != nil {
		return r.link.forward(*ev)
	}
	if r.yield == nil {
		return nil
	}
	if !r.yield(*ev, nil) {
		r.stopped = true
		r.cancel(errStreamClosed)
		return errStreamClosed
	}
	return nil
}

// interruptsAfter names the nodes of a finished step that have a static
// interrupt after them.
func (r *run[S]) interruptsAfter(ran []*task[S]) []string {
	var after []string
	for _, t := range ran {
		if r.after != nil && r.after[t.node.idx] && !slices.Contains(after, t.node.spec.name) {
			after = append(after, t.node.spec.name)
		}
	}
	return after
}

// deliverValues delivers the whole state as a values event, if the run
// streams them: the event is as large as the state, so it is not made for
// nothing.
func (r *run[S]) deliverValues() error {
	if r.modes&ModeValues == 0 {
		return nil
	}
	ev := Event[S]{Mode: ModeValues, Namespace: r.ns, Step: r.step, State: r.state}
	if r.caches() {
		// As for Invoke's result: the state may outlive the run in the
		// thread cache, whose next run appends to it in place.
		r.g.schema.clipSlices(&ev.State)
	}
	return r.deliver(&ev)
}

// commit saves a checkpoint for the plan of the next step and makes it the
// run's tasks; after names the nodes just run that have a static interrupt
// after them. Without a saver it only sets the tasks.
func (r *run[S]) commit(source Source, changed fieldMask, next []*task[S], after []string) error {
	stopBefore := false
	for _, t := range next {
		if r.before != nil && r.before[t.node.idx] {
			stopBefore = true
		}
	}
	cpID := ""
	switch {
	case r.saver == nil:
	case r.hold(source, changed, next, stopBefore || len(after) > 0):
		r.tasks = next
		return nil
	default:
		if r.durable.holding() { // what the held steps changed is written now
			changed |= r.durable.held.changed
			r.durable.held = nil
		}
		var err error
		if cpID, err = r.save(source, changed, next, stopBefore, after); err != nil {
			return err
		}
	}
	r.tasks = next
	r.overwritten = 0
	if len(after) == 0 && !stopBefore {
		return nil
	}
	ie := &InterruptError{}
	for _, n := range after {
		ie.Interrupts = append(ie.Interrupts, PendingInterrupt{ID: hashID(r.nsKey, cpID, "after", n), Node: n, Namespace: r.nsKey, When: "after"})
	}
	if stopBefore {
		for _, t := range next {
			if r.before[t.node.idx] {
				ie.Interrupts = append(ie.Interrupts, PendingInterrupt{ID: hashID(r.nsKey, cpID, "before", t.id), Node: t.node.spec.name, TaskID: t.id, Namespace: r.nsKey, When: "before"})
			}
		}
	}
	r.tasks = nil
	return ie
}

// save writes a checkpoint made now (see write).
func (r *run[S]) save(source Source, changed fieldMask, next []*task[S], before bool, after []string) (string, error) {
	now := time.Now()
	return r.write(ids.Sortable(now), now, source, changed, next, before, after)
}

// write writes checkpoint id, made at now: the blobs of changed fields
// (append fields as deltas) and the plan of the next step.
func (r *run[S]) write(id string, now time.Time, source Source, changed fieldMask, next []*task[S], before bool, after []string) (string, error) {
	sc := r.g.schema
	scr := r.saving()
	if r.kept == nil {
		r.kept = r.newEntry()
	}
	kept := r.kept
	versions := r.versions
	if versions == nil {
		if scr.versions == nil {
			scr.versions = map[string]string{}
		}
		versions = scr.versions
	}
	// Savers keep nothing they are given, so the blob list, its bytes and
	// the task specs are reused step after step, run after run.
	blobs, ends := scr.blobs[:0], scr.ends[:0]
	enc := &scr.enc
	enc.buf.Reset()
	for i, f := range sc.fields {
		if !changed.has(i) {
			continue
		}
		prev := versions[f.name]
		b := Blob{Field: f.name, Version: id}
		from := 0
		if f.kind == kindAppend && prev != "" && !r.overwritten.has(i) && r.marked {
			b.Delta = true
			b.Base, from = kept.link(i, id, prev, scr.deltaFrom[i], f.length(&r.state))
		} else {
			kept.chains[i] = kept.chains[i][:0]
		}
		n := enc.buf.Len()
		if err := enc.append(sc, &r.state, i, from); err != nil {
			return "", err
		}
		kept.stored(i, enc.buf.Len()-n, b.Delta)
		blobs, ends = append(blobs, b), append(ends, enc.buf.Len())
		versions[f.name] = id
	}
	start := 0
	for k := range blobs {
		blobs[k].Data = enc.buf.Bytes()[start:ends[k]:ends[k]]
		start = ends[k]
	}
	scr.blobs, scr.ends = blobs, ends
	cp := Checkpoint{
		ThreadID: r.thread, Namespace: r.nsKey, ID: id, ParentID: r.parentID,
		Step: r.step, Source: source, CreatedAt: now.UTC(), RunID: r.runID, Versions: versions,
		InterruptedBefore: before, InterruptedAfter: after,
	}
	specs := scr.specs[:0]
	setTaskIDs(id, next)
	for _, t := range next {
		spec := TaskSpec{ID: t.id, Node: t.node.spec.name}
		if t.hasInput {
			in, err := encodeState(&t.input)
			if err != nil {
				return "", err
			}
			spec.Input = in
		}
		specs = append(specs, spec)
	}
	scr.specs = specs
	cp.Tasks = specs
	for i, j := range r.g.joins {
		for k, arrived := range r.barriers[i] {
			if arrived {
				if cp.Barriers == nil {
					cp.Barriers = map[string][]string{}
				}
				cp.Barriers[j.key] = append(cp.Barriers[j.key], r.g.nodes[j.from[k]].spec.name)
			}
		}
	}
	switch bg := r.durable.background(); {
	case bg != nil:
		if err := bg.put(cp, blobs); err != nil {
			return "", err
		}
	case source == SourceInput && r.cfg.DeferInput && r.durable != nil && len(next) > 0 && !before && len(after) == 0:
		r.durable.input = keepPut(cp, blobs)
	default:
		if err := r.put(cp, blobs); err != nil {
			return "", fmt.Errorf("graph: checkpoint thread %s step %d: %w", r.thread, r.step, err)
		}
	}
	r.versions, r.parentID = versions, id
	if r.modes&ModeDebug != 0 {
		return id, r.deliver(&Event[S]{Mode: ModeDebug, Namespace: r.ns, Step: r.step, Data: DebugEvent{Kind: DebugCheckpoint, CheckpointID: id}})
	}
	return id, nil
}

// setTaskIDs names the tasks a checkpoint plans after it.
func setTaskIDs[S any](id string, next []*task[S]) {
	for k, t := range next {
		// The first task's id is the checkpoint's own: unique, and free.
		t.id = id
		if k > 0 {
			t.id = id + "." + strconv.Itoa(k)
		}
	}
}

// saveContext is the context checkpoints are written with: the run's
// values without its cancellation, so that a cancel arriving while a
// finished step is being saved does not tear the save. Savers bound their
// own I/O.
func (r *run[S]) saveContext() context.Context {
	if r.saveCtx == nil {
		r.saveCtx = context.WithoutCancel(r.ctx)
	}
	return r.saveCtx
}

func (r *run[S]) putWrites(ws []Write) error {
	if r.saver == nil || len(ws) == 0 {
		return nil
	}
	if err := r.flushHeld(); err != nil { // the writes name its tasks
		return err
	}
	if err := r.flushInput(); err != nil { // or the input's
		return err
	}
	if bg := r.durable.background(); bg != nil {
		if err := bg.wait(); err != nil { // and its checkpoint
			return err
		}
	}
	if err := r.saver.PutWrites(r.saveContext(), Ref{ThreadID: r.thread, Namespace: r.nsKey, ID: r.parentID}, ws); err != nil {
		return fmt.Errorf("graph: save writes of thread %s step %d: %w", r.thread, r.step+1, err)
	}
	return nil
}

// markDeltas records the length of append fields before a step merges, so
// the checkpoint can store only what the step appended.
func (r *run[S]) markDeltas() {
	if r.saver == nil || r.durable.holding() { // deltas go from the last checkpoint written
		return
	}
	deltaFrom := r.saving().deltaFrom
	for i, f := range r.g.schema.fields {
		if f.length != nil {
			deltaFrom[i] = f.length(&r.state)
		}
	}
	r.marked = true
}

// hashID derives a stable id from its parts, so a task or interrupt gets
// the same id every time its step is planned from the same checkpoint.
func hashID(parts ...string) string {
	h := sha256.Sum256([]byte(strings.Join(parts, "\x00")))
	return hex.EncodeToString(h[:16])
}
