package nodes

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/trellis-ai/trellis/events"
	"github.com/trellis-ai/trellis/graph"
	"github.com/trellis-ai/trellis/operators"
)

// ApprovalDecision answers an approval.required: approve the call, run it
// with edited arguments, or reject it with a reason the supervisor reads
// before it proposes a revised call.
type ApprovalDecision struct {
	// ApprovalID names the approval; "" answers the only one pending.
	ApprovalID string              `json:"approval_id,omitempty"`
	Decision   events.DecisionKind `json:"decision"`
	// Args are the new arguments of an edit: a JSON object.
	Args json.RawMessage `json:"args,omitempty"`
	// Reason says why a call was rejected.
	Reason string `json:"reason,omitempty"`
	// Expired, when set, says that nobody answered before the
	// approval's deadline and the deadline's outcome is the decision:
	// Resume yields it (approval.expired) before approval.resolved, and
	// a rejection tells the model that the approval expired.
	Expired *events.ApprovalExpired `json:"expired,omitempty"`
}

func (d ApprovalDecision) validate() error {
	switch d.Decision {
	case events.DecisionApprove, events.DecisionReject:
		return nil
	case events.DecisionEdit:
		if t := bytes.TrimSpace(d.Args); len(t) == 0 || t[0] != '{' || !json.Valid(t) {
			return fmt.Errorf("nodes: approval decision: %w: edit needs args, a JSON object", ErrInvalidInput)
		}
		return nil
	default:
		return fmt.Errorf("nodes: approval decision: %w: decision %q is not approve, edit or reject", ErrInvalidInput, d.Decision)
	}
}

// gate decides whether a call to tool needs approval, once, as the
// supervisor proposes it (see ToolCall.Gate).
func (a *Agent) gate(tool string) Gate {
	if tool != WriteTodosTool && a.tools.NeedsApproval(tool) {
		return GateAsk
	}
	return GateNone
}

// approve asks for approval of every call whose gate asks, in order, before
// any of them runs, so a node that runs again after each answer repeats no
// side effect. It returns the calls as they will run (edited arguments
// applied), the records of the answers, and which calls were rejected
// (with the tool-result text the model will read). resumed reports
// whether any interrupt was answered in this or an earlier run.
func (a *Agent) approve(ctx context.Context, s ChatState, calls []ToolCall) (out []ToolCall, records []ApprovalRecord, rejected map[string]string, resumed bool, err error) {
	out = slices.Clone(calls)
	revision := s.Rejections
	for i, c := range calls {
		if c.Gate == GateNone {
			continue
		}
		// The preview is of the call as proposed; an edit's arguments run
		// unpreviewed, as the person who edited them has seen them.
		diff := a.tools.Preview(ctx, c.Tool, c.Args, operators.Call{ToolCallID: c.ID, ConversationID: s.Input.ConversationID, UserID: s.Input.UserID})
		d, err := graph.Interrupt[ApprovalDecision](ctx, events.Pending{
			Kind: events.PendingApproval, ToolCallID: c.ID, Tool: c.Tool, Args: argsOrEmpty(c.Args), Revision: revision, Namespace: s.Input.Namespace,
			Diff: diff,
		})
		if err != nil {
			return nil, nil, nil, resumed, err
		}
		resumed = true
		rec := ApprovalRecord{ApprovalID: d.ApprovalID, ToolCallID: c.ID, Tool: c.Tool, Args: c.Args, Revision: revision, Decision: d.Decision, Reason: d.Reason}
		switch d.Decision {
		case events.DecisionEdit:
			rec.EditedArgs = d.Args
			out[i].Args = d.Args
		case events.DecisionReject:
			if rejected == nil {
				rejected = map[string]string{}
			}
			reason := d.Reason
			if reason == "" {
				reason = "no reason given"
			}
			rejected[c.ID] = fmt.Sprintf("The user rejected this call to %s (revision %d). Reason: %s. "+
				"Do not repeat the same call: propose a revised one, or answer without it.", c.Tool, revision, reason)
			if d.Expired != nil { // nobody rejected it: the deadline did
				rejected[c.ID] = fmt.Sprintf("Not run: nobody answered the request to approve this call to %s before its deadline (%s), "+
					"so the approval expired and the call did not run. Tell the user that the approval expired and that nothing was done; "+
					"do not repeat the call.", c.Tool, d.Expired.ExpiresAt.UTC().Format(time.RFC3339))
			}
			revision++
		}
		records = append(records, rec)
	}
	return out, records, rejected, resumed, nil
}

func argsOrEmpty(args json.RawMessage) json.RawMessage {
	if len(bytes.TrimSpace(args)) == 0 {
		return json.RawMessage("{}")
	}
	return args
}
