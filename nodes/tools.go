package nodes

import "github.com/trellis-ai/trellis/operators"

// toolSources maps each tool's name to its source, for tool.start events.
func toolSources(infos []operators.ToolInfo) map[string]string {
	m := make(map[string]string, len(infos))
	for _, t := range infos {
		m[t.Name] = string(t.Source)
	}
	return m
}
