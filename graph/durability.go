package graph

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/trellis-ai/trellis/internal/ids"
)

// Durability says when a run writes its checkpoints, as LangGraph's
// durability modes do. It trades what a crash in the middle of a run
// loses for what the run spends writing.
type Durability uint8

const (
	// DurabilityDefault is the graph's mode (CompileOptions.Durability)
	// in RunConfig, and DurabilitySync in CompileOptions.
	DurabilityDefault Durability = iota
	// DurabilitySync writes the checkpoint of each step before the next
	// step starts: a run continued after a crash repeats at most the
	// step that was running.
	DurabilitySync
	// DurabilityAsync writes each step's checkpoint, in order, on a
	// goroutine of the run while the next step runs. The run waits for
	// them before it returns and before it saves pending writes, so a
	// run that returns has saved everything, as in sync mode; a crash
	// may lose the last steps' checkpoints, and a run continued after
	// it repeats them.
	DurabilityAsync
	// DurabilityExit writes the input's checkpoint and then only the
	// run's last one: when it ends, pauses, fails or is stopped, and
	// before it saves pending writes (an interrupt, a failed step's
	// finished tasks), which name that checkpoint. The steps between
	// are not saved on their own, so a run continued after a crash
	// starts again from the input (or the last checkpoint before it); a
	// run that returns has saved everything it did, as in sync mode.
	DurabilityExit
	// DurabilityBoundary is exit mode with barriers: it also writes the
	// checkpoint that plans a step the graph's Barrier marks, and
	// commits it before that step starts. A graph whose nodes do what
	// must not happen twice (a payment, an email) marks the steps that
	// do it: a run continued after a crash starts from the last barrier
	// (or the input) and never repeats what came after it, while the
	// steps between barriers, which may be repeated, write nothing.
	// Interrupts, failures and the run's end are written as in exit mode,
	// before the run reports them.
	DurabilityBoundary
)

// String names the mode as TRELLIS_DURABILITY takes it.
func (d Durability) String() string {
	switch d {
	case DurabilityDefault:
		return "default"
	case DurabilitySync:
		return "sync"
	case DurabilityAsync:
		return "async"
	case DurabilityExit:
		return "exit"
	case DurabilityBoundary:
		return "boundary"
	}
	return fmt.Sprintf("Durability(%d)", uint8(d))
}

// ParseDurability reads "sync", "async", "exit" or "boundary" ("" is
// DurabilityDefault).
func ParseDurability(s string) (Durability, error) {
	switch s {
	case "":
		return DurabilityDefault, nil
	case "sync":
		return DurabilitySync, nil
	case "async":
		return DurabilityAsync, nil
	case "exit":
		return DurabilityExit, nil
	case "boundary":
		return DurabilityBoundary, nil
	}
	return 0, fmt.Errorf("graph: durability %q: want sync, async, exit or boundary", s)
}

// durable is what a run in exit, boundary or async mode keeps to write
// its checkpoints; a nil *durable is sync mode's.
type durable struct {
	// exit holds the checkpoints of steps (exit and boundary mode).
	exit bool
	// barrier is boundary mode's: the steps whose checkpoint is written
	// all the same.
	barrier bool
	// held is the checkpoint an exit-mode run has not written yet (see
	// hold).
	held *heldCheckpoint
	// bg writes an async-mode run's checkpoints.
	bg *background
	// input is the input's checkpoint of a run with
	// RunConfig.DeferInput, not written yet: the run's next write takes
	// it along.
	input *CheckpointPut
}

func (d *durable) holding() bool { return d != nil && d.held != nil }

func (d *durable) background() *background {
	if d == nil {
		return nil
	}
	return d.bg
}

// heldCheckpoint is a checkpoint an exit-mode run planned but has not
// written: its id (its tasks carry ids derived from it), when and
// from what step, and the fields changed since the last written one.
type heldCheckpoint struct {
	id      string
	at      time.Time
	step    int
	source  Source
	changed fieldMask
}

// durability is the run's mode, resolved from its config and graph.
func (r *run[S]) durability() Durability {
	if r.cfg.Durability != DurabilityDefault {
		return r.cfg.Durability
	}
	if r.g.opts.Durability != DurabilityDefault {
		return r.g.opts.Durability
	}
	return DurabilitySync
}

// hold keeps the checkpoint of a step in exit mode instead of writing it,
// when nothing needs it written now: the run goes on, its state and
// tasks are where the checkpoint would have put them, and the fields
// changed add up until one is written. It assigns the next tasks their
// ids as save would. It reports false when the checkpoint is to be
// written, as in boundary mode before a barrier.
func (r *run[S]) hold(source Source, changed fieldMask, next []*task[S], stop bool) bool {
	d := r.durable
	if d == nil || !d.exit || source == SourceInput || stop || len(next) == 0 {
		return false
	}
	if d.barrier && r.barrier(next) {
		return false
	}
	now := time.Now()
	h := heldCheckpoint{id: ids.Sortable(now), at: now, step: r.step, source: source, changed: changed}
	if d.held != nil {
		h.changed |= d.held.changed
	}
	d.held = &h
	setTaskIDs(h.id, next)
	return true
}

// barrier reports whether the graph's Barrier marks a task of next:
// each is asked with its node and the state it will be given, its Send
// argument or the run's state.
func (r *run[S]) barrier(next []*task[S]) bool {
	fn := r.g.barrier
	if fn == nil {
		return false
	}
	for _, t := range next {
		in := &r.state
		if t.hasInput {
			in = &t.input
		}
		if fn(t.node.spec.name, in) {
			return true
		}
	}
	return false
}

// flushHeld writes the checkpoint an exit-mode run holds, if any: the
// state and the tasks planned when it was held, which the run still has
// (a step in progress merges nothing before its writes are saved).
func (r *run[S]) flushHeld() error {
	if !r.durable.holding() {
		return nil
	}
	h := r.durable.held
	r.durable.held = nil
	step := r.step
	r.step = h.step
	_, err := r.write(h.id, h.at, h.source, h.changed, r.tasks, false, nil)
	r.step = step
	r.overwritten = 0
	return err
}

// keepPut copies what write built for a checkpoint it does not write
// yet: the run reuses the maps, slices and bytes for the next.
func keepPut(cp Checkpoint, blobs []Blob) *CheckpointPut {
	cp.Versions = maps.Clone(cp.Versions)
	cp.Tasks = slices.Clone(cp.Tasks)
	kept := slices.Clone(blobs)
	n := 0
	for _, b := range blobs {
		n += len(b.Data)
	}
	data := make([]byte, 0, n)
	for i, b := range blobs {
		data = append(data, b.Data...)
		kept[i].Data = data[len(data)-len(b.Data) : len(data) : len(data)]
	}
	return &CheckpointPut{Checkpoint: cp, Blobs: kept}
}

// put writes a checkpoint and, before it, the input's one a run with
// RunConfig.DeferInput has kept: in one PutBatch where the checkpointer
// has it.
func (r *run[S]) put(cp Checkpoint, blobs []Blob) error {
	var in *CheckpointPut
	if r.durable != nil {
		in, r.durable.input = r.durable.input, nil
	}
	if in == nil {
		return r.saver.Put(r.saveContext(), cp, blobs)
	}
	if b, ok := r.saver.(BatchPutter); ok {
		return b.PutBatch(r.saveContext(), []CheckpointPut{*in, {Checkpoint: cp, Blobs: blobs}})
	}
	if err := r.saver.Put(r.saveContext(), in.Checkpoint, in.Blobs); err != nil {
		return err
	}
	return r.saver.Put(r.saveContext(), cp, blobs)
}

// flushInput writes the input's checkpoint a run with
// RunConfig.DeferInput has kept, if no later one has taken it along:
// before pending writes name its tasks, and when the run returns.
func (r *run[S]) flushInput() error {
	if r.durable == nil || r.durable.input == nil {
		return nil
	}
	in := r.durable.input
	r.durable.input = nil
	if err := r.saver.Put(r.saveContext(), in.Checkpoint, in.Blobs); err != nil {
		return fmt.Errorf("graph: checkpoint thread %s input: %w", r.thread, err)
	}
	return nil
}

// background writes an async-mode run's checkpoints in order, on a
// goroutine of its own, and keeps the first error: checkpoints after a
// failed one are not written (their deltas may build on it).
type background struct {
	saver  Checkpointer
	ctx    context.Context
	thread string
	jobs   chan checkpointJob
	wg     sync.WaitGroup // one count per job queued and not done
	mu     sync.Mutex
	err    error
	done   chan struct{}
}

type checkpointJob struct {
	cp    Checkpoint
	blobs []Blob
}

// backgroundQueue is how many checkpoints a run may have waiting before
// its next one waits too: a run never gets far ahead of its store.
const backgroundQueue = 4

func newBackground(saver Checkpointer, ctx context.Context, thread string) *background {
	b := &background{saver: saver, ctx: ctx, thread: thread, jobs: make(chan checkpointJob, backgroundQueue), done: make(chan struct{})}
	go b.loop()
	return b
}

func (b *background) loop() {
	defer close(b.done)
	for j := range b.jobs {
		if b.failed() == nil {
			if err := b.saver.Put(b.ctx, j.cp, j.blobs); err != nil {
				b.mu.Lock()
				b.err = fmt.Errorf("graph: checkpoint thread %s step %d: %w", b.thread, j.cp.Step, err)
				b.mu.Unlock()
			}
		}
		b.wg.Done()
	}
}

func (b *background) failed() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.err
}

// put queues a checkpoint, taking copies of what the run reuses (the
// blob bytes, task list and version map live in its scratch). It
// returns the error of an earlier write, which stops the run.
func (b *background) put(cp Checkpoint, blobs []Blob) error {
	if err := b.failed(); err != nil {
		return err
	}
	size := 0
	for _, bl := range blobs {
		size += len(bl.Data)
	}
	data := make([]byte, 0, size)
	own := slices.Clone(blobs)
	for i := range own {
		start := len(data)
		data = append(data, own[i].Data...)
		own[i].Data = data[start:len(data):len(data)]
	}
	cp.Versions = maps.Clone(cp.Versions)
	cp.Tasks = slices.Clone(cp.Tasks)
	b.wg.Add(1)
	b.jobs <- checkpointJob{cp: cp, blobs: own}
	return nil
}

// wait returns once every queued checkpoint is written, with the first
// error.
func (b *background) wait() error {
	b.wg.Wait()
	return b.failed()
}

// close is wait, then stops the goroutine.
func (b *background) close() error {
	err := b.wait()
	close(b.jobs)
	<-b.done
	return err
}
