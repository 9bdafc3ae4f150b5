package graph

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
