package operators

import (
	"context"
	"fmt"
	"strings"
	"time"
	_ "time/tzdata" // current_time must know IANA zones on machines without a zoneinfo database
)

// SelfInfo is what self_info and list_capabilities report about the
// running service.
type SelfInfo struct {
	Name         string   `json:"name"`
	Version      string   `json:"version"`
	Build        string   `json:"build,omitempty"`
	Model        string   `json:"model,omitempty"`
	Capabilities []string `json:"capabilities,omitempty"`
	// Limitations are things the assistant cannot do (list_capabilities).
	Limitations  []string `json:"limitations,omitempty"`
	ReleaseNotes []string `json:"release_notes,omitempty"`
}

// ToolLister lists tools; the [Provider] is one.
type ToolLister interface {
	Tools() []ToolInfo
}

// BuiltinConfig wires the built-in local tools.
type BuiltinConfig struct {
	Info SelfInfo
	// Tools backs list_tools; nil leaves list_tools out.
	Tools ToolLister
	// Operators backs list_operators; nil leaves list_operators out.
	Operators *OperatorRegistry
	// Now is the clock for current_time; nil means time.Now.
	Now func() time.Time
}

// Builtins returns the built-in local tools: self_info, list_capabilities,
// calculator, current_time, and list_tools / list_operators when their
// backing is configured. The provider usually lists itself, so wire it
// after construction:
//
//	local := operators.NewRegistry()
//	p := operators.NewProvider(operators.ProviderConfig{Local: local, Operators: ops})
//	local.MustAdd(operators.Builtins(operators.BuiltinConfig{Info: info, Tools: p, Operators: ops})...)
func Builtins(cfg BuiltinConfig) []Tool {
	tools := []Tool{selfInfo(cfg.Info), listCapabilities(cfg.Info), Calculator(), CurrentTime(cfg.Now)}
	if cfg.Tools != nil {
		tools = append(tools, listTools(cfg.Tools))
	}
	if cfg.Operators != nil {
		tools = append(tools, listOperators(cfg.Operators))
	}
	return tools
}

type noInput struct{}

func selfInfo(info SelfInfo) Tool {
	return NewTool("self_info", "Tells what this assistant is: name, version, build, model, capabilities and release notes.",
		func(context.Context, Call, noInput) (Result, error) {
			c, err := JSONContent(info)
			if err != nil {
				return Result{}, err
			}
			var b strings.Builder
			fmt.Fprintf(&b, "%s %s", info.Name, info.Version)
			if info.Build != "" {
				fmt.Fprintf(&b, " (build %s)", info.Build)
			}
			if info.Model != "" {
				fmt.Fprintf(&b, ", model %s", info.Model)
			}
			writeList(&b, "Capabilities", info.Capabilities)
			writeList(&b, "Release notes", info.ReleaseNotes)
			return Result{Status: StatusSuccess, Contents: []Content{TextContent(b.String()), c}}, nil
		}, ReadOnly(), WithOutputTypes(OutputText, OutputJSON))
}

func listCapabilities(info SelfInfo) Tool {
	return NewTool("list_capabilities", "Lists what this assistant can and cannot do.",
		func(context.Context, Call, noInput) (Result, error) {
			var b strings.Builder
			b.WriteString("What I can do:")
			writeList(&b, "", info.Capabilities)
			if len(info.Limitations) > 0 {
				b.WriteString("\nWhat I cannot do:")
				writeList(&b, "", info.Limitations)
			}
			return TextResult(b.String()), nil
		}, ReadOnly())
}

func writeList(b *strings.Builder, title string, items []string) {
	if len(items) == 0 {
		return
	}
	if title != "" {
		fmt.Fprintf(b, "\n%s:", title)
	}
	for _, it := range items {
		fmt.Fprintf(b, "\n- %s", it)
	}
}

func listTools(l ToolLister) Tool {
	return NewTool("list_tools", "Lists every tool available to the assistant, with its source (local, operator, mcp).",
		func(context.Context, Call, noInput) (Result, error) {
			var b strings.Builder
			for _, t := range l.Tools() {
				fmt.Fprintf(&b, "- %s [%s", t.Name, t.Source)
				if t.Server != "" {
					fmt.Fprintf(&b, " %s", t.Server)
				}
				b.WriteString("]")
				if !t.Available {
					b.WriteString(" (unavailable)")
				}
				fmt.Fprintf(&b, ": %s\n", t.Description)
			}
			return TextResult(strings.TrimSuffix(b.String(), "\n")), nil
		}, ReadOnly())
}

func listOperators(r *OperatorRegistry) Tool {
	return NewTool("list_operators", "Lists the registered operators (LLM-, MCP-backed and hybrid tools) and what they do.",
		func(context.Context, Call, noInput) (Result, error) {
			var b strings.Builder
			for _, o := range r.List() {
				fmt.Fprintf(&b, "- %s [%s]: %s\n", o.Spec.Name, o.Kind, o.Spec.Description)
			}
			if b.Len() == 0 {
				return TextResult("No operators are registered."), nil
			}
			return TextResult(strings.TrimSuffix(b.String(), "\n")), nil
		}, ReadOnly())
}

type currentTimeIn struct {
	Timezone string `json:"timezone,omitempty" jsonschema:"IANA time zone such as Europe/Paris or America/New_York; default UTC"`
}

// CurrentTime is the current_time tool; now nil means time.Now.
func CurrentTime(now func() time.Time) Tool {
	if now == nil {
		now = time.Now
	}
	return NewTool("current_time", "Tells the current date and time in an IANA time zone (default UTC).",
		func(_ context.Context, _ Call, in currentTimeIn) (Result, error) {
			name := in.Timezone
			if name == "" {
				name = "UTC"
			}
			loc, err := time.LoadLocation(name)
			if err != nil || strings.EqualFold(name, "local") {
				return Result{}, fmt.Errorf("current_time: unknown time zone %q; use an IANA name such as Europe/Paris", in.Timezone)
			}
			t := now().In(loc)
			return TextResult(fmt.Sprintf("%s (%s, %s)", t.Format(time.RFC3339), t.Weekday(), loc)), nil
		}, ReadOnly())
}
