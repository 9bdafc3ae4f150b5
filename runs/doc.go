// Package runs is Trellis' run service, with no HTTP in it: it starts
// runs, lets callers follow their events, parks runs that wait for a
// human and resumes them, cancels and edits them, recovers the runs of a
// process that is gone and, with several processes on one database,
// tells the owner of a run what a user did and takes over the runs of
// processes that died. Package api serves it over HTTP; every protocol
// adapter is a translator over the same Service.
//
// # Verbs
//
// Every surface (the native API, each protocol adapter, the page) drives
// runs through these, and nothing else: no surface holds the store or
// the agent.
//
//   - Start a run (StartRequest); Subscribe to one; Follow its events,
//     with a disconnect policy chosen per request (Disconnect: keep,
//     cancel, or wait for a resume).
//   - Start with a Multitask strategy for a busy conversation: reject,
//     interrupt, rollback, or enqueue (a *QueuedError says where the
//     message waits); Queued, QueuedRuns, CancelQueued, AwaitQueued.
//   - Answer a set of pending human requests and follow the run they
//     resume (Answer); AnswerApproval, AnswerElicitation,
//     CancelElicitation one at a time; Expire an approval or an
//     elicitation whose deadline passed.
//   - Cancel a run; Retry a failed one; DeleteConversation; EditTask,
//     Tasks.
//   - Branches of an edited turn, SetBranch to make one active.
//   - Read: Conversation, Conversations, OpenConversation,
//     CreateConversation, SetMetadata, RunRecord, LatestRun, RunRecords,
//     HumanRequest, Waiting (what an interrupted run waits for),
//     LastInterrupt, State, History, Mermaid.
//   - Run the service: Recover, Shutdown, Draining, SessionLostSince,
//     Lost, Models.
//
// The record's and the agent's types the verbs take and return are named
// here (RunRecord, Conversation, HumanRequest, Input, Snapshot, …), as
// aliases, with the record's sentinels (ErrNotFound, ErrRunActive, …).
//
// # Example
//
//	svc, err := runs.New(runs.Config{Store: st, Models: models})
//	if err != nil { … }
//	svc.Recover(ctx, users) // continue runs a previous process left running
//	rn, sub, err := svc.Start(ctx, runs.StartRequest{UserID: "u", Input: runs.Input{Message: "hi"}, Interactive: true})
//	if err != nil { … } // ErrTooManyRuns, ErrRunActive, …
//	defer sub.Close()
//	svc.Follow(ctx, runs.FollowRequest{User: "u", ConversationID: rn.ConversationID(), RunID: rn.ID(), Sub: sub,
//		OnDisconnect: runs.DisconnectCancel}, func(e *runs.Event) error { … e.Payload … })
//	…
//	svc.Shutdown(ctx) // park runs, end followers
//
// # Runs and their events
//
// A run is one turn of a conversation, with one id for its whole life.
// The service starts it (one active run per conversation: the store's
// unique index refuses a second with store.ErrRunActive), drives the
// agent's event iterator on a goroutine of its own whose context is
// detached from the request that started it, and ends it with exactly
// one terminal event.
//
// Every event goes through one pipeline. On the run's goroutine the
// envelope (run_id, conversation_id, ts) is added and the event queued
// in the run's outbox; the outbox stores the queue in batches on a
// goroutine of its own (store.AppendEvents numbers them: seq, from 1, no
// gaps) and only then publishes each batch to the run's hub, which hands
// every event, typed (Event.Payload) and encoded (Event.Data), to each
// subscriber's bounded buffer. The run goes on while its events are
// written. While no subscriber streams them (StartRequest.AwaitsEnd), a
// batch waits up to EventDelay to be written with what follows it. A run's end, the events still queued and its terminal event
// commit together (store.EndRun). A subscriber that falls behind is cut; the run never waits
// for a reader.
//
// A follower subscribes first, then replays from the store what came
// after the last event it has, then takes live events, skipping those it
// replayed: nothing is lost or handed out twice (see Follow). Replays,
// and the reads of a run another process runs, go a page at a time, so
// what a reader holds does not grow with the run.
//
// # Approvals, clarifications, elicitations
//
// When the agent stops for an approval, the run waits for
// Config.InterruptAfter while an interactive subscriber follows it: an
// answer in that time continues the run in the same segment. Otherwise
// the run emits run.interrupted (reason approval) and is parked
// durably; a later answer (AnswerApproval) resumes it in the background,
// its events numbered on after the run.interrupted. Answers and cancels
// are serialised: of an answer and a cancel racing, exactly one wins.
// An approval may have a deadline, which its tool's approval rule sets
// (operators.Provider.ApprovalExpiry) and the store keeps with it;
// Config.ScheduleExpiry arranges a durable call of Expire at it. Expire
// records the outcome the rule chose the way an answer is recorded, so
// of a person and the deadline exactly one wins, and hands it to the run
// as an answer (reject, approve) or a cancel (cancel) is; the run's next
// event is approval.expired. A tool's question (an elicitation) may have
// one too (operators.Provider.ElicitationExpiry), kept by the same job
// and Expire: a decline reaches the waiting tool as the user's would,
// announced by elicitation.expired; a cancel cancels the run, the
// waiting tool hearing nothing before it (the run's owner, told by a
// notice when another process keeps the deadline, sends
// elicitation.expired first).
// A clarifying question ends the run with run.interrupted (reason
// clarification), recorded as a pending human request of its kind; the
// user's next message is a new run that answers it (the store records
// the answer as it starts the run). A clarifying question and an
// uncertain call may have deadlines too (Config.ClarificationExpiry,
// Config.UncertainCallExpiry), kept by the same job and Expire: a
// question's continue resumes the run that asked, the agent going on
// without an answer after clarification.expired (a message meanwhile is
// refused by the store until the run has taken it up), its cancel
// cancels the run; a call's skip or fail is handed to the parked run as
// a person's decision is, after uncertain_call.expired. Retry is never
// a deadline's outcome.
// A tool's question (an elicitation) waits in the service's waiting
// room, which checks an answer against the question's JSON Schema,
// while an interactive subscriber follows the run, for
// Config.ElicitTimeout at most; then the run parks on the question,
// which stays pending in the store, and an answer given later, to any
// process, resumes it (AnswerElicitation). Both are store.HumanRequest
// records of their kind, and what is the same for both is done once: a
// parked run resumes with the stored answer of either kind (an answer
// given later, a question answered as its run parked, recovery).
//
// A call of a tool that is neither read-only nor idempotent is recorded
// before it starts and when it ends (the agent's nodes.CallLog, kept in
// the store's tool calls). A run recovered after a crash that finds one
// started and not ended parks on it as on a question (run.interrupted,
// reason uncertain_call), with a human request of kind uncertain_call;
// AnswerUncertainCall (and Answer) records the decision, retry, skip or
// fail, and resumes the run with it the same way, its events beginning
// with uncertain_call.resolved.
//
// # Double-texting
//
// A message for a conversation whose run is going or waits for a person
// takes a strategy (StartRequest.Multitask, LangGraph's
// multitask_strategy), done here once for every surface. Interrupt
// cancels the run as Cancel does, wherever it runs, and waits for the
// store to record its end; rollback then starts the message as an edit
// of the cancelled turn (superseded, the agent forking from before it).
// Enqueue stores the message in the conversation's queue
// (store.Queue); the segment that ends a turn (a final status, or a
// clarifying question) starts the queue's first, and so does the
// enqueuer once more after storing it, so that a turn ending in between
// is not missed: the store starts a queued message once, as a run of its
// id, whoever asks. Recover, and with a Cluster every sweep, starts the
// queues that a process dying at a turn's end left idle.
//
// # Client protocols
//
// The protocol adapters (api/agui, api/aisdk, …) drive runs through the
// same verbs. Their clients name their threads (OpenConversation: a
// thread id the client made becomes the conversation's), resume an
// interrupted run by answering what it waits for in one request
// (Answer), stop a run by aborting its request and send the next message
// at once (StartRequest.WaitIdle and DropWaiting), and, for the AI SDK,
// come back to a stream after a page reload (DisconnectAwaitResume,
// FollowRequest.Resumes). What becomes of a run whose client went away is
// decided in one place, Follow, as the request's Disconnect says.
//
// # Edits, retries and branches
//
// An edit (StartRequest.Edits) and a retry (Retry) start a new version
// of a turn: the store records which run each run follows
// (store.Run.ParentID), so a conversation's runs are a tree, and the
// runs not superseded are its active branch. An edit reruns the turn from
// the state before it; a retry takes a failed turn up from its last
// checkpoint, as recovery does. SetBranch switches the active branch in
// the record alone; the agent follows the record: a new turn whose
// parent is not the run that left the agent's newest state first moves
// the thread to the state its parent left (nodes.Agent.Branch), so a
// crash between a switch and the next message leaves nothing to put
// right.
//
// # Shutdown, recovery, a lost database
//
// Shutdown cancels every live run; each stops at its next checkpoint,
// emits run.interrupted with reason shutdown and stays running in the
// store. Recover, at the next start, continues such runs from their last
// checkpoint, as after a crash; a run that died before its first
// checkpoint starts again from the input the store kept with it. With a
// Cluster, a run whose events, end or checkpoint cannot be stored because
// the database went away is stranded, not failed: it goes on once the
// database is back, here or on a peer that took it over; a process that
// loses its session stops its runs, starts none (ErrUnavailable) and
// takes its session again by itself (SessionLostSince tells the probes).
package runs
