package nodes

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"

	"github.com/tmc/langchaingo/llms"

	"github.com/trellis-ai/trellis/events"
	"github.com/trellis-ai/trellis/llm"
)

// reflect judges the latest tool results: satisfied, need_more, blocked,
// or direct_response when an operator already answered the user. Direct
// responses and rejections are decided without a model; otherwise the
// model judges, and when its verdict is unusable (or it fails) a rule
// does: need_more if every call failed, satisfied otherwise.
func (a *Agent) reflect(ctx context.Context, s ChatState) (ChatState, error) {
	if s.Outcome == OutcomeClientTools {
		return ChatState{}, nil // the client has the calls; routeReflection ends the turn
	}
	batch := latestBatch(&s)
	var rejected []string
	for _, r := range batch {
		if r.DirectResponse {
			return ChatState{Reflection: Reflection{Assessment: AssessDirectResponse, Reasoning: r.Tool + " answered the user directly"}}, nil
		}
		if r.Status == ToolRejected {
			rejected = append(rejected, r.Tool)
		}
	}
	if len(rejected) > 0 {
		if s.Rejections >= a.opts.maxRevisions() {
			return ChatState{Reflection: Reflection{Assessment: AssessBlocked, Reasoning: fmt.Sprintf(
				"the user rejected %d proposed tool calls, the most this turn allows", s.Rejections)}}, nil
		}
		why := "the user rejected the call to " + strings.Join(rejected, ", ") + "; revise it with their reason in mind, or answer without it"
		return ChatState{Reflection: Reflection{Assessment: AssessNeedMore, Reasoning: why}, TaskContext: why}, nil
	}

	budgetFrom(ctx).adopt(s.Input.Budget)
	if why := budgetFrom(ctx).exceeded(); why != "" {
		return ChatState{Reflection: Reflection{Assessment: AssessBlocked, Reasoning: "the run's budget is used up: " + why}, BudgetExceeded: why}, nil
	}
	modelName := cmp.Or(a.opts.ReflectModel, s.Input.Model)
	model, err := a.models.Model(ctx, modelName)
	if err != nil {
		return ChatState{}, fmt.Errorf("nodes: reflect: %w", err)
	}
	_, defs := a.catalog(&s)
	var tools []llms.Tool
	if extra := a.chain.extraTools(&s); len(extra) > 0 || a.allow != nil {
		tools = withTool(defs, assessTool)
		for _, t := range extra {
			tools = append(tools, t.Def)
		}
	} else {
		tools = a.assessTools.with(defs, assessTool)
	}
	resp, err := a.callModel(ctx, model, &ModelCall{Node: NodeReflect, State: &s, System: a.system(&s, NodeReflect, reflectInstructions),
		Options: append([]llms.CallOption{llms.WithTools(tools),
			llms.WithToolChoice(llms.ToolChoice{Type: "function", Function: &llms.FunctionReference{Name: assessToolName}})},
			a.thinking(ctx, modelName)...)})
	var usage events.Usage
	var ref Reflection
	ok := false
	if err != nil {
		a.log.LogAttrs(ctx, slog.LevelWarn, "reflect: model call failed; judging by rule",
			slog.String("conversation_id", s.Input.ConversationID), slog.Any("error", err))
	} else {
		usage = llm.UsageFrom(resp)
		ref, ok = parseReflection(llm.TextFrom(resp), llm.ToolCallsFrom(resp))
	}
	if !ok {
		ref = ruleReflection(batch)
	}
	upd := ChatState{Reflection: ref, Usage: usage, TurnUsage: usage}
	if ref.Assessment == AssessNeedMore && ref.Reasoning != "" {
		upd.TaskContext = ref.Reasoning
	}
	return upd, nil
}

// latestBatch returns the results of the latest execution.
func latestBatch(s *ChatState) []ToolResult {
	i := len(s.ToolResults)
	for i > 0 && s.ToolResults[i-1].Iteration == s.Iteration {
		i--
	}
	return s.ToolResults[i:]
}

// parseReflection reads an assess call or a JSON object in the text.
func parseReflection(text string, calls []llms.ToolCall) (Reflection, bool) {
	var raw []byte
	for _, c := range calls {
		if c.FunctionCall != nil && c.FunctionCall.Name == assessToolName {
			raw = []byte(c.FunctionCall.Arguments)
			break
		}
	}
	if raw == nil {
		obj, ok := jsonObject(strings.TrimSpace(text))
		if !ok {
			return Reflection{}, false
		}
		raw = obj
	}
	var r Reflection
	if json.Unmarshal(raw, &r) != nil {
		return Reflection{}, false
	}
	r.Assessment = Assessment(strings.ToLower(strings.TrimSpace(string(r.Assessment))))
	switch r.Assessment {
	case AssessSatisfied, AssessNeedMore, AssessBlocked:
		return r, true
	}
	return Reflection{}, false
}

// ruleReflection judges without a model.
func ruleReflection(batch []ToolResult) Reflection {
	var failed []string
	for _, r := range batch {
		if r.Status != ToolSuccess {
			failed = append(failed, r.Tool+": "+clip(r.Content, 200))
		}
	}
	if len(batch) > 0 && len(failed) == len(batch) {
		return Reflection{Assessment: AssessNeedMore, Reasoning: "every tool call failed (" + strings.Join(failed, "; ") + ")"}
	}
	return Reflection{Assessment: AssessSatisfied}
}
