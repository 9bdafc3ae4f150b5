package cognition

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/trellis-ai/trellis/internal/jobs"
	"github.com/trellis-ai/trellis/store"
)

// Turn is one turn of a conversation to learn from: the arguments of a
// learning job.
type Turn struct {
	UserID         string `json:"user_id"`
	ConversationID string `json:"conversation_id"`
	// RequestID identifies the turn: learning it twice is one job.
	RequestID string `json:"request_id"`
	Query     string `json:"query"`
	Answer    string `json:"answer"`
	// Outcome is how the turn ended: answered, direct, blocked or
	// failed.
	Outcome string        `json:"outcome"`
	Tools   []ToolOutcome `json:"tools,omitempty"`
}

// ToolOutcome is one tool call of the turn: status success, error,
// rejected (by the user) or skipped.
type ToolOutcome struct {
	Tool   string `json:"tool"`
	Status string `json:"status"`
}

// Kind implements jobs.Args.
func (Turn) Kind() string { return "cognition_learn" }

// Outcomes of Turn.Outcome that are not an answer.
const (
	OutcomeBlocked = "blocked"
	OutcomeFailed  = "failed"
)

// Outcomes of a recorded answer (store.AnswerMeta) that are not learned
// from: a question back, and tool calls a client runs.
const (
	outcomeClarify     = "clarify"
	outcomeClientTools = "client_tools"
)

// Pending are the arguments of a conversation's learning job: it learns
// from the conversation's turns not learned yet, as the record keeps
// them, when it runs. They hold no words of the user.
type Pending struct {
	UserID         string `json:"user_id"`
	ConversationID string `json:"conversation_id"`
	// After is the conversation's learning job that was running when
	// this one was asked for; this one waits for it to end.
	After int64 `json:"after,omitempty"`
}

// Kind implements jobs.Args.
func (Pending) Kind() string { return "cognition_learn_conversation" }

// PruneArgs are the pruning job's arguments: none.
type PruneArgs struct{}

// Kind implements jobs.Args.
func (PruneArgs) Kind() string { return "cognition_prune" }

// maxAnswer bounds the answer a learning job carries.
const maxAnswer = 2000

// EnqueueLearning stores a job to learn from the turn and returns at once:
// the job runs in the background, here or in another process, and
// survives a crash. Enqueueing one turn twice is one job.
func (s *Service) EnqueueLearning(ctx context.Context, t Turn) error {
	if t.UserID == "" {
		return ErrNoUser
	}
	if s.queue == nil {
		return fmt.Errorf("cognition: enqueue learning: no queue attached")
	}
	t.Answer = clip(t.Answer, maxAnswer)
	if _, err := s.queue.Enqueue(ctx, t, jobs.EnqueueOptions{Unique: true, MaxAttempts: 3}); err != nil {
		return fmt.Errorf("cognition: enqueue learning: %w", err)
	}
	return nil
}

// LearnLater asks for learning from the user's conversation, whose turn
// (counted from 1) has just been answered and recorded, and returns at
// once. The conversation's learning job runs Config.LearnAfter from now,
// or at once on every Config.LearnEvery-th turn; a job of the
// conversation waiting already stands for this call, and learns every
// turn not learned yet when it runs. The job is durable: a crash after
// LearnLater returned loses nothing, and a turn whose LearnLater never
// returned (a crash, a queue that failed) is learned by the
// conversation's next job, since each learns from the record what it
// has not learned yet.
func (s *Service) LearnLater(ctx context.Context, userID, conversationID string, turn int) error {
	if userID == "" {
		return ErrNoUser
	}
	if s.queue == nil {
		return fmt.Errorf("cognition: learn later: no queue attached")
	}
	p := Pending{UserID: userID, ConversationID: conversationID}
	opts := jobs.DebounceOptions{Delay: s.cfg.LearnAfter, MaxAttempts: 3,
		Now: s.cfg.LearnEvery > 0 && turn > 0 && turn%s.cfg.LearnEvery == 0,
		// The job running may have read the record before this turn was
		// in it: one more waits for it to end.
		Follow: func(running int64) jobs.Args {
			return Pending{UserID: userID, ConversationID: conversationID, After: running}
		}}
	if _, err := s.queue.Debounce(ctx, p, opts); err != nil {
		return fmt.Errorf("cognition: learn later: %w", err)
	}
	return nil
}

// learnConversation is the conversation's learning job.
func (s *Service) learnConversation(ctx context.Context, j jobs.Job[Pending]) error {
	if after := j.Args.After; after != 0 {
		running, err := s.queue.Running(ctx, after)
		if err != nil {
			return err
		}
		if running {
			return jobs.Snooze(max(s.cfg.LearnAfter, time.Second))
		}
	}
	running, err := s.learnRecord(ctx, j.Args.UserID, j.Args.ConversationID)
	if err == nil && running {
		// The turn's answer is stored with its run's end, after the run
		// asked for this job: it is learned once it is there.
		return jobs.Snooze(max(s.cfg.LearnAfter, time.Second))
	}
	return err
}

// LearnConversation learns from the turns of the user's conversation not
// learned yet, in order, what Learn would learn of each, writing each
// thing once, and then records them learned (store.Memories.MarkLearned).
// It stops before a turn still going (no
// answer yet): one waiting for a person asks for learning again when it
// answers; the job waits for one running to end (its answer is stored
// with its end, after it asked). Turns with no answer, a question back
// or client tool calls for one, or kept out of memory by their request
// teach nothing and are passed over. A conversation deleted meanwhile
// has nothing to learn.
func (s *Service) LearnConversation(ctx context.Context, userID, conversationID string) error {
	_, err := s.learnRecord(ctx, userID, conversationID)
	return err
}

// learnRecord is LearnConversation, and reports whether it stopped
// before a turn whose run is running.
func (s *Service) learnRecord(ctx context.Context, userID, conversationID string) (bool, error) {
	if userID == "" {
		return false, ErrNoUser
	}
	for {
		turns, err := s.cfg.Store.UnlearnedTurns(ctx, userID, conversationID, store.MaxLimit)
		if errors.Is(err, store.ErrNotFound) {
			return false, nil
		}
		if err != nil {
			return false, err
		}
		going, err := s.learnTurns(ctx, userID, conversationID, turns)
		if err != nil || going != "" || len(turns) < store.MaxLimit {
			return going == store.RunRunning, err
		}
	}
}

// learnTogether is the most turns learned together, and read by the
// Extractor in one call: a job's attempt is bounded by
// Config.LearnTimeout, and a timeout loses the turns not marked learned
// yet.
const learnTogether = 16

// learnTurns learns from turns, as LearnConversation does, and returns
// the status of the turn still going it stopped before, "" for none.
// The turns before it are learned together (learn), learnTogether at a
// time, each time marked learned in the same transaction.
func (s *Service) learnTurns(ctx context.Context, userID, conversationID string, turns []store.UnlearnedTurn) (store.RunStatus, error) {
	var (
		mark  int64 // the last turn learned or passed over, not marked yet
		ts    []Turn
		going store.RunStatus
	)
	flush := func() error {
		if mark == 0 {
			return nil
		}
		err := s.learn(ctx, userID, conversationID, ts, mark)
		ts, mark = ts[:0], 0
		return err
	}
	for _, ut := range turns {
		if !ut.Answered && !ut.Superseded && !ut.Status.Final() {
			going = ut.Status
			break
		}
		t, ok, err := turnOf(userID, conversationID, ut)
		if err != nil {
			return "", err
		}
		if ok {
			ts = append(ts, t)
		}
		mark = ut.Num
		if len(ts) == learnTogether {
			if err := flush(); err != nil {
				return "", err
			}
		}
	}
	if err := flush(); err != nil {
		return "", err
	}
	return going, nil
}

// turnOf is the recorded turn to learn from, when there is one.
func turnOf(userID, conversationID string, ut store.UnlearnedTurn) (Turn, bool, error) {
	if !ut.Answered {
		return Turn{}, false, nil
	}
	var meta store.AnswerMeta
	if len(ut.Meta) > 0 {
		if err := json.Unmarshal(ut.Meta, &meta); err != nil {
			return Turn{}, false, fmt.Errorf("cognition: the answer of turn %d of conversation %s: %w", ut.Num, conversationID, err)
		}
	}
	if meta.NoMemory || meta.Outcome == outcomeClarify || meta.Outcome == outcomeClientTools {
		return Turn{}, false, nil
	}
	t := Turn{UserID: userID, ConversationID: conversationID, RequestID: ut.RequestID, Query: ut.Query,
		Answer: clip(ut.Answer, maxAnswer), Outcome: meta.Outcome}
	for _, c := range meta.Tools {
		t.Tools = append(t.Tools, ToolOutcome(c))
	}
	return t, true, nil
}

// Learn learns from the turn now: the profile, the episodic memory, the
// facts the user stated, and the agent's stats, in one transaction
// (store.Memories.Learn). The learning job calls it; its retry after a
// failure learns the turn again only if the first attempt wrote
// nothing.
func (s *Service) Learn(ctx context.Context, t Turn) error {
	if t.UserID == "" {
		return ErrNoUser
	}
	return s.learn(ctx, t.UserID, "", []Turn{t}, 0)
}

// learn learns from the user's turns, in order, what Learn learns from
// each, and writes each thing once: the profile, each memory the turns
// change, and each tool's stats, and, when learned is set, the
// conversation's runs up to learned recorded learned, all in one
// transaction: a failure or a crash leaves none of it, so a retry counts
// nothing twice. With an Extractor, the model reads the turns in one
// call, against the memories nearest to all of them; what it found is
// learned with the last turn.
func (s *Service) learn(ctx context.Context, userID, conversationID string, ts []Turn, learned int64) error {
	sl := store.Lesson{UserID: userID}
	if learned > 0 {
		sl.ConversationID, sl.Learned = conversationID, learned
	}
	if len(ts) == 0 {
		return s.cfg.Store.Learn(ctx, sl)
	}
	sigs := make([]Signal, len(ts))
	for i, t := range ts {
		sigs[i] = Signals(t.Query)
	}
	ext, err := s.extract(ctx, userID, ts)
	if err != nil {
		return err
	}
	last := len(ts) - 1
	sl.Profile = func(p *store.Profile) error {
		for i := range ts {
			var e *Extraction
			if i == last {
				e = ext
			}
			Infer(p, sigs[i], e)
		}
		return nil
	}
	l := newLesson(s.cfg.Store, userID, s.cfg.MergeAt)
	var stats []store.ToolStat
	if ext != nil {
		if err := l.apply(ctx, ts[last], ext.Memories); err != nil {
			return err
		}
	}
	for i, t := range ts {
		if ext == nil {
			for _, f := range sigs[i].Facts {
				if err := l.remember(ctx, t.ConversationID, f, "", 0.9); err != nil {
					return err
				}
			}
		}
		// A turn that told a fact to remember is remembered as that fact.
		if ep, ok := Episode(t, sigs[i]); ok && len(sigs[i].Facts) == 0 {
			if err := l.remember(ctx, t.ConversationID, ep.Summary, ep.Outcome, ep.Importance); err != nil {
				return err
			}
		}
		stats = addStats(stats, Stats(t))
	}
	l.into(&sl)
	sl.Stats = stats
	return s.cfg.Store.Learn(ctx, sl)
}

// extract asks the Extractor, when there is one, what the turns teach;
// nil when there is none or the model failed past its own retries: the
// rules still learn what they can.
func (s *Service) extract(ctx context.Context, userID string, ts []Turn) (*Extraction, error) {
	if s.cfg.Extractor == nil {
		return nil, nil
	}
	queries := make([]string, len(ts))
	for i, t := range ts {
		queries[i] = t.Query
	}
	nearest, err := s.recall(ctx, userID, strings.Join(queries, "\n"), 5)
	if err != nil {
		return nil, err
	}
	e, err := s.cfg.Extractor.Extract(ctx, ts, nearest)
	if err != nil {
		s.log.LogAttrs(ctx, slog.LevelWarn, "cognition: extraction failed; learning by the rules", slog.Any("error", err))
		return nil, nil
	}
	return &e, nil
}

// addStats adds more to sum, tool by tool, in the order the tools first
// come.
func addStats(sum, more []store.ToolStat) []store.ToolStat {
	for _, m := range more {
		i := slices.IndexFunc(sum, func(st store.ToolStat) bool { return st.Tool == m.Tool })
		if i < 0 {
			sum = append(sum, m)
			continue
		}
		sum[i].Calls += m.Calls
		sum[i].Failures += m.Failures
		sum[i].Blocked += m.Blocked
		sum[i].Rejections += m.Rejections
		sum[i].ConfidenceSum += m.ConfidenceSum
	}
	return sum
}

// Remember stores a fact the user asked the agent to remember, merged
// into a memory of the same topics if there is one.
func (s *Service) Remember(ctx context.Context, userID, conversationID, fact string) error {
	if userID == "" {
		return ErrNoUser
	}
	fact = strings.TrimSpace(fact)
	if fact == "" {
		return fmt.Errorf("%w: nothing to remember", store.ErrInvalid)
	}
	l := newLesson(s.cfg.Store, userID, s.cfg.MergeAt)
	if err := l.remember(ctx, conversationID, clip(fact, 500), "", 0.9); err != nil {
		return err
	}
	sl := store.Lesson{UserID: userID}
	l.into(&sl)
	return s.cfg.Store.Learn(ctx, sl)
}

// prune is the periodic pruning job.
func (s *Service) prune(ctx context.Context, _ jobs.Job[PruneArgs]) error {
	n, err := s.cfg.Store.PruneMemories(ctx, store.PruneRule{UsedBefore: time.Now().Add(-s.cfg.TTL), MaxPerUser: s.cfg.MaxMemories})
	if err != nil {
		return err
	}
	if n > 0 {
		s.log.LogAttrs(ctx, slog.LevelInfo, "cognition: pruned memories", slog.Int("deleted", n))
	}
	return nil
}

// Jaccard is |a ∩ b| / |a ∪ b| of two topic sets; 0 when both are empty.
func Jaccard(a, b []string) float64 {
	set := make(map[string]bool, len(a))
	for _, x := range a {
		set[x] = true
	}
	inter, union := 0, len(set)
	seen := map[string]bool{}
	for _, y := range b {
		if seen[y] {
			continue
		}
		seen[y] = true
		if set[y] {
			inter++
		} else {
			union++
		}
	}
	if union == 0 {
		return 0
	}
	return float64(inter) / float64(union)
}

// Nearest returns the index in ms of the memory whose topics are most
// similar to topics (the first of equals), when that similarity is at
// least at.
func Nearest(ms []store.Memory, topics []string, at float64) (int, bool) {
	best, bestSim := -1, -1.0
	for i, m := range ms {
		if sim := Jaccard(m.Topics, topics); sim > bestSim {
			best, bestSim = i, sim
		}
	}
	return best, bestSim >= at && bestSim > 0
}

// Merge is old and nm as one memory: nm's summary and outcome (the newer),
// the union of their topics (old's first, at most 8), and the greater
// importance raised by 0.05, since a thing that comes back matters more.
func Merge(old store.Memory, nm store.NewMemory) store.NewMemory {
	topics := slices.Clone(old.Topics)
	for _, t := range nm.Topics {
		if !slices.Contains(topics, t) {
			topics = append(topics, t)
		}
	}
	nm.Topics = topics[:min(len(topics), 8)]
	nm.Importance = min(max(old.Importance, nm.Importance)+0.05, 1)
	return nm
}

// Episode is the memory of a turn, when it is worth one: a turn with no
// topic to find it by is not.
func Episode(t Turn, sig Signal) (store.NewMemory, bool) {
	topics := Topics(t.Query, 8)
	if len(topics) == 0 {
		return store.NewMemory{}, false
	}
	outcome := "success"
	importance := 0.4
	failures, ok := 0, 0
	for _, c := range t.Tools {
		switch c.Status {
		case "error":
			failures++
		case "success":
			ok++
		}
	}
	switch {
	case t.Outcome == OutcomeBlocked || t.Outcome == OutcomeFailed:
		outcome, importance = "failure", importance-0.1
	case failures > 0:
		outcome = "partial"
	}
	if ok > 0 {
		importance += 0.2
	}
	if len(sig.Preferences) > 0 || len(sig.Facts) > 0 {
		importance += 0.3
	}
	summary := "Asked: " + clip(oneLine(t.Query), 200)
	return store.NewMemory{UserID: t.UserID, ConversationID: t.ConversationID, Summary: summary, Outcome: outcome,
		Topics: topics, Importance: min(max(importance, 0), 1)}, true
}

// Stats are the turn's counts for the record: one line per tool called,
// and the agent's own line with the answer's confidence.
func Stats(t Turn) []store.ToolStat {
	by := map[string]*store.ToolStat{}
	var order []string
	agent := store.ToolStat{Tool: store.AgentTool, Calls: 1}
	for _, c := range t.Tools {
		st := by[c.Tool]
		if st == nil {
			st = &store.ToolStat{Tool: c.Tool}
			by[c.Tool] = st
			order = append(order, c.Tool)
		}
		st.Calls++
		switch c.Status {
		case "error":
			st.Failures++
		case "rejected":
			st.Rejections++
			agent.Rejections++
		}
		if t.Outcome == OutcomeBlocked {
			st.Blocked = 1
		}
	}
	switch t.Outcome {
	case OutcomeBlocked:
		agent.Blocked = 1
	case OutcomeFailed:
		agent.Failures = 1
	}
	agent.ConfidenceSum = Confidence(t)
	out := []store.ToolStat{agent}
	for _, name := range order {
		out = append(out, *by[name])
	}
	return out
}

// Confidence scores an answer from 0 to 1: 0.9 for one given without
// trouble, less for each failed or rejected tool call, 0.2 for a turn
// that ended blocked, 0 for one that failed.
func Confidence(t Turn) float64 {
	switch t.Outcome {
	case OutcomeFailed:
		return 0
	case OutcomeBlocked:
		return 0.2
	}
	c := 0.9
	if n := len(t.Tools); n > 0 {
		bad := 0
		for _, x := range t.Tools {
			if x.Status == "error" || x.Status == "rejected" {
				bad++
			}
		}
		c -= 0.4 * float64(bad) / float64(n)
	}
	return c
}

func clip(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n]) + "…"
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }
