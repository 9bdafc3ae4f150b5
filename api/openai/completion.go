package openai

import (
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/trellis-ai/trellis/api/jsonbody"
	"github.com/trellis-ai/trellis/events"
	"github.com/trellis-ai/trellis/internal/sse"
	"github.com/trellis-ai/trellis/runs"
)

// completion turns one run's events into one chat completion: the
// answer's text, the calls of client tools, the usage, and how it
// finished.
type completion struct {
	id, model string
	created   int64
	// streamed: response.chunk carried the text, so response.done's
	// content is not sent again.
	streamed  bool
	calls     []toolCall
	approvals []*events.ApprovalRequired
	usage     events.Usage
	// thinker is the node whose reasoning came last: another node's
	// follows a blank line.
	thinker string
}

// answerer writes a completion, streamed or whole.
type answerer interface {
	content(delta string) error
	// reasoning is a piece of the model's reasoning (reasoning_content).
	reasoning(delta string) error
	toolCall(index int, c toolCall) error
	end(finish string, usage events.Usage) error
	// fail ends the answer with a server error saying err.
	fail(err error)
	// gone reports whether a write to the client failed: it went away.
	gone() bool
}

// take translates one event of the run.
func (c *completion) take(p events.Payload, out answerer) error {
	switch e := p.(type) {
	case *events.ResponseChunk:
		c.streamed = true
		return out.content(e.Content)
	case *events.ReasoningChunk:
		if e.Content == "" {
			return nil
		}
		if c.thinker != "" && c.thinker != e.Node {
			if err := out.reasoning("\n\n"); err != nil {
				return err
			}
		}
		c.thinker = e.Node
		return out.reasoning(e.Content)
	case *events.ToolStart:
		if e.Source != runs.SourceClient {
			return nil // Trellis' own tools run inside the run
		}
		tc := toolCall{ID: e.ToolCallID, Type: "function", Function: functionCall{Name: e.Tool, Arguments: string(e.Args)}}
		c.calls = append(c.calls, tc)
		return out.toolCall(len(c.calls)-1, tc)
	case *events.ApprovalRequired:
		c.approvals = append(c.approvals, e)
	case *events.ResponseDone:
		c.usage = e.Usage
		if !c.streamed && e.Content != "" {
			c.streamed = true
			return out.content(e.Content)
		}
	case *events.RunCompleted:
		if !e.Usage.IsZero() {
			c.usage = e.Usage
		}
		if len(c.calls) > 0 {
			return out.end("tool_calls", c.usage)
		}
		return out.end("stop", c.usage)
	case *events.RunInterrupted:
		if text := c.waiting(e); text != "" {
			if err := out.content(text); err != nil {
				return err
			}
		}
		return out.end("stop", c.usage)
	case *events.RunCancelled:
		return out.end("stop", c.usage)
	case *events.RunFailed:
		out.fail(fmt.Errorf("openai: the run failed: %s: %s", e.Error.Code, e.Error.Message))
	}
	return nil
}

// expiryWords say what an approval's deadline decides.
var expiryWords = map[events.ExpiryOutcome]string{
	events.ExpiryReject: "rejected", events.ExpiryApprove: "approved", events.ExpiryCancel: "cancelled with its run",
}

// waiting says what a run that stopped for a human waits for: each
// kind of request it waits on, as an approval and a call that may have
// run can wait side by side. A clarifying question is already the
// answer's text.
func (c *completion) waiting(e *events.RunInterrupted) string {
	var parts []string
	if e.Reason == "approval" || len(e.ApprovalIDs) > 0 {
		var b strings.Builder
		b.WriteString("Trellis is waiting for approval before running ")
		for i, a := range c.approvals {
			if i > 0 {
				b.WriteString(", ")
			}
			fmt.Fprintf(&b, "%s (approval id %s", a.Tool, a.ApprovalID)
			if a.ExpiresAt != nil {
				fmt.Fprintf(&b, "; unanswered by %s, it will be %s", a.ExpiresAt.UTC().Format(time.RFC3339), expiryWords[a.OnExpiry])
			}
			b.WriteString(")")
		}
		if len(c.approvals) == 0 {
			fmt.Fprintf(&b, "a tool (approval ids %s)", strings.Join(e.ApprovalIDs, ", "))
		}
		b.WriteString(". Answer it in Trellis (POST /api/v1/approvals/{approval_id}); the tool has not run.")
		parts = append(parts, b.String())
	}
	if more := waitingOthers(e); more != "" {
		parts = append(parts, more)
	}
	return strings.Join(parts, " ")
}

// waitingOthers says what else than approvals a stopped run waits for:
// a call that may have run, and a tool's question.
func waitingOthers(e *events.RunInterrupted) string {
	var parts []string
	if len(e.UncertainCallIDs) > 0 {
		parts = append(parts, "Trellis stopped while a tool was running, so the call may or may not have taken effect; it will not run again "+
			"unless you say so (uncertain call ids "+strings.Join(e.UncertainCallIDs, ", ")+"). Decide in Trellis: "+
			"POST /api/v1/uncertain-calls/{uncertain_call_id} with retry, skip or fail.")
	}
	if len(e.ElicitationIDs) > 0 {
		parts = append(parts, "Trellis is waiting for your input to a tool (elicitation ids "+strings.Join(e.ElicitationIDs, ", ")+"); answer it in Trellis.")
	}
	return strings.Join(parts, " ")
}

type usage struct {
	PromptTokens     int `json:"prompt_tokens"`
	CompletionTokens int `json:"completion_tokens"`
	TotalTokens      int `json:"total_tokens"`
}

func usageOf(u events.Usage) usage {
	total := u.TotalTokens
	if total == 0 {
		total = u.InputTokens + u.OutputTokens
	}
	return usage{PromptTokens: u.InputTokens, CompletionTokens: u.OutputTokens, TotalTokens: total}
}

// collector answers one chat.completion when the run ends.
type collector struct {
	w       http.ResponseWriter
	c       *completion
	timeout time.Duration // of the answer's write
	text    strings.Builder
	thought strings.Builder
	calls   []toolCall
}

func (a *collector) content(delta string) error { a.text.WriteString(delta); return nil }

func (a *collector) reasoning(delta string) error { a.thought.WriteString(delta); return nil }

func (a *collector) toolCall(_ int, c toolCall) error { a.calls = append(a.calls, c); return nil }

type answerMessage struct {
	Role      string     `json:"role"`
	Content   *string    `json:"content"`
	Refusal   *string    `json:"refusal"`
	ToolCalls []toolCall `json:"tool_calls,omitempty"`
	// ReasoningContent is the model's reasoning, where DeepSeek's API and
	// vLLM put it; the OpenAI API itself returns none.
	ReasoningContent string `json:"reasoning_content,omitempty"`
}

func (a *collector) end(finish string, u events.Usage) error {
	msg := answerMessage{Role: "assistant"}
	if text := a.text.String(); text != "" || len(a.calls) == 0 {
		msg.Content = &text
	}
	msg.ToolCalls = a.calls
	msg.ReasoningContent = a.thought.String()
	_ = http.NewResponseController(a.w).SetWriteDeadline(time.Now().Add(a.timeout))
	jsonbody.Write(a.w, http.StatusOK, map[string]any{
		"id": a.c.id, "object": "chat.completion", "created": a.c.created, "model": a.c.model,
		"choices": []any{map[string]any{"index": 0, "message": msg, "logprobs": nil, "finish_reason": finish}},
		"usage":   usageOf(u),
	})
	return nil
}

func (a *collector) fail(err error) { writeError(a.w, runFailed(err)) }

// gone is false: the collector writes only once the run has ended.
func (a *collector) gone() bool { return false }

// runFailed is a failed run as the client sees it: a server error, so
// the client may retry.
func runFailed(err error) *apiError {
	msg := "the run failed"
	if err != nil {
		msg = err.Error()
	}
	return &apiError{Status: http.StatusInternalServerError, Type: "server_error", Message: msg}
}

// streamer writes chat.completion.chunk frames as the run goes: data
// lines of one chunk's JSON, ended by [DONE].
type streamer struct {
	sw           *sse.Writer
	c            *completion
	includeUsage bool
}

// newStreamer sends the headers and the first chunk, with the role, at
// once: the client sees the response begin while the agent thinks.
func newStreamer(w http.ResponseWriter, c *completion, includeUsage bool, timeout time.Duration) *streamer {
	s := &streamer{sw: sse.Start(w, timeout), c: c, includeUsage: includeUsage}
	_ = s.chunk(map[string]any{"role": "assistant", "content": ""}, nil)
	return s
}

type chunkChoice struct {
	Index        int     `json:"index"`
	Delta        any     `json:"delta"`
	Logprobs     any     `json:"logprobs"`
	FinishReason *string `json:"finish_reason"`
}

type chunk struct {
	ID      string        `json:"id"`
	Object  string        `json:"object"`
	Created int64         `json:"created"`
	Model   string        `json:"model"`
	Choices []chunkChoice `json:"choices"`
	Usage   *usage        `json:"usage,omitempty"`
}

func (s *streamer) gone() bool { return s.sw.Failed() }

func (s *streamer) chunk(delta any, finish *string) error {
	return s.frame(chunk{ID: s.c.id, Object: "chat.completion.chunk", Created: s.c.created, Model: s.c.model,
		Choices: []chunkChoice{{Delta: delta, FinishReason: finish}}})
}

func (s *streamer) frame(v any) error { return s.sw.JSON(0, "", v) }

func (s *streamer) content(delta string) error {
	if delta == "" {
		return nil
	}
	return s.chunk(map[string]string{"content": delta}, nil)
}

// reasoning sends a piece of the reasoning as a delta's
// reasoning_content, as DeepSeek's API and vLLM stream it.
func (s *streamer) reasoning(delta string) error {
	return s.chunk(map[string]string{"reasoning_content": delta}, nil)
}

type toolCallDelta struct {
	Index int `json:"index"`
	toolCall
}

func (s *streamer) toolCall(index int, c toolCall) error {
	return s.chunk(map[string]any{"tool_calls": []toolCallDelta{{Index: index, toolCall: c}}}, nil)
}

func (s *streamer) end(finish string, u events.Usage) error {
	if err := s.chunk(struct{}{}, &finish); err != nil {
		return err
	}
	if s.includeUsage {
		us := usageOf(u)
		if err := s.frame(chunk{ID: s.c.id, Object: "chat.completion.chunk", Created: s.c.created, Model: s.c.model,
			Choices: []chunkChoice{}, Usage: &us}); err != nil {
			return err
		}
	}
	return s.sw.Event(0, "", []byte("[DONE]"))
}

// fail sends an error frame, which the openai client raises as an
// APIError; the status was sent with the first chunk.
func (s *streamer) fail(err error) {
	_ = s.frame(map[string]*apiError{"error": runFailed(err)})
}
