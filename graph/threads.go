package graph

import (
	"sync"
	"unsafe"
)

// DefaultThreadCacheBytes is how much state CompileOptions.ThreadCacheBytes
// keeps by default, measured as stored.
const DefaultThreadCacheBytes = 64 << 20

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
// Entries are evicted oldest first once their stored bytes pass the bound.
type threadCache[S any] struct {
	mu      sync.Mutex
	limit   int64
	size    int64
	entries map[threadKey]*threadEntry[S]
	// head is the sentinel of the list of entries, newest first.
	head threadEntry[S]
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

func newThreadCache[S any](limit int64) *threadCache[S] {
	c := &threadCache[S]{limit: limit, entries: make(map[threadKey]*threadEntry[S])}
	c.head.prev, c.head.next = &c.head, &c.head
	return c
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
	}
	if e.bytes > c.limit {
		return
	}
	for c.size+e.bytes > c.limit {
		c.remove(c.head.prev)
	}
	c.entries[e.key] = e
	c.size += e.bytes
	e.prev, e.next = &c.head, c.head.next
	e.next.prev, c.head.next = e, e
}

// remove unlinks e; the caller holds c.mu.
func (c *threadCache[S]) remove(e *threadEntry[S]) {
	delete(c.entries, e.key)
	c.size -= e.bytes
	e.prev.next, e.next.prev = e.next, e.prev
	e.prev, e.next = nil, nil
}
