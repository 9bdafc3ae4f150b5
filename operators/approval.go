package operators

import "slices"

// ApprovalPolicy decides which tools need a human's yes before they run.
// The zero policy asks only for tools whose spec says RequiresApproval.
// The provider exposes the decision ([Provider.NeedsApproval]); the agent's
// execute_tool node acts on it.
type ApprovalPolicy struct {
	// Tools lists tool names that always need approval; a remote tool
	// matches by its plain or qualified (server.tool) name.
	Tools []string
	// Destructive, when true, also asks for every tool annotated
	// destructive.
	Destructive bool
}

// Requires reports whether a call to spec, known by the given names,
// needs approval.
func (p ApprovalPolicy) Requires(spec Spec, names ...string) bool {
	if spec.RequiresApproval || (p.Destructive && spec.Annotations.Destructive) {
		return true
	}
	if slices.Contains(p.Tools, spec.Name) {
		return true
	}
	for _, n := range names {
		if slices.Contains(p.Tools, n) {
			return true
		}
	}
	return false
}
