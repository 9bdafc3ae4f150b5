package graph

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
)

// Snapshot is a thread's state at one checkpoint.
type Snapshot[S any] struct {
	Values S
	// Next lists the nodes planned for the next step; empty when the run
	// had finished.
	Next []string
	// Interrupts lists what the thread waits on at this checkpoint.
	Interrupts []PendingInterrupt
	// Checkpoint holds the id, parent, step, source and time. Its Versions
	// name the stored version of each field.
	Checkpoint Checkpoint
}

// HistoryOptions pages through a thread's checkpoints, newest first.
type HistoryOptions struct {
	// Limit caps the snapshots returned; 0 means all.
	Limit int
	// Before returns only checkpoints older than this id.
	Before string
}

// GetState loads the thread's state at ref (its newest checkpoint when
// ref.ID is empty), with what runs next and what it waits for.
func (c *Compiled[S]) GetState(ctx context.Context, ref Ref) (Snapshot[S], error) {
	if c.opts.Checkpointer == nil {
		return Snapshot[S]{}, fmt.Errorf("graph: get state: %w", ErrNoCheckpointer)
	}
	saved, err := c.opts.Checkpointer.Get(ctx, ref)
	if err != nil {
		return Snapshot[S]{}, fmt.Errorf("graph: get state of thread %s: %w", ref.ThreadID, err)
	}
	return c.snapshot(saved)
}

// History returns the thread's snapshots, newest first, across every
// branch that forks created.
func (c *Compiled[S]) History(ctx context.Context, threadID string, opts HistoryOptions) ([]Snapshot[S], error) {
	if c.opts.Checkpointer == nil {
		return nil, fmt.Errorf("graph: history: %w", ErrNoCheckpointer)
	}
	cps, err := c.opts.Checkpointer.List(ctx, ListOptions{ThreadID: threadID, Before: opts.Before, Limit: opts.Limit})
	if err != nil {
		return nil, fmt.Errorf("graph: history of thread %s: %w", threadID, err)
	}
	out := make([]Snapshot[S], 0, len(cps))
	for _, cp := range cps {
		snap, err := c.GetState(ctx, Ref{ThreadID: threadID, ID: cp.ID})
		if err != nil {
			return nil, err
		}
		out = append(out, snap)
	}
	return out, nil
}

func (c *Compiled[S]) snapshot(saved *Saved) (Snapshot[S], error) {
	state, err := c.decodeState(saved, nil)
	if err != nil {
		return Snapshot[S]{}, err
	}
	cp := saved.Checkpoint
	snap := Snapshot[S]{Values: state, Checkpoint: cp}
	for _, t := range cp.Tasks {
		snap.Next = append(snap.Next, t.Node)
		if cp.InterruptedBefore {
			snap.Interrupts = append(snap.Interrupts, PendingInterrupt{
				ID: hashID(cp.Namespace, cp.ID, "before", t.ID), Node: t.Node, TaskID: t.ID, Namespace: cp.Namespace, When: "before"})
		}
	}
	for _, n := range cp.InterruptedAfter {
		snap.Interrupts = append(snap.Interrupts, PendingInterrupt{
			ID: hashID(cp.Namespace, cp.ID, "after", n), Node: n, Namespace: cp.Namespace, When: "after"})
	}
	answered := map[string]bool{}
	var raised []PendingInterrupt
	for _, w := range saved.Writes {
		switch w.Channel {
		case ChannelInterrupt:
			var in PendingInterrupt
			if err := json.Unmarshal(w.Value, &in); err != nil {
				return Snapshot[S]{}, fmt.Errorf("graph: checkpoint %s: saved interrupt: %w", cp.ID, err)
			}
			raised = append(raised, in)
		case ChannelResume:
			var rv resumeValue
			if err := json.Unmarshal(w.Value, &rv); err != nil {
				return Snapshot[S]{}, fmt.Errorf("graph: checkpoint %s: saved resume value: %w", cp.ID, err)
			}
			answered[rv.ID] = true
		}
	}
	for _, in := range raised {
		if !answered[in.ID] {
			snap.Interrupts = append(snap.Interrupts, in)
		}
	}
	return snap, nil
}

// UpdateState writes cmd into the thread at ref as if node asNode had
// returned it: its update merges through the reducers, and the next step
// is planned from asNode's edges, routers and cmd's Goto and Send. With an
// empty asNode the planned tasks stay as they were.
//
// With asNode END the update merges the same way, as if the graph had
// ended there, and nothing is planned: the tasks planned at ref never run
// (writes some of them saved before the run paused are not merged), their
// pending interrupts are dropped unanswered, and the joins' arrivals so
// far are forgotten. Continuing the thread with a nil input then ends at
// once; a new input starts a fresh run from START. cmd must not Goto or
// Send to a node. This is how a caller abandons a run parked on an
// interrupt.
//
// Updating a checkpoint that is not the newest forks the thread; history
// keeps the old branch. It returns the new checkpoint's id.
func (c *Compiled[S]) UpdateState(ctx context.Context, ref Ref, asNode string, cmd Command[S]) (string, error) {
	if c.opts.Checkpointer == nil || ref.ThreadID == "" {
		return "", fmt.Errorf("graph: update state: %w", ErrNoCheckpointer)
	}
	r := c.newRun(ctx, RunConfig{ThreadID: ref.ThreadID}, nil)
	defer r.cancel(nil)
	r.nsKey = ref.Namespace
	saved, err := r.saver.Get(ctx, ref)
	if err != nil {
		return "", fmt.Errorf("graph: update state of thread %s: %w", ref.ThreadID, err)
	}
	if err := r.restore(saved); err != nil {
		return "", err
	}
	source := SourceUpdate
	if ref.ID != "" {
		newest, err := r.saver.List(ctx, ListOptions{ThreadID: ref.ThreadID, Namespace: ref.Namespace, Limit: 1})
		if err != nil {
			return "", fmt.Errorf("graph: update state of thread %s: %w", ref.ThreadID, err)
		}
		if len(newest) == 0 || newest[0].ID != saved.Checkpoint.ID {
			source = SourceFork
		}
	}
	r.step++
	r.markDeltas()
	t := r.newTask(&c.start)
	t.input = r.state
	if asNode == END {
		if len(cmd.Send) > 0 || slices.ContainsFunc(cmd.Goto, func(n string) bool { return n != END }) {
			return "", fmt.Errorf("graph: update state of thread %s as %s: cmd has a Goto or Send, but nothing runs after END", ref.ThreadID, END)
		}
	} else if asNode != "" {
		i, ok := c.byName[asNode]
		if !ok {
			return "", fmt.Errorf("graph: update state as %q: %w", asNode, ErrUnknownNode)
		}
		t.node = c.nodes[i]
	}
	t.upd = cmd.Update
	t.set = c.schema.setFields(&t.upd)
	if cmd.Overwrite != nil {
		t.applyOverwrite(cmd.Overwrite)
	}
	t.route(&cmd)
	changed, err := r.merge([]*task[S]{t})
	if err != nil {
		return "", err
	}
	var next []*task[S]
	before := saved.Checkpoint.InterruptedBefore
	switch asNode {
	case END:
		// A later run starts afresh: a join must not fire on what the
		// abandoned run's branches brought it.
		for _, b := range r.barriers {
			clear(b)
		}
		before = false
	case "":
		if err := r.resumeTasks(saved, false); err != nil {
			return "", err
		}
		t.node = &cnode[S]{}
		extra, err := r.plan([]*task[S]{t})
		if err != nil {
			return "", err
		}
		next = append(r.tasks, extra...)
	default:
		if next, err = r.plan([]*task[S]{t}); err != nil {
			return "", err
		}
		before = false
		for _, n := range next {
			before = before || (r.before != nil && r.before[n.node.idx])
		}
	}
	return r.save(source, changed, next, before, nil)
}

// DeleteThread removes a thread's checkpoints, in every namespace.
func (c *Compiled[S]) DeleteThread(ctx context.Context, threadID string) error {
	if c.opts.Checkpointer == nil {
		return fmt.Errorf("graph: delete thread: %w", ErrNoCheckpointer)
	}
	if c.threads != nil {
		// A later run would find the thread gone anyway; this frees the
		// memory now.
		c.threads.drop(threadKey{thread: threadID})
	}
	if err := c.opts.Checkpointer.DeleteThread(ctx, threadID); err != nil {
		return fmt.Errorf("graph: delete thread %s: %w", threadID, err)
	}
	return nil
}
