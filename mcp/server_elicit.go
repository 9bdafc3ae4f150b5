package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	mcpgo "github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/trellis-ai/trellis/events"
	"github.com/trellis-ai/trellis/internal/ids"
	"github.com/trellis-ai/trellis/operators"
)

// answerKey names the one question an input_required result asks.
const answerKey = "answer"

// errClientGone and errAnswerTimeout end a run whose client went away or
// never came back with an answer.
var (
	errClientGone    = errors.New("mcp: the client cancelled the call")
	errAnswerTimeout = errors.New("mcp: the client did not answer the elicitation in time")
)

// exportRun is one tool call served to an MCP client. The tool runs in a
// goroutine of its own because an operator asks its questions in the
// middle of its work (Confirm returns the answer), while a 2026-07-28
// client answers by calling again: the first request returns an
// input_required result and the run waits, parked, for the retry that
// carries the answer. For session clients mcp-go's server performs that
// retry itself, after an elicitation/create.
type exportRun struct {
	x      *exporter
	cancel context.CancelCauseFunc
	asks   chan *pendingAsk
	done   chan operators.Result

	mu        sync.Mutex
	req       context.Context // the request progress goes to; nil while parked
	token     mcpgo.ProgressToken
	canElicit bool
	direct    []operators.Content // content the tool sent straight to the user
	// lastProgress is when progress was last sent (see settle).
	lastProgress time.Time
}

// pendingAsk is a question from the tool waiting for the client.
type pendingAsk struct {
	params mcpgo.ElicitationParams
	reply  chan operators.ElicitResponse // buffered: the answer never waits
}

// parkedRun is a run waiting for a client to come back with an answer.
type parkedRun struct {
	run   *exportRun
	ask   *pendingAsk
	timer *time.Timer
}

// start runs the tool in the background, attached to the request that
// asked for it.
func (x *exporter) start(reqCtx context.Context, req mcpgo.CallToolRequest, name string, args json.RawMessage) *exportRun {
	// The run outlives the request when it waits for a 2026-07-28 client's
	// answer: it keeps the request's values, not its cancellation.
	ctx, cancel := context.WithCancelCause(context.WithoutCancel(reqCtx))
	r := &exportRun{x: x, cancel: cancel, asks: make(chan *pendingAsk), done: make(chan operators.Result, 1)}
	var call operators.Call
	if x.opts.CallInfo != nil {
		call = x.opts.CallInfo(reqCtx)
	}
	call.Messenger = r
	r.attach(reqCtx, req)
	go func() {
		defer cancel(nil)
		r.done <- x.p.Execute(ctx, name, args, call)
	}()
	return r
}

// next attaches the run to the request being handled and waits for what
// comes first: the result, a question for the client, or the client
// leaving.
func (r *exportRun) next(ctx context.Context, req mcpgo.CallToolRequest) (*mcpgo.CallToolResult, error) {
	r.attach(ctx, req)
	defer r.detach()
	select {
	case res := <-r.done:
		r.settle(ctx)
		return fromResult(r.withDirect(res)), nil
	case ask := <-r.asks:
		r.settle(ctx)
		state := r.x.park(r, ask)
		return server.NewInputRequestBuilder(state).Elicit(answerKey, ask.params).ToolResult(), nil
	case <-ctx.Done():
		r.cancel(errClientGone) // the run ends on its own; nobody waits for it
		return nil, ctx.Err()
	}
}

// settle gives progress sent just before the result time to go out.
// mcp-go's streamable HTTP server can drop a notification that its
// forwarder took off the session queue as the handler returned; waiting
// until the queue is empty, and a moment more, before returning the result
// closes most of that window.
func (r *exportRun) settle(ctx context.Context) {
	r.mu.Lock()
	recent := time.Since(r.lastProgress) < 50*time.Millisecond
	r.mu.Unlock()
	s := server.ClientSessionFromContext(ctx)
	if !recent || s == nil {
		return
	}
	// mcp-go says nothing when its queue drains or a notification is
	// written, so this polls the queue, for 100 ms at most.
	ctx, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	defer cancel()
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	for len(s.NotificationChannel()) > 0 {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
	moment := time.NewTimer(5 * time.Millisecond)
	defer moment.Stop()
	select {
	case <-ctx.Done():
	case <-moment.C:
	}
}

func (r *exportRun) attach(ctx context.Context, req mcpgo.CallToolRequest) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.req = ctx
	r.token = nil
	if req.Params.Meta != nil {
		r.token = req.Params.Meta.ProgressToken
	}
	r.canElicit = clientCanElicit(ctx)
}

func (r *exportRun) detach() {
	r.mu.Lock()
	r.req = nil
	r.mu.Unlock()
}

// clientCanElicit reports whether the client of the request in ctx
// declared the elicitation capability: in the request's _meta
// (2026-07-28) or at initialize (session revisions).
func clientCanElicit(ctx context.Context) bool {
	if info := server.RequestProtocolInfoFromContext(ctx); info != nil && info.Modern {
		return info.ClientCapabilities != nil && info.ClientCapabilities.Elicitation != nil
	}
	if s, ok := server.ClientSessionFromContext(ctx).(server.SessionWithClientInfo); ok {
		return s.GetClientCapabilities().Elicitation != nil
	}
	return false
}

// resume attaches the run to the retry that brought the answer, hands the
// answer over, and waits for what comes next. Attaching first means no
// progress the tool reports right after the answer is lost.
func (r *exportRun) resume(ctx context.Context, req mcpgo.CallToolRequest, ask *pendingAsk, res *mcpgo.ElicitationResult) (*mcpgo.CallToolResult, error) {
	r.attach(ctx, req)
	r.answer(ask, res)
	return r.next(ctx, req)
}

// answer hands the client's answer (nil: none) to the waiting question.
func (r *exportRun) answer(ask *pendingAsk, res *mcpgo.ElicitationResult) {
	resp := operators.ElicitResponse{Action: events.ElicitCancel}
	if res != nil {
		resp.Action = events.ElicitAction(res.Action)
		if resp.Action == events.ElicitAccept {
			b, err := json.Marshal(res.Content)
			if err != nil || res.Content == nil {
				b = []byte(`{}`)
			}
			resp.Content = b
		}
	}
	ask.reply <- resp
}

// park keeps a run until its client comes back with the answer, or the
// elicitation timeout passes; it returns the request state that finds it.
func (x *exporter) park(r *exportRun, ask *pendingAsk) string {
	state := ids.Random("trellis-run-", 16) // unguessable: it is all that identifies the run
	p := &parkedRun{run: r, ask: ask}
	x.parkMu.Lock()
	defer x.parkMu.Unlock()
	x.parked[state] = p
	p.timer = time.AfterFunc(x.opts.ElicitationTimeout, func() {
		if x.unpark(state) != nil {
			r.cancel(errAnswerTimeout)
		}
	})
	return state
}

// unpark takes the run parked under state, or nil.
func (x *exporter) unpark(state string) *parkedRun {
	x.parkMu.Lock()
	defer x.parkMu.Unlock()
	p := x.parked[state]
	if p == nil {
		return nil
	}
	delete(x.parked, state)
	p.timer.Stop()
	return p
}

// withDirect puts what the tool showed the user directly in front of its
// result: an MCP client has nowhere else to show it.
func (r *exportRun) withDirect(res operators.Result) operators.Result {
	r.mu.Lock()
	direct := r.direct
	r.mu.Unlock()
	if len(direct) == 0 || res.IsError() {
		return res
	}
	res.Contents = append(direct, res.Contents...)
	return res
}

// The run is the tool's operators.Messenger.
var _ operators.Messenger = (*exportRun)(nil)

// Progress becomes notifications/progress on the request the run is
// attached to, when the client asked for progress.
func (r *exportRun) Progress(_ context.Context, p events.ToolProgress) error {
	r.mu.Lock()
	req, token := r.req, r.token
	r.mu.Unlock()
	if req == nil || token == nil {
		return nil
	}
	params := map[string]any{"progressToken": token, "progress": p.Progress}
	if p.Total > 0 {
		params["total"] = p.Total
	}
	if p.Message != "" {
		params["message"] = p.Message
	}
	srv := server.ServerFromContext(req)
	if srv == nil {
		return nil
	}
	err := srv.SendNotificationToClient(req, string(mcpgo.MethodNotificationProgress), params)
	r.mu.Lock()
	r.lastProgress = time.Now()
	r.mu.Unlock()
	if err != nil {
		r.x.log.LogAttrs(req, slog.LevelDebug, "could not send progress", slog.Any("error", err))
	}
	return nil
}

// Direct keeps content for the result.
func (r *exportRun) Direct(_ context.Context, d events.DirectResponse) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.direct = append(r.direct, operators.Content{Type: operators.OutputType(d.ContentType), Text: d.Content, WidgetType: d.WidgetType})
	return nil
}

// Stream keeps streamed text for the result.
func (r *exportRun) Stream(_ context.Context, c operators.StreamChunk) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if n := len(r.direct); n > 0 && r.direct[n-1].Type == operators.OutputText && r.direct[n-1].WidgetType == "stream" {
		r.direct[n-1].Text += c.Content
		return nil
	}
	r.direct = append(r.direct, operators.Content{Type: operators.OutputText, Text: c.Content, WidgetType: "stream"})
	return nil
}

// Elicit asks the client, if it can answer; otherwise it declines, as for
// a run with no user.
func (r *exportRun) Elicit(ctx context.Context, q operators.ElicitRequest) (operators.ElicitResponse, error) {
	r.mu.Lock()
	can := r.canElicit
	r.mu.Unlock()
	if !can {
		return operators.ElicitResponse{Action: events.ElicitDecline}, fmt.Errorf("%w: the MCP client cannot answer elicitations (%s asked %q)", operators.ErrNoUser, q.Source, q.Message)
	}
	params := mcpgo.ElicitationParams{Mode: mcpgo.ElicitationModeForm, Message: q.Message}
	params.RequestedSchema = map[string]any{"type": "object", "properties": map[string]any{}}
	if q.Schema != nil {
		var m map[string]any
		if b, err := json.Marshal(q.Schema); err == nil && json.Unmarshal(b, &m) == nil {
			params.RequestedSchema = m
		}
	}
	if strings.TrimSpace(params.Message) == "" {
		params.Message = q.Source + " needs your input"
	}
	ask := &pendingAsk{params: params, reply: make(chan operators.ElicitResponse, 1)}
	select {
	case r.asks <- ask:
	case <-ctx.Done():
		return operators.ElicitResponse{Action: events.ElicitCancel}, fmt.Errorf("mcp: elicit: %w", context.Cause(ctx))
	}
	select {
	case resp := <-ask.reply:
		return resp, nil
	case <-ctx.Done():
		return operators.ElicitResponse{Action: events.ElicitCancel}, fmt.Errorf("mcp: elicit: %w", context.Cause(ctx))
	}
}
