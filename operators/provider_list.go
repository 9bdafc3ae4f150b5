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

	"github.com/trellis-ai/trellis/llm"
)

// Tools lists every tool for GET /api/v1/tools: local tools, then
// operators, then each remote source's tools (sources and tools sorted by
// name). A remote tool is unavailable while its source's breaker is open or
// its last listing failed. Tools does no I/O (remote listings are cached
// by AddSource and Refresh), so it takes no context. The slice is the
// caller's; it is nil when there are no tools.
func (p *Provider) Tools() []ToolInfo {
	return slices.Clone(p.Catalog().Tools) // nil stays nil
}

// listTools builds what Tools returns.
func (p *Provider) listTools() []ToolInfo {
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

// Catalog is one consistent view of the tools, in the forms the agent
// needs on every model call. Callers must not modify it: it is shared by
// every caller until the tools change.
type Catalog struct {
	// Tools is the listing of Tools, unavailable tools included.
	Tools []ToolInfo
	// Summaries has one line per available tool for the supervisor's
	// prompt: "- name [source]: description", with "(needs approval)" or
	// "(read-only)".
	Summaries string
	// LLMTools are the available tools as langchaingo definitions.
	LLMTools []llms.Tool
}

// Catalog lists the tools once and derives the prompt summaries and the
// langchaingo definitions from that listing. Each schema is converted to
// the map form langchaingo wants once, then reused.
//
// The catalog is built once and kept until something it depends on
// changes: a tool registered in the local or operator registry, a remote
// source added, removed or re-listed (successfully or not), or a source's
// breaker changing state. Each of those bumps a generation counter, read
// before the catalog is built, so a cached catalog is never older than
// the newest change a caller could have seen.
func (p *Provider) Catalog() Catalog {
	key := p.catalogKey()
	if c := p.catalog.Load(); c != nil && c.key == key {
		return c.c
	}
	c := p.buildCatalog()
	// A slower builder may store an older catalog over a newer one; its key
	// then no longer matches and the next call builds again.
	p.catalog.Store(&cachedCatalog{key: key, c: c})
	return c
}

// cachedCatalog is a Catalog and the generations it was built at.
type cachedCatalog struct {
	key catalogKey
	c   Catalog
}

type catalogKey struct{ provider, local, operators uint64 }

// catalogKey reads the generations a catalog depends on. It is read before
// the listing, and every change bumps its counter after it is made, so a
// catalog tagged with a key reflects at least every change counted in it.
func (p *Provider) catalogKey() catalogKey {
	return catalogKey{p.gen.Load(), p.cfg.Local.generation(), p.cfg.Operators.generation()}
}

func (p *Provider) buildCatalog() Catalog {
	tools := p.listTools()
	c := Catalog{Tools: slices.Clip(tools), LLMTools: make([]llms.Tool, 0, len(tools))}
	var b strings.Builder
	for _, t := range tools {
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
		c.LLMTools = append(c.LLMTools, llms.Tool{Type: "function", Function: &llms.FunctionDefinition{
			Name: t.Name, Description: t.Description, Parameters: p.schemaMap(t.InputSchema),
		}})
	}
	c.Summaries = b.String()
	// Clipped, so a caller's append never writes into the shared array.
	c.LLMTools = slices.Clip(c.LLMTools)
	return c
}

// Summaries returns Catalog().Summaries.
func (p *Provider) Summaries() string { return p.Catalog().Summaries }

// LLMTools returns a copy of Catalog().LLMTools: the available tools as
// langchaingo definitions (Parameters as map[string]any, which every
// provider accepts, shared and not to be modified).
func (p *Provider) LLMTools() []llms.Tool { return slices.Clone(p.Catalog().LLMTools) }

// schemaMap converts a schema to the map langchaingo's providers accept,
// once per schema: specs are immutable after registration.
func (p *Provider) schemaMap(s *jsonschema.Schema) map[string]any {
	if s == nil {
		return nil
	}
	if m, ok := p.schemaMaps.Load(s); ok {
		return m.(map[string]any)
	}
	var m map[string]any
	if b, err := json.Marshal(s); err == nil {
		_ = json.Unmarshal(b, &m)
	}
	p.schemaMaps.Store(s, m)
	return m
}

// SourceHealth is one remote source's health.
type SourceHealth struct {
	Name    string           `json:"name"`
	Breaker llm.BreakerState `json:"breaker"`
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
