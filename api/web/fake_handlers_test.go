package web_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"
)

// The HTTP side of contractFake: API.md's endpoints, shapes and errors.

type chatBody struct {
	Message        string         `json:"message"`
	ConversationID string         `json:"conversation_id"`
	Model          string         `json:"model"`
	DocumentIDs    []string       `json:"document_ids"`
	Context        map[string]any `json:"context"`
}

func (f *contractFake) chat(w http.ResponseWriter, r *http.Request) {
	var body chatBody
	if !decodeStrict(w, r, &body) {
		return
	}
	if strings.TrimSpace(body.Message) == "" {
		writeErr(w, http.StatusBadRequest, "invalid_request", "message is required")
		return
	}
	f.mu.Lock()
	if fail := f.chatFail; fail != nil {
		f.mu.Unlock()
		writeErr(w, fail.status, fail.code, fail.message)
		return
	}
	var conv *fakeConv
	if body.ConversationID != "" {
		conv = f.convLocked(body.ConversationID)
		if conv == nil {
			f.mu.Unlock()
			writeErr(w, http.StatusNotFound, "not_found", "no conversation "+body.ConversationID)
			return
		}
	} else {
		f.ids++
		now := time.Now().UTC()
		title := body.Message
		if len(title) > 40 {
			title = title[:40]
		}
		conv = &fakeConv{id: fmt.Sprintf("conv-%d", f.ids), title: title, created: now, updated: now}
		f.convs = append(f.convs, conv)
	}
	if activeLocked(conv) != nil {
		f.mu.Unlock()
		writeErr(w, http.StatusConflict, "run_active", "a run is already active on this conversation; wait for it or cancel it")
		return
	}
	run := f.startRunLocked(conv, body.Message)
	f.mu.Unlock()
	f.serveStream(w, r, run, 0)
}

func (f *contractFake) edit(w http.ResponseWriter, r *http.Request) {
	var body struct {
		Message string `json:"message"`
	}
	if !decodeStrict(w, r, &body) {
		return
	}
	if strings.TrimSpace(body.Message) == "" {
		writeErr(w, http.StatusBadRequest, "invalid_request", "message is required")
		return
	}
	f.mu.Lock()
	conv := f.convLocked(r.PathValue("id"))
	idx := -1
	if conv != nil {
		idx = slices.IndexFunc(conv.runs, func(x *fakeRun) bool { return x.id == r.PathValue("run_id") })
	}
	if idx < 0 {
		f.mu.Unlock()
		writeErr(w, http.StatusNotFound, "not_found", "no such conversation or run")
		return
	}
	if activeLocked(conv) != nil {
		f.mu.Unlock()
		writeErr(w, http.StatusConflict, "run_active", "a run is already active on this conversation")
		return
	}
	for _, old := range conv.runs[idx:] {
		old.superseded = true
	}
	run := f.startRunLocked(conv, body.Message)
	f.mu.Unlock()
	f.serveStream(w, r, run, 0)
}

func (f *contractFake) startRunLocked(conv *fakeConv, message string) *fakeRun {
	f.ids++
	run := &fakeRun{f: f, conv: conv, id: fmt.Sprintf("run-%d", f.ids), message: message, created: time.Now().UTC(), status: "running", drop: &fakeDrop{ch: make(chan struct{})}}
	run.ctx, run.cancel = context.WithCancel(f.ctx)
	conv.runs = append(conv.runs, run)
	run.emitLocked("run.started", map[string]any{"request_id": "req-" + run.id})
	f.wg.Add(1)
	go func() {
		defer f.wg.Done()
		defer run.cancel()
		f.script(run)
		f.mu.Lock()
		status := run.status
		f.mu.Unlock()
		if status == "running" || status == "interrupted" {
			if run.ctx.Err() != nil && f.ctx.Err() == nil {
				run.emit("run.cancelled", nil)
			} else if f.ctx.Err() == nil {
				f.t.Errorf("fake: the script of %s returned without a terminal event", run.id)
			}
		}
	}()
	return run
}

func (f *contractFake) stream(w http.ResponseWriter, r *http.Request) {
	after := 0
	if v := r.Header.Get("Last-Event-ID"); v != "" {
		after, _ = strconv.Atoi(v)
	} else if v := r.URL.Query().Get("after"); v != "" {
		after, _ = strconv.Atoi(v)
	}
	f.mu.Lock()
	if f.replayAll {
		after = 0
	}
	conv := f.convLocked(r.PathValue("id"))
	var run *fakeRun
	if conv != nil {
		run = activeLocked(conv)
		if run == nil && len(conv.runs) > 0 {
			run = conv.runs[len(conv.runs)-1]
		}
	}
	f.mu.Unlock()
	if run == nil {
		writeErr(w, http.StatusNotFound, "not_found", "no run to stream")
		return
	}
	f.serveStream(w, r, run, after)
}

// serveStream writes the run's events after seq after, then live ones,
// until a terminal event.
func (f *contractFake) serveStream(w http.ResponseWriter, r *http.Request, run *fakeRun, after int) {
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no")
	h.Set("X-Conversation-ID", run.conv.id)
	h.Set("X-Run-ID", run.id)
	w.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(w)
	io.WriteString(w, ": connected\n\n")
	rc.Flush()
	f.mu.Lock()
	drop := run.drop // dropStreams cuts the streams open before it
	f.mu.Unlock()
	for {
		f.mu.Lock()
		var pending []fakeEvent
		if after < len(run.events) {
			pending = slices.Clone(run.events[after:])
		}
		finished := run.status == "completed" || run.status == "cancelled" || run.status == "failed"
		changed := f.changed
		f.mu.Unlock()
		// After the snapshot: an event emitted after dropStreams is never
		// written to a stream it cut.
		select {
		case <-drop.ch:
			f.endStream(w, rc, run, drop.reason)
			return
		default:
		}
		if len(pending) == 0 && finished {
			return // nothing more will come
		}
		for _, ev := range pending {
			frame := fmt.Sprintf("id: %d\nevent: %s\ndata: %s\n\n", ev.seq, ev.typ, ev.data)
			half := len(frame) / 2
			io.WriteString(w, frame[:half])
			rc.Flush()
			io.WriteString(w, frame[half:])
			if err := rc.Flush(); err != nil {
				return
			}
			after = ev.seq
			if strings.HasPrefix(ev.typ, "run.") && ev.typ != "run.started" {
				return
			}
		}
		select {
		case <-changed:
		case <-drop.ch:
			f.endStream(w, rc, run, drop.reason)
			return
		case <-r.Context().Done():
			return
		case <-f.ctx.Done():
			return
		case <-time.After(15 * time.Second):
			io.WriteString(w, ": ping\n\n")
			rc.Flush()
		}
	}
}

// reconnectRetry is the SSE retry the fake's stream.reconnect gives, as
// the server's does (api's reconnectAfter).
const reconnectRetry = time.Second

// endStream ends a stream before its run's end: with reason "" by
// cutting the connection, else as the server asks a client to reconnect.
func (f *contractFake) endStream(w http.ResponseWriter, rc *http.ResponseController, run *fakeRun, reason string) {
	if reason == "" {
		panic(http.ErrAbortHandler) // cut the connection
	}
	data, err := json.Marshal(map[string]any{"type": "stream.reconnect", "conversation_id": run.conv.id,
		"ts": time.Now().UTC().Format(time.RFC3339Nano), "run_id": run.id, "reason": reason, "retry_ms": reconnectRetry.Milliseconds()})
	if err != nil {
		f.t.Errorf("fake: encode stream.reconnect: %v", err)
		return
	}
	fmt.Fprintf(w, "retry: %d\n\nevent: stream.reconnect\ndata: %s\n\n", reconnectRetry.Milliseconds(), data)
	rc.Flush()
}

func (f *contractFake) list(w http.ResponseWriter, r *http.Request) {
	type item struct {
		ID        string `json:"id"`
		Title     string `json:"title"`
		CreatedAt string `json:"created_at"`
		UpdatedAt string `json:"updated_at"`
		Status    string `json:"status"`
	}
	f.mu.Lock()
	items := []item{}
	for _, c := range slices.Backward(f.convs) {
		status := "idle"
		if len(c.runs) > 0 {
			status = c.runs[len(c.runs)-1].status
		}
		items = append(items, item{c.id, c.title, c.created.Format(time.RFC3339), c.updated.Format(time.RFC3339), status})
	}
	f.mu.Unlock()
	writeJSON(w, http.StatusOK, map[string]any{"conversations": items})
}

func (f *contractFake) conversation(w http.ResponseWriter, r *http.Request) {
	type message struct {
		Role    string `json:"role"`
		Content string `json:"content"`
		RunID   string `json:"run_id"`
	}
	type run struct {
		ID              string            `json:"id"`
		Status          string            `json:"status"`
		UserMessage     string            `json:"user_message"`
		Events          []json.RawMessage `json:"events"`
		EventsTruncated bool              `json:"events_truncated"`
		Usage           json.RawMessage   `json:"usage"`
		CreatedAt       string            `json:"created_at"`
		CompletedAt     *string           `json:"completed_at"`
		Superseded      bool              `json:"superseded"`
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	c := f.convLocked(r.PathValue("id"))
	if c == nil {
		writeErr(w, http.StatusNotFound, "not_found", "no conversation "+r.PathValue("id"))
		return
	}
	out := struct {
		ID         string    `json:"id"`
		Title      string    `json:"title"`
		CreatedAt  string    `json:"created_at"`
		Messages   []message `json:"messages"`
		Runs       []run     `json:"runs"`
		NextCursor string    `json:"next_cursor,omitempty"`
	}{ID: c.id, Title: c.title, CreatedAt: c.created.Format(time.RFC3339), Messages: []message{}, Runs: []run{}}
	runs := c.runs
	if f.runsPage > 0 {
		from, _ := strconv.Atoi(r.URL.Query().Get("cursor"))
		runs = runs[min(from, len(runs)):]
		if len(runs) > f.runsPage {
			runs = runs[:f.runsPage]
			out.NextCursor = strconv.Itoa(from + f.runsPage)
		}
	}
	for _, x := range runs {
		rr := run{ID: x.id, Status: x.status, UserMessage: x.message, Events: []json.RawMessage{}, Usage: x.usage, CreatedAt: x.created.Format(time.RFC3339), Superseded: x.superseded}
		if rr.Usage == nil {
			rr.Usage = json.RawMessage("null")
		}
		if !x.completed.IsZero() {
			s := x.completed.Format(time.RFC3339)
			rr.CompletedAt = &s
		}
		var answer string
		for i, ev := range x.events {
			if f.eventsPage != 0 && i >= max(f.eventsPage, 0) {
				rr.EventsTruncated = true
			} else {
				rr.Events = append(rr.Events, ev.data)
			}
			if ev.typ == "response.done" {
				var d struct {
					Content string `json:"content"`
				}
				json.Unmarshal(ev.data, &d)
				answer = d.Content
			}
		}
		out.Runs = append(out.Runs, rr)
		if !x.superseded {
			out.Messages = append(out.Messages, message{"user", x.message, x.id})
			if answer != "" {
				out.Messages = append(out.Messages, message{"assistant", answer, x.id})
			}
		}
	}
	writeJSON(w, http.StatusOK, out)
}

// runEvents is GET /conversations/{id}/runs/{run_id}/events?after=&limit=.
func (f *contractFake) runEvents(w http.ResponseWriter, r *http.Request) {
	after, err1 := strconv.Atoi(r.URL.Query().Get("after"))
	limit, err2 := strconv.Atoi(r.URL.Query().Get("limit"))
	if err1 != nil || err2 != nil || after < 0 || limit < 1 {
		writeErr(w, http.StatusBadRequest, "invalid_parameter", "after and limit must be whole numbers")
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	c := f.convLocked(r.PathValue("id"))
	var x *fakeRun
	if c != nil {
		for _, rr := range c.runs {
			if rr.id == r.PathValue("run_id") {
				x = rr
			}
		}
	}
	if x == nil {
		writeErr(w, http.StatusNotFound, "not_found", "no such conversation or run")
		return
	}
	out := struct {
		Events    []json.RawMessage `json:"events"`
		NextAfter int               `json:"next_after,omitempty"`
	}{Events: []json.RawMessage{}}
	// Serve fewer than asked, as a server capping the limit may: the page
	// must follow next_after, not count.
	limit = min(limit, max(f.eventsPage, 1))
	for _, ev := range x.events[min(after, len(x.events)):] {
		if len(out.Events) == limit {
			out.NextAfter = ev.seq - 1
			break
		}
		out.Events = append(out.Events, ev.data)
	}
	writeJSON(w, http.StatusOK, out)
}

func (f *contractFake) cancelRun(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	conv := f.convLocked(r.PathValue("id"))
	if conv == nil {
		f.mu.Unlock()
		writeErr(w, http.StatusNotFound, "not_found", "no conversation "+r.PathValue("id"))
		return
	}
	run := activeLocked(conv)
	f.mu.Unlock()
	if run == nil {
		writeErr(w, http.StatusConflict, "no_active_run", "nothing is running on this conversation")
		return
	}
	run.cancel()
	writeJSON(w, http.StatusAccepted, map[string]any{"status": "cancelling", "run_id": run.id})
}

func (f *contractFake) approval(w http.ResponseWriter, r *http.Request) {
	var body struct {
		Decision string          `json:"decision"`
		Args     json.RawMessage `json:"args"`
		Reason   string          `json:"reason"`
	}
	raw := readBody(r)
	if !decodeStrict(w, r, &body) {
		return
	}
	switch {
	case body.Decision != "approve" && body.Decision != "edit" && body.Decision != "reject":
		writeErr(w, http.StatusBadRequest, "invalid_request", "decision must be approve, edit or reject")
		return
	case body.Decision == "edit" && !bytes.HasPrefix(bytes.TrimSpace(body.Args), []byte("{")):
		writeErr(w, http.StatusBadRequest, "invalid_request", "an edit needs args, a JSON object")
		return
	case body.Decision != "edit" && body.Args != nil:
		writeErr(w, http.StatusBadRequest, "invalid_request", "args go only with an edit")
		return
	}
	id := r.PathValue("id")
	if f.answer(w, r, id, "approval", raw) {
		writeJSON(w, http.StatusOK, map[string]any{"status": "processed", "approval_id": id, "decision": body.Decision})
	}
}

// answers is POST .../runs/{run_id}/answers as docs/api.md gives it:
// every approval is checked before any is answered, and each waiting
// script gets its own answer, as POST /approvals/{id} would give it.
func (f *contractFake) answers(w http.ResponseWriter, r *http.Request) {
	var body struct {
		Answers []struct {
			ApprovalID string          `json:"approval_id"`
			Decision   string          `json:"decision"`
			Args       json.RawMessage `json:"args,omitempty"`
			Reason     string          `json:"reason,omitempty"`
		} `json:"answers"`
	}
	if !decodeStrict(w, r, &body) {
		return
	}
	if len(body.Answers) == 0 {
		writeErr(w, http.StatusBadRequest, "invalid_field", "answers must hold at least one answer")
		return
	}
	f.mu.Lock()
	for _, a := range body.Answers {
		wt := f.waits[a.ApprovalID]
		switch {
		case a.Decision != "approve" && a.Decision != "edit" && a.Decision != "reject":
			f.mu.Unlock()
			writeErr(w, http.StatusBadRequest, "invalid_decision", "decision must be approve, edit or reject")
			return
		case wt == nil || wt.kind != "approval":
			f.mu.Unlock()
			writeErr(w, http.StatusNotFound, "not_found", "no approval "+a.ApprovalID)
			return
		case wt.answered:
			f.mu.Unlock()
			writeErr(w, http.StatusConflict, "already_answered", "approval "+a.ApprovalID+" was already answered")
			return
		}
	}
	out := []map[string]string{}
	for _, a := range body.Answers {
		wt := f.waits[a.ApprovalID]
		wt.answered = true
		one, _ := json.Marshal(map[string]any{"decision": a.Decision, "args": a.Args, "reason": a.Reason})
		wt.answer <- one
		out = append(out, map[string]string{"approval_id": a.ApprovalID, "decision": a.Decision})
	}
	f.mu.Unlock()
	writeJSON(w, http.StatusOK, map[string]any{"status": "processed", "run_id": r.PathValue("run_id"), "answers": out})
}

func (f *contractFake) uncertainCall(w http.ResponseWriter, r *http.Request) {
	var body struct {
		Decision string `json:"decision"`
	}
	raw := readBody(r)
	if !decodeStrict(w, r, &body) {
		return
	}
	if body.Decision != "retry" && body.Decision != "skip" && body.Decision != "fail" {
		writeErr(w, http.StatusBadRequest, "invalid_decision", "decision must be retry, skip or fail")
		return
	}
	id := r.PathValue("id")
	if f.answer(w, r, id, "uncertain_call", raw) {
		writeJSON(w, http.StatusOK, map[string]any{"status": "processed", "uncertain_call_id": id, "decision": body.Decision})
	}
}

func (f *contractFake) elicitation(w http.ResponseWriter, r *http.Request) {
	var body struct {
		ElicitationID string         `json:"elicitation_id"`
		Action        string         `json:"action"`
		Content       map[string]any `json:"content"`
	}
	raw := readBody(r)
	if !decodeStrict(w, r, &body) {
		return
	}
	if body.Action != "accept" && body.Action != "decline" && body.Action != "cancel" {
		writeErr(w, http.StatusBadRequest, "invalid_request", "action must be accept, decline or cancel")
		return
	}
	f.mu.Lock()
	wt := f.waits[body.ElicitationID]
	f.mu.Unlock()
	if wt != nil && body.Action == "accept" {
		required, _ := wt.schema["required"].([]any)
		for _, name := range required {
			if _, ok := body.Content[name.(string)]; !ok {
				writeErr(w, http.StatusUnprocessableEntity, "invalid_content", fmt.Sprintf("content lacks the required field %q", name))
				return
			}
		}
	}
	if f.answer(w, r, body.ElicitationID, "elicitation", raw) {
		writeJSON(w, http.StatusOK, map[string]any{"status": "processed", "elicitation_id": body.ElicitationID, "action": body.Action})
	}
}

// answer hands an answer to the waiting script; it writes the 404 or 409
// and returns false when there is none to answer.
func (f *contractFake) answer(w http.ResponseWriter, r *http.Request, id, kind string, body []byte) bool {
	f.mu.Lock()
	wt := f.waits[id]
	switch {
	case wt == nil || wt.kind != kind:
		f.mu.Unlock()
		writeErr(w, http.StatusNotFound, "not_found", "no "+kind+" "+id)
		return false
	case wt.answered:
		f.mu.Unlock()
		writeErr(w, http.StatusConflict, "already_answered", "this "+kind+" was already answered")
		return false
	}
	wt.answered = true
	wt.answer <- body
	f.mu.Unlock()
	if wt.reply != nil {
		select {
		case <-wt.reply:
		case <-r.Context().Done():
		case <-f.ctx.Done():
		}
	}
	return true
}

func (f *contractFake) tools(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, map[string]any{"tools": []map[string]any{
		{"name": "search_docs", "description": "Search the team's documents.", "source": "local", "server": "", "input_schema": map[string]any{"type": "object"}, "requires_approval": false},
		{"name": "send_email", "description": "Send an email on your behalf.", "source": "operator", "server": "", "input_schema": map[string]any{"type": "object"}, "requires_approval": true},
		{"name": "create_ticket", "description": "Open a ticket in the tracker.", "source": "mcp", "server": "tracker", "input_schema": map[string]any{"type": "object"}, "requires_approval": false},
	}})
}

func (f *contractFake) convLocked(id string) *fakeConv {
	for _, c := range f.convs {
		if c.id == id {
			return c
		}
	}
	return nil
}

// activeLocked is the conversation's running or parked run, if any.
func activeLocked(c *fakeConv) *fakeRun {
	for _, r := range c.runs {
		if !r.superseded && (r.status == "running" || r.status == "interrupted") {
			return r
		}
	}
	return nil
}

// --- HTTP helpers ---

func readBody(r *http.Request) []byte {
	b, _ := io.ReadAll(r.Body)
	r.Body = io.NopCloser(bytes.NewReader(b))
	return b
}

// decodeStrict decodes a JSON body as API.md demands: the JSON content
// type (415 otherwise) and no unknown fields (400).
func decodeStrict(w http.ResponseWriter, r *http.Request, v any) bool {
	if ct := r.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		writeErr(w, http.StatusUnsupportedMediaType, "unsupported_media_type", "send JSON with Content-Type: application/json, not "+ct)
		return false
	}
	dec := json.NewDecoder(r.Body)
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		writeErr(w, http.StatusBadRequest, "invalid_json", err.Error())
		return false
	}
	return true
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v)
}

func writeErr(w http.ResponseWriter, status int, code, message string) {
	writeJSON(w, status, map[string]any{"error": map[string]string{"code": code, "message": message}})
}

// usage is GET /api/v1/me/usage as docs/api.md gives it: two days of
// this month, under two models, and a quota.
func (f *contractFake) usage(w http.ResponseWriter, r *http.Request) {
	day := func(d, model string, in, out, calls, runs int) map[string]any {
		return map[string]any{"user_id": "local", "day": d, "model": model, "input_tokens": in, "output_tokens": out,
			"total_tokens": in + out, "tool_calls": calls, "runs": runs}
	}
	writeJSON(w, http.StatusOK, map[string]any{
		"days": []map[string]any{
			day("2026-11-02", "claude-sonnet", 1200, 300, 2, 1),
			day("2026-11-03", "claude-sonnet", 5000, 1000, 4, 3),
			day("2026-11-03", "gpt-mini", 800, 200, 0, 1),
		},
		"totals":      map[string]any{"input_tokens": 7000, "output_tokens": 1500, "total_tokens": 8500, "tool_calls": 6, "runs": 5},
		"next_cursor": "",
		"quota":       map[string]any{"monthly_tokens": 100000, "used_tokens": 8500, "resets_at": "2026-12-01T00:00:00Z"},
	})
}
