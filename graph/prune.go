package graph

import (
	"context"
	"fmt"
	"slices"
)

// Pruner is a Checkpointer that can drop old checkpoints. It is optional:
// find it with a type assertion.
type Pruner interface {
	// Prune removes, thread namespace by thread namespace, the checkpoints
	// PlanPrune does not keep, their pending writes, and the blobs no kept
	// checkpoint reads. Each namespace is pruned in its own transaction,
	// so a prune stopped at any point leaves every thread loadable.
	Prune(ctx context.Context, opts PruneOptions) (PruneStats, error)
}

// PruneOptions says what a prune keeps.
type PruneOptions struct {
	// Keep is how many of the newest checkpoints of each branch survive;
	// it must be at least 1.
	Keep int
	// DryRun counts what would go and deletes nothing.
	DryRun bool
	// Pinned, when set, names checkpoints of a thread that survive
	// whatever their age, with every blob their delta chains read: those
	// something outside the checkpointer still starts from, such as the
	// turns a chat record can edit or retry. It is asked once per thread
	// namespace, before that namespace is read; ids it names that the
	// namespace does not hold are ignored.
	Pinned func(ctx context.Context, threadID string) ([]string, error)
	// KeepInputs keeps every checkpoint a run's input made (SourceInput),
	// with its delta chains: the start of each turn, where an edit of
	// that turn forks, however old.
	KeepInputs bool
}

// Node is cp as PlanPrune sees it, pinned when pins holds its id or it is
// an input checkpoint o keeps.
func (o PruneOptions) Node(cp *Checkpoint, pins map[string]bool) PruneNode {
	return PruneNode{ID: cp.ID, ParentID: cp.ParentID, Versions: cp.Versions,
		Pinned: pins[cp.ID] || o.KeepInputs && cp.Source == SourceInput}
}

// PruneSpacePage is how many thread namespaces a Pruner lists at a time,
// so a prune's memory does not grow with the number of threads.
const PruneSpacePage = 500

// PruneSpace is a thread namespace: a thread's id and a namespace in it.
type PruneSpace struct{ Thread, NS string }

// PruneWalk is the walk of a Pruner's Prune: it lists the thread
// namespaces PruneSpacePage at a time, each page after the last one's
// end (list, keyset order), and prunes each with its thread's pins
// (prune, in a transaction of its own), summing the stats. It stops at
// the first error, with the stats of the namespaces pruned so far.
func PruneWalk(ctx context.Context, opts PruneOptions,
	list func(ctx context.Context, after PruneSpace) ([]PruneSpace, error),
	prune func(ctx context.Context, sp PruneSpace, pins map[string]bool) (PruneStats, error)) (PruneStats, error) {
	if opts.Keep < 1 {
		return PruneStats{}, fmt.Errorf("prune: keep %d: must be at least 1", opts.Keep)
	}
	var total PruneStats
	var after PruneSpace
	for {
		spaces, err := list(ctx, after)
		if err != nil {
			return total, fmt.Errorf("prune: list threads: %w", err)
		}
		for _, sp := range spaces {
			pins, err := opts.Pins(ctx, sp.Thread)
			if err != nil {
				return total, fmt.Errorf("prune: %w", err)
			}
			st, err := prune(ctx, sp, pins)
			if err != nil {
				return total, fmt.Errorf("prune %s/%s: %w", sp.Thread, sp.NS, err)
			}
			total = total.Add(st)
		}
		if len(spaces) < PruneSpacePage {
			return total, nil
		}
		after = spaces[len(spaces)-1]
	}
}

// Pins returns the set of checkpoint ids o.Pinned names for threadID,
// nil when o.Pinned is unset.
func (o PruneOptions) Pins(ctx context.Context, threadID string) (map[string]bool, error) {
	if o.Pinned == nil {
		return nil, nil
	}
	ids, err := o.Pinned(ctx, threadID)
	if err != nil {
		return nil, fmt.Errorf("pinned checkpoints of %s: %w", threadID, err)
	}
	pins := make(map[string]bool, len(ids))
	for _, id := range ids {
		pins[id] = true
	}
	return pins, nil
}

// PruneStats counts what a prune removed, or with DryRun would remove.
type PruneStats struct {
	Threads     int   // thread namespaces that lose at least one checkpoint
	Checkpoints int   // checkpoints removed
	Blobs       int   // blobs removed
	Writes      int   // pending writes removed
	Bytes       int64 // stored bytes of the removed checkpoints, blobs and writes
}

// Add sums two counts.
func (s PruneStats) Add(o PruneStats) PruneStats {
	return PruneStats{
		Threads:     s.Threads + o.Threads,
		Checkpoints: s.Checkpoints + o.Checkpoints,
		Blobs:       s.Blobs + o.Blobs,
		Writes:      s.Writes + o.Writes,
		Bytes:       s.Bytes + o.Bytes,
	}
}

// PruneNode is one stored checkpoint of a thread namespace as PlanPrune
// sees it.
type PruneNode struct {
	ID       string
	ParentID string
	Versions map[string]string
	// Pinned keeps the checkpoint whatever its age (PruneOptions.Pinned
	// and KeepInputs).
	Pinned bool
}

// PruneBlob is one stored blob of a thread namespace, without its data.
type PruneBlob struct {
	Field, Version string
	Delta          bool
	Base           string
}

// PruneRead is one thread namespace as a Pruner reads it to prune it.
type PruneRead struct {
	Nodes []PruneNode
	Blobs []PruneBlob
	// Sizes are the stored bytes of each checkpoint, by id, its pending
	// writes' included; BlobSizes those of each blob, by index in Blobs.
	Sizes     map[string]int64
	BlobSizes []int64
	// Writes counts each checkpoint's pending writes, by id.
	Writes map[string]int
}

// Plan is PlanPrune of r keeping keep, with the stats of what it drops.
func (r *PruneRead) Plan(keep int) (dropIDs []string, dropBlobs []int, st PruneStats) {
	dropIDs, dropBlobs = PlanPrune(r.Nodes, r.Blobs, keep)
	if len(dropIDs) > 0 {
		st.Threads = 1
	}
	st.Checkpoints, st.Blobs = len(dropIDs), len(dropBlobs)
	for _, id := range dropIDs {
		st.Writes += r.Writes[id]
		st.Bytes += r.Sizes[id]
	}
	for _, i := range dropBlobs {
		st.Bytes += r.BlobSizes[i]
	}
	return dropIDs, dropBlobs, st
}

// PlanPrune decides, for one thread namespace, which checkpoints and blobs
// survive a prune keeping keep (at least 1) per branch. It keeps:
//
//   - each branch's head, a checkpoint no other names as parent, with its
//     keep-1 nearest ancestors. The newest checkpoint is a head, so the
//     thread's current branch keeps its newest keep checkpoints; every
//     fork (an edited turn's branch) keeps its own, so each branch still
//     loads, lists and forks from its recent past. A pending interrupt,
//     static or raised by a task, sits on a checkpoint no later step has
//     followed yet, which is a head too.
//   - every pinned checkpoint (PruneNode.Pinned).
//   - every blob a kept checkpoint names, and every blob down each delta
//     blob's Base chain to the full value, whatever checkpoint wrote it:
//     a delta is worthless without its base, so dropping the checkpoint
//     that introduced a base never drops the base itself.
//
// It returns the ids of the checkpoints to drop, and the blobs to drop as
// indexes into blobs. Blobs the caller did not list are never dropped, so a
// Put racing a prune cannot lose the blobs it adds.
func PlanPrune(nodes []PruneNode, blobs []PruneBlob, keep int) (dropIDs []string, dropBlobs []int) {
	keep = max(keep, 1)
	byID := make(map[string]*PruneNode, len(nodes))
	isParent := make(map[string]bool, len(nodes))
	for i := range nodes {
		byID[nodes[i].ID] = &nodes[i]
		if nodes[i].ParentID != "" {
			isParent[nodes[i].ParentID] = true
		}
	}
	kept := make(map[string]bool)
	for i := range nodes {
		if isParent[nodes[i].ID] {
			continue
		}
		n := &nodes[i]
		for k := 0; k < keep && n != nil && !kept[n.ID]; k++ {
			kept[n.ID] = true
			n = byID[n.ParentID]
		}
	}
	// Pins are marked after the heads' walks, which stop at a checkpoint
	// already kept: a pin must not cut a branch's window short.
	for i := range nodes {
		if nodes[i].Pinned {
			kept[nodes[i].ID] = true
		}
	}
	type key struct{ field, version string }
	index := make(map[key]int, len(blobs))
	for i, b := range blobs {
		index[key{b.Field, b.Version}] = i
	}
	needed := make([]bool, len(blobs))
	for i := range nodes {
		if !kept[nodes[i].ID] {
			dropIDs = append(dropIDs, nodes[i].ID)
			continue
		}
		for field, version := range nodes[i].Versions {
			// A corrupt cycle ends at a blob already marked.
			for j, ok := index[key{field, version}]; ok && !needed[j]; j, ok = index[key{field, blobs[j].Base}] {
				needed[j] = true
				if !blobs[j].Delta || blobs[j].Base == "" {
					break
				}
			}
		}
	}
	for i, keepIt := range needed {
		if !keepIt {
			dropBlobs = append(dropBlobs, i)
		}
	}
	slices.Sort(dropIDs)
	return dropIDs, dropBlobs
}
