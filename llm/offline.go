package llm

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/tmc/langchaingo/llms"

	"github.com/trellis-ai/trellis/events"
)

// OfflineID is the id of the offline model in every registry.
const OfflineID = "offline"

// OfflineConfig is the registry entry of the offline model.
func OfflineConfig() ModelConfig {
	return ModelConfig{
		ID:            OfflineID,
		Provider:      ProviderOffline,
		Aliases:       []string{"offline-model"},
		ToolCalling:   true,
		ContextWindow: 32768,
	}
}

// OfflineNotice is the offline model's answer to anything it cannot do.
const OfflineNotice = "I'm Trellis' offline model: no language model is configured, so I can only do arithmetic " +
	"(with the calculator tool), run JavaScript (run_code), tell the time (current_time) and describe my tools. " +
	"To talk to a real model, set ANTHROPIC_API_KEY, OPENAI_API_KEY (with OPENAI_BASE_URL and OPENAI_MODEL for an " +
	"OpenAI-compatible server such as vLLM or llama.cpp) or OLLAMA_HOST (and OLLAMA_MODEL), optionally TRELLIS_MODEL " +
	"to pick the default, and restart trellis."

// Offline is the embedded default model: deterministic rules, no network,
// honest about being offline. It is safe for concurrent use; the zero value
// is ready.
//
// It reads the last human message of the conversation and the tools offered
// with llms.WithTools, and replies as follows, first rule first:
//
//  0. Summaries. Asked for a summary (a system prompt opening with
//     ConversationSummaryHeading or ToolResultSummaryHeading), it answers
//     with the text's facts, one bullet line each (see offline_summary.go).
//  1. Tool results present. When tool messages follow the last human message,
//     it answers in text from them, one line per result: calculator →
//     "2+2*3 = 8"; current_time → "The current time in Asia/Tokyo is …";
//     list_tools → "Here are the tools I can use:" and a bullet per tool
//     (a JSON list of {name, description}, or {"tools": […]}, is formatted);
//     self_info → "About me: …"; remember → "I'll remember that: …";
//     recall → "Here is what I remember about you:" and a bullet per
//     memory; run_code → "I ran the code:" and its output and value; write_todos → where the plan is (and, for placeholders, how
//     to get real steps); any other tool → "<tool> returned: …". A JSON
//     object result shows its "result", "value", "time", "datetime",
//     "formatted", "text" or "error" field when it has one.
//     search_documents and load_document → the best passages (at most
//     two), each quoted by the one or two sentences sharing most words
//     with the question, with its file name and its number [n] from the
//     prompt's numbered sources (under SourcesHeading) when it has them.
//  2. Tool calls. Otherwise, for each intent it finds whose tool is offered,
//     it returns one tool call (several when a question has several intents,
//     e.g. time and arithmetic, so they can run in parallel), with empty
//     text and StopReason "tool_calls":
//     - arithmetic ("what is 2+2*3?", "calculate sqrt(16)", "15% of 80",
//     "3 times 4") → calculator {"expression": "2+2*3"};
//     - time or date ("what time is it in Tokyo?") → current_time, with
//     {"timezone": "Asia/Tokyo"} when an IANA zone or one of ~50 cities and
//     countries is named, else {};
//     - "what can you do", "what tools …" → list_tools {}; "who are you",
//     "which model …" → self_info {}; each falls back to the other when only
//     one is offered.
//     - "run this code: <program>" (or "execute the following JavaScript:",
//     the program perhaps fenced in ```) → run_code {"code": <program>},
//     and no other call, the program's arithmetic included;
//     - "remember that <fact>" → remember {"fact": <fact>}; "what do you
//     remember about me?" → recall {};
//     - a request for a plan ("make a plan for the shed: buy wood; build
//     the frame", "plan a 3-step trip to Lisbon", "help me plan my move")
//     → write_todos {"todos": [{"title": …}, …]}: the steps it lists, or
//     numbered placeholders for its goal ("Step 1 of 3: trip to Lisbon")
//     when it lists none, as many as it says (three when it does not);
//     - any other question, when a prompt lists the conversation's
//     documents (under DocumentsHeading) with one of them "[ready]" and
//     search_documents is offered → search_documents {"query": <the
//     question>}.
//     Argument names follow the offered tool's JSON Schema: when it has no
//     "expression" (or "timezone") property, its first required string
//     property is used. Call ids are "offline_call_<n>", n counting the
//     conversation's tool calls.
//  3. Text. Otherwise it answers OfflineNotice, preceded by a sentence saying
//     which tool it would need when it recognised an intent whose tool was not
//     offered, and, when a system prompt fences the request's context object
//     (ClientContextOpen), by a sentence showing it, so that the context's
//     way to the model shows with no key. It never answers general
//     questions.
//
// Text is streamed word by word to llms.WithStreamingFunc. A call that asks
// for thinking (llms.WithThinking, as llm.ThinkingOptions does for a model
// configured with Thinking) also gets one sentence of reasoning saying which
// rule decided the reply, streamed word by word to
// llms.WithStreamingReasoningFunc before the text and returned as
// ReasoningContent. Other options (JSON mode, temperature, …) are ignored, so a
// node that needs a structured decision should offer tools and treat "no tool
// call" as "answer with the text". Usage counts words, not tokens; the
// response's GenerationInfo has EstimatedKey set to true.
type Offline struct{}

var _ llms.Model = (*Offline)(nil)

// NewOffline returns the offline model.
func NewOffline() *Offline { return &Offline{} }

// Call generates from a single human prompt.
func (m *Offline) Call(ctx context.Context, prompt string, options ...llms.CallOption) (string, error) {
	return llms.GenerateFromSinglePrompt(ctx, m, prompt, options...)
}

// GenerateContent applies the rules in the type's documentation.
func (m *Offline) GenerateContent(ctx context.Context, msgs []llms.MessageContent, options ...llms.CallOption) (*llms.ContentResponse, error) {
	var o llms.CallOptions
	for _, opt := range options {
		opt(&o)
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("llm offline: %w", err)
	}
	text, calls := offlineReply(msgs, offeredTools(&o))
	thinking := ""
	if llms.GetThinkingConfig(&o) != nil {
		thinking = offlineThinking(msgs, text, calls)
		if o.StreamingReasoningFunc != nil {
			if err := streamThinking(ctx, &o, strings.SplitAfter(thinking, " "), 0, "llm offline"); err != nil {
				return nil, err
			}
		}
	}
	if text != "" && o.StreamingFunc != nil {
		// One copy of the text, streamed in slices of it: each is capped
		// at its own length, so a func that appends to one cannot
		// overwrite the next.
		for chunk := range bytes.SplitAfterSeq([]byte(text), []byte(" ")) {
			if err := ctx.Err(); err != nil {
				return nil, fmt.Errorf("llm offline: %w", err)
			}
			if err := o.StreamingFunc(ctx, chunk); err != nil {
				return nil, fmt.Errorf("llm offline: streaming func: %w", err)
			}
		}
	}
	return buildResponse(text, thinking, calls, estimateUsage(msgs, calls, text, thinking), true), nil
}

// offlineThinking says which of the offline model's rules decided its
// reply: what a reasoning model would think, in one sentence.
func offlineThinking(msgs []llms.MessageContent, text string, calls []llms.ToolCall) string {
	_, hi := lastHuman(msgs)
	switch {
	case len(calls) > 0:
		names := make([]string, len(calls))
		for i, c := range calls {
			names[i] = c.FunctionCall.Name + " " + c.FunctionCall.Arguments
		}
		return "A rule of mine covers this message, so I call " + strings.Join(names, " and ") + "."
	case len(toolResultsAfter(msgs, hi)) > 0:
		return "The tools have answered, so I report what they returned."
	case text == OfflineNotice:
		return "No rule of mine covers this message, so I say what I can do offline."
	default:
		return "The tool this message needs is not offered, so I say which one I would need."
	}
}

// streamThinking passes thinking to o's callbacks piece by piece, each
// after delay (the scripted model's; the offline model has none), as langchaingo's OpenAI client passes a reasoning model's
// deltas: the piece to the reasoning func with an empty text chunk, and
// that empty chunk to the streaming func. o.StreamingReasoningFunc is set;
// who prefixes the callbacks' errors.
func streamThinking(ctx context.Context, o *llms.CallOptions, pieces []string, delay time.Duration, who string) error {
	for _, c := range pieces {
		if err := sleep(ctx, delay); err != nil {
			return err // the scripted model's own, which names it
		}
		if o.StreamingFunc != nil {
			if err := o.StreamingFunc(ctx, []byte{}); err != nil {
				return fmt.Errorf("%s: streaming func: %w", who, err)
			}
		}
		if err := o.StreamingReasoningFunc(ctx, []byte(c), []byte{}); err != nil {
			return fmt.Errorf("%s: streaming reasoning func: %w", who, err)
		}
	}
	return nil
}

func offeredTools(o *llms.CallOptions) []llms.Tool {
	tools := slices.Clip(o.Tools) // an append copies: the caller's slice stays as it is
	for _, f := range o.Functions {
		tools = append(tools, llms.Tool{Type: "function", Function: &f})
	}
	return tools
}

func findTool(tools []llms.Tool, name string) (llms.Tool, bool) {
	for _, t := range tools {
		if t.Function != nil && t.Function.Name == name {
			return t, true
		}
	}
	return llms.Tool{}, false
}

// offlineReply decides the offline model's text or tool calls.
func offlineReply(msgs []llms.MessageContent, tools []llms.Tool) (string, []llms.ToolCall) {
	if system, human, ok := summaryRequest(msgs); ok {
		return offlineSummary(system, human), nil
	}
	q, hi := lastHuman(msgs)
	if results := toolResultsAfter(msgs, hi); len(results) > 0 {
		var sources map[int]string
		lines := make([]string, 0, len(results))
		for _, r := range results {
			if isDocumentTool(r.name) {
				if sources == nil {
					sources = numberedSources(msgs)
				}
				lines = append(lines, quotePassages(q, r, sources))
				continue
			}
			lines = append(lines, describeResult(r))
		}
		return strings.Join(lines, "\n"), nil
	}

	var calls []llms.ToolCall
	var missing []string
	prior := countToolCalls(msgs)
	call := func(name string, args map[string]string) {
		tool, _ := findTool(tools, name)
		named := map[string]string{}
		for k, v := range args {
			named[argName(tool, k)] = v
		}
		b, _ := json.Marshal(named)
		calls = append(calls, llms.ToolCall{
			ID:           fmt.Sprintf("offline_call_%d", prior+len(calls)+1),
			Type:         "function",
			FunctionCall: &llms.FunctionCall{Name: name, Arguments: string(b)},
		})
	}
	if code := codeRequest(q); code != "" {
		// Code to run is only that: its "1+2" is not for the calculator.
		if hasTool(tools, "run_code") {
			call("run_code", map[string]string{"code": code})
			return "", calls
		}
		return "I'm offline, and to run code I need the run_code tool, which this call does not offer.\n\n" + OfflineNotice, nil
	}
	if tool, args := fileRequest(q); tool != "" {
		if hasTool(tools, tool) {
			b, _ := json.Marshal(args)
			return "", []llms.ToolCall{{ID: fmt.Sprintf("offline_call_%d", prior+1), Type: "function",
				FunctionCall: &llms.FunctionCall{Name: tool, Arguments: string(b)}}}
		}
		return "I'm offline, and for the workspace's files I need the " + tool + " tool, which this call does not offer.\n\n" + OfflineNotice, nil
	}
	if expr := arithmeticExpr(q); expr != "" {
		if _, ok := findTool(tools, "calculator"); ok {
			call("calculator", map[string]string{"expression": expr})
		} else {
			missing = append(missing, fmt.Sprintf("to work out %s I need the calculator tool, which this call does not offer", expr))
		}
	}
	if asks, zone := timeQuestion(q); asks {
		if _, ok := findTool(tools, "current_time"); ok {
			args := map[string]string{}
			if zone != "" {
				args["timezone"] = zone
			}
			call("current_time", args)
		} else {
			missing = append(missing, "to tell the time I need the current_time tool, which this call does not offer")
		}
	}
	// The intents below only call tools: a call that offers none of
	// theirs (the write node's) need not look for them.
	if hasTool(tools, "list_tools") || hasTool(tools, "self_info") {
		if want := capabilityQuestion(q); want != "" {
			other := map[string]string{"list_tools": "self_info", "self_info": "list_tools"}[want]
			switch {
			case hasTool(tools, want):
				call(want, nil)
			case hasTool(tools, other):
				call(other, nil)
			}
		}
	}
	fact := ""
	if hasTool(tools, "remember") {
		fact = rememberRequest(q)
	}
	if fact != "" {
		call("remember", map[string]string{"fact": fact})
	} else if hasTool(tools, "recall") && recallQuestion(q) {
		call("recall", nil)
	} else if hasTool(tools, "write_todos") {
		if steps := planSteps(q); len(steps) > 0 {
			calls = append(calls, llms.ToolCall{ID: fmt.Sprintf("offline_call_%d", prior+len(calls)+1), Type: "function",
				FunctionCall: &llms.FunctionCall{Name: "write_todos", Arguments: writeTodosArguments(steps)}})
		}
	}
	if len(calls) == 0 && len(missing) == 0 && hasTool(tools, "search_documents") && hasReadyDocuments(msgs) {
		call("search_documents", map[string]string{"query": q})
	}
	if len(calls) > 0 {
		return "", calls
	}
	notice := OfflineNotice
	if c := clientContext(msgs); c != "" {
		notice = "Your client sent this context with your message: " + c + "\n\n" + notice
	}
	if len(missing) > 0 {
		return "I'm offline, and " + strings.Join(missing, "; ") + ".\n\n" + notice, nil
	}
	return notice, nil
}

// clientContext is the request's context object a prompt fences
// (ClientContextOpen), or "" when none does.
func clientContext(msgs []llms.MessageContent) string {
	for _, m := range msgs {
		if m.Role != llms.ChatMessageTypeSystem {
			continue
		}
		_, rest, ok := strings.Cut(partsText(m.Parts), ClientContextOpen+"\n")
		if !ok {
			continue
		}
		if c, _, ok := strings.Cut(rest, "\n"+ClientContextClose); ok {
			return c
		}
	}
	return ""
}

func hasTool(tools []llms.Tool, name string) bool {
	_, ok := findTool(tools, name)
	return ok
}

func countToolCalls(msgs []llms.MessageContent) int {
	n := 0
	for _, m := range msgs {
		for _, p := range m.Parts {
			if _, ok := p.(llms.ToolCall); ok {
				n++
			}
		}
	}
	return n
}

// argName maps a preferred argument name onto the tool's schema.
func argName(tool llms.Tool, preferred string) string {
	if tool.Function == nil || tool.Function.Parameters == nil {
		return preferred
	}
	raw, err := json.Marshal(tool.Function.Parameters)
	if err != nil {
		return preferred
	}
	var schema struct {
		Properties map[string]struct {
			Type any `json:"type"`
		} `json:"properties"`
		Required []string `json:"required"`
	}
	if json.Unmarshal(raw, &schema) != nil || len(schema.Properties) == 0 {
		return preferred
	}
	if _, ok := schema.Properties[preferred]; ok {
		return preferred
	}
	for _, r := range schema.Required {
		if p, ok := schema.Properties[r]; ok && (p.Type == "string" || p.Type == nil) {
			return r
		}
	}
	return preferred
}

// toolResult is one tool result with the call that asked for it.
type toolResult struct {
	name    string
	args    map[string]any
	content string
}

// toolResultsAfter returns the tool results that follow message index hi.
func toolResultsAfter(msgs []llms.MessageContent, hi int) []toolResult {
	callsByID := map[string]llms.ToolCall{}
	var out []toolResult
	for i := hi + 1; i < len(msgs); i++ {
		for _, p := range msgs[i].Parts {
			switch p := p.(type) {
			case llms.ToolCall:
				callsByID[p.ID] = p
			case llms.ToolCallResponse:
				r := toolResult{name: p.Name, content: p.Content}
				if c, ok := callsByID[p.ToolCallID]; ok && c.FunctionCall != nil {
					if r.name == "" {
						r.name = c.FunctionCall.Name
					}
					_ = json.Unmarshal([]byte(c.FunctionCall.Arguments), &r.args)
				}
				out = append(out, r)
			}
		}
	}
	return out
}

func describeResult(r toolResult) string {
	arg := func(keys ...string) string {
		for _, k := range keys {
			if s, ok := r.args[k].(string); ok && s != "" {
				return s
			}
		}
		for _, v := range r.args { // a schema-renamed single argument
			if s, ok := v.(string); ok && len(r.args) == 1 {
				return s
			}
		}
		return ""
	}
	value, isErr := resultValue(r.content)
	switch r.name {
	case "calculator":
		expr := arg("expression", "expr")
		if isErr {
			return fmt.Sprintf("I couldn't calculate %s: %s", expr, value)
		}
		if expr == "" {
			return "The result is " + value
		}
		return expr + " = " + value
	case "current_time":
		if isErr {
			return "I couldn't get the time: " + value
		}
		if zone := arg("timezone", "tz", "zone"); zone != "" {
			return fmt.Sprintf("The current time in %s is %s.", zone, value)
		}
		return fmt.Sprintf("The current time is %s.", value)
	case "list_tools":
		return "Here are the tools I can use:\n" + toolList(r.content)
	case "self_info":
		return "About me: " + value
	case "remember", "recall":
		return describeMemory(r, value, isErr)
	case "write_todos":
		return describePlan(r, value, isErr)
	case "run_code":
		return describeCode(value, isErr)
	case "ls", "read_file", "write_file":
		return describeFiles(r, value)
	}
	name := r.name
	if name == "" {
		name = "The tool"
	}
	return name + " returned: " + value
}

// resultValue picks the interesting field of a JSON object result.
func resultValue(content string) (string, bool) {
	content = strings.TrimSpace(content)
	var obj map[string]any
	if json.Unmarshal([]byte(content), &obj) != nil {
		return content, false
	}
	if e, ok := obj["error"]; ok && e != nil && e != "" {
		return fmt.Sprint(e), true
	}
	for _, k := range []string{"result", "value", "formatted", "datetime", "time", "text"} {
		if v, ok := obj[k]; ok {
			if s, ok := v.(string); ok {
				return s, false
			}
			b, _ := json.Marshal(v)
			return string(b), false
		}
	}
	return content, false
}

func toolList(content string) string {
	type entry struct {
		Name        string `json:"name"`
		Description string `json:"description"`
	}
	var list []entry
	if json.Unmarshal([]byte(content), &list) != nil {
		var wrapped struct {
			Tools []entry `json:"tools"`
		}
		if json.Unmarshal([]byte(content), &wrapped) != nil || len(wrapped.Tools) == 0 {
			return content
		}
		list = wrapped.Tools
	}
	var b strings.Builder
	for i, e := range list {
		if i > 0 {
			b.WriteString("\n")
		}
		b.WriteString("- " + e.Name)
		if e.Description != "" {
			b.WriteString(": " + e.Description)
		}
	}
	return b.String()
}

// estimateUsage counts words as tokens: the prompt's are the input, the
// calls' and those of out (the reply, its thinking) the output.
func estimateUsage(msgs []llms.MessageContent, calls []llms.ToolCall, out ...string) events.Usage {
	in := 0
	for _, m := range msgs {
		for _, p := range m.Parts {
			switch p := p.(type) {
			case llms.TextContent:
				in += countWords(p.Text)
			case llms.ToolCall:
				if p.FunctionCall != nil {
					in += 1 + countWords(p.FunctionCall.Arguments)
				}
			case llms.ToolCallResponse:
				in += countWords(p.Content)
			}
		}
	}
	n := 0
	for _, t := range out {
		n += countWords(t)
	}
	for _, c := range calls {
		n += 1 + countWords(c.FunctionCall.Arguments)
	}
	return withTotal(events.Usage{InputTokens: in, OutputTokens: n})
}

// countWords is len(strings.Fields(s)) without the slice: the prompt's
// words are counted at every call, and a prompt runs to thousands.
func countWords(s string) int {
	n := 0
	inWord := false
	for i := 0; i < len(s); {
		var space bool
		if c := s[i]; c < utf8.RuneSelf {
			space = c == ' ' || c-'\t' <= '\r'-'\t' // unicode.IsSpace's ASCII: \t \n \v \f \r and space
			i++
		} else {
			r, size := utf8.DecodeRuneInString(s[i:])
			space = unicode.IsSpace(r)
			i += size
		}
		if !space && !inWord {
			n++
		}
		inWord = !space
	}
	return n
}

// buildResponse makes the one-choice response of the offline and scripted
// models.
func buildResponse(text, thinking string, calls []llms.ToolCall, usage events.Usage, estimated bool) *llms.ContentResponse {
	stop := "stop"
	if len(calls) > 0 {
		stop = "tool_calls"
	}
	choice := &llms.ContentChoice{
		Content:          text,
		ReasoningContent: thinking,
		StopReason:       stop,
		ToolCalls:        calls,
		GenerationInfo: map[string]any{
			UsageKey:           usage,
			EstimatedKey:       estimated,
			"PromptTokens":     usage.InputTokens,
			"CompletionTokens": usage.OutputTokens + usage.ThinkingTokens,
			"ThinkingTokens":   usage.ThinkingTokens,
			"TotalTokens":      usage.TotalTokens,
		},
	}
	if thinking != "" {
		choice.GenerationInfo["ThinkingContent"] = thinking
	}
	if len(calls) > 0 {
		choice.FuncCall = calls[0].FunctionCall
	}
	return &llms.ContentResponse{Choices: []*llms.ContentChoice{choice}}
}
