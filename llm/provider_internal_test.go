package llm

import (
	"strings"
	"testing"

	"github.com/tmc/langchaingo/llms"
)

func TestSplitForAnthropicKeepsEveryPart(t *testing.T) {
	call := func(id string) llms.ToolCall {
		return llms.ToolCall{ID: id, Type: "function", FunctionCall: &llms.FunctionCall{Name: "t" + id, Arguments: "{}"}}
	}
	result := func(id string) llms.ToolCallResponse {
		return llms.ToolCallResponse{ToolCallID: id, Name: "t" + id, Content: "r" + id}
	}
	msgs := []llms.MessageContent{
		llms.TextParts(llms.ChatMessageTypeHuman, "q"),
		{Role: llms.ChatMessageTypeAI, Parts: []llms.ContentPart{llms.TextContent{Text: "checking"}, call("1"), call("2")}},
		{Role: llms.ChatMessageTypeTool, Parts: []llms.ContentPart{result("2")}},
		{Role: llms.ChatMessageTypeTool, Parts: []llms.ContentPart{result("1")}},
	}
	got := splitForAnthropic(msgs)
	var desc []string
	for _, m := range got {
		if len(m.Parts) != 1 {
			t.Fatalf("message %+v has %d parts; Anthropic's adapter reads only the first", m, len(m.Parts))
		}
		switch p := m.Parts[0].(type) {
		case llms.TextContent:
			desc = append(desc, string(m.Role)+":"+p.Text)
		case llms.ToolCall:
			desc = append(desc, "call:"+p.ID)
		case llms.ToolCallResponse:
			desc = append(desc, "result:"+p.ToolCallID)
		}
	}
	want := "human:q ai:checking call:1 result:1 call:2 result:2"
	if s := strings.Join(desc, " "); s != want {
		t.Errorf("split = %s\nwant    %s", s, want)
	}
	simple := []llms.MessageContent{llms.TextParts(llms.ChatMessageTypeHuman, "q")}
	if got := splitForAnthropic(simple); &got[0] != &simple[0] {
		t.Error("messages needing no split should be passed through untouched")
	}
}

func TestProviderErrorReadsLangchaingoStrings(t *testing.T) {
	for msg, want := range map[string]Kind{
		"API returned unexpected status code: 429: Rate limit": KindRateLimited,
		"API returned unexpected status code: 503":             KindTransient,
		"API returned unexpected status code: 529: Overloaded": KindTransient,
		"API returned unexpected status code: 404: no model":   KindPermanent,
		"request timeout: API call exceeded deadline":          KindTransient,
		"network error: failed to reach API server":            KindTransient,
		"error reading streaming response: unexpected EOF":     KindTransient,
		"expected exactly one part for role tool, got 2":       KindPermanent,
		"anthropic: failed to create message: received error event: map[error:map[message:Overloaded type:overloaded_error] type:error]":       KindTransient,
		"anthropic: failed to create message: received error event: map[error:map[message:Internal server error type:api_error] type:error]":   KindTransient,
		"anthropic: failed to create message: received error event: map[error:map[message:Rate limited type:rate_limit_error] type:error]":     KindRateLimited,
		"anthropic: failed to create message: received error event: map[error:map[message:Bad request type:invalid_request_error] type:error]": KindPermanent,
	} {
		if got := providerError(errorString(msg), nil).Kind; got != want {
			t.Errorf("providerError(%q) is %s, want %s", msg, got, want)
		}
	}
}

type errorString string

func (e errorString) Error() string { return string(e) }

// A call continues a tool loop while the last assistant message makes
// tool calls, also when a message follows their results (reflect's and
// write's instructions do): Anthropic refuses thinking on either.
func TestInToolLoop(t *testing.T) {
	call := llms.MessageContent{Role: llms.ChatMessageTypeAI, Parts: []llms.ContentPart{llms.ToolCall{ID: "t1", Type: "function"}}}
	result := llms.MessageContent{Role: llms.ChatMessageTypeTool, Parts: []llms.ContentPart{llms.ToolCallResponse{ToolCallID: "t1"}}}
	human := llms.TextParts(llms.ChatMessageTypeHuman, "assess")
	answer := llms.TextParts(llms.ChatMessageTypeAI, "done")
	for _, tc := range []struct {
		msgs []llms.MessageContent
		want bool
	}{
		{nil, false},
		{[]llms.MessageContent{human}, false},
		{[]llms.MessageContent{human, call, result}, true},
		{[]llms.MessageContent{human, call, result, human}, true},
		{[]llms.MessageContent{human, call, result, answer, human}, false},
	} {
		if got := inToolLoop(tc.msgs); got != tc.want {
			t.Errorf("inToolLoop(%d messages) = %v, want %v", len(tc.msgs), got, tc.want)
		}
	}
}
