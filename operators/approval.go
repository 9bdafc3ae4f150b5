package operators

import (
	"slices"
	"time"

	"github.com/trellis-ai/trellis/events"
)

// ApprovalPolicy decides which tools need a human's yes before they run,
// and how long an approval waits for it.
// The zero policy asks only for tools whose spec says RequiresApproval,
// and its approvals wait for ever.
// The provider exposes the decision ([Provider.NeedsApproval],
// [Provider.ApprovalExpiry]); the agent's execute_tool node acts on it.
type ApprovalPolicy struct {
	// Tools lists tool names that always need approval; a remote tool
	// matches by its plain or qualified (server.tool) name.
	Tools []string
	// Destructive, when true, also asks for every tool annotated
	// destructive.
	Destructive bool
	// Expiry is the deadline of every approval, unless ToolExpiry or
	// the tool's source (an [ExpirySource]) sets one; zero waits for
	// ever.
	Expiry Expiry
	// ToolExpiry sets the deadline of the approvals of the tools it
	// names, plain or qualified as in Tools; it wins over the source's
	// and the default.
	ToolExpiry map[string]Expiry
}

// Expiry is how long a human request (an approval, a tool's question)
// waits for a human and what happens when nobody answered by then. The
// zero Expiry waits for ever.
type Expiry struct {
	// Timeout is how long the request waits; zero is for ever.
	Timeout time.Duration
	// Outcome is what the deadline decides; "" is the kind's default
	// (events.ParseExpiryOutcome): reject for an approval, decline for
	// a question.
	Outcome events.ExpiryOutcome
}

// ExpirySource is a [Source] whose configuration sets the deadline of
// the approvals of its tools (an MCP server's approvalTimeout).
type ExpirySource interface {
	Source
	// ApprovalExpiry is the source's deadline for approvals of its
	// tools; false when it sets none.
	ApprovalExpiry() (Expiry, bool)
}

// ElicitationExpirySource is a [Source] whose configuration sets the
// deadline of the questions its tools ask the user (an MCP server's
// elicitationTimeout).
type ElicitationExpirySource interface {
	Source
	// ElicitationExpiry is the source's deadline for its tools'
	// questions; false when it sets none.
	ElicitationExpiry() (Expiry, bool)
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

// expiryOf is the deadline of an approval of a tool known by names, of
// a source whose own deadline is source (ok false for none).
func (p ApprovalPolicy) expiryOf(source Expiry, ok bool, names ...string) Expiry {
	for _, n := range names {
		if e, found := p.ToolExpiry[n]; found {
			return e.normal(events.PendingApproval)
		}
	}
	if ok {
		return source.normal(events.PendingApproval)
	}
	return p.Expiry.normal(events.PendingApproval)
}

// normal spells the default outcome of a request of kind out.
func (e Expiry) normal(kind events.PendingKind) Expiry {
	if e.Timeout <= 0 {
		return Expiry{}
	}
	if e.Outcome == "" {
		e.Outcome = events.ExpiryOutcomes(kind)[0]
	}
	return e
}
