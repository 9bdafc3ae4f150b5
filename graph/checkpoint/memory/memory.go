package memory

import (
	"cmp"
	"context"
	"encoding/binary"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/trellis-ai/trellis/graph"
)

var _ graph.Checkpointer = (*Saver)(nil)

// Saver is an in-memory graph.Checkpointer. The zero value is not usable;
// call New. It is safe for concurrent use.
type Saver struct {
	mu      sync.RWMutex
	threads map[string]*thread
	// recent is the namespace Put wrote last: a run puts a checkpoint
	// after every step into the same one, and with many threads the two
	// map lookups that find it cost more than the rest of Put's
	// bookkeeping. Written with mu held for writing; DeleteThread clears
	// it.
	recent *namespace
	own    []graph.Blob // Put's scratch, under mu
	buf    []byte       // pack's scratch, under mu
}

// thread holds a thread's namespaces: the root one, which every thread has,
// and those of subgraphs.
type thread struct {
	root *namespace
	subs map[string]*namespace // by name; nil until a subgraph checkpoints
}

// namespace holds one thread namespace. Blobs are shared by all of its
// checkpoints, as in the SQL backends, so an unchanged field costs nothing.
//
// A blob whose version is the id of the checkpoint it came with — every
// blob the engine writes — is kept in that checkpoint's entry and found
// by the same binary search as the checkpoint: a map of every blob cost
// more, growing with each Put, than the rest of Put together. Other blobs
// are kept in loose. A version is stored once, in one of the two places:
// whichever is put first wins.
type namespace struct {
	thread, name string
	checkpoints  []*entry // sorted by checkpoint id, which is creation order
	loose        map[blobKey]storedBlob
}

type blobKey struct{ field, version string }

// storedBlob is a blob as the saver keeps it; its strings may share the
// memory of an entry's packed string.
type storedBlob struct {
	field, version, base, data string
	delta                      bool
}

// entry is a stored checkpoint. Its field versions, its own blobs (those
// whose version is its id) and its planned tasks are packed into one
// string, see pack: stored as slices of pairs, of graph.Blob and of
// graph.TaskSpec, they held most of the pointers the garbage collector
// had to follow through every checkpoint a process keeps, and took four
// allocations per Put instead of one.
type entry struct {
	id, parentID      string
	runID             string
	source            graph.Source
	step              int
	created           time.Time
	barriers          map[string][]string
	interruptedAfter  []string
	interruptedBefore bool
	blobsAt           int32 // where the blobs start in packed
	tasksAt           int32 // where the tasks start in packed
	packed            string
	writes            []graph.Write // sorted by task id, then index
}

func newEntry(cp graph.Checkpoint) *entry {
	e := &entry{
		id: cp.ID, parentID: cp.ParentID, runID: cp.RunID, step: cp.Step, source: cp.Source,
		created:           cp.CreatedAt.UTC(), // as the SQL backends return it
		interruptedBefore: cp.InterruptedBefore,
	}
	// Empty collections become nil, as they do after the JSON round trip
	// the SQL backends make, so every backend returns the same shape.
	e.barriers = cloneBarriers(cp.Barriers)
	e.interruptedAfter = cloneStrings(cp.InterruptedAfter)
	return e
}

// checkpoint returns a deep copy of the stored checkpoint of namespace ns.
func (e *entry) checkpoint(ns *namespace) graph.Checkpoint {
	cp := graph.Checkpoint{
		ThreadID: ns.thread, Namespace: ns.name, ID: e.id, ParentID: e.parentID,
		Step: e.step, Source: e.source, CreatedAt: e.created, RunID: e.runID,
		Barriers: cloneBarriers(e.barriers), InterruptedBefore: e.interruptedBefore,
		InterruptedAfter: cloneStrings(e.interruptedAfter),
	}
	r := reader{s: e.packed, i: int(e.tasksAt)}
	if n := r.count(); n > 0 {
		cp.Tasks = make([]graph.TaskSpec, n)
		for i := range cp.Tasks {
			cp.Tasks[i] = graph.TaskSpec{ID: r.str(), Node: r.str()}
			if in := r.str(); in != "" {
				cp.Tasks[i].Input = []byte(in)
			}
		}
	}
	r = reader{s: e.packed}
	if n := r.count(); n > 0 {
		cp.Versions = make(map[string]string, n)
		for range n {
			field := r.str()
			cp.Versions[field] = r.str()
		}
	}
	return cp
}

// The packed form of an entry is
//
//	count { field version }            the versions, count pairs
//	count { field base delta data }    the entry's own blobs
//	count { id node input }            the planned tasks
//
// where a count is a uvarint, a string is its length as a uvarint and its
// bytes, and delta is one byte, 0 or 1. Strings read back are substrings
// of the packed one: no copies, and immutable as strings are.
//
// buf is scratch to pack into; pack returns it for reuse. It sets e's
// packed form and where its sections start.
func pack(e *entry, buf []byte, versions map[string]string, blobs []graph.Blob, tasks []graph.TaskSpec) []byte {
	buf = binary.AppendUvarint(buf[:0], uint64(len(versions)))
	for f, v := range versions {
		buf = appendStr(appendStr(buf, f), v)
	}
	e.blobsAt = int32(len(buf))
	buf = binary.AppendUvarint(buf, uint64(len(blobs)))
	for _, b := range blobs {
		buf = appendStr(appendStr(buf, b.Field), b.Base)
		if b.Delta {
			buf = append(buf, 1)
		} else {
			buf = append(buf, 0)
		}
		buf = binary.AppendUvarint(buf, uint64(len(b.Data)))
		buf = append(buf, b.Data...)
	}
	e.tasksAt = int32(len(buf))
	buf = binary.AppendUvarint(buf, uint64(len(tasks)))
	for _, t := range tasks {
		buf = appendStr(appendStr(buf, t.ID), t.Node)
		buf = binary.AppendUvarint(buf, uint64(len(t.Input)))
		buf = append(buf, t.Input...)
	}
	e.packed = string(buf)
	return buf
}

func appendStr(buf []byte, s string) []byte {
	return append(binary.AppendUvarint(buf, uint64(len(s))), s...)
}

// reader reads a packed entry; it trusts what pack wrote.
type reader struct {
	s string
	i int
}

func (r *reader) count() int {
	var n uint64
	for shift := 0; ; shift += 7 {
		c := r.s[r.i]
		r.i++
		n |= uint64(c&0x7f) << shift
		if c < 0x80 {
			return int(n)
		}
	}
}

func (r *reader) str() string {
	n := r.count()
	s := r.s[r.i : r.i+n]
	r.i += n
	return s
}

// blobs calls fn with each of the entry's own blobs until it returns
// false.
func (e *entry) blobs(fn func(storedBlob) bool) {
	r := reader{s: e.packed, i: int(e.blobsAt)}
	for range r.count() {
		b := storedBlob{field: r.str(), version: e.id, base: r.str()}
		b.delta = r.s[r.i] == 1
		r.i++
		b.data = r.str()
		if !fn(b) {
			return
		}
	}
}

// blob returns the entry's own blob of field.
func (e *entry) blob(field string) (storedBlob, bool) {
	var found storedBlob
	ok := false
	e.blobs(func(b storedBlob) bool {
		if b.field == field {
			found, ok = b, true
		}
		return !ok
	})
	return found, ok
}

// New returns an empty Saver.
func New() *Saver {
	return &Saver{threads: make(map[string]*thread)}
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

	s.mu.Lock()
	defer s.mu.Unlock()
	ns := s.recent
	if ns == nil || ns.thread != cp.ThreadID || ns.name != cp.Namespace {
		ns = s.namespace(cp.ThreadID, cp.Namespace, true)
		s.recent = ns
	}
	n := len(ns.checkpoints)
	i, found := n, false
	if n > 0 && ns.checkpoints[n-1].id >= cp.ID { // the engine's ids grow: rare
		i, found = ns.find(cp.ID)
	}
	// The first value of a version wins: a blob of this checkpoint's own
	// version is new unless loose holds it, the checkpoint had it when it
	// was put before (its blobs stay), or it came twice.
	own := s.own[:0]
	if found {
		old := ns.checkpoints[i]
		stored.writes = old.writes
		old.blobs(func(b storedBlob) bool {
			own = append(own, graph.Blob{Field: b.field, Version: b.version, Delta: b.delta, Base: b.base, Data: []byte(b.data)})
			return true
		})
	}
	for _, b := range blobs {
		if b.Version != cp.ID {
			if _, ok := ns.blob(b.Field, b.Version); !ok {
				ns.setLoose(storedBlob{field: b.Field, version: b.Version, base: b.Base, data: string(b.Data), delta: b.Delta})
			}
			continue
		}
		if _, ok := ns.loose[blobKey{b.Field, b.Version}]; ok || slices.ContainsFunc(own, func(o graph.Blob) bool { return o.Field == b.Field }) {
			continue
		}
		own = append(own, b)
	}
	s.buf = pack(stored, s.buf, cp.Versions, own, cp.Tasks)
	clear(own) // no references to the caller's bytes
	s.own = own[:0]
	switch {
	case found:
		ns.checkpoints[i] = stored
	case i == n:
		ns.checkpoints = append(ns.checkpoints, stored)
	default:
		ns.checkpoints = slices.Insert(ns.checkpoints, i, stored)
	}
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
	saved := &graph.Saved{Checkpoint: e.checkpoint(ns)}

	found := make([]storedBlob, 0, len(saved.Checkpoint.Versions))
	for field, version := range saved.Checkpoint.Versions {
		// Follow the delta chain. A version seen before in the chain stops
		// a corrupt cycle; while each base is older than its version, as
		// the engine's are, none can repeat and there is nothing to check.
		start, monotone := len(found), true
		for {
			b, ok := ns.blob(field, version)
			if !ok {
				break
			}
			if !monotone && slices.ContainsFunc(found[start:], func(f storedBlob) bool { return f.version == version }) {
				break
			}
			found = append(found, b)
			if !b.delta || b.base == "" {
				break
			}
			if b.base >= version {
				monotone = false
			}
			version = b.base
		}
	}
	saved.Blobs = toBlobs(found)
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
		out = append(out, ns.checkpoints[i].checkpoint(ns))
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
	if s.recent != nil && s.recent.thread == threadID {
		s.recent = nil
	}
	return nil
}

// namespace returns the namespace, creating it when create is set; without
// it a missing namespace is nil. Callers hold s.mu.
func (s *Saver) namespace(threadID, name string, create bool) *namespace {
	th := s.threads[threadID]
	if th == nil {
		if !create {
			return nil
		}
		th = &thread{}
		s.threads[threadID] = th
	}
	if name == "" {
		if th.root == nil && create {
			th.root = &namespace{thread: threadID}
		}
		return th.root
	}
	ns := th.subs[name]
	if ns == nil && create {
		if th.subs == nil {
			th.subs = make(map[string]*namespace)
		}
		ns = &namespace{thread: threadID, name: name}
		th.subs[name] = ns
	}
	return ns
}

// blob returns the stored blob of a field version. Callers hold s.mu.
func (ns *namespace) blob(field, version string) (storedBlob, bool) {
	if b, ok := ns.loose[blobKey{field, version}]; ok {
		return b, true
	}
	if i, found := ns.find(version); found {
		return ns.checkpoints[i].blob(field)
	}
	return storedBlob{}, false
}

func (ns *namespace) setLoose(b storedBlob) {
	if ns.loose == nil {
		ns.loose = make(map[blobKey]storedBlob)
	}
	ns.loose[blobKey{b.field, b.version}] = b
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
		return strings.Compare(e.id, id)
	})
}

func compareWrites(a, b graph.Write) int {
	return cmp.Or(strings.Compare(a.TaskID, b.TaskID), cmp.Compare(a.Index, b.Index))
}

// cloneBarriers deep-copies barriers; empty becomes nil.
func cloneBarriers(barriers map[string][]string) map[string][]string {
	if len(barriers) == 0 {
		return nil
	}
	out := make(map[string][]string, len(barriers))
	for k, v := range barriers {
		out[k] = slices.Clone(v) // keeps nil apart from empty, as JSON does
	}
	return out
}

// toBlobs returns the blobs as graph.Blobs of their own, their bytes in
// one new array. Empty data becomes nil, as in cloneBytes.
func toBlobs(stored []storedBlob) []graph.Blob {
	if len(stored) == 0 {
		return nil
	}
	size := 0
	for _, b := range stored {
		size += len(b.data)
	}
	data := make([]byte, 0, size)
	out := make([]graph.Blob, len(stored))
	for i, b := range stored {
		out[i] = graph.Blob{Field: b.field, Version: b.version, Delta: b.delta, Base: b.base}
		if len(b.data) > 0 {
			start := len(data)
			data = append(data, b.data...)
			out[i].Data = data[start:len(data):len(data)]
		}
	}
	return out
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
