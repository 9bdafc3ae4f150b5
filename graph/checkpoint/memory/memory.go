package memory

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/trellis-ai/trellis/graph"
)

var _ graph.Checkpointer = (*Saver)(nil)

// Saver is an in-memory graph.Checkpointer. The zero value is not usable;
// call New. It is safe for concurrent use.
type Saver struct {
	mu      sync.RWMutex
	threads map[string]map[string]*namespace // thread id → namespace → data
}

// namespace holds one thread namespace. Blobs are shared by all of its
// checkpoints, as in the SQL backends, so an unchanged field costs nothing.
type namespace struct {
	checkpoints []*entry // sorted by checkpoint id, which is creation order
	blobs       map[blobKey]graph.Blob
}

type blobKey struct{ field, version string }

type entry struct {
	cp graph.Checkpoint // with Versions nil: they live in versions
	// versions holds cp.Versions as pairs: copying a map on every Put cost
	// more than the rest of Put together.
	versions []fieldVersion
	writes   []graph.Write // sorted by task id, then index
}

type fieldVersion struct{ field, version string }

func newEntry(cp graph.Checkpoint) *entry {
	e := &entry{cp: cloneCheckpoint(cp)}
	e.cp.Versions = nil
	if len(cp.Versions) > 0 {
		e.versions = make([]fieldVersion, 0, len(cp.Versions))
		for f, v := range cp.Versions {
			e.versions = append(e.versions, fieldVersion{f, v})
		}
	}
	e.cp.CreatedAt = e.cp.CreatedAt.UTC() // as the SQL backends return it
	return e
}

// checkpoint returns a deep copy of the stored checkpoint.
func (e *entry) checkpoint() graph.Checkpoint {
	cp := cloneCheckpoint(e.cp)
	if len(e.versions) > 0 {
		cp.Versions = make(map[string]string, len(e.versions))
		for _, fv := range e.versions {
			cp.Versions[fv.field] = fv.version
		}
	}
	return cp
}

// New returns an empty Saver.
func New() *Saver {
	return &Saver{threads: make(map[string]map[string]*namespace)}
}

// Put implements graph.Checkpointer. Putting a checkpoint id again replaces
// the checkpoint but keeps its pending writes.
func (s *Saver) Put(ctx context.Context, cp graph.Checkpoint, blobs []graph.Blob) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("memory: put checkpoint %s/%s: %w", cp.ThreadID, cp.ID, err)
	}
	if cp.ThreadID == "" || cp.ID == "" {
		return fmt.Errorf("memory: put checkpoint %q/%q: thread id and id are required", cp.ThreadID, cp.ID)
	}
	stored := newEntry(cp)
	copies := make([]graph.Blob, len(blobs))
	for i, b := range blobs {
		copies[i] = cloneBlob(b)
	}

	s.mu.Lock()
	defer s.mu.Unlock()
	ns := s.namespace(cp.ThreadID, cp.Namespace, true)
	for _, b := range copies {
		k := blobKey{b.Field, b.Version}
		if _, ok := ns.blobs[k]; !ok { // the first value of a version wins
			ns.blobs[k] = b
		}
	}
	if n := len(ns.checkpoints); n == 0 || ns.checkpoints[n-1].cp.ID < cp.ID {
		// The engine's ids grow, so this is the common case.
		ns.checkpoints = append(ns.checkpoints, stored)
		return nil
	}
	i, found := ns.find(cp.ID)
	if found {
		stored.writes = ns.checkpoints[i].writes
		ns.checkpoints[i] = stored
		return nil
	}
	ns.checkpoints = slices.Insert(ns.checkpoints, i, stored)
	return nil
}

// PutWrites implements graph.Checkpointer. It returns an error matching
// graph.ErrCheckpointNotFound when ref names no stored checkpoint.
func (s *Saver) PutWrites(ctx context.Context, ref graph.Ref, writes []graph.Write) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("memory: put writes %s/%s: %w", ref.ThreadID, ref.ID, err)
	}
	if len(writes) == 0 {
		return nil
	}
	copies := make([]graph.Write, len(writes))
	for i, w := range writes {
		copies[i] = cloneWrite(w)
	}

	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.lookup(ref)
	if e == nil || ref.ID == "" {
		return fmt.Errorf("memory: put writes %s/%s: %w", ref.ThreadID, ref.ID, graph.ErrCheckpointNotFound)
	}
	for _, w := range copies {
		i, found := slices.BinarySearchFunc(e.writes, w, compareWrites)
		if found {
			e.writes[i] = w
		} else {
			e.writes = slices.Insert(e.writes, i, w)
		}
	}
	return nil
}

// Get implements graph.Checkpointer. Blobs come sorted by field and
// version.
func (s *Saver) Get(ctx context.Context, ref graph.Ref) (*graph.Saved, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("memory: get checkpoint %s/%s: %w", ref.ThreadID, ref.ID, err)
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	e := s.lookup(ref)
	if e == nil {
		return nil, fmt.Errorf("memory: get checkpoint %s/%s: %w", ref.ThreadID, ref.ID, graph.ErrCheckpointNotFound)
	}
	ns := s.namespace(ref.ThreadID, ref.Namespace, false)
	saved := &graph.Saved{Checkpoint: e.checkpoint()}

	seen := make(map[blobKey]bool, len(e.versions))
	for _, fv := range e.versions {
		field, version := fv.field, fv.version
		// Follow the delta chain; seen stops a corrupt cycle.
		for k := (blobKey{field, version}); !seen[k]; {
			seen[k] = true
			b, ok := ns.blobs[k]
			if !ok {
				break
			}
			saved.Blobs = append(saved.Blobs, cloneBlob(b))
			if !b.Delta || b.Base == "" {
				break
			}
			k = blobKey{field, b.Base}
		}
	}
	slices.SortFunc(saved.Blobs, func(a, b graph.Blob) int {
		return cmp.Or(strings.Compare(a.Field, b.Field), strings.Compare(a.Version, b.Version))
	})

	if len(e.writes) > 0 {
		saved.Writes = make([]graph.Write, len(e.writes))
		for i, w := range e.writes {
			saved.Writes[i] = cloneWrite(w)
		}
	}
	return saved, nil
}

// List implements graph.Checkpointer.
func (s *Saver) List(ctx context.Context, opts graph.ListOptions) ([]graph.Checkpoint, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("memory: list checkpoints %s: %w", opts.ThreadID, err)
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	ns := s.namespace(opts.ThreadID, opts.Namespace, false)
	if ns == nil {
		return nil, nil
	}
	end := len(ns.checkpoints)
	if opts.Before != "" {
		end, _ = ns.find(opts.Before)
	}
	var out []graph.Checkpoint
	for i := end - 1; i >= 0; i-- {
		if opts.Limit > 0 && len(out) == opts.Limit {
			break
		}
		out = append(out, ns.checkpoints[i].checkpoint())
	}
	return out, nil
}

// DeleteThread implements graph.Checkpointer.
func (s *Saver) DeleteThread(ctx context.Context, threadID string) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("memory: delete thread %s: %w", threadID, err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.threads, threadID)
	return nil
}

// namespace returns the namespace, creating it when create is set; without
// it a missing namespace is nil. Callers hold s.mu.
func (s *Saver) namespace(threadID, name string, create bool) *namespace {
	thread := s.threads[threadID]
	if thread == nil {
		if !create {
			return nil
		}
		thread = make(map[string]*namespace)
		s.threads[threadID] = thread
	}
	ns := thread[name]
	if ns == nil && create {
		ns = &namespace{blobs: make(map[blobKey]graph.Blob)}
		thread[name] = ns
	}
	return ns
}

// lookup finds the checkpoint ref names, the newest when ref.ID is empty,
// or nil. Callers hold s.mu.
func (s *Saver) lookup(ref graph.Ref) *entry {
	ns := s.namespace(ref.ThreadID, ref.Namespace, false)
	if ns == nil || len(ns.checkpoints) == 0 {
		return nil
	}
	if ref.ID == "" {
		return ns.checkpoints[len(ns.checkpoints)-1]
	}
	i, found := ns.find(ref.ID)
	if !found {
		return nil
	}
	return ns.checkpoints[i]
}

// find reports where id is, or would be inserted, in ns.checkpoints.
func (ns *namespace) find(id string) (int, bool) {
	return slices.BinarySearchFunc(ns.checkpoints, id, func(e *entry, id string) int {
		return strings.Compare(e.cp.ID, id)
	})
}

func compareWrites(a, b graph.Write) int {
	return cmp.Or(strings.Compare(a.TaskID, b.TaskID), cmp.Compare(a.Index, b.Index))
}

// cloneCheckpoint deep-copies cp. Empty collections become nil, as they do
// after the JSON round trip the SQL backends make, so every backend returns
// the same shape.
func cloneCheckpoint(cp graph.Checkpoint) graph.Checkpoint {
	cp.Versions = nil // entry keeps them
	if len(cp.Tasks) > 0 {
		tasks := make([]graph.TaskSpec, len(cp.Tasks))
		for i, t := range cp.Tasks {
			t.Input = cloneBytes(t.Input)
			tasks[i] = t
		}
		cp.Tasks = tasks
	} else {
		cp.Tasks = nil
	}
	if len(cp.Barriers) > 0 {
		barriers := make(map[string][]string, len(cp.Barriers))
		for k, v := range cp.Barriers {
			barriers[k] = slices.Clone(v) // keeps nil apart from empty, as JSON does
		}
		cp.Barriers = barriers
	} else {
		cp.Barriers = nil
	}
	cp.InterruptedAfter = cloneStrings(cp.InterruptedAfter)
	return cp
}

func cloneBlob(b graph.Blob) graph.Blob {
	b.Data = cloneBytes(b.Data)
	return b
}

func cloneWrite(w graph.Write) graph.Write {
	w.Value = cloneBytes(w.Value)
	return w
}

func cloneBytes(b []byte) []byte {
	if len(b) == 0 {
		return nil
	}
	return slices.Clone(b)
}

func cloneStrings(s []string) []string {
	if len(s) == 0 {
		return nil
	}
	return slices.Clone(s)
}
