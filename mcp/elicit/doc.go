// Package elicit holds a run's questions for the user — elicitations —
// while they wait for an answer. It is the service's elicitation manager:
// the HTTP endpoints of API.md (POST /api/v1/elicitation/respond,
// GET /api/v1/elicitation/pending, DELETE /api/v1/elicitation/{id}) call
// [Manager.Respond], [Manager.Pending] and [Manager.Cancel]; tools reach it
// through the operators.Messenger that [Manager.Messenger] returns.
//
// # Life of an elicitation
//
//  1. A tool asks (an MCP server's elicitation/create, or an operator's
//     Confirm or Choose): [Manager.Ask] registers the request and calls
//     [Hooks].Requested, where the service emits elicitation.request.
//  2. The user answers: [Manager.Respond] validates accepted content
//     against the requested JSON Schema (an invalid answer is refused
//     with a *[ValidationError] and the question stays open), or declines
//     or cancels; DELETE calls [Manager.Cancel].
//  3. Nobody answers within the timeout (default 5 minutes): the request
//     is cancelled. If the run is cancelled first, Ask returns at once.
//  4. [Hooks].Resolved reports the outcome (elicitation.response), and the
//     tool receives the answer.
//
// Answers to a resolved elicitation fail with [ErrResolved] (409); unknown
// ids, and ids owned by another user, with [ErrNotFound] (404).
//
// # Example
//
//	m := elicit.NewManager(elicit.Config{Timeout: 2 * time.Minute})
//	call.Messenger = m.Messenger(runMessenger, elicit.Scope{ConversationID: cid, UserID: uid}, elicit.Hooks{
//		Requested: func(ctx context.Context, p elicit.Pending) error { return emit(ctx, "elicitation.request", p) },
//		Resolved:  func(ctx context.Context, r elicit.Resolution) { _ = emit(ctx, "elicitation.response", r) },
//	})
//	// in the handler of POST /api/v1/elicitation/respond:
//	err := m.Respond(userID, operators.ElicitResponse{ElicitationID: id, Action: "accept", Content: body.Content})
package elicit
