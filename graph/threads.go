package graph

import (
	"sync"
	"unsafe"
)

// ThreadCacheLimits bounds a graph's thread cache, which keeps the state
// of the threads run last so that their next run continues from memory
// (see Persistence in the package doc). The oldest states go first. The
// zero value keeps DefaultThreadCacheThreads threads and
// DefaultThreadCacheBytes.
type ThreadCacheLimits struct {
	// Threads bounds how many threads' states are kept; 0 means
	// DefaultThreadCacheThreads, and a negative value keeps none, so that
	// every run loads its thread from the Checkpointer.
	Threads int
	// Bytes bounds the states' size as stored; 0 or less means
	// DefaultThreadCacheBytes.
	Bytes int64
}

// The thread cache's default bounds. Every pointer in a cached state is
// work for the garbage collector, however small the state: the threads
// bound keeps that work in check when many small states would fit the
// bytes bound.
const (
	DefaultThreadCacheThreads = 1024
	DefaultThreadCacheBytes   = 64 << 20
)

// spareEntries is how many evicted entries the cache keeps for runs to
// reuse.
const spareEntries = 8

// entryOverhead is what one cached thread is counted for beyond its
// state's stored bytes: its key, its entry and its map slot, so that many
// threads with tiny states are bounded too.
const entryOverhead = 256

// threadCache keeps the state of threads as their last run left it, so
// the next run on a thread takes it from memory instead of decoding the
// thread's whole history from the checkpointer: decoding costs what the
// conversation has grown to, a turn should cost what it adds.
//
// An entry names the checkpoint its state is the state of. A run takes it
// only if that checkpoint is still the thread's newest (anything else — a
// process sharing the store, UpdateState, a fork — wrote a newer one),
// and takes it away: no two runs ever hold the same state, so a run
// appends to its slices in place, as the run that left them would have.
// Entries are evicted oldest first beyond the bounds.
type threadCache[S any] struct {
	mu         sync.Mutex
	maxThreads int
	maxBytes   int64
	size       int64
	entries    map[threadKey]*threadEntry[S]
	// head is the sentinel of the list of entries, newest first.
	head threadEntry[S]
	// spare holds entries evicted or dropped, cleared, for the next runs'
	// bookkeeping: once the cache is full, a run that starts a thread —
	// or a run on a thread the cache lost — allocates no entry of its own.
	spare []*threadEntry[S]
}

type threadKey struct{ thread, ns string }

// threadEntry is what the engine knows of a thread beyond its
// checkpoints: how its fields are stored, which a run keeps up to date,
// and, once the run has left it in the cache, its state.
type threadEntry[S any] struct {
	key        threadKey
	checkpoint string
	state      S
	// sizes are the stored bytes of each field's value: a full blob's
	// length, or a delta chain's total.
	sizes []int
	// chains are each append field's delta blobs after its full one,
	// oldest first; see link.
	chains     [][]chainLink
	bytes      int64
	prev, next *threadEntry[S]
}

func newThreadEntry[S any](fields int) *threadEntry[S] {
	return &threadEntry[S]{sizes: make([]int, fields), chains: make([][]chainLink, fields)}
}

// newThreadCache returns a cache within limits, or nil if they keep
// nothing.
func newThreadCache[S any](limits ThreadCacheLimits) *threadCache[S] {
	if limits.Threads < 0 {
		return nil
	}
	c := &threadCache[S]{maxThreads: limits.Threads, maxBytes: limits.Bytes, entries: make(map[threadKey]*threadEntry[S])}
	if c.maxThreads == 0 {
		c.maxThreads = DefaultThreadCacheThreads
	}
	if c.maxBytes <= 0 {
		c.maxBytes = DefaultThreadCacheBytes
	}
	c.head.prev, c.head.next = &c.head, &c.head
	return c
}

// entry returns a spare entry, or a new one, for a run's bookkeeping.
func (c *threadCache[S]) entry(fields int) *threadEntry[S] {
	c.mu.Lock()
	if n := len(c.spare); n > 0 {
		e := c.spare[n-1]
		c.spare = c.spare[:n-1]
		c.mu.Unlock()
		return e
	}
	c.mu.Unlock()
	return newThreadEntry[S](fields)
}

// has reports whether anything is cached for key, so that a run on a
// thread the cache does not know asks the checkpointer nothing more than
// it did before there was a cache.
func (c *threadCache[S]) has(key threadKey) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.entries[key] != nil
}

// take removes key's entry and returns it if it holds the state of
// checkpoint; a stale entry is dropped.
func (c *threadCache[S]) take(key threadKey, checkpoint string) *threadEntry[S] {
	c.mu.Lock()
	defer c.mu.Unlock()
	e := c.entries[key]
	if e == nil {
		return nil
	}
	c.remove(e)
	if e.checkpoint != checkpoint {
		c.recycle(e)
		return nil
	}
	return e
}

// drop forgets key.
func (c *threadCache[S]) drop(key threadKey) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e := c.entries[key]; e != nil {
		c.remove(e)
		c.recycle(e)
	}
}

// put keeps e, replacing what its key held, and evicts the oldest entries
// beyond the bound. An entry larger than the whole bound is not kept.
func (c *threadCache[S]) put(e *threadEntry[S]) {
	e.bytes = entryOverhead
	for _, n := range e.sizes {
		e.bytes += int64(n)
	}
	for _, links := range e.chains {
		e.bytes += int64(len(links)) * int64(unsafe.Sizeof(chainLink{}))
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if old := c.entries[e.key]; old != nil {
		c.remove(old)
		c.recycle(old)
	}
	if e.bytes > c.maxBytes {
		c.recycle(e)
		return
	}
	for len(c.entries) >= c.maxThreads || c.size+e.bytes > c.maxBytes {
		old := c.head.prev
		c.remove(old)
		c.recycle(old)
	}
	c.entries[e.key] = e
	c.size += e.bytes
	e.prev, e.next = &c.head, c.head.next
	e.next.prev, c.head.next = e, e
}

// recycle clears e, which nothing else holds, and keeps it as a spare;
// the caller holds c.mu.
func (c *threadCache[S]) recycle(e *threadEntry[S]) {
	if len(c.spare) == spareEntries {
		return
	}
	var none S
	e.key, e.checkpoint, e.state, e.bytes = threadKey{}, "", none, 0
	clear(e.sizes)
	for i, links := range e.chains {
		clear(links)
		e.chains[i] = links[:0]
	}
	c.spare = append(c.spare, e)
}

// remove unlinks e; the caller holds c.mu.
func (c *threadCache[S]) remove(e *threadEntry[S]) {
	delete(c.entries, e.key)
	c.size -= e.bytes
	e.prev.next, e.next.prev = e.next, e.prev
	e.prev, e.next = nil, nil
}
