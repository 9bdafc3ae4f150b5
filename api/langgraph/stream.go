package langgraph

import (
	"context"
	"encoding/json"
	"log/slog"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/trellis-ai/trellis/events"
	"github.com/trellis-ai/trellis/internal/sse"
	"github.com/trellis-ai/trellis/runs"
)

// sseEvent is one event of a LangGraph stream: its name (the mode) and
// one JSON value.
type sseEvent struct {
	name string
	data any
}

// translator turns one run's events, in order, into the events of the
// stream modes asked for. It keeps the thread's messages as the run
// changes them (for values), numbered as the checkpoint numbers them
// (see humanID), and reads the thread's state at the run's end, so that
// the last values are the checkpoint's.
type translator struct {
	modes           modes
	threadID, runID string
	turn            int
	users, answers  int    // of the turn so far
	human           string // the message that starts the run; "" on resume
	msgs            []message
	calls           int // index in msgs of the current proposal's message, or -1
	streamed        strings.Builder
	// thought is the reasoning of the node's model call so far, under
	// thoughtID; thoughts counts the run's reasoning messages.
	thought           strings.Builder
	thoughtID         string
	thoughts          int
	node              string
	reasoning         string
	state             func() (runs.Snapshot, error)
	final             values // the values at the run's end
	failed            *events.ErrorInfo
	interrupted, done bool
}

// newTranslator starts from the thread's messages before the run's
// events (prior, of turns before turn for a run that starts one).
func newTranslator(threadID, runID string, m modes, turn int, prior []runs.Message, human string, state func() (runs.Snapshot, error)) *translator {
	t := &translator{modes: m, threadID: threadID, runID: runID, turn: turn, human: human, calls: -1, state: state}
	t.msgs = fromState(prior)
	for _, pm := range prior {
		if pm.Turn != turn {
			continue
		}
		switch {
		case pm.Role == runs.RoleUser:
			t.users++
		case pm.Role == runs.RoleAssistant && len(pm.ToolCalls) == 0:
			t.answers++
		}
	}
	return t
}

func (t *translator) metadata() map[string]any {
	return map[string]any{"langgraph_node": t.node, "thread_id": t.threadID, "run_id": t.runID,
		"graph_id": graphID, "assistant_id": graphID, "langgraph_step": 0}
}

// add appends or replaces (by id) a message and returns the events that
// say so: values, updates from node, and complete in the messages modes
// (in messages-tuple only when tuple: an answer went out chunk by chunk
// already).
func (t *translator) add(out []sseEvent, node string, m message, tuple bool) []sseEvent {
	replaced := false
	for i := range t.msgs {
		if t.msgs[i].ID == m.ID {
			t.msgs[i], replaced = m, true
		}
	}
	if !replaced {
		t.msgs = append(t.msgs, m)
	}
	if t.modes.has(modeUpdates) {
		out = append(out, sseEvent{"updates", map[string]any{node: map[string]any{"messages": []message{m}}}})
	}
	if t.modes.has(modeValues) {
		out = append(out, sseEvent{"values", values{Messages: t.msgs}})
	}
	if t.modes.has(modeMessagesTuple) && tuple {
		out = append(out, sseEvent{"messages", []any{m, t.metadata()}})
	}
	if t.modes.has(modeMessages) && m.Type != "human" {
		out = append(out, sseEvent{"messages/complete", []message{m}})
	}
	return out
}

// chainEvent is an astream_events v2 record.
func (t *translator) chainEvent(event, name string, data any) sseEvent {
	return sseEvent{"events", map[string]any{"event": event, "name": name, "run_id": t.runID, "tags": []string{},
		"metadata": t.metadata(), "data": data}}
}

// proposal adds call to the current proposal's message (the assistant
// message of the supervisor's latest decision), making it at its first
// call.
func (t *translator) proposal(out []sseEvent, id, tool string, args json.RawMessage, reasoning string) []sseEvent {
	if t.calls >= 0 {
		m := t.msgs[t.calls]
		for _, c := range m.ToolCalls {
			if c.ID == id {
				return out
			}
		}
		m.ToolCalls = append(append([]toolCall(nil), m.ToolCalls...), newToolCall(id, tool, args))
		return t.add(out, "supervisor", m, true)
	}
	out = t.add(out, "supervisor", message{Type: "ai", Content: reasoning, ID: callsID(id), ToolCalls: []toolCall{newToolCall(id, tool, args)}}, true)
	t.calls = len(t.msgs) - 1
	return out
}

// translate returns the stream events of one run event.
func (t *translator) translate(typ string, p events.Payload) []sseEvent {
	var out []sseEvent
	switch d := p.(type) {
	case *events.RunStarted:
		if t.human != "" {
			t.node = "initialize"
			out = t.add(out, "initialize", message{Type: "human", Content: t.human, ID: humanID(t.turn, t.users)}, false)
			t.users++
		}
	case *events.NodeStart:
		t.node = d.Node
		if t.modes.has(modeEvents) {
			out = append(out, t.chainEvent("on_chain_start", d.Node, map[string]any{}))
		}
	case *events.NodeEnd:
		t.thoughtID = ""
		t.thought.Reset()
		if t.modes.has(modeEvents) {
			out = append(out, t.chainEvent("on_chain_end", d.Node, map[string]any{}))
		}
	case *events.SupervisorDecided:
		t.calls = -1
		t.reasoning = d.Reasoning
	case *events.ApprovalRequired:
		out = t.proposal(out, d.ToolCallID, d.Tool, d.Args, t.reasoning)
	case *events.ToolUncertain:
		out = t.proposal(out, d.ToolCallID, d.Tool, d.Args, t.reasoning)
	case *events.ToolStart:
		out = t.proposal(out, d.ToolCallID, d.Tool, d.Args, t.reasoning)
		if t.modes.has(modeEvents) {
			out = append(out, t.chainEvent("on_tool_start", d.Tool, map[string]any{"input": objectArgs(d.Args)}))
		}
	case *events.ToolComplete:
		out = t.add(out, "execute_tool", message{Type: "tool", Content: d.Result, ID: toolID(d.ToolCallID), ToolCallID: d.ToolCallID,
			Name: d.Tool, Status: "success"}, true)
		if t.modes.has(modeEvents) {
			out = append(out, t.chainEvent("on_tool_end", d.Tool, map[string]any{"output": d.Result}))
		}
	case *events.ToolError:
		out = t.add(out, "execute_tool", message{Type: "tool", Content: d.Error, ID: toolID(d.ToolCallID), ToolCallID: d.ToolCallID,
			Name: d.Tool, Status: "error"}, true)
		if t.modes.has(modeEvents) {
			out = append(out, t.chainEvent("on_tool_end", d.Tool, map[string]any{"output": d.Error}))
		}
	case *events.ReasoningChunk:
		out = t.reason(out, d.Node, d.Content)
	case *events.ResponseChunk:
		out = t.chunk(out, d.Content)
	case *events.ResponseDone:
		id := answerID(t.turn, t.answers)
		t.answers++
		// An answer nothing streamed (a direct answer) goes out whole in
		// the tuple mode.
		whole := t.streamed.Len() == 0 && d.Content != ""
		t.streamed.Reset()
		out = t.add(out, "stream", message{Type: "ai", Content: d.Content, ID: id}, whole)
	case *events.RunCompleted, *events.RunCancelled:
		out = t.end(out, nil)
	case *events.RunInterrupted:
		out = t.end(out, d.Pending)
	case *events.RunFailed:
		t.failed = &d.Error
		out = t.end(out, nil)
		out = append(out, sseEvent{"error", map[string]string{"error": d.Error.Code, "message": d.Error.Message}})
	}
	if t.modes.has(modeCustom) && p != nil && customEvent(typ) {
		out = append(out, sseEvent{"custom", events.Event{Type: typ, Data: p}})
	}
	return out
}

// customEvent: the Trellis events the custom mode carries as they are.
func customEvent(typ string) bool {
	switch typ {
	case events.TypeToolProgress, events.TypeDirectResponse, events.TypeApprovalRequired, events.TypeApprovalResolved, events.TypeApprovalExpired, events.TypeElicitationExpired,
		events.TypeToolUncertain, events.TypeUncertainCallResolved, events.TypeUncertainCallExpired, events.TypeClarificationExpired,
		events.TypeElicitationRequest, events.TypeElicitationResponse, events.TypeSupervisorDecided:
		return true
	}
	return false
}

// chunk is a piece of the answer: a message chunk in the messages
// modes, on_chat_model_stream in events.
func (t *translator) chunk(out []sseEvent, delta string) []sseEvent {
	id := answerID(t.turn, t.answers)
	first := t.streamed.Len() == 0
	t.streamed.WriteString(delta)
	meta := t.metadata()
	if t.modes.has(modeMessagesTuple) {
		out = append(out, sseEvent{"messages", []any{message{Type: "AIMessageChunk", Content: delta, ID: id}, meta}})
	}
	if t.modes.has(modeMessages) {
		if first {
			out = append(out, sseEvent{"messages/metadata", map[string]any{id: map[string]any{"metadata": meta}}})
		}
		out = append(out, sseEvent{"messages/partial", []message{{Type: "ai", Content: t.streamed.String(), ID: id}}})
	}
	if t.modes.has(modeEvents) {
		out = append(out, t.chainEvent("on_chat_model_stream", "write",
			map[string]any{"chunk": message{Type: "AIMessageChunk", Content: delta, ID: id}}))
	}
	return out
}

// reason is a piece of a node's reasoning: in the messages modes a
// message chunk of its own (one per node's model call) whose content is a
// reasoning content block, as LangChain streams a reasoning model's;
// on_chat_model_stream in events. The thread's messages keep only the
// answer, as Trellis' record does.
func (t *translator) reason(out []sseEvent, node, delta string) []sseEvent {
	if t.thoughtID == "" {
		t.thoughts++
		t.thoughtID = t.runID + "-reasoning-" + strconv.Itoa(t.thoughts)
	}
	first := t.thought.Len() == 0
	t.thought.WriteString(delta)
	t.node = node
	meta := t.metadata()
	piece := blockMessage{Type: "AIMessageChunk", Content: []reasoningBlock{{Type: "reasoning", Reasoning: delta}}, ID: t.thoughtID}
	if t.modes.has(modeMessagesTuple) {
		out = append(out, sseEvent{"messages", []any{piece, meta}})
	}
	if t.modes.has(modeMessages) {
		if first {
			out = append(out, sseEvent{"messages/metadata", map[string]any{t.thoughtID: map[string]any{"metadata": meta}}})
		}
		out = append(out, sseEvent{"messages/partial", []blockMessage{{Type: "ai",
			Content: []reasoningBlock{{Type: "reasoning", Reasoning: t.thought.String()}}, ID: t.thoughtID}}})
	}
	if t.modes.has(modeEvents) {
		out = append(out, t.chainEvent("on_chat_model_stream", node, map[string]any{"chunk": piece}))
	}
	return out
}

// end is the run's end: the values of the thread's newest checkpoint,
// with the interrupts the run stops at.
func (t *translator) end(out []sseEvent, pending []events.Pending) []sseEvent {
	t.done = true
	t.final = values{Messages: t.msgs}
	if snap, err := t.state(); err == nil {
		t.final.Messages = fromState(snap.State.Messages)
	}
	t.final.Interrupt = interruptsOf(pending)
	t.interrupted = len(t.final.Interrupt) > 0
	if t.modes.has(modeUpdates) && t.interrupted {
		out = append(out, sseEvent{"updates", map[string]any{"__interrupt__": t.final.Interrupt}})
	}
	if t.modes.has(modeValues) {
		out = append(out, sseEvent{"values", t.final})
	}
	return out
}

// startStream starts a LangGraph stream: Content-Location names the run
// (onRunCreated), Location the stream to rejoin, in the same modes (the
// SDK reconnects there with Last-Event-ID when the connection drops).
// Frames carry the mode as event name, an id on the last frame made of
// each run event (Last-Event-ID), and ": heartbeat" comments while idle.
func startStream(w http.ResponseWriter, threadID, runID string, m modes, timeout time.Duration) *sse.Writer {
	h := w.Header()
	h.Set("Content-Location", "/threads/"+threadID+"/runs/"+runID)
	q := url.Values{}
	for _, name := range slices.Sorted(maps.Keys(modeNames)) {
		if x := modeNames[name]; x != modeOther && m.has(x) {
			q.Add("stream_mode", name)
		}
	}
	h.Set("Location", "/threads/"+threadID+"/runs/"+runID+"/stream?"+q.Encode())
	return sse.Start(w, timeout)
}

// streamLost ends a stream that stopped before its run's end while the
// client is still there (the server lost its database, say), so that it
// does not end silently, which the SDK would take for the run's end: an
// SSE retry and an error event saying that the run goes on and where to
// rejoin it (the Location header).
func (h *handler) streamLost(r *http.Request, sw *sse.Writer, runID string) {
	if r.Context().Err() != nil || sw.Failed() {
		return
	}
	h.log.LogAttrs(r.Context(), slog.LevelWarn, "langgraph: a stream ended before its run", slog.String("run_id", runID))
	if sw.Retry(time.Second) == nil {
		_ = sw.JSON(0, "error", map[string]string{"error": "stream_lost",
			"message": "the stream of the run broke off; the run goes on in Trellis: rejoin it at the Location header's stream"})
	}
}

// heartbeat is the keep-alive of a LangGraph stream.
func heartbeat(sw *sse.Writer) func() error {
	return func() error { return sw.Comment("heartbeat") }
}

// follow hands the run's events to tr and what tr makes of them to emit,
// with the run event's seq (events at or before skip are translated,
// not emitted: a rejoined stream rebuilds what the client has). It
// reports whether the run's terminal event came.
func (h *handler) follow(ctx context.Context, req runs.FollowRequest, tr *translator, skip int64, emit func(sseEvent, int64) error) bool {
	terminal, _ := h.runs.Follow(ctx, req, func(e *runs.Event) error {
		p, err := e.Typed()
		if err != nil {
			return nil // an event this version cannot read carries nothing for the client
		}
		evs := tr.translate(e.Type, p)
		if e.Seq <= skip {
			return nil
		}
		for i, ev := range evs {
			var id int64
			if i == len(evs)-1 {
				id = e.Seq
			}
			if err := emit(ev, id); err != nil {
				return err
			}
		}
		return nil
	})
	return terminal
}
