package nodes

import (
	"sync/atomic"

	"github.com/trellis-ai/trellis/operators"
)

// toolTable is what an execution needs to know of the catalog's tools:
// each one's source, for tool.start events, and which are safe to run
// again (read-only or idempotent), whose calls the CallLog does not
// record.
type toolTable struct {
	sources    map[string]string
	repeatable map[string]bool
}

func newToolTable(infos []operators.ToolInfo) toolTable {
	t := toolTable{sources: make(map[string]string, len(infos)), repeatable: make(map[string]bool, len(infos))}
	for _, ti := range infos {
		t.sources[ti.Name] = string(ti.Source)
		if ti.Annotations.ReadOnly || ti.Annotations.Idempotent {
			t.repeatable[ti.Name] = true
		}
	}
	return t
}

// sourceCache keeps the toolTable for the catalog listing it was made
// from; the provider hands out the same listing until the tools change.
// The maps are shared and never modified.
type sourceCache struct{ last atomic.Pointer[sourceEntry] }

type sourceEntry struct {
	infos []operators.ToolInfo // the catalog's; holding it keeps its array from reuse
	t     toolTable
}

func (c *sourceCache) table(infos []operators.ToolInfo) toolTable {
	if e := c.last.Load(); e != nil && len(e.infos) == len(infos) && (len(infos) == 0 || &e.infos[0] == &infos[0]) {
		return e.t
	}
	t := newToolTable(infos)
	c.last.Store(&sourceEntry{infos: infos, t: t})
	return t
}
