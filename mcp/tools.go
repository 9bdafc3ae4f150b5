package mcp

import (
	"cmp"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"
	mcpgo "github.com/mark3labs/mcp-go/mcp"

	"github.com/trellis-ai/trellis/operators"
)

// toolEntry is one of a server's tools as the provider sees it.
type toolEntry struct {
	// name is the name offered to the agent: the MCP name with anything
	// but letters, digits, '_' and '-' replaced (models and the provider
	// accept no more), made unique on the server.
	name    string
	mcpName string
	spec    operators.Spec
	// output validates structured content; nil when the tool declares no
	// output schema (or it does not resolve).
	output *jsonschema.Resolved
}

// toolEntries maps a server's tool listing, keeping only cfg's allowed
// tools. It returns the warnings worth logging (allowed tools the server
// does not have, schemas that cannot be read).
func toolEntries(cfg ServerConfig, tools []mcpgo.Tool) ([]toolEntry, []string) {
	var out []toolEntry
	var warnings []string
	taken := map[string]bool{}
	slices.SortFunc(tools, func(a, b mcpgo.Tool) int { return strings.Compare(a.Name, b.Name) })
	for _, t := range tools {
		if cfg.AllowedTools != nil && !slices.Contains(cfg.AllowedTools, t.Name) {
			continue
		}
		name := safeName(t.Name)
		for i := 2; taken[name]; i++ {
			suffix := fmt.Sprintf("_%d", i)
			name = safeName(t.Name)[:min(len(safeName(t.Name)), 64-len(suffix))] + suffix
		}
		taken[name] = true
		e, w := toolEntry{name: name, mcpName: t.Name}, ""
		e.spec, e.output, w = toSpec(cfg, t, name)
		if w != "" {
			warnings = append(warnings, w)
		}
		out = append(out, e)
	}
	for _, a := range cfg.AllowedTools {
		if !slices.ContainsFunc(tools, func(t mcpgo.Tool) bool { return t.Name == a }) {
			warnings = append(warnings, fmt.Sprintf("allowed tool %q is not offered by the server", a))
		}
	}
	return out, warnings
}

// toSpec maps an MCP tool onto an operators spec named name. Annotations
// take MCP's defaults when absent: not read-only, destructive unless
// read-only, not idempotent, open-world. So an unannotated tool counts as
// destructive, and an ApprovalPolicy with Destructive set asks before it;
// and it is not retried once a call may have reached the server, unless
// the configuration lists it as idempotent.
func toSpec(cfg ServerConfig, t mcpgo.Tool, name string) (operators.Spec, *jsonschema.Resolved, string) {
	var warning string
	raw, _ := json.Marshal(t)
	var wire struct {
		InputSchema  json.RawMessage `json:"inputSchema"`
		OutputSchema json.RawMessage `json:"outputSchema"`
	}
	_ = json.Unmarshal(raw, &wire)

	spec := operators.Spec{Name: name, Description: t.Description, Messaging: operators.Capabilities{Progress: true}}
	if spec.Description == "" {
		spec.Description = cmp.Or(t.Title, t.Annotations.Title)
	}
	if in, err := readSchema(wire.InputSchema); err != nil {
		warning = fmt.Sprintf("tool %q: input schema cannot be read, arguments are not checked: %v", t.Name, err)
	} else {
		spec.InputSchema = in
	}
	var output *jsonschema.Resolved
	if out, err := readSchema(wire.OutputSchema); err == nil && out != nil {
		spec.OutputTypes = []operators.OutputType{operators.OutputJSON}
		if output, err = out.Resolve(nil); err != nil {
			warning = fmt.Sprintf("tool %q: output schema does not resolve, structured results are not checked: %v", t.Name, err)
		}
	}
	a := t.Annotations
	spec.Annotations.ReadOnly = boolOr(a.ReadOnlyHint, false)
	spec.Annotations.Destructive = boolOr(a.DestructiveHint, !spec.Annotations.ReadOnly) && !spec.Annotations.ReadOnly
	spec.Annotations.Idempotent = boolOr(a.IdempotentHint, false) || cfg.IdempotentAll || slices.Contains(cfg.IdempotentTools, t.Name)
	spec.Annotations.OpenWorld = boolOr(a.OpenWorldHint, true)
	spec.RequiresApproval = cfg.needsApproval(t.Name)
	return spec, output, warning
}

func boolOr(p *bool, def bool) bool {
	if p == nil {
		return def
	}
	return *p
}

// readSchema reads a JSON Schema object; empty or null is nil.
func readSchema(raw json.RawMessage) (*jsonschema.Schema, error) {
	if len(raw) == 0 || string(raw) == "null" || string(raw) == "{}" {
		return nil, nil
	}
	var s jsonschema.Schema
	if err := json.Unmarshal(raw, &s); err != nil {
		return nil, err
	}
	if s.Type == "" && len(s.Types) == 0 {
		s.Type = "object"
	}
	return &s, nil
}
