package nodes

import (
	"sync"
	"time"

	"github.com/tmc/langchaingo/llms"

	"github.com/trellis-ai/trellis/operators"
)

// toolCatalog caches what the nodes read from the provider about its
// tools on every model call: the prompt's summary lines, the langchaingo
// definitions (Provider.LLMTools marshals every JSON Schema each time,
// which costs more than all of a turn's engine work) and each tool's
// source. It refreshes at most every catalogTTL, so a tool added, removed
// or made unavailable shows in prompts within that time; calls always go
// to the provider, which knows the truth.
type toolCatalog struct {
	p *operators.Provider

	mu        sync.Mutex
	at        time.Time
	summaries string
	defs      []llms.Tool
	sources   map[string]string
}

const catalogTTL = time.Second

// snapshot returns the summaries, definitions and sources; callers must
// not modify them.
func (c *toolCatalog) snapshot() (summaries string, defs []llms.Tool, sources map[string]string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.sources == nil || time.Since(c.at) > catalogTTL {
		infos := c.p.Tools()
		c.summaries = summarize(infos)
		c.defs = c.p.LLMTools()
		c.sources = make(map[string]string, len(infos))
		for _, t := range infos {
			c.sources[t.Name] = string(t.Source)
		}
		c.at = time.Now()
	}
	return c.summaries, c.defs, c.sources
}

// summarize writes Provider.Summaries' lines from an already fetched
// list: "- name [source]: description", with "(needs approval)" or
// "(read-only)". Unavailable tools are left out.
func summarize(infos []operators.ToolInfo) string {
	n := 0
	for _, t := range infos {
		n += len(t.Name) + len(t.Description) + 32
	}
	b := make([]byte, 0, n)
	for _, t := range infos {
		if !t.Available {
			continue
		}
		b = append(b, "- "...)
		b = append(b, t.Name...)
		b = append(b, " ["...)
		b = append(b, t.Source...)
		b = append(b, "]: "...)
		b = appendFields(b, t.Description)
		if t.RequiresApproval {
			b = append(b, " (needs approval)"...)
		} else if t.Annotations.ReadOnly {
			b = append(b, " (read-only)"...)
		}
		b = append(b, '\n')
	}
	return string(b)
}

// appendFields appends s with runs of white space collapsed to one space.
func appendFields(b []byte, s string) []byte {
	space, start := false, true
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f' {
			space = true
			continue
		}
		if space && !start {
			b = append(b, ' ')
		}
		space, start = false, false
		b = append(b, c)
	}
	return b
}
