package graph

import (
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"sync"
	"time"
)

// CachePolicy reuses a node's result when it runs again on an input it
// has seen. The key is a hash of the input state's JSON, so only nodes
// whose result depends on nothing but their input should be cached.
type CachePolicy struct {
	// TTL is how long a result stays valid; 0 means until evicted.
	TTL time.Duration
	// MaxEntries bounds the cache; the oldest entry goes first. 0 means 1000.
	MaxEntries int
}

type cacheEntry[S any] struct {
	cmd     Command[S]
	expires time.Time
}

// resultCache is one node's cache, shared by every run of the compiled
// graph.
type resultCache[S any] struct {
	policy  CachePolicy
	mu      sync.Mutex
	entries map[[sha256.Size]byte]cacheEntry[S]
	order   [][sha256.Size]byte // insertion order, for eviction
}

func newResultCache[S any](p CachePolicy) *resultCache[S] {
	if p.MaxEntries <= 0 {
		p.MaxEntries = 1000
	}
	return &resultCache[S]{policy: p, entries: map[[sha256.Size]byte]cacheEntry[S]{}}
}

func cacheKey[S any](in *S) ([sha256.Size]byte, error) {
	b, err := json.Marshal(in)
	if err != nil {
		return [sha256.Size]byte{}, fmt.Errorf("graph: cache key: %w", err)
	}
	return sha256.Sum256(b), nil
}

func (c *resultCache[S]) get(key [sha256.Size]byte, now time.Time) (Command[S], bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.entries[key]
	if !ok || (!e.expires.IsZero() && now.After(e.expires)) {
		return Command[S]{}, false
	}
	return e.cmd, true
}

func (c *resultCache[S]) put(key [sha256.Size]byte, cmd Command[S], now time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e := cacheEntry[S]{cmd: cmd}
	if c.policy.TTL > 0 {
		e.expires = now.Add(c.policy.TTL)
	}
	if _, exists := c.entries[key]; !exists {
		for len(c.order) >= c.policy.MaxEntries {
			delete(c.entries, c.order[0])
			c.order = c.order[1:]
		}
		c.order = append(c.order, key)
	}
	c.entries[key] = e
}
