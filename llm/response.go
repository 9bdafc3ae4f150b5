package llm

import (
	"strings"

	"github.com/tmc/langchaingo/llms"
)

// TextFrom returns the text of a response: the content of every choice, in
// order, joined without separator (Anthropic puts each content block in its
// own choice; OpenAI has one choice). Empty for nil.
func TextFrom(resp *llms.ContentResponse) string {
	if resp == nil {
		return ""
	}
	var b strings.Builder
	for _, c := range resp.Choices {
		if c != nil {
			b.WriteString(c.Content)
		}
	}
	return b.String()
}

// ToolCallsFrom collects the tool calls of every choice (not just the first:
// Anthropic returns each tool_use block as its own choice) and sets each
// call's Type to "function", which OpenAI requires when the call is sent
// back in the history and which Anthropic and Gemini leave empty.
func ToolCallsFrom(resp *llms.ContentResponse) []llms.ToolCall {
	if resp == nil {
		return nil
	}
	var calls []llms.ToolCall
	for _, c := range resp.Choices {
		if c == nil {
			continue
		}
		for _, tc := range c.ToolCalls {
			if tc.Type == "" {
				tc.Type = "function"
			}
			calls = append(calls, tc)
		}
	}
	return calls
}

// ThinkingFrom returns the model's reasoning text, if the provider returned
// any: ContentChoice.ReasoningContent or GenerationInfo["ThinkingContent"]
// (Anthropic's thinking blocks), over every choice.
func ThinkingFrom(resp *llms.ContentResponse) string {
	if resp == nil {
		return ""
	}
	var parts []string
	for _, c := range resp.Choices {
		if c == nil {
			continue
		}
		switch {
		case c.ReasoningContent != "":
			parts = append(parts, c.ReasoningContent)
		case c.GenerationInfo != nil:
			if s, ok := c.GenerationInfo["ThinkingContent"].(string); ok && s != "" {
				parts = append(parts, s)
			}
		}
	}
	return strings.Join(parts, "\n")
}

// normalizeToolCalls sets Type "function" on every tool call in place.
func normalizeToolCalls(resp *llms.ContentResponse) {
	if resp == nil {
		return
	}
	for _, c := range resp.Choices {
		if c == nil {
			continue
		}
		for i := range c.ToolCalls {
			if c.ToolCalls[i].Type == "" {
				c.ToolCalls[i].Type = "function"
			}
		}
	}
}

// lastHuman returns the text of the last human message and its index, or
// ("", -1) when there is none.
func lastHuman(msgs []llms.MessageContent) (string, int) {
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Role == llms.ChatMessageTypeHuman {
			return partsText(msgs[i].Parts), i
		}
	}
	return "", -1
}

func partsText(parts []llms.ContentPart) string {
	if len(parts) == 1 { // as nearly every message is: its text, not a copy
		if t, ok := parts[0].(llms.TextContent); ok {
			return t.Text
		}
	}
	var b strings.Builder
	for _, p := range parts {
		switch p := p.(type) {
		case llms.TextContent:
			b.WriteString(p.Text)
		case *llms.TextContent:
			if p != nil {
				b.WriteString(p.Text)
			}
		}
	}
	return b.String()
}
