package runs

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"log/slog"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/trellis-ai/trellis/events"
	"github.com/trellis-ai/trellis/internal/growstack"
	"github.com/trellis-ai/trellis/nodes"
	"github.com/trellis-ai/trellis/store"
)

// runState is where a live run is, as answers to its approvals see it.
type runState int

const (
	stateRunning runState = iota
	// stateWaiting: stopped for an approval, within InterruptAfter.
	stateWaiting
	// stateParking: gave up waiting; answers now resume it later.
	stateParking
)

// run is one run live in this process: a segment of a run's life, from
// its start, resumption or recovery to its next terminal event.
type Run struct {
	id, conversationID, userID, requestID string
	log                                   *slog.Logger
	ctx                                   context.Context
	cancel                                context.CancelCauseFunc
	hub                                   *hub
	out                                   *outbox       // stores and then publishes the run's events
	done                                  chan struct{} // closed when the driving goroutine ends
	answers                               chan nodes.ApprovalDecision
	state                                 runState // guarded by Service.mu
	detached                              bool     // guarded by Service.mu; see detach
	// cancelling is set, under Service.mu, once the user cancelled
	// the run: answers to its approvals are refused from then on.
	cancelling bool
	started    time.Time
	recovered  bool // continued from a process that is gone
	// usage is the run's usage before this segment; seg is this
	// segment's so far (nodes reports usage since start or resume).
	usage, seg events.Usage
	// toolCalls are the tool calls this stretch made (tool.complete and
	// tool.error, sub-agents' included), for the usage record
	// (store.RunEnd.ToolCalls); only the driving goroutine touches it.
	toolCalls int
	// prefix opens every event's data: {"run_id":…,"conversation_id":…,
	prefix []byte
	// span is the segment's trace span; nil when tracing is off.
	span trace.Span
	// firstAnswer is set once the run has stored the conversation's
	// first answer: its end asks for a title (Config.Title).
	firstAnswer atomic.Bool
	// answer is the assistant's message the agent said last (onAnswer),
	// waiting for the response.done that shows it, to be stored with it
	// (store.NewEvent.Message). said is set instead when a recovered
	// run says again an answer stored already: its response.done, stored
	// with it, is not stored twice.
	answer atomic.Pointer[store.NewMessage]
	said   atomic.Bool
	// turnOver is set, on the driving goroutine, once the segment ended
	// the run's turn (a final status, or a clarifying question): the
	// conversation's queued message may start (see nextQueued).
	turnOver bool
	// queueSeen is set with turnOver when the run's end was stored with
	// its events (store.EndRun), which said whether messages wait:
	// queued. Otherwise nextQueued reads the queue.
	queueSeen, queued bool
}

// runFrom returns the run whose context ctx derives from.
func runFrom(ctx context.Context) *Run {
	rn, _ := ctx.Value(runKey).(*Run)
	return rn
}

func (m *Service) newRun(parent context.Context, r store.Run) *Run {
	ctx, cancel := context.WithCancelCause(context.WithoutCancel(parent))
	rn := &Run{
		id: r.ID, conversationID: r.ConversationID, userID: r.UserID, requestID: r.RequestID,
		log:     m.log.With(slog.String("run_id", r.ID), slog.String("conversation_id", r.ConversationID)),
		cancel:  cancel,
		done:    make(chan struct{}),
		answers: make(chan nodes.ApprovalDecision, 8),
		started: time.Now(),
		usage:   events.Usage(r.Usage),
	}
	// The agent's checkpoints record the run (nodes.Agent.Began).
	rn.ctx = nodes.WithRun(context.WithValue(ctx, runKey, rn), r.ID)
	runID, _ := json.Marshal(r.ID)
	convID, _ := json.Marshal(r.ConversationID)
	rn.prefix = fmt.Appendf(nil, `{"run_id":%s,"conversation_id":%s,"ts":"`, runID, convID)
	return rn
}

// StartRequest is a new run: a chat message, or an edit of an earlier
// run.
type StartRequest struct {
	UserID, RequestID string
	// ConversationID names the conversation; "" starts a new one, titled
	// after the message.
	ConversationID string
	Input          nodes.Input
	// Edits, when set, names the run of ConversationID whose message
	// Input replaces: the new run reruns from the state before it.
	Edits string
	// Interactive: the caller streams the events, rather than waiting
	// for the result; a run stopped for an approval waits for the
	// answer only while an interactive subscriber follows it.
	Interactive bool
	// AwaitsEnd: the caller reads the run's events only once the run
	// ends (sync chat). Until a subscriber that streams them joins, the
	// run's events may then wait up to EventDelay to be stored with
	// later ones, often with the run's end, in fewer transactions.
	AwaitsEnd bool
	// WaitIdle suits clients that stop a run by aborting its request and
	// send their next message at once: a run of the conversation whose
	// client went away is cancelled (see DisconnectAwaitResume), and one
	// still ending is waited for, briefly, before the start is refused
	// with store.ErrRunActive.
	WaitIdle bool
	// DropWaiting, with WaitIdle: a run of the conversation parked on
	// what it asked the user, who chose not to answer, is cancelled for
	// the new message.
	DropWaiting bool
	// Multitask is what becomes of the message when the conversation's
	// run is going or waits for a person; "" rejects it (see Multitask).
	Multitask Multitask
	// supersedes names the run a rollback takes out of the history when
	// its turn left nothing to rerun from (see startInterrupting).
	supersedes string
	// retries is the failed run a Retry takes up; Input is unused then.
	retries *store.Run
}

// Start stores a new run, subscribes the caller to its events and starts
// driving it; the caller closes the Subscription. A new conversation is
// created, with the run, when none is named. Errors: a
// *MessageTooLongError (Input.Message over Config.MaxMessageRunes),
// ErrContextTooLarge (Input.Context over MaxContextBytes), ErrShuttingDown,
// ErrUnavailable, ErrTooManyRuns, store.ErrRunActive (the conversation
// has a run going), store.ErrNotFound (no such conversation or edited
// run), store.ErrConflict (the edited run is superseded), store.ErrInvalid
// (an unknown Multitask). With MultitaskEnqueue, a message for a busy
// conversation is stored to run later and Start returns a *QueuedError
// saying where it waits: no run starts now.
func (m *Service) Start(ctx context.Context, req StartRequest) (*Run, *Subscription, error) {
	if err := m.CheckMessage(req.Input.Message); err != nil {
		return nil, nil, err
	}
	if err := CheckContext(req.Input.Context); err != nil {
		return nil, nil, err
	}
	if !req.Multitask.Valid() {
		return nil, nil, fmt.Errorf("runs: start: %w: unknown multitask strategy %q", store.ErrInvalid, req.Multitask)
	}
	if req.ConversationID != "" && req.Edits == "" {
		switch req.Multitask {
		case MultitaskInterrupt, MultitaskRollback:
			return m.startInterrupting(ctx, req)
		case MultitaskEnqueue:
			return m.startOrEnqueue(ctx, req)
		}
	}
	if !req.WaitIdle || req.ConversationID == "" {
		return m.start(ctx, req)
	}
	m.claimOrphan(req.ConversationID, "", false) // the user moved on
	rn, sub, err := m.start(ctx, req)
	if !errors.Is(err, store.ErrRunActive) {
		return rn, sub, err
	}
	if req.DropWaiting {
		last, lerr := m.st.LatestRun(ctx, req.UserID, req.ConversationID)
		if lerr == nil && last.Status == store.RunInterrupted {
			if _, cerr := m.Cancel(ctx, req.UserID, req.ConversationID); cerr != nil && !errors.Is(cerr, ErrNothingToRun) {
				return nil, nil, cerr
			}
		}
	}
	if !m.settle(ctx, req.ConversationID) {
		return nil, nil, err
	}
	return m.start(ctx, req)
}

// start is Start's one attempt.
func (m *Service) start(ctx context.Context, req StartRequest) (*Run, *Subscription, error) {
	var edit *store.Run
	if req.Edits != "" {
		old, err := m.runOf(ctx, req.UserID, req.ConversationID, req.Edits)
		if err != nil {
			return nil, nil, err
		}
		edit = &old
	}
	m.gate.RLock()
	defer m.gate.RUnlock()
	if err := m.refusing(); err != nil {
		return nil, nil, err
	}
	if !m.reserve(req.UserID, false) {
		return nil, nil, ErrTooManyRuns
	}
	ok := false
	defer func() {
		if !ok {
			m.release(req.UserID)
		}
	}()
	start := startInput{Input: req.input(), New: req.ConversationID == ""}
	if err := m.quota(ctx, req.UserID, &start.Input); err != nil {
		return nil, nil, err
	}
	nr := store.NewRun{UserID: req.UserID, ConversationID: req.ConversationID, UserMessage: req.Input.Message,
		RequestID: req.RequestID, Owner: m.cfg.Owner, Model: m.modelOf(req.Input.Model)}
	switch {
	case req.retries != nil:
		// The retried turn's message and request id: the agent's state
		// knows the turn by it (an edit of the retried turn finds it).
		start.Retry, start.Input = true, nodes.Input{}
		nr.UserMessage, nr.RequestID, nr.Supersedes = req.retries.UserMessage, req.retries.RequestID, req.retries.ID
	case edit != nil:
		start.Edit, start.EditOf, start.EditRun = true, edit.RequestID, edit.ID
		nr.Supersedes = edit.ID
	case req.supersedes != "":
		nr.Supersedes = req.supersedes
	case start.New:
		nr.NewConversation = &store.NewConversation{UserID: req.UserID, Title: title(req.Input.Message)}
	}
	var err error
	if nr.Input, err = json.Marshal(start); err != nil {
		return nil, nil, fmt.Errorf("runs: start run: %w", err)
	}
	r, err := m.st.StartRun(ctx, nr)
	if err != nil {
		return nil, nil, fmt.Errorf("runs: start run: %w", err)
	}
	start.Input.NoDocuments = !r.Documents
	rn := m.newRun(ctx, r)
	sub := m.launch(rn, m.first(r, start), true, &req)
	ok = true
	return rn, sub, nil
}

// input is the agent's input of the run req starts.
func (req StartRequest) input() nodes.Input {
	in := req.Input
	in.RequestID, in.UserID = req.RequestID, req.UserID
	return in
}

// startInput is how a run starts: what the store keeps of it until the
// run's stream ends (store.NewRun.Input), so that a run whose process
// died before the agent stored anything of it starts again (see
// continueRun).
type startInput struct {
	Input nodes.Input `json:"input"`
	// New: the run's conversation was created with it.
	New bool `json:"new,omitempty"`
	// Edit: the run reruns the turn that request EditOf started, run
	// EditRun (the edited run's record, a hint: see nodes.Turn).
	Edit    bool   `json:"edit,omitempty"`
	EditOf  string `json:"edit_of,omitempty"`
	EditRun string `json:"edit_run,omitempty"`
	// Retry: the run takes up the failed turn it supersedes from that
	// turn's last checkpoint (see Retry).
	Retry bool `json:"retry,omitempty"`
}

// first is the agent call that starts the run r as s says. A new turn
// continues the branch the record says it follows (r.ParentID): the
// agent's newest state is moved there first when it is another's, after
// SetBranch (the record is switched at once, the agent's state here, so
// a process that dies in between leaves nothing to put right).
func (m *Service) first(r store.Run, s startInput) func(context.Context) iter.Seq2[events.Event, error] {
	conversationID := r.ConversationID
	switch {
	case s.Retry:
		return func(ctx context.Context) iter.Seq2[events.Event, error] {
			return m.agent.Continue(ctx, conversationID)
		}
	case s.Edit:
		return func(ctx context.Context) iter.Seq2[events.Event, error] {
			return m.agent.Edit(ctx, conversationID, nodes.Turn{RequestID: s.EditOf, RunID: s.EditRun}, s.Input)
		}
	case s.New:
		// The store has just created the conversation: the agent has no
		// state of it to look up.
		return func(ctx context.Context) iter.Seq2[events.Event, error] {
			return m.agent.Start(ctx, conversationID, s.Input)
		}
	}
	return func(ctx context.Context) iter.Seq2[events.Event, error] {
		if r.ParentID != "" {
			// A parent that stored no state (it failed before its first
			// checkpoint) leaves the state as its own parent left it.
			return m.agent.RunAfter(ctx, conversationID, r.ParentID, s.Input)
		}
		return m.agent.Run(ctx, conversationID, s.Input)
	}
}

// launch registers rn as live and starts its driving goroutine; with
// subscribe set, it first subscribes its caller (as its Interactive and
// AwaitsEnd say), so the caller sees every event from the first. Callers
// hold m.gate for reading.
func (m *Service) launch(rn *Run, first func(context.Context) iter.Seq2[events.Event, error], announce bool, subscribe *StartRequest) *Subscription {
	m.mu.Lock()
	rn.hub = m.acquireHubLocked(rn.id)
	rn.out = newOutbox(rn.ctx, m.st, rn.hub, rn.envelope, func(err error) {
		lvl, msg, cause := slog.LevelError, "storing events failed; the run stops", errEventsLost
		switch {
		case errors.Is(err, store.ErrNotFound):
			lvl = slog.LevelInfo // deleted under the run
		case errors.Is(err, store.ErrNotOwner):
			lvl, msg = slog.LevelWarn, "another process took the run over; it stops here"
		case m.lostErr(err):
			lvl, msg, cause = slog.LevelWarn, "the database connection was lost; the run stops, to go on once it is back", errStorageLost
		}
		rn.log.LogAttrs(rn.ctx, lvl, msg, slog.Any("error", err))
		rn.cancel(cause)
	})
	rn.hub.setWake(rn.out.wake)
	var sub *Subscription
	if subscribe != nil {
		rn.hub.refs++
		sub = m.subscriptionLocked(rn.hub, subscribe.Interactive, subscribe.AwaitsEnd)
	}
	m.byConv[rn.conversationID] = rn
	m.mu.Unlock()
	m.metrics.RunsActive(1)
	m.wg.Add(1)
	go func() {
		defer m.wg.Done()
		growstack.ForRun()
		m.drive(rn, first, announce)
	}()
	return sub
}

// reserve takes one of the user's run slots; forced ones (resumption,
// recovery) are taken even beyond the limit.
func (m *Service) reserve(user string, force bool) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	if limit := m.cfg.MaxRunsPerUser; !force && limit > 0 && m.slots[user] >= limit {
		return false
	}
	m.slots[user]++
	return true
}

func (m *Service) release(user string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.slots[user]--; m.slots[user] <= 0 {
		delete(m.slots, user)
	}
}

// detach takes a run off the live ones and frees its user's slot, as it
// sends its terminal event: a client that sees the event finds nothing
// running. It may be called more than once.
func (m *Service) detach(rn *Run) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if rn.detached {
		return
	}
	rn.detached = true
	if m.byConv[rn.conversationID] == rn {
		delete(m.byConv, rn.conversationID)
	}
	if m.slots[rn.userID]--; m.slots[rn.userID] <= 0 {
		delete(m.slots, rn.userID)
	}
}

// ended releases what a run whose driving goroutine is ending still
// holds.
func (m *Service) ended(rn *Run) {
	_ = rn.out.drain() // every path has drained already; this keeps no flusher past the run
	m.detach(rn)
	m.mu.Lock()
	m.releaseHubLocked(rn.hub)
	m.mu.Unlock()
	m.metrics.RunsActive(-1)
	rn.cancel(errRunEnded)
	close(rn.done)
	if rn.turnOver {
		m.nextQueued(rn)
	}
}

// runsHere reports whether the run is live in this process, so its hub
// brings its events.
func (m *Service) runsHere(conversationID, runID string) bool {
	rn := m.live(conversationID)
	return rn != nil && rn.id == runID
}

// live returns the run live in this process on the conversation.
func (m *Service) live(conversationID string) *Run {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.byConv[conversationID]
}

func (m *Service) unsubscribe(sub *subscriber) {
	sub.hub.remove(sub)
	m.mu.Lock()
	m.releaseHubLocked(sub.hub)
	m.mu.Unlock()
}

func (m *Service) acquireHubLocked(runID string) *hub {
	h := m.hubs[runID]
	if h == nil {
		h = newHub(runID)
		m.hubs[runID] = h
	}
	h.refs++
	return h
}

func (m *Service) releaseHubLocked(h *hub) {
	if h.refs--; h.refs <= 0 && m.hubs[h.runID] == h {
		delete(m.hubs, h.runID)
	}
}

// drive runs the agent and sends every event through the pipeline until
// the run's terminal event; a run stopped for an approval waits for the
// answer while a stream is open (InterruptAfter), then is parked.
func (m *Service) drive(rn *Run, first func(context.Context) iter.Seq2[events.Event, error], announce bool) {
	defer m.ended(rn)
	if announce {
		if !m.emit(rn, &events.RunStarted{RequestID: rn.requestID}) {
			m.abandon(rn)
			return
		}
	}
	actx, span := m.traceSegment(rn)
	if span != nil {
		rn.span = span
		defer span.End()
	}
	seq := first(actx)
	for {
		held, ok := m.consume(rn, seq)
		if !ok {
			return
		}
		d, resume := m.awaitApproval(rn)
		if c := context.Cause(rn.ctx); errors.Is(c, errCancelled) || errors.Is(c, errDeleted) {
			// Cancelled while it waited, or its conversation is being
			// deleted: the cancel wins over an answer that came with it
			// but is not applied yet.
			m.consume(rn, m.abandoned(rn.ctx, rn.conversationID))
			return
		}
		if !resume {
			m.finish(rn, held, store.RunEnd{Status: store.RunInterrupted, Reason: events.PendingApproval})
			return
		}
		m.fold(rn)
		seq = m.agent.Resume(actx, rn.conversationID, d)
	}
}

// consume sends one agent call's events through the pipeline. It returns
// the run.interrupted of a run stopped for an approval, held back, and
// true; or false once the run's terminal event was sent (or the run had
// to be abandoned).
func (m *Service) consume(rn *Run, seq iter.Seq2[events.Event, error]) (*events.RunInterrupted, bool) {
	var (
		last    events.Payload
		lastErr error
	)
	for ev, err := range seq {
		if events.Terminal(ev.Type) {
			last, lastErr = ev.Data, err
			continue
		}
		if !m.record(rn, ev) {
			continue // a repeat (an approval the run announced already)
		}
		if ev.Type == events.TypeToolComplete || ev.Type == events.TypeToolError {
			rn.toolCalls++
		}
		if !m.emitAs(rn, ev.Data, ev.Namespace) {
			m.abandon(rn) // breaking out of the loop has stopped the agent
			return nil, false
		}
	}
	switch t := last.(type) {
	case *events.RunCompleted:
		rn.seg = t.Usage
		m.finish(rn, &events.RunCompleted{Status: t.Status, Usage: rn.usage.Add(rn.seg)}, store.RunEnd{Status: store.RunCompleted})
		if rn.firstAnswer.Load() && m.cfg.Title != nil {
			m.cfg.Title(context.WithoutCancel(rn.ctx), rn.userID, rn.conversationID)
		}
	case *events.RunInterrupted:
		switch t.Reason {
		case string(events.PendingApproval):
			m.showDeadlines(rn, t)
			return t, true
		case string(events.PendingElicitation):
			m.showDeadlines(rn, t)
			m.park(rn, t, events.PendingElicitation, events.PendingElicitation, t.ElicitationIDs)
		case string(events.PendingUncertainCall):
			m.showDeadlines(rn, t)
			m.park(rn, t, events.PendingUncertainCall, events.PendingUncertainCall, t.UncertainCallIDs)
		default:
			c := m.askClarification(rn, t)
			m.showDeadlines(rn, t)
			m.finish(rn, t, store.RunEnd{Status: store.RunInterrupted, Reason: events.PendingClarification})
			if c.ExpiresAt != nil {
				m.expiredAsItParked(rn, c)
			}
		}
	case *events.RunCancelled:
		if errors.Is(context.Cause(rn.ctx), errStorageLost) {
			m.strand(rn)
			return nil, false
		}
		if errors.Is(context.Cause(rn.ctx), errShutdown) {
			m.finish(rn, &events.RunInterrupted{Reason: reasonShutdown, Pending: []events.Pending{}}, store.RunEnd{})
			return nil, false
		}
		if errors.Is(context.Cause(rn.ctx), errCancelled) {
			// A run the user cancelled leaves nothing pending in the
			// thread, also when the cancel caught it resuming, before its
			// answer was saved: the next message starts a fresh turn.
			if err := m.agent.Abandon(context.WithoutCancel(rn.ctx), rn.conversationID); err != nil {
				rn.log.LogAttrs(rn.ctx, slog.LevelError, "clearing what a cancelled run waited for failed", slog.Any("error", err))
			}
		}
		m.finish(rn, t, store.RunEnd{Status: store.RunCancelled})
	case *events.RunFailed:
		if t.Error.Code == events.CodeInternal && m.lostErr(lastErr) { // a checkpoint could not be stored, not a model's failure
			m.strand(rn)
			return nil, false
		}
		rn.log.LogAttrs(rn.ctx, slog.LevelError, "run failed", slog.String("code", t.Error.Code), slog.Any("error", lastErr))
		m.finish(rn, sanitize(t, rn.id), store.RunEnd{Status: store.RunFailed})
	default:
		rn.log.LogAttrs(rn.ctx, slog.LevelError, "agent ended without a terminal event", slog.Any("error", lastErr))
		m.finish(rn, &events.RunFailed{Error: events.ErrorInfo{Code: events.CodeInternal, Message: "internal error (run " + rn.id + ")"}},
			store.RunEnd{Status: store.RunFailed})
	}
	return nil, false
}

// askClarification records the clarifying question a run parks on as a
// human request, with its deadline, which is scheduled, before the
// run.interrupted announcing it is stored, so a client that reads the
// event finds the question pending. A recovered run asks again what it
// asked before its process died: the record stays, its deadline
// scheduled again. It returns the record as it stands (zero when there
// is none).
func (m *Service) askClarification(rn *Run, t *events.RunInterrupted) store.HumanRequest {
	if t.ClarificationID == "" {
		return store.HumanRequest{} // parked on something the agent does not know (a static interrupt)
	}
	ctx := context.WithoutCancel(rn.ctx)
	at, onExpiry := m.deadlineOf(m.cfg.ClarificationExpiry)
	c, err := m.st.CreateHumanRequest(ctx, store.NewHumanRequest{ID: t.ClarificationID, Kind: events.PendingClarification, RunID: rn.id,
		Clarification: store.Clarification{Question: store.ToValidText(t.Question)}, ExpiresAt: at, OnExpiry: onExpiry})
	if errors.Is(err, store.ErrConflict) {
		c, err = m.st.GetHumanRequest(ctx, events.PendingClarification, rn.userID, t.ClarificationID)
	}
	if err != nil {
		rn.log.LogAttrs(ctx, slog.LevelError, "storing a clarifying question failed", slog.String("clarification_id", t.ClarificationID),
			slog.Any("error", err))
		return store.HumanRequest{}
	}
	m.schedule(ctx, rn, c)
	return c
}

// expiredAsItParked takes up the outcome the deadline of the clarifying
// question c decided before the run parked on it: a deadline that came
// while the run was on its way to park found it running, and a run
// recovered after its process died between the deadline's decision and
// the resume asks the question again; the deadline's job, done, does not
// come back. As park does for an answer stored meanwhile, a new segment
// is launched from this one as it ends: the run goes on (continue) or is
// cancelled. Serialised with Expire, which resumes a run it finds
// parked itself.
func (m *Service) expiredAsItParked(rn *Run, c store.HumanRequest) {
	m.resumeMu.Lock()
	defer m.resumeMu.Unlock()
	ctx := context.WithoutCancel(rn.ctx)
	c, err := m.st.GetHumanRequest(ctx, events.PendingClarification, rn.userID, c.ID)
	if err != nil || !c.TimedOut {
		return // pending still (its deadline's job resumes the parked run), answered, or gone
	}
	if c.OnExpiry == events.ExpiryCancel {
		// As cancelLocked cancels a parked run: abandoned sends
		// clarification.expired before run.cancelled.
		err = m.resume(ctx, c.UserID, c.RunID, true, m.abandoned)
		if errors.Is(err, store.ErrConflict) || errors.Is(err, store.ErrRunActive) {
			err = nil
		}
	} else {
		err = m.clarificationExpiredLocked(ctx, c)
	}
	if err != nil {
		rn.log.LogAttrs(ctx, slog.LevelError, "taking up a clarifying question's deadline as the run parked failed",
			slog.String("clarification_id", c.ID), slog.Any("error", err))
	}
}

// reasonShutdown is run.interrupted's reason when the server stopped the
// run on its way down: an addition to API.md's reasons. The run stays
// running in the store; Recover continues it.
const reasonShutdown = "shutdown"

// record does what an event means besides being sent: approvals and
// elicitations are stored before the event announcing them, so a client
// answering at once finds them; usage and tool calls are counted. It
// reports false for an event not to send again.
func (m *Service) record(rn *Run, ev events.Event) bool {
	// The cases that store make their context: record sees every event,
	// each chunk of an answer too, and most store nothing.
	switch d := ev.Data.(type) {
	case *events.ApprovalRequired:
		ctx := context.WithoutCancel(rn.ctx)
		at, onExpiry := m.deadline(d.Tool)
		a, err := m.st.CreateHumanRequest(ctx, store.NewHumanRequest{ID: d.ApprovalID, Kind: events.PendingApproval, RunID: rn.id,
			Approval:  store.Approval{ToolCallID: d.ToolCallID, Tool: d.Tool, Args: d.Args, Revision: d.Revision},
			ExpiresAt: at, OnExpiry: onExpiry})
		if errors.Is(err, store.ErrConflict) {
			// Announced before this resumption or recovery. A recovered
			// run asks again what its process died waiting for; an answer
			// stored meanwhile (it may have gone to that process) is
			// applied now, and a deadline is kept.
			a, gerr := m.st.GetHumanRequest(ctx, events.PendingApproval, rn.userID, d.ApprovalID)
			if rn.recovered && gerr == nil && a.Status.Answered() {
				select {
				case rn.answers <- decisionOf(a):
				default:
				}
			}
			if gerr == nil {
				m.schedule(ctx, rn, a)
			}
			return false
		}
		if err != nil {
			rn.log.LogAttrs(ctx, slog.LevelError, "storing an approval failed", slog.String("approval_id", d.ApprovalID), slog.Any("error", err))
		}
		d.ExpiresAt, d.OnExpiry = a.ExpiresAt, a.OnExpiry
		m.schedule(ctx, rn, a)
	case *events.ToolUncertain:
		m.askUncertainCall(context.WithoutCancel(rn.ctx), rn, d)
	case *events.ElicitationRequest:
		ctx := context.WithoutCancel(rn.ctx)
		e, err := m.createElicitation(ctx, rn, d.ElicitationID, d.Source, d.Message, d.Schema)
		if err != nil {
			rn.log.LogAttrs(ctx, slog.LevelError, "storing an elicitation failed", slog.String("elicitation_id", d.ElicitationID), slog.Any("error", err))
		}
		d.ExpiresAt, d.OnExpiry = e.ExpiresAt, e.OnExpiry
	case *events.ResponseDone:
		rn.seg = d.Usage
	case *events.ToolComplete:
		m.metrics.ToolCall(d.Tool, "success")
	case *events.ToolError:
		m.metrics.ToolCall(d.Tool, "error")
	}
	return true
}

// emit queues one event to be stored and then published (see outbox).
// It reports false once the run's events can no longer be stored (the
// conversation was deleted, or the database failed): nothing unstored is
// ever sent.
func (m *Service) emit(rn *Run, p events.Payload) bool { return m.emitAs(rn, p, "") }

// emitAs is emit for an event of the sub-agent at namespace (see
// events.Event.Namespace). The root agent's response.chunk and
// reasoning.chunk are queued unencoded: the outbox joins the chunks that
// wait together and encodes the text once.
func (m *Service) emitAs(rn *Run, p events.Payload, namespace string) bool {
	var data []byte
	if !joinable(p) || namespace != "" {
		var err error
		if data, err = rn.envelopeOf(p, namespace); err != nil {
			rn.log.LogAttrs(rn.ctx, slog.LevelError, "encoding an event failed; the run stops", slog.String("type", p.EventType()), slog.Any("error", err))
			return false
		}
	}
	e := store.NewEvent{RunID: rn.id, Type: p.EventType(), Data: data, Owner: m.fence()}
	if _, done := p.(*events.ResponseDone); done && namespace == "" {
		if rn.said.Swap(false) {
			return true
		}
		e.Message = rn.answer.Swap(nil)
	}
	return rn.out.put(e, p) == nil
}

// fence is the owner that fences this process's writes of a run's
// events and end (see store.ErrNotOwner): with a Cluster, another process
// may take a run over from one that lost its session without knowing
// it. Alone on its store, nobody can, and Recover continues runs of
// other owners without claiming them.
func (m *Service) fence() string {
	if m.cfg.Cluster == nil {
		return ""
	}
	return m.cfg.Owner
}

// finish records how the run ended (end's zero Status leaves the run as it
// is, for shutdown) and stores the events still queued and the terminal
// event, all in one transaction (store.EndRun), then sends them; what a
// lost database kept from being stored is stored once it is back (see
// endLater). The end is recorded with the event, or first when the store
// refuses the two together, because a watcher replaying from the store
// may read the event before it is sent: whoever sees a terminal event
// must find the run ended, and may start the next run at once.
func (m *Service) finish(rn *Run, p events.Payload, end store.RunEnd) {
	rn.turnOver = end.Status.Final() || end.Reason == events.PendingClarification
	rest, typed, herr := rn.out.hold()
	if herr != nil {
		m.abandon(rn)
		return
	}
	m.fold(rn)
	ctx := context.WithoutCancel(rn.ctx)
	status := string(end.Status)
	end.Usage, end.ToolCalls, end.Owner = rn.usage, rn.toolCalls, m.fence()
	data, err := rn.envelope(p)
	var e store.Event
	stored := false // the queued events and the terminal one, with the end
	if end.Status != "" && err == nil {
		ended, ferr := m.st.EndRun(ctx, rn.id, end, append(rest, store.NewEvent{RunID: rn.id, Type: p.EventType(), Data: data, Owner: end.Owner}))
		if ferr == nil {
			rn.out.publish(ended.Events[:len(rest)], typed)
			e, stored = ended.Events[len(rest)], true
			rn.queueSeen, rn.queued = true, ended.Queued
		}
	}
	if !stored {
		// Refused together (the run ended already, say), or no end to
		// record: the queued events, the end and the terminal event go
		// one after the other, each as far as it can.
		rn.out.release(rest, typed)
		if rn.out.drain() != nil {
			m.abandon(rn)
			return
		}
	}
	if end.Status != "" && !stored {
		_, ferr := m.st.FinishRun(ctx, rn.id, end)
		if errors.Is(ferr, store.ErrNotOwner) {
			// Taken over: the new owner ends the run and its streams.
			rn.log.LogAttrs(rn.ctx, slog.LevelWarn, "another process took the run over; it stops here")
			m.detach(rn)
			m.cut(rn)
			return
		}
		if m.lostErr(ferr) {
			m.endLater(rn, p, &end, status)
			return
		}
		if ferr != nil && !errors.Is(ferr, store.ErrNotFound) {
			rn.log.LogAttrs(rn.ctx, slog.LevelError, "recording the end of the run failed", slog.String("status", status), slog.Any("error", ferr))
		}
	}
	if end.Status == "" {
		status = reasonShutdown
	}
	if !stored && err == nil {
		e, err = m.st.AppendEvent(ctx, store.NewEvent{RunID: rn.id, Type: p.EventType(), Data: data, Owner: m.fence()})
	}
	if m.lostErr(err) {
		m.endLater(rn, p, nil, status)
		return
	}
	if err != nil {
		rn.log.LogAttrs(rn.ctx, slog.LevelError, "storing the terminal event failed", slog.String("type", p.EventType()), slog.Any("error", err))
	}
	m.metrics.RunEnded(status, time.Since(rn.started))
	traceEnd(rn, status)
	rn.log.LogAttrs(rn.ctx, slog.LevelInfo, "run ended", slog.String("status", status), slog.Duration("duration", time.Since(rn.started)))
	m.detach(rn)
	if err != nil {
		m.cut(rn) // no terminal event: the clients reconnect and read the store
		return
	}
	rn.hub.publish(&Event{Event: &e, Payload: p})
}

// fold adds the segment's usage to the run's.
func (m *Service) fold(rn *Run) {
	m.metrics.Usage(rn.seg)
	rn.usage = rn.usage.Add(rn.seg)
	rn.seg = events.Usage{}
}

// abandon ends a run whose events can no longer be stored: it is marked
// failed if the store still knows it; its streams end without a terminal
// event, as for a cut client. A run whose database went away is stranded
// instead (see strand), to go on once it is back.
func (m *Service) abandon(rn *Run) {
	if m.lostErr(rn.out.drain()) { // its last stored events go out before the streams end
		m.strand(rn)
		return
	}
	m.fold(rn)
	_, err := m.st.FinishRun(context.WithoutCancel(rn.ctx), rn.id, store.RunEnd{Status: store.RunFailed, Usage: rn.usage, ToolCalls: rn.toolCalls, Owner: m.fence()})
	if err != nil && !errors.Is(err, store.ErrNotFound) && !errors.Is(err, store.ErrNotOwner) {
		rn.log.LogAttrs(rn.ctx, slog.LevelError, "marking an abandoned run failed", slog.Any("error", err))
	}
	m.metrics.RunEnded(string(store.RunFailed), time.Since(rn.started))
	rn.turnOver = err == nil
	m.detach(rn)
	m.cut(rn)
}

// cut ends the run's streams without a terminal event, as for a client
// that fell behind: they reconnect and replay from the store.
func (m *Service) cut(rn *Run) {
	rn.hub.mu.Lock()
	for sub := range rn.hub.subs {
		rn.hub.removeLocked(sub)
		close(sub.ch)
	}
	rn.hub.mu.Unlock()
}

// awaitApproval waits for an answer to the run's approval while an interactive
// stream follows the run, for InterruptAfter at most; the last stream
// leaving, or the run's context ending (shutdown), stops the wait. It returns the answer, or false when
// the run is to be parked; answers arriving from then on resume the
// parked run (see approvalAnswered).
func (m *Service) awaitApproval(rn *Run) (nodes.ApprovalDecision, bool) {
	if wait := m.cfg.InterruptAfter; wait > 0 && rn.ctx.Err() == nil {
		m.setState(rn, stateWaiting)
		t := time.NewTimer(wait)
		select {
		case d := <-rn.answers:
			t.Stop()
			m.setState(rn, stateRunning)
			return d, true
		case <-t.C:
		case <-rn.hub.idle():
		case <-rn.ctx.Done():
		}
		t.Stop()
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	select {
	case d := <-rn.answers:
		rn.state = stateRunning
		return d, true // also when shutting down: the answer is saved before the agent stops
	default:
		rn.state = stateParking
		return nodes.ApprovalDecision{}, false
	}
}

func (m *Service) setState(rn *Run, s runState) {
	m.mu.Lock()
	rn.state = s
	m.mu.Unlock()
}

// AnswerApproval records a user's answer to an approval and hands it to
// its run (see approvalAnswered). It is serialised with cancel: an answer
// to a run the user is cancelling is refused (ErrRunCancelling) before anything is
// recorded, and a cancel after the answer stops the run it resumed. So
// of a cancel and an answer racing, exactly one wins, and the record
// says which.
//
// AnswerApproval returns the approval as recorded; with an error and a
// recorded approval, the answer stands but its run could not take it.
// Errors: store.ErrNotFound, store.ErrAlreadyResolved, ErrRunCancelling,
// ErrBusy, ErrShuttingDown.
func (m *Service) AnswerApproval(ctx context.Context, user, id string, ans store.ApprovalAnswer) (store.HumanRequest, error) {
	m.resumeMu.Lock()
	defer m.resumeMu.Unlock()
	a, err := m.pending(ctx, events.PendingApproval, user, id)
	if err != nil {
		return store.HumanRequest{}, err
	}
	m.mu.Lock()
	rn := m.byConv[a.ConversationID]
	cancelling := rn != nil && rn.id == a.RunID && rn.cancelling
	m.mu.Unlock()
	if cancelling {
		return store.HumanRequest{}, ErrRunCancelling
	}
	if a, err = m.st.ResolveHumanRequest(ctx, user, id, ans); err != nil {
		return store.HumanRequest{}, err
	}
	return a, m.approvalAnsweredLocked(ctx, a, true)
}

// approvalAnswered takes an answer the store has just recorded: a live
// run gets it at once (it is waiting, or will look when it stops); a
// parked run is resumed in the background, its events numbered on after
// its run.interrupted.
//
// With forward set, an answer for a run another live process owns (it
// waits on that process's open stream) is sent there (see Cluster);
// forward is unset for an answer that came as such a notice.
func (m *Service) approvalAnswered(ctx context.Context, a store.HumanRequest, forward bool) error {
	m.resumeMu.Lock()
	defer m.resumeMu.Unlock()
	return m.approvalAnsweredLocked(ctx, a, forward)
}

// approvalAnsweredLocked is approvalAnswered with m.resumeMu held.
func (m *Service) approvalAnsweredLocked(ctx context.Context, a store.HumanRequest, forward bool) error {
	m.mu.Lock()
	rn := m.byConv[a.ConversationID]
	if rn != nil && rn.id == a.RunID && rn.state != stateParking {
		select {
		case rn.answers <- decisionOf(a):
			m.mu.Unlock()
			return nil
		default:
			m.mu.Unlock()
			return ErrBusy
		}
	}
	var parking chan struct{}
	if rn != nil && rn.id == a.RunID {
		parking = rn.done
	}
	m.mu.Unlock()
	if err := parked(ctx, parking); err != nil {
		return err
	}
	err := m.resumeWith(ctx, a)
	if forward && errors.Is(err, store.ErrConflict) {
		if r, gerr := m.st.GetRun(ctx, a.UserID, a.RunID); gerr == nil {
			if owner := m.elsewhere(r); owner != "" {
				return m.notify(ctx, owner, store.NoticeApproval, r, a.ID)
			}
		}
	}
	return err
}

// resume sets a parked run running again, owned by this process, and
// drives it with next; cancelling marks a segment that abandons the run
// for a cancel (see run.cancelling).
func (m *Service) resume(ctx context.Context, userID, runID string, cancelling bool, next func(context.Context, string) iter.Seq2[events.Event, error]) error {
	m.gate.RLock()
	defer m.gate.RUnlock()
	if m.draining.Load() {
		return ErrShuttingDown
	}
	r, err := m.st.ResumeRun(ctx, runID, m.cfg.Owner)
	if err != nil {
		return fmt.Errorf("runs: resume run %s: %w", runID, err)
	}
	r.UserID = userID
	m.reserve(userID, true)
	rn := m.newRun(ctx, r)
	rn.cancelling = cancelling
	rn.log.LogAttrs(ctx, slog.LevelInfo, "run resumed")
	m.launch(rn, func(ctx context.Context) iter.Seq2[events.Event, error] { return next(ctx, rn.conversationID) }, false, nil)
	return nil
}

// park ends a segment whose run waits for the answer to a tool's
// question or a person's decision on a call that may have run (reason,
// the human requests of kind named ids), and resumes it at once when
// the answer was stored while it was parking (the answer's handler,
// serialised with this, resumes a run it finds parked; see
// elicitationAnswered, AnswerUncertainCall).
func (m *Service) park(rn *Run, ri *events.RunInterrupted, reason events.PendingKind, kind events.PendingKind, ids []string) {
	m.resumeMu.Lock()
	defer m.resumeMu.Unlock()
	m.finish(rn, ri, store.RunEnd{Status: store.RunInterrupted, Reason: reason})
	ctx := context.WithoutCancel(rn.ctx)
	for _, id := range ids {
		e, err := m.st.GetHumanRequest(ctx, kind, rn.userID, id)
		if err != nil || !e.Status.Answered() {
			continue
		}
		// A new segment, launched from this one as it ends.
		if err := m.resumeWith(ctx, e); err != nil && !errors.Is(err, store.ErrConflict) {
			rn.log.LogAttrs(ctx, slog.LevelError, "resuming a run whose question was answered as it parked failed",
				slog.String("human_request_id", id), slog.Any("error", err))
		}
		return
	}
}

// elicitationAnswered takes the answer to an elicitation that no tool in
// this process waits for: a run parked on it resumes with the answer; a
// run still running here finds it stored when its tool asks again (it
// keeps its id), or resumes with it if it parks meanwhile (see park).
// The answer is stored already.
func (m *Service) elicitationAnswered(ctx context.Context, e store.HumanRequest) error {
	m.resumeMu.Lock()
	defer m.resumeMu.Unlock()
	return m.elicitationAnsweredLocked(ctx, e)
}

// elicitationAnsweredLocked is elicitationAnswered with m.resumeMu held.
func (m *Service) elicitationAnsweredLocked(ctx context.Context, e store.HumanRequest) error {
	r, err := m.st.GetRun(ctx, e.UserID, e.RunID)
	if err != nil {
		return err
	}
	if r.Superseded || r.Status != store.RunInterrupted || r.InterruptReason != events.PendingElicitation {
		return nil
	}
	err = m.resumeWith(ctx, e)
	if errors.Is(err, store.ErrConflict) {
		return nil // resumed already
	}
	return err
}

// resumeWith resumes the run parked on a human request with its stored
// answer: an approval's decision, an elicitation's response, or the
// decision on an uncertain call.
func (m *Service) resumeWith(ctx context.Context, h store.HumanRequest) error {
	return m.resume(ctx, h.UserID, h.RunID, false, func(ctx context.Context, conversationID string) iter.Seq2[events.Event, error] {
		switch h.Kind {
		case events.PendingApproval:
			return m.agent.Resume(ctx, conversationID, decisionOf(h))
		case events.PendingUncertainCall:
			return m.uncertainCallAnswered(ctx, conversationID, h)
		}
		r := responseOf(h)
		return m.agent.AnswerElicitation(ctx, conversationID, nodes.ElicitationAnswer{ElicitationID: r.ElicitationID, Action: r.Action,
			Content: r.Content, Expired: r.Expired})
	})
}

// cancel cancels the conversation's run, runID's only when runID is set,
// and returns its id. A run live in this process stops at once; one
// waiting for an approval, live or parked, or parked on a clarifying
// question, is abandoned (what it waits for is dropped unanswered, see
// nodes.Agent.Abandon) and ends with run.cancelled. A run another live
// process owns is cancelled there, told with a notice, when forward is
// set (unset for a cancel that came as one). ErrNothingToRun when no run
// of the conversation (or not runID) is running or waiting.
func (m *Service) cancel(ctx context.Context, userID, conversationID, runID string, forward bool) (string, error) {
	m.resumeMu.Lock() // see AnswerApproval
	defer m.resumeMu.Unlock()
	return m.cancelLocked(ctx, userID, conversationID, runID, forward)
}

// cancelLocked is cancel with m.resumeMu held.
func (m *Service) cancelLocked(ctx context.Context, userID, conversationID, runID string, forward bool) (string, error) {
	m.mu.Lock()
	rn := m.byConv[conversationID]
	if rn != nil && runID != "" && rn.id != runID {
		m.mu.Unlock()
		return "", ErrNothingToRun
	}
	if rn != nil && rn.state != stateParking {
		rn.cancelling = true
		rn.cancel(errCancelled) // a waiting run sees it and abandons its approval
		m.mu.Unlock()
		return rn.id, nil
	}
	var parking chan struct{}
	if rn != nil {
		parking = rn.done
	}
	m.mu.Unlock()
	if err := parked(ctx, parking); err != nil {
		return "", err
	}
	last, err := m.st.LatestRun(ctx, userID, conversationID)
	if err == nil && runID != "" && last.ID != runID {
		return "", ErrNothingToRun
	}
	if owner := m.elsewhere(last); err == nil && forward && owner != "" {
		if err := m.notify(ctx, owner, store.NoticeCancel, last, ""); err != nil {
			return "", err
		}
		return last.ID, nil
	}
	if errors.Is(err, store.ErrNotFound) || err == nil && (last.Superseded || last.Status != store.RunInterrupted) {
		return "", ErrNothingToRun
	}
	if err != nil {
		return "", err
	}
	err = m.resume(ctx, userID, last.ID, true, m.abandoned)
	if errors.Is(err, store.ErrConflict) || errors.Is(err, store.ErrRunActive) {
		return "", ErrNothingToRun // an answer resumed it first, or a later run took its place
	}
	if err != nil {
		return "", err
	}
	return last.ID, nil
}

// abandoned is a run's last call to the agent when the user cancelled it
// while it waited: nothing stays pending in the thread, and the run ends
// with run.cancelled, after approval.expired when the deadline of what it
// waited for cancelled it.
func (m *Service) abandoned(ctx context.Context, conversationID string) iter.Seq2[events.Event, error] {
	return func(yield func(events.Event, error) bool) {
		if x := m.cancelledByDeadline(context.WithoutCancel(ctx), conversationID); x != nil && !yield(events.New(x), nil) {
			return
		}
		if err := m.agent.Abandon(context.WithoutCancel(ctx), conversationID); err != nil {
			f := &events.RunFailed{Error: events.ErrorInfo{Code: events.CodeInternal, Message: "abandoning the run failed"}}
			yield(events.Event{Type: f.EventType(), Data: f}, err)
			return
		}
		c := &events.RunCancelled{}
		yield(events.Event{Type: c.EventType(), Data: c}, nil)
	}
}

// Cancel cancels the conversation's run, wherever it runs or waits (see
// cancel), and returns its id. Errors: store.ErrNotFound (no such
// conversation of the user's), ErrNothingToRun.
func (m *Service) Cancel(ctx context.Context, userID, conversationID string) (string, error) {
	if _, err := m.st.GetConversation(ctx, userID, conversationID); err != nil {
		return "", err
	}
	return m.cancel(ctx, userID, conversationID, "", true)
}

// cancelRun cancels the conversation's run runID as Cancel does, if it
// is still the conversation's run, and waits for its end when it runs
// here.
func (m *Service) cancelRun(ctx context.Context, userID, conversationID, runID string) error {
	if _, err := m.cancel(ctx, userID, conversationID, runID, true); err != nil {
		return err
	}
	rn := m.live(conversationID)
	if rn == nil || rn.id != runID {
		return nil
	}
	select {
	case <-rn.done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// DeleteConversation deletes a conversation of the user's. It is marked
// first (store.Conversations.BeginDelete): no run starts or resumes on
// it from then on, in any process, so nothing writes its state again
// once that is gone; a start under way here is let launch its run
// (startsBefore), for stop to find. Its queued messages are dropped and
// its run is stopped, here or in the process of the cluster that runs
// it, and waited for (see stop); then its files (Config.DeleteFiles),
// the agent's state and last the record go, and the databases are
// scrubbed (Config.Scrub). The record goes last so that a failure or a
// crash part-way leaves the conversation listed, to delete again, and
// nothing of it that no record names any more.
func (m *Service) DeleteConversation(ctx context.Context, userID, conversationID string) error {
	if err := m.st.BeginDelete(ctx, userID, conversationID); err != nil {
		return err
	}
	m.startsBefore()
	// Emptied first: the end of the run stopped next would start the
	// queue's first message.
	if err := m.st.DropQueuedRuns(ctx, userID, conversationID); err != nil {
		return fmt.Errorf("runs: delete conversation %s: %w", conversationID, err)
	}
	if err := m.stop(ctx, userID, conversationID, errDeleted); err != nil {
		return err
	}
	if f := m.cfg.DeleteFiles; f != nil {
		if err := f(ctx, userID, conversationID); err != nil {
			return fmt.Errorf("runs: delete the files of %s: %w", conversationID, err)
		}
	}
	if err := m.agent.Delete(ctx, conversationID); err != nil {
		return err
	}
	if err := m.st.DeleteConversation(ctx, userID, conversationID); err != nil {
		return err
	}
	if f := m.cfg.Scrub; f != nil {
		if err := f(ctx); err != nil {
			m.log.LogAttrs(ctx, slog.LevelWarn, "cannot scrub a deleted conversation from the databases",
				slog.String("conversation_id", conversationID), slog.String("error", err.Error()))
		}
	}
	return nil
}

// startsBefore waits for the starts under way here to have launched
// their runs, and the task edits under way to have written. A start
// holds m.gate for reading from its checks to its launch, and a run it
// stored before a conversation was marked deleted is not live until
// then: stop, which looks for the live run, would miss it, and the run
// would write the conversation's state after its delete.
func (m *Service) startsBefore() {
	m.gate.Lock()
	defer m.gate.Unlock()
}

// ID is the run's id.
func (rn *Run) ID() string { return rn.id }

// ConversationID is the id of the run's conversation.
func (rn *Run) ConversationID() string { return rn.conversationID }

// parked waits until a run that is parking, whose done channel is
// given (nil for none), has parked: it takes no time, and an answer or
// a cancel that came meanwhile then goes to the parked run.
func parked(ctx context.Context, done <-chan struct{}) error {
	if done == nil {
		return nil
	}
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// RequestID is the id of the request that started the run.
func (rn *Run) RequestID() string { return rn.requestID }

// stop stops the conversation's run wherever it runs, and waits for it
// to end: a run live here is cancelled with cause; a run that another
// process of the cluster owns is cancelled there, told with a notice as
// Cancel does, and the store is read every clusterPoll until it has
// ended. A run whose owner is gone stays running in the store until a
// process claims it (see sweep): stop waits for that too, then cancels
// it here or tells its new owner, so that nothing of the run is written
// once stop returns. A notice may be lost, so each read that finds the
// run still running sends another; one that arrives twice finds the run
// cancelling already.
// A running run owned here but not live (stranded by a lost database)
// is not waited for: nothing writes for it until the sweep, which finds
// it deleted.
func (m *Service) stop(ctx context.Context, userID, conversationID string, cause error) error {
	var poll *time.Ticker
	for {
		if rn := m.live(conversationID); rn != nil {
			rn.cancel(cause)
			select {
			case <-rn.done:
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		if m.cfg.Cluster == nil {
			return nil
		}
		last, err := m.st.LatestRun(ctx, userID, conversationID)
		if errors.Is(err, store.ErrNotFound) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("runs: stop the run of %s: %w", conversationID, err)
		}
		owner := m.elsewhere(last)
		if owner == "" {
			if m.live(conversationID) == nil {
				return nil // ended, parked, or owned here and not live
			}
			continue // one started or was claimed here meanwhile
		}
		if err := m.notify(ctx, owner, store.NoticeCancel, last, ""); err != nil {
			return fmt.Errorf("runs: stop the run of %s: %w", conversationID, err)
		}
		if poll == nil {
			poll = time.NewTicker(clusterPoll)
			defer poll.Stop()
		}
		select {
		case <-poll.C:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// shutdown refuses new runs, cancels the live ones with errShutdown and
// waits for them to have sent their last event.
func (m *Service) shutdown(ctx context.Context) error {
	m.gate.Lock()
	m.draining.Store(true)
	m.gate.Unlock()
	m.mu.Lock()
	for _, rn := range m.byConv {
		rn.cancel(errShutdown)
	}
	m.mu.Unlock()
	done := make(chan struct{})
	go func() {
		m.wg.Wait()
		close(done)
	}()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("runs: shutdown: runs still stopping: %w", ctx.Err())
	}
}

// ctxKey keys the run a context belongs to.
type ctxKey struct{}

// runKey finds, in an agent's context, the run it works for.
var runKey = &ctxKey{}
