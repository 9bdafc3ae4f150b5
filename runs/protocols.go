package runs

import (
	"context"
	"errors"
	"time"

	"github.com/trellis-ai/trellis/store"
)

// What the client-protocol adapters need beyond the native API's calls:
// their clients name threads themselves, stop a run by going away, and
// send the next message at once.

// Store is the service's record, for reading: an adapter looks up
// conversations, runs and human requests in it, and changes them only
// through the service.
func (m *Service) Store() store.Store { return m.st }

// OpenConversation returns the user's conversation id, creating it,
// titled after message (its first), when no conversation has that id:
// for clients that make their thread ids themselves. An id another
// user's conversation has is store.ErrNotFound, as for any other of that
// user's ids.
func (m *Service) OpenConversation(ctx context.Context, user, id, message string) (store.Conversation, error) {
	c, err := m.st.GetConversation(ctx, user, id)
	if !errors.Is(err, store.ErrNotFound) {
		return c, err
	}
	c, err = m.st.CreateConversation(ctx, store.NewConversation{UserID: user, ID: id, Title: title(message)})
	if errors.Is(err, store.ErrConflict) {
		// Made meanwhile by this user's other request, or another user's.
		return m.st.GetConversation(ctx, user, id)
	}
	return c, err
}

// CancelRun cancels the run runID of the conversation, as the user's
// cancel does (what it waits for is dropped; it ends with
// run.cancelled), if it is live in this process and not parking, and
// waits for its end: for protocols whose clients stop a run by
// aborting its request. A run parked, ended, or live elsewhere is left
// as it is.
func (m *Service) CancelRun(ctx context.Context, conversationID, runID string) error {
	m.resumeMu.Lock() // serialised with answers, as cancel is
	m.mu.Lock()
	rn := m.byConv[conversationID]
	live := rn != nil && rn.id == runID && rn.state != stateParking
	if live {
		rn.cancelling = true
		rn.cancel(errCancelled)
	}
	m.mu.Unlock()
	m.resumeMu.Unlock()
	if !live {
		return nil
	}
	select {
	case <-rn.done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// AwaitIdle waits, for d at most, until no run of the conversation is
// live in this process, and reports whether none is: a client that
// aborted a stream and sends its next message at once finds the
// aborted run still ending.
func (m *Service) AwaitIdle(ctx context.Context, conversationID string, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	for {
		rn := m.live(conversationID)
		if rn == nil {
			return true
		}
		select {
		case <-rn.done:
		case <-t.C:
			return false
		case <-ctx.Done():
			return false
		}
	}
}
