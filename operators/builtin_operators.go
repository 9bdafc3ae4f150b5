package operators

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/tmc/langchaingo/llms"
)

// RegisterBuiltinOperators registers query_rewriter and coder (with
// [CoderConfig] defaults).
func RegisterBuiltinOperators(r *OperatorRegistry) error {
	if err := r.Register("query_rewriter", QueryRewriter()); err != nil {
		return err
	}
	return r.Register("coder", Coder(CoderConfig{}))
}

func mustSchema[T any]() *jsonschema.Schema {
	s, err := jsonschema.For[T](nil)
	if err != nil {
		panic(err)
	}
	return s
}

// generate runs one system+user exchange and returns the text of every
// choice.
func generate(ctx context.Context, m llms.Model, system, user string, opts ...llms.CallOption) (string, error) {
	if m == nil {
		return "", ErrNoModel
	}
	resp, err := m.GenerateContent(ctx, []llms.MessageContent{
		llms.TextParts(llms.ChatMessageTypeSystem, system),
		llms.TextParts(llms.ChatMessageTypeHuman, user),
	}, opts...)
	if err != nil {
		return "", err
	}
	var b strings.Builder
	for _, c := range resp.Choices {
		b.WriteString(c.Content)
	}
	return strings.TrimSpace(b.String()), nil
}

// --- query_rewriter ---

type rewriteIn struct {
	Query   string `json:"query" jsonschema:"the user's query, as asked"`
	Context string `json:"context,omitempty" jsonschema:"recent conversation that may resolve pronouns and references"`
}

type queryRewriter struct{}

// QueryRewriter is a pure-LLM operator that rewrites a vague query into a
// precise, self-contained one.
func QueryRewriter() OperatorFactory { return func() Operator { return queryRewriter{} } }

func (queryRewriter) Kind() OperatorKind { return KindLLM }

func (queryRewriter) Spec() Spec {
	return Spec{
		Name:        "query_rewriter",
		Description: "Rewrites a vague or context-dependent query into a precise, self-contained query for search or retrieval.",
		InputSchema: mustSchema[rewriteIn](),
		Annotations: Annotations{ReadOnly: true},
	}
}

func (queryRewriter) Run(ctx context.Context, oc OperatorContext) (Result, error) {
	var in rewriteIn
	if err := json.Unmarshal(oc.Params, &in); err != nil {
		return Result{}, fmt.Errorf("query_rewriter: %w", err)
	}
	user := "Query: " + in.Query
	if in.Context != "" {
		user = "Conversation so far:\n" + in.Context + "\n\n" + user
	}
	out, err := generate(ctx, oc.Model,
		"Rewrite the user's query into one precise, self-contained search query. "+
			"Resolve pronouns from the conversation, keep every constraint, add no facts. Reply with the query only.",
		user, llms.WithTemperature(0))
	if err != nil {
		return Result{}, fmt.Errorf("query_rewriter: %w", err)
	}
	return TextResult(out), nil
}

// --- coder ---

// CoderConfig configures the coder operator.
type CoderConfig struct {
	// ThinkingBudget is the thinking token budget for complex tasks.
	// Default 15000.
	ThinkingBudget int
	// ComplexKeywords mark a task as complex; default: algorithm,
	// optimize, optimise, debug, security, concurrency, refactor,
	// architecture, performance, race, distributed, proof.
	ComplexKeywords []string
	// ComplexLength marks any longer task as complex. Default 300 bytes.
	ComplexLength int
}

type coderIn struct {
	Query    string `json:"query" jsonschema:"the coding task"`
	Language string `json:"language,omitempty" jsonschema:"programming language, if the user named one"`
}

type coder struct{ cfg CoderConfig }

// Coder is an LLM operator that writes code. For tasks that look complex
// it asks for extended thinking, when the model supports it
// (llms.ReasoningModel).
func Coder(cfg CoderConfig) OperatorFactory {
	if cfg.ThinkingBudget == 0 {
		cfg.ThinkingBudget = 15000
	}
	if cfg.ComplexKeywords == nil {
		cfg.ComplexKeywords = []string{"algorithm", "optimize", "optimise", "debug", "security", "concurrency",
			"refactor", "architecture", "performance", "race", "distributed", "proof"}
	}
	if cfg.ComplexLength == 0 {
		cfg.ComplexLength = 300
	}
	return func() Operator { return coder{cfg: cfg} }
}

func (coder) Kind() OperatorKind { return KindLLM }

func (coder) Spec() Spec {
	return Spec{
		Name:        "coder",
		Description: "Writes, explains or fixes code for a programming task; answers in markdown with code blocks.",
		InputSchema: mustSchema[coderIn](),
		OutputTypes: []OutputType{OutputMarkdown},
		Annotations: Annotations{ReadOnly: true},
		Messaging:   Capabilities{Progress: true},
	}
}

// complex reports whether task deserves extended thinking.
func (c coder) complex(task string) bool {
	if len(task) > c.cfg.ComplexLength {
		return true
	}
	lower := strings.ToLower(task)
	for _, k := range c.cfg.ComplexKeywords {
		if strings.Contains(lower, k) {
			return true
		}
	}
	return false
}

func (c coder) Run(ctx context.Context, oc OperatorContext) (Result, error) {
	var in coderIn
	if err := json.Unmarshal(oc.Params, &in); err != nil {
		return Result{}, fmt.Errorf("coder: %w", err)
	}
	var opts []llms.CallOption
	if rm, ok := oc.Model.(llms.ReasoningModel); ok && rm.SupportsReasoning() && c.complex(in.Query) {
		opts = append(opts, llms.WithThinking(&llms.ThinkingConfig{Mode: llms.ThinkingModeHigh, BudgetTokens: c.cfg.ThinkingBudget}))
		_ = oc.Progress(ctx, 0, 1, "Thinking through a complex task")
	} else {
		_ = oc.Progress(ctx, 0, 1, "Writing code")
	}
	task := in.Query
	if in.Language != "" {
		task += "\n\nLanguage: " + in.Language
	}
	out, err := generate(ctx, oc.Model,
		"You are an expert programmer. Write correct, idiomatic, tested code for the task. "+
			"Answer in markdown: a short explanation, then the code in fenced blocks.", task, opts...)
	if err != nil {
		return Result{}, fmt.Errorf("coder: %w", err)
	}
	_ = oc.Progress(ctx, 1, 1, "Done")
	return Result{Status: StatusSuccess, Contents: []Content{MarkdownContent(out)}}, nil
}

// --- MCP-backed operator ---

// MCPOperatorConfig configures an operator that calls one remote tool.
type MCPOperatorConfig struct {
	// Description is what the supervisor reads.
	Description string
	// Tool is the remote tool to call, plain or qualified ("docs.search").
	Tool string
	// QueryArg is the argument the query goes in. Default "query".
	QueryArg string
}

type mcpOperator struct{ cfg MCPOperatorConfig }

// MCPOperator is the MCP-backed operator pattern: it passes the query to a
// named remote tool through the provider (so the source's resilience
// applies), reports progress, and turns text results into citable data
// chunks. Register it under any name, e.g. "retriever".
func MCPOperator(cfg MCPOperatorConfig) OperatorFactory {
	if cfg.QueryArg == "" {
		cfg.QueryArg = "query"
	}
	return func() Operator { return mcpOperator{cfg: cfg} }
}

func (o mcpOperator) Kind() OperatorKind { return KindMCP }

func (o mcpOperator) Spec() Spec {
	return Spec{
		Description: o.cfg.Description,
		InputSchema: QuerySchema("what to look for"),
		Annotations: Annotations{ReadOnly: true, OpenWorld: true},
		Messaging:   Capabilities{Progress: true},
	}
}

func (o mcpOperator) Run(ctx context.Context, oc OperatorContext) (Result, error) {
	if oc.Tools == nil {
		return Result{}, fmt.Errorf("operator calls %s but has no tool provider", o.cfg.Tool)
	}
	args, err := json.Marshal(map[string]string{o.cfg.QueryArg: oc.Query})
	if err != nil {
		return Result{}, err
	}
	_ = oc.Progress(ctx, 0, 1, "Calling "+o.cfg.Tool)
	res := oc.Tools.Execute(ctx, o.cfg.Tool, args, oc.Call)
	if res.IsError() {
		return res, nil
	}
	if len(res.Chunks) == 0 {
		for _, c := range res.Contents {
			if c.Type == OutputText || c.Type == OutputMarkdown {
				res.Chunks = append(res.Chunks, DataChunk{Source: o.cfg.Tool, Text: c.Text})
			}
		}
	}
	_ = oc.Progress(ctx, 1, 1, "Done")
	return res, nil
}
