package operators

import (
	"context"
	"encoding/json"
	"maps"
	"slices"
	"strings"
	"sync"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/tmc/langchaingo/llms"
)

// Tools lists every tool for GET /api/v1/tools: local tools, then
// operators, then each remote source's tools (sources and tools sorted by
// name). A remote tool is unavailable while its source's breaker is open or
// its last listing failed. Tools does no I/O (remote listings are cached
// by AddSource and Refresh), so it takes no context.
func (p *Provider) Tools() []ToolInfo {
	var out []ToolInfo
	add := func(name string, kind SourceKind, server string, spec Spec, available bool, names ...string) {
		schema := spec.InputSchema
		if schema == nil {
			schema = &jsonschema.Schema{Type: "object"}
		}
		out = append(out, ToolInfo{
			Name: name, Description: spec.Description, Source: kind, Server: server,
			InputSchema: schema, RequiresApproval: p.cfg.Approval.Requires(spec, append(names, name)...),
			Available: available, Annotations: spec.Annotations, OutputTypes: spec.OutputTypes,
		})
	}
	for _, s := range p.cfg.Local.Specs() {
		add(s.Name, SourceLocal, "", s, true)
	}
	for _, o := range p.cfg.Operators.List() {
		add(o.Spec.Name, SourceOperator, "", o.Spec, true)
	}
	p.mu.RLock()
	defer p.mu.RUnlock()
	for _, server := range slices.Sorted(maps.Keys(p.remotes)) {
		r := p.remotes[server]
		available := r.available()
		r.mu.RLock()
		for _, n := range slices.Sorted(maps.Keys(r.tools)) {
			qualified := server + "." + n
			name := qualified
			if p.plain[n] == 1 && !p.shadowed(n) {
				name = n
			}
			add(name, SourceMCP, server, r.tools[n].spec, available, qualified)
		}
		r.mu.RUnlock()
	}
	return out
}

// shadowed reports whether a local tool or operator has name.
func (p *Provider) shadowed(name string) bool {
	if _, ok := p.cfg.Local.lookup(name); ok {
		return true
	}
	_, ok := p.cfg.Operators.lookup(name)
	return ok
}

// Summaries is the tool list for the supervisor prompt: one line per
// available tool, "- name [source]: description", with "(needs approval)"
// or "(read-only)" where they apply. Unavailable tools are left out so the
// supervisor does not pick them.
func (p *Provider) Summaries() string {
	var b strings.Builder
	for _, t := range p.Tools() {
		if !t.Available {
			continue
		}
		b.WriteString("- ")
		b.WriteString(t.Name)
		b.WriteString(" [")
		b.WriteString(string(t.Source))
		b.WriteString("]: ")
		b.WriteString(strings.Join(strings.Fields(t.Description), " "))
		if t.RequiresApproval {
			b.WriteString(" (needs approval)")
		} else if t.Annotations.ReadOnly {
			b.WriteString(" (read-only)")
		}
		b.WriteByte('\n')
	}
	return b.String()
}

// LLMTools returns the available tools as langchaingo tool definitions
// (Parameters as map[string]any, which every provider accepts).
func (p *Provider) LLMTools() []llms.Tool {
	tools := p.Tools()
	out := make([]llms.Tool, 0, len(tools))
	for _, t := range tools {
		if !t.Available {
			continue
		}
		var params map[string]any
		if b, err := json.Marshal(t.InputSchema); err == nil {
			_ = json.Unmarshal(b, &params)
		}
		out = append(out, llms.Tool{Type: "function", Function: &llms.FunctionDefinition{
			Name: t.Name, Description: t.Description, Parameters: params,
		}})
	}
	return out
}

// SourceHealth is one remote source's health.
type SourceHealth struct {
	Name    string       `json:"name"`
	Breaker BreakerState `json:"breaker"`
	// Err is the source's Health error, or its last listing error.
	Err error `json:"-"`
}

// Health asks every remote source for its health, concurrently; sorted by
// name.
func (p *Provider) Health(ctx context.Context) []SourceHealth {
	p.mu.RLock()
	names := slices.Sorted(maps.Keys(p.remotes))
	rs := make([]*remote, len(names))
	for i, n := range names {
		rs[i] = p.remotes[n]
	}
	p.mu.RUnlock()
	out := make([]SourceHealth, len(rs))
	var wg sync.WaitGroup
	for i, r := range rs {
		wg.Go(func() {
			err := r.src.Health(ctx)
			if err == nil {
				r.mu.RLock()
				err = r.listErr
				r.mu.RUnlock()
			}
			out[i] = SourceHealth{Name: names[i], Breaker: r.guard.State(), Err: err}
		})
	}
	wg.Wait()
	return out
}
