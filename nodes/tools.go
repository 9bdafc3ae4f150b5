package nodes

import (
	"sync/atomic"

	"github.com/trellis-ai/trellis/operators"
)

// toolSources maps each tool's name to its source, for tool.start events.
func toolSources(infos []operators.ToolInfo) map[string]string {
	m := make(map[string]string, len(infos))
	for _, t := range infos {
		m[t.Name] = string(t.Source)
	}
	return m
}

// sourceCache keeps toolSources' map for the catalog listing it was made
// from; the provider hands out the same listing until the tools change.
// The map is shared and never modified.
type sourceCache struct{ last atomic.Pointer[sourceEntry] }

type sourceEntry struct {
	infos []operators.ToolInfo // the catalog's; holding it keeps its array from reuse
	m     map[string]string
}

func (c *sourceCache) sources(infos []operators.ToolInfo) map[string]string {
	if e := c.last.Load(); e != nil && len(e.infos) == len(infos) && (len(infos) == 0 || &e.infos[0] == &infos[0]) {
		return e.m
	}
	m := toolSources(infos)
	c.last.Store(&sourceEntry{infos: infos, m: m})
	return m
}
