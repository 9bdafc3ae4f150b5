package operators

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/tmc/langchaingo/llms"
)

// OperatorKind says what an operator is built on.
type OperatorKind string

const (
	// KindLLM operators only call a model (query_rewriter, coder).
	KindLLM OperatorKind = "llm"
	// KindMCP operators call remote tools through the provider.
	KindMCP OperatorKind = "mcp"
	// KindHybrid operators do both.
	KindHybrid OperatorKind = "hybrid"
)

// ToolCaller runs a tool by name; the [Provider] is one. Operators use it
// to reach remote tools.
type ToolCaller interface {
	Execute(ctx context.Context, name string, args json.RawMessage, call Call) Result
}

// OperatorContext is everything an operator run receives besides ctx. The
// embedded [Call] gives the conversation and user ids and the messaging
// helpers (Progress, SendText, Confirm, Choose, ...).
type OperatorContext struct {
	Call
	// Query is the "query" argument, when the arguments have one.
	Query string
	// Params is the whole validated arguments object.
	Params json.RawMessage
	// Model is Call.Model, or the registry's default; nil when neither.
	Model llms.Model
	// Tools runs other tools (remote ones included); nil outside a
	// provider.
	Tools ToolCaller
}

// Operator is a tool with more machinery behind it: a model, remote tools,
// or both. Operators are made fresh for each call by their factory, so
// they may keep per-call state.
type Operator interface {
	// Spec describes the operator; the registry replaces Spec().Name with
	// the name it was registered under.
	Spec() Spec
	Kind() OperatorKind
	Run(ctx context.Context, oc OperatorContext) (Result, error)
}

// OperatorFactory makes an operator for one call.
type OperatorFactory func() Operator

// OperatorInfo describes a registered operator.
type OperatorInfo struct {
	Spec Spec         `json:"spec"`
	Kind OperatorKind `json:"kind"`
}

// OperatorRegistry maps names to operator factories. It is a value, not a
// global; safe for concurrent use.
type OperatorRegistry struct {
	model llms.Model
	ops   named[operatorEntry]
}

type operatorEntry struct {
	factory OperatorFactory
	info    OperatorInfo
	v       *validator
}

// NewOperatorRegistry returns an empty registry whose operators use model
// when the call brings none. model may be nil.
func NewOperatorRegistry(model llms.Model) *OperatorRegistry {
	return &OperatorRegistry{model: model}
}

// Register adds a factory under name. The factory is called once now to
// read the operator's spec and kind.
func (r *OperatorRegistry) Register(name string, f OperatorFactory) error {
	if err := checkName(name); err != nil {
		return err
	}
	op := f()
	spec := op.Spec()
	spec.Name = name
	if spec.InputSchema == nil {
		spec.InputSchema = QuerySchema("The request for the operator.")
	}
	v, err := newValidator(spec.InputSchema)
	if err != nil {
		return fmt.Errorf("operators: register operator %s: %w", name, err)
	}
	entry := operatorEntry{factory: f, info: OperatorInfo{Spec: spec, Kind: op.Kind()}, v: v}
	return r.ops.add("operator ", func(e operatorEntry) string { return e.info.Spec.Name }, entry)
}

// MustRegister is Register that panics on error, for wiring at start-up.
func (r *OperatorRegistry) MustRegister(name string, f OperatorFactory) {
	if err := r.Register(name, f); err != nil {
		panic(err)
	}
}

// generation changes whenever the registry does; 0 for a nil registry.
func (r *OperatorRegistry) generation() uint64 {
	if r == nil {
		return 0
	}
	return r.ops.gen.Load()
}

func (r *OperatorRegistry) lookup(name string) (operatorEntry, bool) {
	if r == nil {
		return operatorEntry{}, false
	}
	return r.ops.get(name)
}

// List returns every operator, sorted by name.
func (r *OperatorRegistry) List() []OperatorInfo {
	if r == nil {
		return nil
	}
	return sorted(&r.ops, func(e operatorEntry) OperatorInfo { return e.info })
}

// Run makes the operator registered under name and runs it with already
// validated args. Callers normally go through [Provider.Execute], which
// validates, recovers panics and turns errors into results.
func (r *OperatorRegistry) Run(ctx context.Context, name string, args json.RawMessage, call Call, tools ToolCaller) (Result, error) {
	e, ok := r.lookup(name)
	if !ok {
		return Result{}, fmt.Errorf("%w: operator %s", ErrUnknownTool, name)
	}
	return e.run(ctx, r.model, args, call, tools)
}

func (e operatorEntry) run(ctx context.Context, model llms.Model, args json.RawMessage, call Call, tools ToolCaller) (Result, error) {
	var q struct {
		Query string `json:"query"`
	}
	_ = json.Unmarshal(args, &q) // a non-string query simply leaves Query empty
	if call.Model != nil {
		model = call.Model
	}
	return e.factory().Run(ctx, OperatorContext{Call: call, Query: q.Query, Params: args, Model: model, Tools: tools})
}

// QuerySchema is the input schema {"query": string (required)} most
// operators take.
func QuerySchema(description string) *jsonschema.Schema {
	return &jsonschema.Schema{
		Type:                 "object",
		Properties:           map[string]*jsonschema.Schema{"query": {Type: "string", Description: description, MinLength: jsonschema.Ptr(1)}},
		Required:             []string{"query"},
		AdditionalProperties: &jsonschema.Schema{Not: &jsonschema.Schema{}},
	}
}
