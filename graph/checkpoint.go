package graph

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"
)

// ErrCheckpointNotFound is returned by a Checkpointer when the thread has no
// checkpoint, or none with the requested id.
var ErrCheckpointNotFound = errors.New("graph: checkpoint not found")

// Source says what produced a checkpoint.
type Source string

const (
	// SourceInput is the checkpoint written before the first step of a run,
	// holding the run's input, so a crash before step 1 loses nothing.
	SourceInput Source = "input"
	// SourceLoop is written after every completed superstep.
	SourceLoop Source = "loop"
	// SourceUpdate is written by UpdateState.
	SourceUpdate Source = "update"
	// SourceFork is written by UpdateState on a checkpoint that is not the
	// newest of its thread: history keeps the old branch.
	SourceFork Source = "fork"
)

// Reserved pending-write channels. State fields are written under their Go
// field names, which cannot start with an underscore.
const (
	ChannelInterrupt = "__interrupt__" // a pending interrupt raised by the task
	ChannelResume    = "__resume__"    // a value that answers one of the task's interrupts
	ChannelError     = "__error__"     // the task failed; the value is its message
	ChannelGoto      = "__goto__"      // a Command's goto targets
	ChannelSend      = "__send__"      // a Command's Sends
	ChannelDone      = "__done__"      // the task finished; present even when it wrote nothing
)

// Ref names a checkpoint. An empty ID means the newest checkpoint of the
// thread's namespace.
type Ref struct {
	ThreadID  string
	Namespace string // "" for the root graph; subgraphs get "node:task" paths
	ID        string
}

// Checkpoint is the state of one thread after a superstep. Field values are
// not inside it: Versions names, per state field, the version whose Blob
// holds the value, so a field that did not change is never written again.
type Checkpoint struct {
	ThreadID  string    `json:"thread_id"`
	Namespace string    `json:"ns,omitempty"`
	ID        string    `json:"id"`
	ParentID  string    `json:"parent_id,omitempty"`
	Step      int       `json:"step"`
	Source    Source    `json:"source"`
	CreatedAt time.Time `json:"created_at"`
	// RunID is the RunConfig.RunID of the run that wrote the checkpoint
	// ("" when it named none): how a caller tells whether a run of its
	// own got as far as storing anything.
	RunID string `json:"run_id,omitempty"`
	// Versions maps each state field to the version of its current value.
	Versions map[string]string `json:"versions,omitempty"`
	// Tasks are the tasks planned for the next superstep, in run order. An
	// empty list means the run had finished.
	Tasks []TaskSpec `json:"tasks,omitempty"`
	// Barriers holds, per join target, the sources that have already
	// finished since the join last fired.
	Barriers map[string][]string `json:"barriers,omitempty"`
	// InterruptedBefore marks Tasks as stopped by a static interrupt before
	// them, so continuing the thread runs them instead of stopping again.
	InterruptedBefore bool `json:"interrupted_before,omitempty"`
	// InterruptedAfter lists the nodes of the step just finished that hit a
	// static interrupt after them.
	InterruptedAfter []string `json:"interrupted_after,omitempty"`
}

// TaskSpec is one planned task.
type TaskSpec struct {
	ID   string `json:"id"`
	Node string `json:"node"`
	// Input is the JSON state given by a Send; empty for tasks that read the
	// graph state.
	Input json.RawMessage `json:"input,omitempty"`
}

// Blob is the stored value of one state field at one version.
type Blob struct {
	Field   string
	Version string
	// Delta marks a value that holds only what an append reducer added
	// since Base, so an ever-growing list costs what it grows by, not what
	// it holds. Readers concatenate the chain from the oldest full blob.
	// Base need not be the field's previous version: the engine now and
	// then writes a delta that merges the chain's newest ones, based
	// where the first of them was, to keep chains short.
	Delta bool
	Base  string
	Data  []byte
}

// Write is one entry a task wrote before its superstep finished: a state
// field's update or a reserved channel such as ChannelInterrupt.
type Write struct {
	TaskID  string
	Index   int // position within the task; writing the same index again replaces it
	Channel string
	Value   []byte
}

// Saved is a checkpoint as loaded back.
type Saved struct {
	Checkpoint Checkpoint
	// Blobs holds the blob of every field in Checkpoint.Versions and, for
	// delta blobs, every blob down their Base chain to a full one.
	Blobs []Blob
	// Writes are the pending writes of tasks that started from this
	// checkpoint, ordered by task id and index.
	Writes []Write
}

// ListOptions selects checkpoints of one thread namespace, newest first.
type ListOptions struct {
	ThreadID  string
	Namespace string
	// Before, when set, returns only checkpoints older than this id.
	Before string
	// Limit caps the number returned; 0 means no limit.
	Limit int
}

// Checkpointer persists checkpoints. Implementations must be safe for
// concurrent use, and all of them pass checkpointtest.Run.
//
// Checkpoint ids sort in creation order as strings within a thread.
type Checkpointer interface {
	// Put stores a checkpoint with the blobs of the fields whose version it
	// introduces. Storing a blob version that exists already is not an
	// error and keeps the first data; putting a checkpoint id again
	// replaces the checkpoint and keeps its writes. Put must not keep cp's
	// maps and slices or the blobs' bytes after it returns: the engine
	// reuses them.
	Put(ctx context.Context, cp Checkpoint, blobs []Blob) error
	// PutWrites stores pending writes against the checkpoint their task
	// started from (ref.ID must name it; otherwise the error matches
	// ErrCheckpointNotFound). A write with the same task and index
	// replaces the old.
	PutWrites(ctx context.Context, ref Ref, writes []Write) error
	// Get loads a checkpoint, its blobs (in no particular order) and its
	// pending writes. It returns an error matching ErrCheckpointNotFound
	// when there is none. A blob the checkpoint names but the store lacks
	// is left out; the engine then fails loudly rather than guess.
	// TaskSpec.Input comes back as equal JSON, not necessarily equal bytes.
	Get(ctx context.Context, ref Ref) (*Saved, error)
	// List returns checkpoints, newest first, without blobs. A run on a
	// thread whose state the engine holds in memory starts with a List of
	// Limit 1, to learn whether that state is still the newest: it should
	// cost one index lookup, whatever the thread's length.
	List(ctx context.Context, opts ListOptions) ([]Checkpoint, error)
	// DeleteThread removes every checkpoint, blob and write of a thread, in
	// every namespace.
	DeleteThread(ctx context.Context, threadID string) error
}

// BatchPutter is a Checkpointer that stores several checkpoints in one
// transaction. A run whose input's checkpoint waits for its next one
// (RunConfig.DeferInput) writes both with one PutBatch where the
// checkpointer has it, and with two Puts where it does not.
type BatchPutter interface {
	// PutBatch stores each checkpoint as Put would, in order (a later
	// one's delta blobs may build on an earlier one's), all or none.
	PutBatch(ctx context.Context, puts []CheckpointPut) error
}

// CheckpointPut is one checkpoint of a PutBatch, with its blobs as Put
// takes them.
type CheckpointPut struct {
	Checkpoint Checkpoint
	Blobs      []Blob
}

// EncodeCheckpoint is the JSON form backends store a Checkpoint in.
func EncodeCheckpoint(cp Checkpoint) ([]byte, error) {
	b, err := json.Marshal(cp)
	if err != nil {
		return nil, fmt.Errorf("graph: encode checkpoint %s: %w", cp.ID, err)
	}
	return b, nil
}

// DecodeCheckpoint parses what EncodeCheckpoint produced. Stored bytes are
// outside input: anything malformed is an error, never a panic.
func DecodeCheckpoint(data []byte) (Checkpoint, error) {
	var cp Checkpoint
	if err := json.Unmarshal(data, &cp); err != nil {
		return Checkpoint{}, fmt.Errorf("graph: decode checkpoint: %w", err)
	}
	if cp.ID == "" || cp.ThreadID == "" {
		return Checkpoint{}, fmt.Errorf("graph: decode checkpoint: missing id or thread id")
	}
	for _, t := range cp.Tasks {
		if t.ID == "" || t.Node == "" {
			return Checkpoint{}, fmt.Errorf("graph: decode checkpoint %s: task without id or node", cp.ID)
		}
	}
	return cp, nil
}

// decodeState rebuilds a state from a checkpoint's blobs, following delta
// chains back to their full value. With kept it also records, for the
// run that continues from the state, each field's stored size and each
// append field's chain (see threadEntry.link).
func (c *Compiled[S]) decodeState(saved *Saved, kept *threadEntry[S]) (S, error) {
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
		f := &c.schema.fields[i]
		for k := len(chain) - 1; k >= 0; k-- {
			b := chain[k]
			start := 0
			if f.length != nil {
				start = f.length(&s)
			}
			if err := c.schema.decodeField(&s, i, b.Data, b.Delta); err != nil {
				return s, fmt.Errorf("graph: checkpoint %s: %w", cp.ID, err)
			}
			if kept == nil {
				continue
			}
			kept.sizes[i] += len(b.Data)
			if f.kind == kindAppend && k < len(chain)-1 {
				kept.chains[i] = append(kept.chains[i], chainLink{version: b.Version, base: b.Base,
					start: start, end: f.length(&s), bytes: len(b.Data)})
			}
		}
	}
	return s, nil
}
