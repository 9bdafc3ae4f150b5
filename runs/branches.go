package runs

import (
	"context"
	"errors"
	"fmt"

	"github.com/trellis-ai/trellis/store"
)

// ErrNotRetryable refuses a retry of a run that is not its
// conversation's last, did not fail, or failed before it stored anything
// to go on from.
var ErrNotRetryable = errors.New("runs: only the conversation's last run, if it failed after it began, can be retried")

// RetryRequest names a failed run to take up again.
type RetryRequest struct {
	UserID, RequestID, ConversationID string
	// RunID is the failed run: the last of the conversation's active
	// branch.
	RunID string
	// Interactive and AwaitsEnd are StartRequest's.
	Interactive, AwaitsEnd bool
}

// Retry takes a failed turn up again as a new run (a new id, new
// events): the agent continues from the failed run's last checkpoint,
// with the same input, as after a crash, so the model is asked again what
// it was asked when the run failed. The new run is a new version of the
// turn (it supersedes the failed one, whose record stays), with the
// failed run's message and request id. The caller closes the
// Subscription. Errors: store.ErrNotFound (no such run of the user's in
// the conversation), ErrNotRetryable, store.ErrRunActive, and Start's
// (ErrShuttingDown, ErrTooManyRuns, …).
func (m *Service) Retry(ctx context.Context, req RetryRequest) (*Run, *Subscription, error) {
	failed, err := m.runOf(ctx, req.UserID, req.ConversationID, req.RunID)
	if err != nil {
		return nil, nil, err
	}
	if m.live(req.ConversationID) != nil {
		return nil, nil, fmt.Errorf("runs: retry run %s: %w", req.RunID, store.ErrRunActive)
	}
	last, err := m.st.LatestRun(ctx, req.UserID, req.ConversationID)
	if err != nil {
		return nil, nil, err
	}
	if last.Active() {
		return nil, nil, fmt.Errorf("runs: retry run %s: %w", req.RunID, store.ErrRunActive)
	}
	if failed.Status != store.RunFailed || failed.Superseded || last.ID != failed.ID {
		return nil, nil, fmt.Errorf("runs: retry run %s (%s): %w", req.RunID, failed.Status, ErrNotRetryable)
	}
	began, err := m.agent.Began(ctx, req.ConversationID, failed.ID)
	if err != nil {
		return nil, nil, err
	}
	if !began {
		return nil, nil, fmt.Errorf("runs: retry run %s: it stored nothing to go on from: %w", req.RunID, ErrNotRetryable)
	}
	return m.start(ctx, StartRequest{UserID: req.UserID, RequestID: req.RequestID, ConversationID: req.ConversationID,
		Interactive: req.Interactive, AwaitsEnd: req.AwaitsEnd, retries: &failed})
}

// Branches returns the versions of the turn of the user's run runID in
// the conversation (an edited turn has several: its runs, each the start
// of a branch), oldest first. Errors: store.ErrNotFound.
func (m *Service) Branches(ctx context.Context, user, conversationID, runID string) ([]Branch, error) {
	if _, err := m.runOf(ctx, user, conversationID, runID); err != nil {
		return nil, err
	}
	return m.st.Branches(ctx, user, runID)
}

// SetBranch makes the branch of the user's run runID the conversation's
// active branch (see store.Runs.SetBranch) and returns its last run: the
// conversation reads as that branch, and its next message continues it,
// the agent's state moved to the state the branch's last run left as
// that message's run starts. Errors: store.ErrNotFound,
// store.ErrRunActive (a run is active: wait for it, cancel it or answer
// what it waits for), store.ErrConflict (the branch's last run was
// parked on a request that expired when the branch was left).
func (m *Service) SetBranch(ctx context.Context, user, conversationID, runID string) (RunRecord, error) {
	if _, err := m.runOf(ctx, user, conversationID, runID); err != nil {
		return RunRecord{}, err
	}
	if m.live(conversationID) != nil {
		return RunRecord{}, fmt.Errorf("runs: set the branch of %s: %w", conversationID, store.ErrRunActive)
	}
	return m.st.SetBranch(ctx, user, runID)
}

// runOf returns the user's run runID if it is of the conversation;
// store.ErrNotFound otherwise.
func (m *Service) runOf(ctx context.Context, user, conversationID, runID string) (RunRecord, error) {
	r, err := m.st.GetRun(ctx, user, runID)
	if err == nil && r.ConversationID != conversationID {
		err = fmt.Errorf("runs: run %s is not of conversation %s: %w", runID, conversationID, store.ErrNotFound)
	}
	return r, err
}
