package runs

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/trellis-ai/trellis/events"
	"github.com/trellis-ai/trellis/store"
)

// What the surfaces read of a conversation and its runs: the record's
// rows (a thread, its runs, a human request) and the agent's state and
// history (LangGraph's threads, AG-UI's snapshots), read through the
// service so that no surface holds the store or the agent.

// Conversation returns the user's conversation. Errors: ErrNotFound
// (none of the user's has that id), ErrInvalid (the id cannot be one).
func (m *Service) Conversation(ctx context.Context, user, id string) (Conversation, error) {
	return m.st.GetConversation(ctx, user, id)
}

// Conversations returns a page of the user's conversations, newest
// first.
func (m *Service) Conversations(ctx context.Context, user string, p Page) (ConversationPage, error) {
	return m.st.ListConversations(ctx, user, p)
}

// CreateConversation stores a new, empty conversation.
func (m *Service) CreateConversation(ctx context.Context, c NewConversation) (Conversation, error) {
	return m.st.CreateConversation(ctx, c)
}

// SetMetadata replaces the metadata (a JSON object) of the user's
// conversation and returns the conversation as stored.
func (m *Service) SetMetadata(ctx context.Context, user, id string, metadata json.RawMessage) (Conversation, error) {
	return m.st.SetConversationMetadata(ctx, user, id, metadata)
}

// RenameConversation gives the user's conversation the title they
// chose, its spaces at either end trimmed, and returns the conversation
// as stored; a generated title never replaces it. Errors: ErrNotFound,
// store.ErrInvalid (a title store.CheckTitle refuses), store.ErrErasing.
func (m *Service) RenameConversation(ctx context.Context, user, id, title string) (Conversation, error) {
	return m.st.RenameConversation(ctx, user, id, strings.TrimSpace(title))
}

// RunRecord returns the user's run as the record keeps it. Errors:
// ErrNotFound.
func (m *Service) RunRecord(ctx context.Context, user, runID string) (RunRecord, error) {
	return m.st.GetRun(ctx, user, runID)
}

// LatestRun returns the conversation's most recently started run.
// Errors: ErrNotFound (no such conversation of the user's, or no run).
func (m *Service) LatestRun(ctx context.Context, user, conversationID string) (RunRecord, error) {
	return m.st.LatestRun(ctx, user, conversationID)
}

// RunRecords returns a page of the conversation's runs, oldest first.
func (m *Service) RunRecords(ctx context.Context, user, conversationID string, q RunQuery) (RunPage, error) {
	return m.st.ListRuns(ctx, user, conversationID, q)
}

// HumanRequest returns the user's human request of the kind. Errors:
// ErrNotFound.
func (m *Service) HumanRequest(ctx context.Context, kind HumanKind, user, id string) (HumanRequest, error) {
	return m.st.GetHumanRequest(ctx, kind, user, id)
}

// Waiting returns the user's pending human requests of the kind that
// the run asked, in the order the record lists them: what an
// interrupted run waits for (the few its last step asked). Errors: the
// store's.
func (m *Service) Waiting(ctx context.Context, kind HumanKind, user, conversationID, runID string) ([]HumanRequest, error) {
	out := []HumanRequest{}
	for page := (Page{Limit: store.MaxLimit}); ; {
		p, err := m.st.PendingHumanRequests(ctx, kind, user, conversationID, page)
		if err != nil {
			return nil, err
		}
		for _, h := range p.Requests {
			if h.RunID == runID {
				out = append(out, h)
			}
		}
		if page.Cursor = p.NextCursor; page.Cursor == "" {
			return out, nil
		}
	}
}

// State returns the conversation's newest state, as the agent holds
// it. Errors: ErrNoConversation (the agent has none yet).
func (m *Service) State(ctx context.Context, conversationID string) (Snapshot, error) {
	return m.agent.State(ctx, conversationID)
}

// History returns a page of the conversation's states, newest first:
// at most limit of them (more than 0), those older than checkpoint
// before when it is not "", and no more than store.Budget lets in,
// counting each state's messages. Each state holds the conversation so
// far, so the states are read one at a time and the page stops where
// the budget does: the next page is before the last one's checkpoint.
// A before that no checkpoint id can be (not ValidText) is ErrInvalid.
func (m *Service) History(ctx context.Context, conversationID string, limit int, before string) ([]Snapshot, error) {
	// No checkpoint's id holds such text, and PostgreSQL refuses it.
	if !store.ValidText(before) {
		return nil, fmt.Errorf("%w: before %q is not a checkpoint id", ErrInvalid, before)
	}
	out := []Snapshot{}
	var b store.Budget
	for len(out) < limit {
		snaps, err := m.agent.History(ctx, conversationID, 1, before)
		if err != nil || len(snaps) == 0 {
			return out, err
		}
		if !b.Take(StateBytes(snaps[0])) {
			return out, nil
		}
		out = append(out, snaps[0])
		before = snaps[0].CheckpointID
	}
	return out, nil
}

// Budget is store.Budget, for a surface that fills a page of states.
type Budget = store.Budget

// StateBytes is a state's size in a page (see Budget): its messages'
// text and tool calls' arguments, what a client is sent of it.
func StateBytes(snap Snapshot) int {
	s := snap.State
	n := len(s.Summary)
	for _, msg := range s.Messages {
		n += len(msg.Content)
		for _, c := range msg.ToolCalls {
			n += len(c.Args)
		}
	}
	return n
}

// LastInterrupt returns the seq of the run's last stored
// run.interrupted, 0 when it has none: a client that replays a run
// across the approvals it stopped for replays through it.
func (m *Service) LastInterrupt(ctx context.Context, user, runID string) (int64, error) {
	last, _, err := m.interrupts(ctx, user, runID)
	return last, err
}

// SegmentStart returns the seq after which the run's segment under way,
// or its last, begins: that of the run.interrupted that parked the run
// before it, 0 for a run that never parked before. A run that parks and
// is resumed goes on numbering its events after its run.interrupted; a
// stream that replayed it from its first event would end at that
// earlier terminal event, though the run has gone on since. A run
// parked now (r.Status RunInterrupted) is in the segment its last
// run.interrupted ended.
func (m *Service) SegmentStart(ctx context.Context, user string, r RunRecord) (int64, error) {
	last, before, err := m.interrupts(ctx, user, r.ID)
	if r.Status == RunInterrupted {
		return before, err
	}
	return last, err
}

// interrupts returns the seqs of the run's last stored run.interrupted
// and of the one before it, 0 where there is none.
func (m *Service) interrupts(ctx context.Context, user, runID string) (last, before int64, err error) {
	err = m.eachStored(ctx, user, runID, 0, func(e *Event) bool {
		if e.Type == events.TypeRunInterrupted {
			last, before = e.Seq, last
		}
		return false
	})
	return last, before, err
}
