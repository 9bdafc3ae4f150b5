package nodes

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/tmc/langchaingo/llms"

	"github.com/trellis-ai/trellis/events"
	"github.com/trellis-ai/trellis/graph"
	"github.com/trellis-ai/trellis/graph/checkpoint/memory"
	"github.com/trellis-ai/trellis/llm"
	"github.com/trellis-ai/trellis/operators"
)

// Agent is the compiled chat agent: its graph, the models and tools it
// uses, and where it keeps conversations. It is safe for concurrent use;
// the service must not run two turns of one conversation at once (it
// answers 409), since both would write the same thread.
type Agent struct {
	models *llm.Registry
	tools  *operators.Provider
	saver  graph.Checkpointer
	opts   Options
	log    *slog.Logger
	graph  *graph.Compiled[ChatState]
	// decideTools and assessTools are the catalog's tools with decide and
	// assess added, for the supervisor and reflect.
	decideTools, assessTools toolsWith
	sources                  sourceCache // tool name → source, for tool.start
	// chain is the agent's middleware.
	chain chain
	// allow lists the tools a sub-agent may call; nil allows every tool.
	allow map[string]bool
	// def is a sub-agent's definition; zero for the root agent.
	def SubAgent
	// memo runs plain calls beside delegations (see callKept); nil
	// without sub-agents.
	memo *graph.Compiled[keptCall]
}

// New builds an agent over a model registry, a tool provider and a
// checkpointer. models is required; tools nil means no tools; saver nil
// means an in-memory checkpointer (conversations die with the process).
func New(models *llm.Registry, tools *operators.Provider, saver graph.Checkpointer, opts Options) (*Agent, error) {
	if models == nil {
		return nil, fmt.Errorf("nodes: new agent: %w: a model registry is required", ErrInvalidInput)
	}
	if tools == nil {
		tools = operators.NewProvider(operators.ProviderConfig{})
	}
	if saver == nil {
		saver = memory.New()
	}
	a := &Agent{models: models, tools: tools, saver: saver, opts: opts, log: opts.Logger}
	if a.log == nil {
		a.log = slog.New(slog.DiscardHandler)
	}
	var subs *subagentMiddleware
	if len(opts.SubAgents.Agents) > 0 {
		var err error
		if subs, err = a.buildSubagents(); err != nil {
			return nil, err
		}
	}
	a.chain = newChain(a.middleware(a, subs))
	if subs != nil {
		a.memo = subs.memo
	}
	g, err := a.build()
	if err != nil {
		return nil, fmt.Errorf("nodes: build agent graph: %w", err)
	}
	a.graph = g
	return a, nil
}

// middleware is the chain of agent x: the built-ins, then
// Options.Middleware.
func (a *Agent) middleware(x *Agent, subs *subagentMiddleware) []Middleware {
	ms := []Middleware{windowMiddleware{w: &x.opts.Window, saver: x.saver, timeout: x.opts.contextTimeout(), log: x.log}}
	if x.opts.Documents != nil {
		ms = append(ms, documentsMiddleware{src: x.opts.Documents, timeout: x.opts.contextTimeout()})
	}
	if x.opts.Cognition != nil {
		ms = append(ms, cognitionMiddleware{load: x.opts.Cognition, timeout: x.opts.contextTimeout()})
	}
	if subs != nil {
		ms = append(ms, subs)
	}
	return append(ms, x.opts.Middleware...)
}

// catalog returns the tools the agent may call, as the supervisor's
// summary lines and the models' definitions: the provider's, or a
// sub-agent's allowed share of them, without the memory tools in a turn
// with memory off.
func (a *Agent) catalog(s *ChatState) (string, []llms.Tool) {
	cat := a.tools.Catalog()
	noMemory := s != nil && s.Input.NoMemory
	if a.allow == nil && (!noMemory || len(a.opts.MemoryTools) == 0) {
		return cat.Summaries, cat.LLMTools
	}
	offered := func(name string) bool { return a.allows(name) && !(noMemory && a.memoryTool(name)) }
	var defs []llms.Tool
	for _, t := range cat.LLMTools {
		if t.Function != nil && offered(t.Function.Name) {
			defs = append(defs, t)
		}
	}
	var b strings.Builder
	for line := range strings.Lines(cat.Summaries) {
		name, _, _ := strings.Cut(strings.TrimPrefix(line, "- "), " ")
		if offered(name) {
			b.WriteString(line)
		}
	}
	return b.String(), defs
}

// allows reports whether the agent may call the provider's tool name: a
// sub-agent only its allowed ones.
func (a *Agent) allows(name string) bool { return a.allow == nil || a.allow[name] }

// memoryTool reports whether name is one of Options.MemoryTools.
func (a *Agent) memoryTool(name string) bool { return slices.Contains(a.opts.MemoryTools, name) }

// Mermaid draws the agent graph.
func (a *Agent) Mermaid() string { return a.graph.Mermaid() }

// SubAgents are the agents the supervisor may delegate to with the task
// tool (Options.SubAgents), none when it has none.
func (a *Agent) SubAgents() []SubAgent { return slices.Clone(a.opts.SubAgents.Agents) }

// Run starts a turn: the user's message in, the run's events out.
//
// When the conversation waits for the answer to a clarifying question, the
// message is that answer and the parked turn goes on (in's other fields
// are then ignored). When it waits for an approval, Run fails with
// ErrApprovalPending.
//
// # Events and errors
//
// The iterator is single-use. It yields the run's events in order with a
// nil error, and ends with exactly one terminal event:
//
//   - run.completed (nil error): the turn finished; response.done came
//     before it.
//   - run.interrupted (nil error): the run is parked, waiting for an
//     approval (approval.required came before it, one per pending call;
//     answer with Resume) or for the answer to a clarifying question
//     (answer with Run).
//   - run.cancelled (error: ctx's): ctx ended; the state of the last
//     finished step is kept and Continue picks it up.
//   - run.failed (error: the cause, matching this package's sentinels,
//     llm's and graph's through errors.Is): the run failed. Errors found
//     before anything ran (ErrInvalidInput, ErrApprovalPending, …) end a
//     run that yields nothing else.
//
// Breaking out of the loop cancels the run and returns once every node
// has stopped; no terminal event follows.
func (a *Agent) Run(ctx context.Context, conversationID string, in Input) iter.Seq2[events.Event, error] {
	return a.run(ctx, conversationID, "", in)
}

// RunAfter is Branch(conversationID, runID) followed by Run, for a turn
// that continues the branch the run runID is on; a run that stored no
// state (ErrUnknownTurn) leaves the state as its parent left it. The
// conversation's newest checkpoint, which Branch, Run and the graph's
// start each read, is read once for the three.
func (a *Agent) RunAfter(ctx context.Context, conversationID, runID string, in Input) iter.Seq2[events.Event, error] {
	return a.run(ctx, conversationID, runID, in)
}

// run is Run, after Branch(after) when after is not "".
func (a *Agent) run(ctx context.Context, conversationID, after string, in Input) iter.Seq2[events.Event, error] {
	return func(yield func(events.Event, error) bool) {
		in, err := turnInput("run", conversationID, in)
		if err != nil {
			fail(yield, err)
			return
		}
		newest, err := a.newest(ctx, conversationID)
		if err == nil && after != "" {
			newest, err = a.branch(ctx, conversationID, after, newest)
			if errors.Is(err, ErrUnknownTurn) {
				err = nil
			}
		}
		var ins []graph.PendingInterrupt
		if err == nil {
			ins, err = a.interruptsAt(ctx, conversationID, newest)
		}
		if err != nil {
			failOrCancel(ctx, yield, err)
			return
		}
		pending := pendingFrom(ins)
		for _, p := range pending {
			switch p.Kind {
			case events.PendingApproval:
				fail(yield, fmt.Errorf("nodes: run on conversation %s: %w: answer approval %s first", conversationID, ErrApprovalPending, p.ID))
				return
			case events.PendingElicitation:
				fail(yield, fmt.Errorf("nodes: run on conversation %s: %w: answer elicitation %s first", conversationID, ErrApprovalPending, p.ElicitationID))
				return
			}
		}
		if len(pending) > 0 { // a clarifying question: the message answers it
			a.runGraph(ctx, yield, nil, graph.RunConfig{ThreadID: conversationID, ResumeByID: map[string]any{pending[0].ID: in.Message}})
			return
		}
		a.runGraph(ctx, yield, &ChatState{Input: in}, graph.RunConfig{ThreadID: conversationID, Newest: newest})
	}
}

// Start is Run for a conversation with no state yet, one its caller has
// just created: with nothing to look up (a pending interrupt, a
// checkpoint to continue), the turn starts from the message at once.
// Called on a conversation that has state, it starts the conversation
// over from this message, beside what was there.
func (a *Agent) Start(ctx context.Context, conversationID string, in Input) iter.Seq2[events.Event, error] {
	return func(yield func(events.Event, error) bool) {
		in, err := turnInput("start", conversationID, in)
		if err != nil {
			fail(yield, err)
			return
		}
		a.runGraph(ctx, yield, &ChatState{Input: in}, graph.RunConfig{ThreadID: conversationID, NewThread: true})
	}
}

// turnInput is in for a turn of conversationID, its message trimmed, or
// ErrInvalidInput when the conversation or the message is missing.
func turnInput(verb, conversationID string, in Input) (Input, error) {
	in.Message = strings.TrimSpace(in.Message)
	if conversationID == "" || in.Message == "" {
		return in, fmt.Errorf("nodes: %s: %w: conversation id and message are required", verb, ErrInvalidInput)
	}
	in.ConversationID = conversationID
	return in, nil
}

// Resume answers the approval a parked run waits for and continues the
// run; it yields approval.resolved first (after approval.expired when
// the deadline decided), then the run's events, with the contract of
// Run. d.ApprovalID may be empty when a single approval waits.
// Errors: ErrInvalidInput for a malformed decision, ErrNoPendingApproval
// when nothing (or nothing with that id) waits.
func (a *Agent) Resume(ctx context.Context, conversationID string, d ApprovalDecision) iter.Seq2[events.Event, error] {
	return func(yield func(events.Event, error) bool) {
		if err := d.validate(); err != nil {
			fail(yield, err)
			return
		}
		pending, err := a.waiting(ctx, conversationID)
		if err != nil {
			failOrCancel(ctx, yield, err)
			return
		}
		var target *events.Pending
		for i := range pending {
			p := &pending[i]
			if p.Kind == events.PendingApproval && (d.ApprovalID == "" || d.ApprovalID == p.ID) {
				target = p
				break
			}
		}
		if target == nil {
			fail(yield, fmt.Errorf("nodes: resume conversation %s: %w (approval id %q)", conversationID, ErrNoPendingApproval, d.ApprovalID))
			return
		}
		args := target.Args
		if d.Decision == events.DecisionEdit {
			args = d.Args
		}
		d.ApprovalID = target.ID
		if x := d.Expired; x != nil {
			x.ApprovalID, x.Kind = target.ID, events.PendingApproval
			if !yield(events.New(x), nil) {
				return
			}
		}
		if !yield(events.New(&events.ApprovalResolved{ApprovalID: target.ID, Decision: d.Decision, Args: args, Reason: d.Reason}), nil) {
			return
		}
		a.runGraph(ctx, yield, nil, graph.RunConfig{ThreadID: conversationID, ResumeByID: map[string]any{target.ID: d}})
	}
}

// Abandon ends a conversation's parked run without answering what it
// waits for: it is how a user cancels a run that waits for an approval (or
// a clarifying question). The pending approval's tool never runs; the
// state keeps everything up to the interrupt; nothing is pending any more,
// so the next Run starts a fresh turn. A conversation with nothing pending,
// or none at all, is left as it is. Like a turn, it writes the thread: it
// must not run alongside a turn of the same conversation.
func (a *Agent) Abandon(ctx context.Context, conversationID string) error {
	pending, err := a.waiting(ctx, conversationID)
	if err != nil {
		return err // it names the conversation already
	}
	if len(pending) == 0 {
		return nil
	}
	cancelled := graph.Command[ChatState]{Update: ChatState{Outcome: OutcomeCancelled}}
	if _, err := a.graph.UpdateState(ctx, graph.Ref{ThreadID: conversationID}, graph.END, cancelled); err != nil {
		return fmt.Errorf("nodes: abandon conversation %s: %w", conversationID, err)
	}
	return nil
}

// Continue runs a conversation on from its last checkpoint, after the
// process running it died or its run was cancelled. A conversation parked
// at an interrupt stays parked (its run ends in run.interrupted again);
// one whose turn had ended says its answer again (see sayAgain). Events
// and errors are as for Run.
func (a *Agent) Continue(ctx context.Context, conversationID string) iter.Seq2[events.Event, error] {
	return func(yield func(events.Event, error) bool) {
		ins, err := a.interrupts(ctx, conversationID)
		if err != nil {
			failOrCancel(ctx, yield, err)
			return
		}
		if len(ins) > 0 {
			// Parked: nothing runs again (a tool call that ran before a
			// question parked the run must not run twice).
			a.finish(ctx, yield, &graph.InterruptError{Interrupts: ins})
			return
		}
		snap, err := a.graph.GetState(ctx, graph.Ref{ThreadID: conversationID})
		if err != nil {
			failOrCancel(ctx, yield, fmt.Errorf("nodes: load conversation %s: %w", conversationID, err))
			return
		}
		switch {
		case len(snap.Next) == 0 && snap.Values.Outcome == OutcomeCancelled:
			// Cancelled by Abandon, with nothing left to run: its process
			// died after the cancel reached the checkpoint and before the
			// run's end was recorded.
			yield(events.New(&events.RunCancelled{}), nil)
		case len(snap.Next) == 0 && snap.Values.Outcome != "":
			a.sayAgain(ctx, yield, snap.Values)
		default:
			a.runGraph(ctx, yield, nil, graph.RunConfig{ThreadID: conversationID})
		}
	}
}

// sayAgain ends a continued run whose graph had ended, its answer said
// (s is the state stream left), but whose process died, or lost its
// database, before the run's end was stored: the answer and its
// response.done may not have been stored with it (see Hooks.OnAnswer),
// so the hooks hear it and it is said again, as a run continued from
// before stream would say it.
func (a *Agent) sayAgain(ctx context.Context, yield func(events.Event, error) bool, s ChatState) {
	ans, content := answerOf(s)
	usage := events.Usage{}
	said := true
	err := a.say(ctx, s, ans, content, func(done *events.ResponseDone) {
		usage = done.Usage
		said = yield(events.New(done), nil)
	})
	if err != nil {
		failOrCancel(ctx, yield, err)
		return
	}
	if said {
		yield(events.New(&events.RunCompleted{Status: "completed", Usage: usage}), nil)
	}
}

// runKey carries the caller's run id (WithRun).
type runKey struct{}

// WithRun names the caller's run that the agent's calls under ctx belong
// to. Every checkpoint they write records it (graph.Checkpoint.RunID),
// so that after a crash Began can tell whether the run stored anything.
// The caller keeps the run's input, to start the run again from it when
// it did not; so a turn in exit or boundary durability writes its
// input's checkpoint with its next one (graph.RunConfig.DeferInput),
// one write fewer.
func WithRun(ctx context.Context, runID string) context.Context {
	return context.WithValue(ctx, runKey{}, runID)
}

// Began reports whether the conversation's newest state is one the run
// runID (see WithRun) stored. A run that has not stored one is one
// whose process died between its caller recording the run and its first
// checkpoint: Continue would take up the turn before it, so its caller
// starts it again from its input instead. After a turn another run, or a
// branch moved to (Branch), has the newest state.
//
// The newest state's run is that of its checkpoint or, for a state
// update (an abandoned run, a task edited between runs, a branch moved
// to; or a checkpoint written before runs were recorded), of the nearest
// checkpoint it descends from that records a run. None found means not
// begun.
func (a *Agent) Began(ctx context.Context, conversationID, runID string) (bool, error) {
	last, err := a.lastRun(ctx, conversationID)
	return last == runID, err
}

// newest returns the conversation's newest checkpoint, nil when it has
// none.
func (a *Agent) newest(ctx context.Context, conversationID string) (*graph.Checkpoint, error) {
	cps, err := a.saver.List(ctx, graph.ListOptions{ThreadID: conversationID, Limit: 1})
	if err != nil {
		return nil, fmt.Errorf("nodes: load conversation %s: %w", conversationID, err)
	}
	if len(cps) == 0 {
		return nil, nil
	}
	return &cps[0], nil
}

// lastRun returns the run of the conversation's newest state (see
// Began), "" for none.
func (a *Agent) lastRun(ctx context.Context, conversationID string) (string, error) {
	newest, err := a.newest(ctx, conversationID)
	if err != nil {
		return "", err
	}
	return a.runOf(ctx, conversationID, newest)
}

// runOf returns the run of the state of newest, the conversation's newest
// checkpoint (nil for none). Most often the checkpoint says; the rest, a
// page at a time, follow parents, which are older than their children.
func (a *Agent) runOf(ctx context.Context, conversationID string, newest *graph.Checkpoint) (string, error) {
	if newest == nil {
		return "", nil
	}
	cps := []graph.Checkpoint{*newest}
	opts := graph.ListOptions{ThreadID: conversationID, Limit: 16}
	want := newest.ID // the checkpoint to look at next: the newest, then parents
	for {
		for _, cp := range cps {
			if cp.ID != want {
				continue
			}
			if cp.RunID != "" || cp.ParentID == "" {
				return cp.RunID, nil
			}
			want = cp.ParentID
		}
		if len(cps) == 0 || (opts.Before != "" && len(cps) < opts.Limit) {
			return "", nil
		}
		opts.Before = cps[len(cps)-1].ID
		var err error
		if cps, err = a.saver.List(ctx, opts); err != nil {
			return "", fmt.Errorf("nodes: load conversation %s: %w", conversationID, err)
		}
	}
}

// Branch makes the state the run runID left the conversation's newest,
// so that the next turn continues the branch that run is on: its last
// checkpoint is forked, as an edit forks the turn it reruns, and history
// keeps the branch it leaves. A run whose state is the newest already is
// left as it is. What the run waited for stays asked only if it is a
// clarifying question, which the next message answers; an approval or a
// tool's question it was abandoned on is dropped, as Abandon drops it.
// Like a turn, it writes the thread: it must not run alongside a turn of
// the same conversation. ErrUnknownTurn when the run stored no
// checkpoint.
func (a *Agent) Branch(ctx context.Context, conversationID, runID string) error {
	newest, err := a.newest(ctx, conversationID)
	if err != nil {
		return err
	}
	_, err = a.branch(ctx, conversationID, runID, newest)
	return err
}

// branch is Branch given newest, the conversation's newest checkpoint
// (nil for none); it returns the newest checkpoint after it.
func (a *Agent) branch(ctx context.Context, conversationID, runID string, newest *graph.Checkpoint) (*graph.Checkpoint, error) {
	last, err := a.runOf(ctx, conversationID, newest)
	if err != nil || last == runID {
		return newest, err
	}
	cp, err := a.runCheckpoint(ctx, conversationID, runID)
	if err != nil {
		return newest, err
	}
	ref := graph.Ref{ThreadID: conversationID, ID: cp}
	snap, err := a.graph.GetState(ctx, ref)
	if err != nil {
		return nil, fmt.Errorf("nodes: branch of run %s: %w", runID, err)
	}
	asNode, cmd := "", graph.Command[ChatState]{}
	for _, p := range pendingFrom(snap.Interrupts) {
		if p.Kind != events.PendingClarification {
			asNode, cmd = graph.END, graph.Command[ChatState]{Update: ChatState{Outcome: OutcomeCancelled}}
		}
	}
	if _, err := a.graph.UpdateState(ctx, ref, asNode, cmd); err != nil {
		return nil, fmt.Errorf("nodes: branch of run %s: %w", runID, err)
	}
	return a.newest(ctx, conversationID)
}

// runCheckpoint returns the id of the last checkpoint the run runID
// stored, reading the conversation's checkpoints newest first, a page at
// a time.
func (a *Agent) runCheckpoint(ctx context.Context, conversationID, runID string) (string, error) {
	opts := graph.ListOptions{ThreadID: conversationID, Limit: 16}
	for {
		cps, err := a.saver.List(ctx, opts)
		if err != nil {
			return "", fmt.Errorf("nodes: load conversation %s: %w", conversationID, err)
		}
		for _, cp := range cps {
			if cp.RunID == runID {
				return cp.ID, nil
			}
		}
		if len(cps) < opts.Limit {
			return "", fmt.Errorf("nodes: branch of conversation %s: %w: run %s stored no state", conversationID, ErrUnknownTurn, runID)
		}
		opts.Before = cps[len(cps)-1].ID
	}
}

// Turn names a turn of a conversation: the request that started it, and
// the run that did when the caller knows it (the RunID its context gave
// the agent, see Run). The run is a hint: it finds the turn without
// reading the state before every later turn, and a turn whose input
// another run stored (a retried turn) is still found by its request.
type Turn struct {
	RequestID string
	RunID     string
}

// Edit reruns the turn with a new input: the run forks from the state
// just before that turn, so the new branch never saw it or any later
// turn. History keeps the old branch. Events and errors are as for Run;
// ErrUnknownTurn when no turn has that request id.
func (a *Agent) Edit(ctx context.Context, conversationID string, turn Turn, in Input) iter.Seq2[events.Event, error] {
	return func(yield func(events.Event, error) bool) {
		in.Message = strings.TrimSpace(in.Message)
		if in.Message == "" || turn.RequestID == "" {
			fail(yield, fmt.Errorf("nodes: edit: %w: request id and message are required", ErrInvalidInput))
			return
		}
		in.ConversationID = conversationID
		id, err := a.turnCheckpoint(ctx, conversationID, turn)
		if err != nil {
			fail(yield, err)
			return
		}
		a.runGraph(ctx, yield, &ChatState{Input: in}, graph.RunConfig{ThreadID: conversationID, CheckpointID: id})
	}
}

// turnCheckpoint finds the input checkpoint of the turn: its state is
// the conversation before the turn plus the turn's input, which a new
// input replaces whole. Only a state tells a turn's request, and
// decoding one is the cost (a long conversation's is large), so the
// input checkpoints the turn's run stored are read first; then every
// other, newest first.
func (a *Agent) turnCheckpoint(ctx context.Context, conversationID string, turn Turn) (string, error) {
	cps, err := a.saver.List(ctx, graph.ListOptions{ThreadID: conversationID})
	if err != nil {
		return "", fmt.Errorf("nodes: edit conversation %s: %w", conversationID, err)
	}
	for _, ownRun := range []bool{true, false} {
		for _, cp := range cps {
			if cp.Source != graph.SourceInput || (turn.RunID != "" && cp.RunID == turn.RunID) != ownRun {
				continue
			}
			snap, err := a.graph.GetState(ctx, graph.Ref{ThreadID: conversationID, ID: cp.ID})
			if err != nil {
				return "", fmt.Errorf("nodes: edit conversation %s: %w", conversationID, err)
			}
			if snap.Values.Input.RequestID == turn.RequestID {
				return cp.ID, nil
			}
		}
	}
	return "", fmt.Errorf("nodes: edit conversation %s: %w %q", conversationID, ErrUnknownTurn, turn.RequestID)
}

// Snapshot is a conversation's state at one checkpoint.
type Snapshot struct {
	State        ChatState
	CheckpointID string
	ParentID     string
	Step         int
	CreatedAt    time.Time
	// Next lists the nodes that run next; empty when the turn had ended.
	Next []string
	// Pending lists what the conversation waits for.
	Pending []events.Pending
}

// State returns the conversation's newest state; ErrNoConversation when it
// has none.
func (a *Agent) State(ctx context.Context, conversationID string) (Snapshot, error) {
	snap, err := a.graph.GetState(ctx, graph.Ref{ThreadID: conversationID})
	if errors.Is(err, graph.ErrCheckpointNotFound) {
		return Snapshot{}, fmt.Errorf("nodes: state of %s: %w", conversationID, ErrNoConversation)
	}
	if err != nil {
		return Snapshot{}, fmt.Errorf("nodes: state of %s: %w", conversationID, err)
	}
	p := pages{saver: a.saver, conversationID: conversationID}
	if err := p.whole(ctx, &snap.Values); err != nil {
		return Snapshot{}, fmt.Errorf("nodes: state of %s: %w", conversationID, err)
	}
	return toSnapshot(snap), nil
}

// History returns the conversation's snapshots, newest first, across every
// branch edits created, those older than checkpoint before when it is
// not ""; limit 0 means all.
func (a *Agent) History(ctx context.Context, conversationID string, limit int, before string) ([]Snapshot, error) {
	snaps, err := a.graph.History(ctx, conversationID, graph.HistoryOptions{Limit: limit, Before: before})
	if err != nil {
		return nil, fmt.Errorf("nodes: history of %s: %w", conversationID, err)
	}
	out := make([]Snapshot, len(snaps))
	p := pages{saver: a.saver, conversationID: conversationID}
	for i, s := range snaps {
		if err := p.whole(ctx, &s.Values); err != nil {
			return nil, fmt.Errorf("nodes: history of %s: %w", conversationID, err)
		}
		out[i] = toSnapshot(s)
	}
	return out, nil
}

// Pending lists what the conversation waits for: approvals and a
// clarifying question. None is an empty list, also for an unknown
// conversation.
func (a *Agent) Pending(ctx context.Context, conversationID string) ([]events.Pending, error) {
	return a.waiting(ctx, conversationID)
}

// Delete removes the conversation's checkpoints.
func (a *Agent) Delete(ctx context.Context, conversationID string) error {
	if err := a.graph.DeleteThread(ctx, conversationID); err != nil {
		return fmt.Errorf("nodes: delete %s: %w", conversationID, err)
	}
	return nil
}

func toSnapshot(s graph.Snapshot[ChatState]) Snapshot {
	return Snapshot{
		State: s.Values, CheckpointID: s.Checkpoint.ID, ParentID: s.Checkpoint.ParentID,
		Step: s.Checkpoint.Step, CreatedAt: s.Checkpoint.CreatedAt, Next: s.Next,
		Pending: pendingFrom(s.Interrupts),
	}
}

// waiting returns the conversation's pending interrupts. Its newest
// checkpoint tells cheaply whether anything is planned at all.
func (a *Agent) waiting(ctx context.Context, conversationID string) ([]events.Pending, error) {
	ins, err := a.interrupts(ctx, conversationID)
	if err != nil {
		return nil, err
	}
	return pendingFrom(ins), nil
}

// interrupts returns the interrupts the conversation waits on.
func (a *Agent) interrupts(ctx context.Context, conversationID string) ([]graph.PendingInterrupt, error) {
	newest, err := a.newest(ctx, conversationID)
	if err != nil {
		return nil, err
	}
	return a.interruptsAt(ctx, conversationID, newest)
}

// interruptsAt is interrupts given newest, the conversation's newest
// checkpoint (nil for none), which tells cheaply whether anything is
// planned at all.
func (a *Agent) interruptsAt(ctx context.Context, conversationID string, newest *graph.Checkpoint) ([]graph.PendingInterrupt, error) {
	if newest == nil || len(newest.Tasks) == 0 {
		return nil, nil
	}
	snap, err := a.graph.GetState(ctx, graph.Ref{ThreadID: conversationID})
	if err != nil {
		return nil, fmt.Errorf("nodes: load conversation %s: %w", conversationID, err)
	}
	return snap.Interrupts, nil
}

// runGraph streams one run of the graph as agent events, ending with the
// terminal event (see Run).
func (a *Agent) runGraph(ctx context.Context, yield func(events.Event, error) bool, input *ChatState, cfg graph.RunConfig) {
	if !a.opts.Budget.Zero() || input == nil || input.Input.Budget != nil {
		// A run resumed (input nil) may have a request's budget in its
		// state; a run without limits tracks nothing.
		ctx = withBudget(ctx, a.opts.Budget)
	}
	if a.models.FallsBack() { // a context the more, for the runs that may need it
		ctx = llm.WithFallbackListener(ctx, emitFallback)
	}
	cfg.Modes = graph.ModeCustom | graph.ModeMessages
	cfg.StreamBuffer = a.opts.streamBuffer()
	cfg.RunID, _ = ctx.Value(runKey{}).(string)
	// A caller that names its run keeps its input and starts it again
	// from there when it stored nothing (see WithRun).
	cfg.DeferInput = cfg.RunID != ""
	// One variable for what the loop keeps between events: its body is a
	// closure, so each variable it keeps costs an allocation per run.
	var kept struct {
		usage   events.Usage
		thought thoughts
	}
	for ev, err := range a.graph.Stream(ctx, input, cfg) {
		if err != nil {
			a.finish(ctx, yield, err)
			return
		}
		switch ev.Mode {
		case graph.ModeCustom:
			var e events.Event
			switch d := ev.Data.(type) {
			case events.Payload: // what emit sends
				e = events.New(d)
			case events.Event:
				e = d
			default:
				continue
			}
			if len(ev.Namespace) > 0 {
				e.Namespace = agentPath(ev.Namespace)
			}
			switch d := e.Data.(type) {
			case *events.ResponseDone:
				if e.Namespace == "" {
					kept.usage = d.Usage
				}
			case *events.NodeStart:
				// A retried node starts its reasoning over.
				kept.thought.take(e.Namespace, d.Node)
			case *events.NodeEnd:
				d.Reasoning = kept.thought.take(e.Namespace, d.Node)
			}
			if !yield(e, nil) {
				return
			}
		case graph.ModeMessages:
			c, ok := ev.Data.(graph.MessageChunk)
			if ok && c.Reasoning && c.Text != "" {
				e := events.New(&events.ReasoningChunk{Node: ev.Node, Content: c.Text})
				if len(ev.Namespace) > 0 {
					e.Namespace = agentPath(ev.Namespace)
				}
				kept.thought.add(e.Namespace, ev.Node, c.Text)
				if !yield(e, nil) {
					return
				}
				continue
			}
			if !ok || c.Reasoning || c.Text == "" || len(ev.Namespace) > 0 {
				// A sub-agent's answer is its task call's result, in
				// subagent.end, not the user's answer.
				continue
			}
			if !yield(events.New(&events.ResponseChunk{Content: c.Text}), nil) {
				return
			}
		}
	}
	yield(events.New(&events.RunCompleted{Status: "completed", Usage: kept.usage}), nil)
}

// thoughts gathers each node's reasoning as it streams, by namespace and
// node, for the node's node.end. It is nil until the first reasoning
// chunk: a run whose models do not think never makes it.
type thoughts map[string]*strings.Builder

func (t *thoughts) add(namespace, node, text string) {
	if *t == nil {
		*t = thoughts{}
	}
	key := namespace + "\x00" + node
	b := (*t)[key]
	if b == nil {
		b = &strings.Builder{}
		(*t)[key] = b
	}
	b.WriteString(text)
}

// take returns the node's reasoning so far and forgets it.
func (t thoughts) take(namespace, node string) string {
	if t == nil {
		return ""
	}
	key := namespace + "\x00" + node
	b := t[key]
	if b == nil {
		return ""
	}
	delete(t, key)
	return b.String()
}

// finish turns the graph's last error into the run's terminal event.
func (a *Agent) finish(ctx context.Context, yield func(events.Event, error) bool, err error) {
	var ie *graph.InterruptError
	switch {
	case errors.As(err, &ie):
		pending := pendingFrom(ie.Interrupts)
		ri := &events.RunInterrupted{Pending: pending, Reason: string(events.PendingClarification)}
		for _, p := range pending {
			switch p.Kind {
			case events.PendingApproval:
				ri.Reason = string(events.PendingApproval)
				ri.ApprovalIDs = append(ri.ApprovalIDs, p.ID)
				e := events.New(&events.ApprovalRequired{ApprovalID: p.ID, ToolCallID: p.ToolCallID, Tool: p.Tool, Args: p.Args, Revision: p.Revision, Diff: p.Diff})
				e.Namespace = p.Namespace
				if !yield(e, nil) {
					return
				}
			case events.PendingClarification:
				ri.ClarificationID, ri.Question = p.ID, p.Question
			case events.PendingElicitation:
				if ri.Reason != string(events.PendingApproval) {
					ri.Reason = string(events.PendingElicitation)
				}
				ri.ElicitationIDs = append(ri.ElicitationIDs, p.ElicitationID)
			case events.PendingUncertainCall:
				if ri.Reason != string(events.PendingApproval) {
					ri.Reason = string(events.PendingUncertainCall)
				}
				ri.UncertainCallIDs = append(ri.UncertainCallIDs, p.UncertainCallID)
				e := events.New(&events.ToolUncertain{UncertainCallID: p.UncertainCallID, ToolCallID: p.ToolCallID, Tool: p.Tool, Args: p.Args})
				e.Namespace = p.Namespace
				if !yield(e, nil) {
					return
				}
			}
		}
		yield(events.New(ri), nil)
	default:
		failOrCancel(ctx, yield, err)
	}
}

// failOrCancel yields run.cancelled when ctx has ended, also before
// anything ran, and run.failed otherwise. Once ctx has ended any error is
// taken for its consequence: a database driver interrupted by it (SQLite's
// "interrupted") does not always say so.
func failOrCancel(ctx context.Context, yield func(events.Event, error) bool, err error) {
	if ctx.Err() != nil {
		yield(events.New(&events.RunCancelled{}), err)
		return
	}
	fail(yield, err)
}

// fail yields run.failed for err.
func fail(yield func(events.Event, error) bool, err error) {
	yield(events.New(&events.RunFailed{Error: events.ErrorInfo{Code: errorCode(err), Message: err.Error()}}), err)
}

// pendingFrom reads the agent's interrupts; others (static interrupts a
// caller added) are reported with an empty kind.
func pendingFrom(ins []graph.PendingInterrupt) []events.Pending {
	out := make([]events.Pending, 0, len(ins))
	for _, in := range ins {
		var p events.Pending
		if len(in.Payload) > 0 {
			_ = json.Unmarshal(in.Payload, &p)
		}
		p.ID = in.ID
		out = append(out, p)
	}
	return out
}
