package operators

import (
	"errors"

	"github.com/trellis-ai/trellis/llm"
)

// Sentinel errors. Callers branch on them with errors.Is, usually through
// [Result.Err].
var (
	// ErrUnknownTool: no source offers a tool by that name. llm.Permanent
	// (see llm.KindOf).
	ErrUnknownTool = llm.Permanent(errors.New("operators: unknown tool"))
	// ErrInvalidArguments: the arguments do not match the tool's input
	// schema. llm.Permanent (see llm.KindOf).
	ErrInvalidArguments = llm.Permanent(errors.New("operators: invalid arguments"))
	// ErrDuplicateTool: a registry already holds a tool or operator by that name.
	ErrDuplicateTool = errors.New("operators: duplicate tool name")
	// ErrDuplicateSource: the provider already has a source by that name.
	ErrDuplicateSource = errors.New("operators: duplicate source name")
	// ErrToolPanic: the tool panicked; the panic was recovered.
	ErrToolPanic = errors.New("operators: tool panicked")
	// ErrNoUser: elicitation was requested but no user is attached to the run.
	ErrNoUser = errors.New("operators: no user to ask")
	// ErrElicitationCanceled: the user cancelled (or the request timed out).
	ErrElicitationCanceled = errors.New("operators: elicitation cancelled")
	// ErrAskLater: nobody answered a tool's question while the run could
	// wait, so the run parks with the question pending and the call must
	// end now, its result unused. Once the user answers, a call whose
	// question was Replayable runs again from its start and the same
	// question returns the answer at once; any other call is reported to
	// the model as expired.
	ErrAskLater = errors.New("operators: the question waits for the user beyond this call")
	// ErrNoModel: an operator needs a model and none was configured.
	ErrNoModel = errors.New("operators: no model configured")
)
