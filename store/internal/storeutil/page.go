package storeutil

import "github.com/trellis-ai/trellis/store"

// ConversationPage makes a page of the rows a list query returned when
// asked for size+1: the extra row, if any, only tells that another page
// follows.
func ConversationPage(cs []store.Conversation, size int) store.ConversationPage {
	if cs == nil {
		cs = []store.Conversation{}
	}
	if len(cs) <= size {
		return store.ConversationPage{Conversations: cs}
	}
	cs = cs[:size]
	last := cs[size-1]
	return store.ConversationPage{Conversations: cs, NextCursor: Cursor{CreatedAt: last.CreatedAt, ID: last.ID}.Encode()}
}
