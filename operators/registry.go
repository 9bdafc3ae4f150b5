package operators

import "fmt"

// Registry holds local tools: in-process, zero-latency, no resilience
// wrapping. It is a value, not a global; the zero Registry is empty and
// ready. Safe for concurrent use.
type Registry struct {
	tools named[localTool]
}

type localTool struct {
	tool Tool
	spec Spec
	v    *validator
}

// NewRegistry returns an empty registry.
func NewRegistry() *Registry { return &Registry{} }

// Add registers tools. It fails, registering none of them, if a name is
// malformed or taken ([ErrDuplicateTool]) or an input schema does not
// resolve.
func (r *Registry) Add(tools ...Tool) error {
	entries := make([]localTool, 0, len(tools))
	for _, t := range tools {
		spec := t.Spec()
		if err := checkName(spec.Name); err != nil {
			return err
		}
		v, err := newValidator(spec.InputSchema)
		if err != nil {
			return fmt.Errorf("operators: add tool %s: %w", spec.Name, err)
		}
		entries = append(entries, localTool{tool: t, spec: spec, v: v})
	}
	return r.tools.add("", func(e localTool) string { return e.spec.Name }, entries...)
}

// MustAdd is Add that panics on error, for wiring at start-up.
func (r *Registry) MustAdd(tools ...Tool) {
	if err := r.Add(tools...); err != nil {
		panic(err)
	}
}

// Get returns the tool registered under name.
func (r *Registry) Get(name string) (Tool, bool) {
	e, ok := r.lookup(name)
	return e.tool, ok
}

// generation changes whenever the registry does; 0 for a nil registry.
func (r *Registry) generation() uint64 {
	if r == nil {
		return 0
	}
	return r.tools.gen.Load()
}

func (r *Registry) lookup(name string) (localTool, bool) {
	if r == nil {
		return localTool{}, false
	}
	return r.tools.get(name)
}

// Specs returns every tool's spec, sorted by name.
func (r *Registry) Specs() []Spec {
	if r == nil {
		return nil
	}
	return sorted(&r.tools, func(e localTool) Spec { return e.spec })
}

// checkName accepts 1–64 letters, digits, '_' and '-'. Dots are reserved
// for qualified names (server.tool).
func checkName(name string) error {
	if name == "" || len(name) > 64 {
		return fmt.Errorf("operators: tool name %q must be 1-64 characters", name)
	}
	for _, c := range name {
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '_', c == '-':
		default:
			return fmt.Errorf("operators: tool name %q: only letters, digits, '_' and '-' are allowed", name)
		}
	}
	return nil
}
