package runs

import (
	"context"
	"errors"

	"github.com/trellis-ai/trellis/store"
)

// What the client-protocol adapters need beyond the native API's calls:
// their clients name threads themselves (and stop a run by going away,
// see Disconnect, and send the next message at once, see
// StartRequest.WaitIdle).

// OpenConversation returns the user's conversation id, creating it,
// titled after message (its first), when no conversation has that id:
// for clients that make their thread ids themselves. An id another
// user's conversation has is store.ErrNotFound, as for any other of that
// user's ids. A message over the limit is a *MessageTooLongError, and
// nothing is created.
func (m *Service) OpenConversation(ctx context.Context, user, id, message string) (store.Conversation, error) {
	if err := m.CheckMessage(message); err != nil {
		return store.Conversation{}, err
	}
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
