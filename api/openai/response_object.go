package openai

import (
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/trellis-ai/trellis/events"
	"github.com/trellis-ai/trellis/internal/sse"
	"github.com/trellis-ai/trellis/runs"
)

// approvalServer is the server_label of an approval's
// mcp_approval_request item: the tool is Trellis' own.
const approvalServer = "trellis"

// response turns one run's events into one Responses API response: its
// output items (reasoning, the answer's message, calls of client tools,
// approval requests), usage and status. Streamed (sw set), it sends each
// change as the protocol's event as it goes; whole, the handler writes
// object() once the run ends.
type response struct {
	id, runID, model string
	created          int64
	t                *responsesTurn
	sw               *sse.Writer
	seq              int
	status           string
	output           []*outputItem
	// open is the message or reasoning item being streamed, nil when
	// none.
	open *outputItem
	// streamed: response.chunk carried the text, so response.done's
	// content is not sent again.
	streamed bool
	// thinker is the node whose reasoning came last: another node's
	// follows a blank line.
	thinker   string
	usage     events.Usage
	completed *int64
	// failure is why the response failed; the handler answers it.
	failure error
}

// outputItem is one item of the response's output.
type outputItem struct {
	id, kind, status string
	text             strings.Builder
	callID, name     string
	arguments        string
}

func newResponse(runID string, t *responsesTurn) *response {
	return &response{id: responsePrefix + runID, runID: runID, model: t.model, created: time.Now().Unix(), t: t, status: "in_progress"}
}

// send writes one event of the stream; whole, nothing.
func (b *response) send(typ string, fields map[string]any) error {
	if b.sw == nil {
		return nil
	}
	fields["type"] = typ
	fields["sequence_number"] = b.seq
	b.seq++
	return b.sw.JSON(0, typ, fields)
}

// begin opens the stream: the response is created and in progress.
func (b *response) begin() error {
	if err := b.send("response.created", map[string]any{"response": b.object()}); err != nil {
		return err
	}
	return b.send("response.in_progress", map[string]any{"response": b.object()})
}

// take translates one event of the run.
func (b *response) take(p events.Payload) error {
	switch e := p.(type) {
	case *events.ReasoningChunk:
		if e.Content == "" {
			return nil
		}
		delta := e.Content
		if b.open != nil && b.open.kind == "reasoning" && b.thinker != e.Node {
			delta = "\n\n" + delta
		}
		b.thinker = e.Node
		return b.textDelta("reasoning", delta)
	case *events.ResponseChunk:
		b.streamed = true
		return b.textDelta("message", e.Content)
	case *events.ResponseDone:
		b.usage = e.Usage
		if !b.streamed && e.Content != "" {
			b.streamed = true
			return b.textDelta("message", e.Content)
		}
	case *events.ToolStart:
		if e.Source != runs.SourceClient {
			return nil // Trellis' own tools run inside the response
		}
		return b.functionCall(e)
	case *events.ApprovalRequired:
		if err := b.closeOpen(); err != nil {
			return err
		}
		it := &outputItem{id: e.ApprovalID, kind: "mcp_approval_request", name: e.Tool, arguments: string(e.Args)}
		if err := b.add(it); err != nil {
			return err
		}
		return b.done(it)
	case *events.RunCompleted:
		if !e.Usage.IsZero() {
			b.usage = e.Usage
		}
		return b.end("completed", "response.completed")
	case *events.RunInterrupted:
		if err := b.closeOpen(); err != nil {
			return err
		}
		if text := waitingOthers(e); text != "" {
			if err := b.textDelta("message", text); err != nil {
				return err
			}
		}
		return b.end("completed", "response.completed")
	case *events.RunCancelled:
		return b.end("cancelled", "response.incomplete")
	case *events.RunFailed:
		b.failure = fmt.Errorf("openai: the run failed: %s: %s", e.Error.Code, e.Error.Message)
	}
	return nil
}

// textDelta adds text to the open item of kind, opening one (and
// closing another) first.
func (b *response) textDelta(kind, delta string) error {
	if delta == "" {
		return nil
	}
	if b.open != nil && b.open.kind != kind {
		if err := b.closeOpen(); err != nil {
			return err
		}
	}
	if b.open == nil {
		prefix := "msg_"
		if kind == "reasoning" {
			prefix = "rs_"
		}
		it := &outputItem{id: fmt.Sprintf("%s%s_%d", prefix, b.runID, len(b.output)), kind: kind, status: "in_progress"}
		if err := b.add(it); err != nil {
			return err
		}
		b.open = it
		if err := b.send("response.content_part.added", b.partEvent(it, "")); err != nil {
			return err
		}
	}
	b.open.text.WriteString(delta)
	ev := map[string]any{"item_id": b.open.id, "output_index": len(b.output) - 1, "content_index": 0, "delta": delta}
	if kind == "reasoning" {
		return b.send("response.reasoning_text.delta", ev)
	}
	ev["logprobs"] = []any{}
	return b.send("response.output_text.delta", ev)
}

// closeOpen ends the open message or reasoning item.
func (b *response) closeOpen() error {
	it := b.open
	if it == nil {
		return nil
	}
	b.open = nil
	ev := map[string]any{"item_id": it.id, "output_index": len(b.output) - 1, "content_index": 0, "text": it.text.String()}
	typ := "response.reasoning_text.done"
	if it.kind == "message" {
		typ = "response.output_text.done"
		ev["logprobs"] = []any{}
	}
	if err := b.send(typ, ev); err != nil {
		return err
	}
	if err := b.send("response.content_part.done", b.partEvent(it, it.text.String())); err != nil {
		return err
	}
	it.status = "completed"
	return b.done(it)
}

// functionCall adds a call of a client tool, whole: the model's
// arguments come at once.
func (b *response) functionCall(e *events.ToolStart) error {
	if err := b.closeOpen(); err != nil {
		return err
	}
	it := &outputItem{id: "fc_" + e.ToolCallID, kind: "function_call", status: "in_progress", callID: e.ToolCallID, name: e.Tool}
	if err := b.add(it); err != nil {
		return err
	}
	it.arguments = string(e.Args)
	at := len(b.output) - 1
	if err := b.send("response.function_call_arguments.delta", map[string]any{"item_id": it.id, "output_index": at, "delta": it.arguments}); err != nil {
		return err
	}
	if err := b.send("response.function_call_arguments.done", map[string]any{"item_id": it.id, "output_index": at, "arguments": it.arguments}); err != nil {
		return err
	}
	it.status = "completed"
	return b.done(it)
}

// add appends an item to the output and announces it.
func (b *response) add(it *outputItem) error {
	b.output = append(b.output, it)
	return b.send("response.output_item.added", map[string]any{"output_index": len(b.output) - 1, "item": it.render()})
}

// done announces an item finished; it is the output's last.
func (b *response) done(it *outputItem) error {
	return b.send("response.output_item.done", map[string]any{"output_index": len(b.output) - 1, "item": it.render()})
}

func (b *response) partEvent(it *outputItem, text string) map[string]any {
	return map[string]any{"item_id": it.id, "output_index": len(b.output) - 1, "content_index": 0, "part": it.part(text)}
}

// part is the item's one content part, with text.
func (it *outputItem) part(text string) map[string]any {
	if it.kind == "reasoning" {
		return map[string]any{"type": "reasoning_text", "text": text}
	}
	return map[string]any{"type": "output_text", "text": text, "annotations": []any{}}
}

// render is the item as the protocol shows it.
func (it *outputItem) render() map[string]any {
	m := map[string]any{"id": it.id, "type": it.kind}
	switch it.kind {
	case "message", "reasoning":
		content := []any{}
		if it.status != "in_progress" {
			content = append(content, it.part(it.text.String()))
		}
		m["status"], m["content"] = it.status, content
		if it.kind == "message" {
			m["role"] = "assistant"
		} else {
			m["summary"] = []any{}
		}
	case "function_call":
		m["status"], m["call_id"], m["name"], m["arguments"] = it.status, it.callID, it.name, it.arguments
	case "mcp_approval_request":
		m["name"], m["arguments"], m["server_label"] = it.name, it.arguments, approvalServer
	}
	return m
}

// end closes the output and sends the response's last event.
func (b *response) end(status, event string) error {
	if err := b.closeOpen(); err != nil {
		return err
	}
	b.status = status
	now := time.Now().Unix()
	b.completed = &now
	return b.send(event, map[string]any{"response": b.object()})
}

// object is the response as the protocol shows it now.
func (b *response) object() map[string]any {
	output := make([]any, 0, len(b.output))
	for _, it := range b.output {
		output = append(output, it.render())
	}
	tools := make([]any, 0, len(b.t.tools))
	for _, t := range b.t.tools {
		var params any
		if len(t.Parameters) > 0 {
			params = t.Parameters
		}
		tools = append(tools, map[string]any{"type": t.Type, "name": t.Name, "description": t.Description, "parameters": params, "strict": false})
	}
	var previous, errObj any
	if b.t.previous != "" {
		previous = responsePrefix + b.t.previous
	}
	if b.failure != nil {
		errObj = map[string]any{"code": "server_error", "message": b.failure.Error()}
	}
	m := map[string]any{
		"id": b.id, "object": "response", "created_at": b.created, "status": b.status, "error": errObj, "incomplete_details": nil,
		"instructions": b.t.instructions, "metadata": map[string]string{}, "model": b.model, "output": output,
		"parallel_tool_calls": true, "temperature": nil, "tool_choice": "auto", "tools": tools, "top_p": nil,
		"previous_response_id": previous, "store": b.t.store, "completed_at": b.completed,
	}
	if b.completed != nil {
		m["usage"] = responseUsage(b.usage)
	}
	return m
}

// responseUsage is a run's usage in the Responses shape.
func responseUsage(u events.Usage) map[string]any {
	us := usageOf(u)
	return map[string]any{
		"input_tokens":          us.PromptTokens,
		"input_tokens_details":  map[string]int{"cached_tokens": u.CacheReadTokens, "cache_write_tokens": u.CacheWriteTokens},
		"output_tokens":         us.CompletionTokens,
		"output_tokens_details": map[string]int{"reasoning_tokens": u.ThinkingTokens},
		"total_tokens":          us.TotalTokens,
	}
}

// fail answers a response that failed: whole, a server error in
// OpenAI's shape; streamed, the response fails (response.failed) when
// the run said so, or an error event when following it failed (err).
func (b *response) fail(w http.ResponseWriter, err error) {
	if b.failure != nil {
		err = b.failure
	}
	if b.sw == nil {
		writeError(w, runFailed(err))
		return
	}
	if b.failure != nil {
		b.status = "failed"
		_ = b.send("response.failed", map[string]any{"response": b.object()})
		return
	}
	msg := "following the run failed"
	if err != nil {
		msg = err.Error()
	}
	_ = b.send("error", map[string]any{"code": "server_error", "message": msg, "param": nil})
}
