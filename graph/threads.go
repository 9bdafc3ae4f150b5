package graph

import "sync"

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

// chainLink is one delta blob of an append field: its version, the
// version it extends, the elements it holds, [start, end), and its
// stored bytes.
type chainLink struct {
	version, base string
	start, end    int
	bytes         int
}

// Delta chains are kept short by merging, LSM-style. A blob's tier is
// how many times chainFanout divides its element count, up to
// chainTiers. Whenever the newest blobs of tier t or lower hold
// chainFanout^(t+1) elements or more, they become one blob, of a higher
// tier, which holds what they held and extends what the first of them
// extended. Tier chainTiers is never merged.
//
// A merge lifts every element it rewrites to a higher tier, so each
// element is stored at most chainTiers+1 times: what a step writes stays
// flat, on average, whatever the thread's length. A chain holds fewer
// than chainFanout^chainTiers elements below the top tier, in at most
// 2(chainFanout-1) blobs when steps append elements one or two at a
// time, plus one top-tier blob per chainFanout^chainTiers elements or
// more: dozens of blobs to read back instead of one per step.
const (
	chainFanout = 16
	chainTiers  = 2
)

func chainTier(elements int) int {
	t := 0
	for elements >= chainFanout && t < chainTiers {
		elements /= chainFanout
		t++
	}
	return t
}

// link records field i's new delta blob, version, holding elements
// [start, end) on top of version base, and merges it with the blobs
// before it as the tiers say. It returns the base and first element of
// the blob to write.
//
// A chain written before merging existed, one blob per step, is one long
// run of the lowest tier: the first blob written on it merges all of it,
// once.
func (e *threadEntry[S]) link(i int, version, base string, start, end int) (string, int) {
	links := e.chains[i]
	if n := len(links); n > 0 && (links[n-1].version != base || links[n-1].end != start) {
		// Not the chain this blob extends: merging on it would store a
		// wrong value. Never seen; the blob is then written unmerged.
		links = links[:0]
	}
	links = append(links, chainLink{version: version, base: base, start: start, end: end})
	for t, limit := 0, chainFanout; t < chainTiers; t, limit = t+1, limit*chainFanout {
		n := len(links)
		k := n
		for k > 0 && chainTier(links[k-1].end-links[k-1].start) <= t {
			k--
		}
		if n-k < 2 || links[n-1].end-links[k].start < limit {
			continue
		}
		for _, l := range links[k : n-1] {
			e.sizes[i] -= l.bytes
		}
		links[k] = chainLink{version: version, base: links[k].base, start: links[k].start, end: end}
		links = links[:k+1]
		t, limit = -1, 1 // the merged blob may complete a run of a higher tier
	}
	e.chains[i] = links
	last := links[len(links)-1]
	return last.base, last.start
}

// stored counts the bytes of field i's new blob, a delta or a full one.
func (e *threadEntry[S]) stored(i, bytes int, delta bool) {
	if !delta {
		e.sizes[i] = bytes
		return
	}
	e.sizes[i] += bytes
	if links := e.chains[i]; len(links) > 0 {
		links[len(links)-1].bytes = bytes
	}
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
