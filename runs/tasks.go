package runs

import (
	"context"
	"fmt"

	"github.com/trellis-ai/trellis/events"
	"github.com/trellis-ai/trellis/nodes"
	"github.com/trellis-ai/trellis/store"
)

// Tasks returns the task board of a conversation of the user's.
// Errors: store.ErrNotFound (no such conversation of the user's).
func (m *Service) Tasks(ctx context.Context, userID, conversationID string) (nodes.TaskBoard, error) {
	if _, err := m.st.GetConversation(ctx, userID, conversationID); err != nil {
		return nodes.TaskBoard{}, err
	}
	return m.agent.Tasks(ctx, conversationID)
}

// EditTask applies a user's edit to one task of a conversation's board,
// through the agent's thread (nodes.Agent.EditTask), so the agent reads
// it on its next turn. Only between runs: while a run of the
// conversation is running or parked (waiting for an approval, an answer,
// a clarification) the edit is refused with store.ErrRunActive, since the
// run writes the same thread. A run started by another request in the
// instant between that check and the write may keep its own board (the
// newest checkpoint wins); the edit's answer then says what was written,
// and the stream's next tasks.updated what the agent has.
// It returns the edited task, with its position after the change.
// Errors: store.ErrNotFound (no such conversation of the user's),
// nodes.ErrUnknownTask (no such task), store.ErrRunActive,
// nodes.ErrInvalidInput.
func (m *Service) EditTask(ctx context.Context, userID, conversationID, taskID string, e nodes.TaskEdit) (events.Task, error) {
	// Held as a start holds it: a delete that marked the conversation
	// waits for an edit under way (startsBefore), and the next finds
	// the mark, so no edit writes the state after the delete took it.
	m.gate.RLock()
	defer m.gate.RUnlock()
	c, err := m.st.GetConversation(ctx, userID, conversationID)
	if err != nil {
		return events.Task{}, err
	}
	if c.Deleting {
		return events.Task{}, fmt.Errorf("runs: edit task of conversation %s: it is being deleted: %w", conversationID, store.ErrNotFound)
	}
	if c.Status == store.RunRunning || c.Status == store.RunInterrupted || m.live(conversationID) != nil {
		return events.Task{}, fmt.Errorf("runs: edit task of conversation %s: %w", conversationID, store.ErrRunActive)
	}
	t, _, err := m.agent.EditTask(ctx, conversationID, taskID, e)
	return t, err
}
