package operators

import (
	"fmt"
	"maps"
	"slices"
	"sync"
	"sync/atomic"
)

// named holds a registry's entries by name: the local tools' and the
// operators'. Reads far outnumber writes, so it is guarded by an RWMutex;
// gen counts changes, so a Provider's cached Catalog knows when it is
// stale. The zero named is empty and ready.
type named[T any] struct {
	mu  sync.RWMutex
	m   map[string]T
	gen atomic.Uint64
}

// add puts entries under their names, all or none: a name already held,
// or given twice, fails with ErrDuplicateTool and adds nothing.
func (n *named[T]) add(what string, name func(T) string, entries ...T) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	seen := make(map[string]bool, len(entries))
	for _, e := range entries {
		k := name(e)
		if _, ok := n.m[k]; ok || seen[k] {
			return fmt.Errorf("%w: %s%s", ErrDuplicateTool, what, k)
		}
		seen[k] = true
	}
	if n.m == nil {
		n.m = make(map[string]T, len(entries))
	}
	for _, e := range entries {
		n.m[name(e)] = e
	}
	n.gen.Add(1)
	return nil
}

func (n *named[T]) get(name string) (T, bool) {
	n.mu.RLock()
	e, ok := n.m[name]
	n.mu.RUnlock()
	return e, ok
}

// sorted returns view of every entry, in the order of their names.
func sorted[T, V any](n *named[T], view func(T) V) []V {
	n.mu.RLock()
	defer n.mu.RUnlock()
	out := make([]V, 0, len(n.m))
	for _, k := range slices.Sorted(maps.Keys(n.m)) {
		out = append(out, view(n.m[k]))
	}
	return out
}
