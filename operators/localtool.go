package operators

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/google/jsonschema-go/jsonschema"
)

// ToolFunc is the body of a local tool: it receives the decoded, validated
// input. A returned error becomes an error result the model reads.
type ToolFunc[In any] func(ctx context.Context, call Call, in In) (Result, error)

// ToolOption adjusts a tool's [Spec] at construction.
type ToolOption func(*Spec)

// ReadOnly marks the tool read-only and idempotent.
func ReadOnly() ToolOption {
	return func(s *Spec) { s.Annotations.ReadOnly, s.Annotations.Idempotent = true, true }
}

// Destructive marks the tool destructive (see [ApprovalPolicy.Destructive]).
func Destructive() ToolOption { return func(s *Spec) { s.Annotations.Destructive = true } }

// WithAnnotations replaces the tool's annotations.
func WithAnnotations(a Annotations) ToolOption { return func(s *Spec) { s.Annotations = a } }

// RequiresApproval asks for a human's yes before every call.
func RequiresApproval() ToolOption { return func(s *Spec) { s.RequiresApproval = true } }

// WithOutputTypes declares what the tool returns (default: text).
func WithOutputTypes(t ...OutputType) ToolOption {
	return func(s *Spec) { s.OutputTypes = t }
}

// WithMessaging declares which messaging features the tool uses.
func WithMessaging(c Capabilities) ToolOption { return func(s *Spec) { s.Messaging = c } }

// WithSchema lets the caller refine the generated input schema (add an
// enum, a minimum, a default) before it is resolved.
func WithSchema(edit func(*jsonschema.Schema)) ToolOption {
	return func(s *Spec) {
		if s.InputSchema != nil {
			edit(s.InputSchema)
		}
	}
}

// funcTool adapts a [ToolFunc] to [Tool].
type funcTool[In any] struct {
	spec Spec
	fn   ToolFunc[In]
}

// NewTool makes a [Tool] from a typed function. The input schema is
// generated from In with jsonschema.For: exported fields become properties
// named by their json tag, fields without omitempty/omitzero are required,
// a `jsonschema:"..."` tag is the property's description, and unknown
// properties are rejected. In must be a struct (use struct{} for no input).
//
// NewTool panics if no schema can be generated for In: that is a
// programming error found the first time the program starts.
func NewTool[In any](name, description string, fn ToolFunc[In], opts ...ToolOption) Tool {
	schema, err := jsonschema.For[In](nil)
	if err != nil {
		panic(fmt.Sprintf("operators: NewTool %q: %v", name, err))
	}
	t := &funcTool[In]{
		spec: Spec{Name: name, Description: description, InputSchema: schema},
		fn:   fn,
	}
	for _, o := range opts {
		o(&t.spec)
	}
	return t
}

func (t *funcTool[In]) Spec() Spec { return t.spec }

func (t *funcTool[In]) Execute(ctx context.Context, call Call, args json.RawMessage) (Result, error) {
	var in In
	if err := json.Unmarshal(args, &in); err != nil {
		return Result{}, fmt.Errorf("%w for %s: %v", ErrInvalidArguments, t.spec.Name, err)
	}
	return t.fn(ctx, call, in)
}
