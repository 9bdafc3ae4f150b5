package nodes

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/trellis-ai/trellis/graph"
	"github.com/trellis-ai/trellis/internal/ids"
)

// Paged history: a turn needs the window and the summaries, not the whole
// conversation, so the oldest messages — those the extractive summary
// has covered and no model summary still has to read — leave the state's
// Messages for pages of history in the conversation's own thread, in a
// namespace of their own. A page is written once, as a delta blob whose
// base is the page before it, and never encoded again; the state keeps
// only the newest page's id (ChatState.HistoryPage) and how many
// messages the pages hold (ChatState.MessagesFrom). Loading a thread,
// cold, then decodes a bounded number of messages however long the
// conversation, and a checkpoint is written in what a step adds.
//
// Every page is a checkpoint of its own, with no parent: each is the head
// of a branch of the namespace, which a prune keeps, so a page that any
// kept checkpoint of the conversation names survives with its whole
// chain. The pages go with the thread (DeleteThread, every namespace) and
// are in a backup of the checkpointer like the rest of it. A fork from an
// old turn starts from that turn's page; the pages it writes next are
// based on it, so branches share the pages before them.
const (
	// HistoryNamespace is the namespace of a conversation's thread that
	// holds its pages of history.
	HistoryNamespace = "history"
	historyField     = "messages"
	// pageMessages is the fewest messages a page holds: the state keeps
	// at most about this many beyond the window.
	pageMessages = 64
)

// savePage stores msgs as the page after prev ("" for the first) of the
// conversation's history and returns its id.
func savePage(ctx context.Context, saver graph.Checkpointer, conversationID, prev string, msgs []Message) (string, error) {
	data, err := json.Marshal(msgs)
	if err != nil {
		return "", fmt.Errorf("nodes: encode a history page of %s: %w", conversationID, err)
	}
	now := time.Now()
	id := ids.Sortable(now)
	cp := graph.Checkpoint{ThreadID: conversationID, Namespace: HistoryNamespace, ID: id,
		Source: graph.SourceUpdate, CreatedAt: now, Versions: map[string]string{historyField: id}}
	blob := graph.Blob{Field: historyField, Version: id, Delta: prev != "", Base: prev, Data: data}
	if err := saver.Put(ctx, cp, []graph.Blob{blob}); err != nil {
		return "", fmt.Errorf("nodes: store a history page of %s: %w", conversationID, err)
	}
	return id, nil
}

// errPageMissing is a state naming a page of history the checkpointer
// does not hold (or not whole): its older messages cannot be shown.
var errPageMissing = errors.New("nodes: a page of history is missing")

// loadPages returns the messages of page and every page before it,
// oldest first.
func loadPages(ctx context.Context, saver graph.Checkpointer, conversationID, page string) ([]Message, error) {
	saved, err := saver.Get(ctx, graph.Ref{ThreadID: conversationID, Namespace: HistoryNamespace, ID: page})
	if errors.Is(err, graph.ErrCheckpointNotFound) {
		return nil, fmt.Errorf("%w: %s of %s", errPageMissing, page, conversationID)
	}
	if err != nil {
		return nil, fmt.Errorf("nodes: load the history of %s: %w", conversationID, err)
	}
	byVersion := make(map[string]*graph.Blob, len(saved.Blobs))
	for i := range saved.Blobs {
		if b := &saved.Blobs[i]; b.Field == historyField {
			byVersion[b.Version] = b
		}
	}
	var chain []*graph.Blob
	for v := page; v != ""; {
		b := byVersion[v]
		if b == nil || len(chain) > len(byVersion) {
			return nil, fmt.Errorf("%w: %s of %s", errPageMissing, v, conversationID)
		}
		chain = append(chain, b)
		if !b.Delta {
			break
		}
		v = b.Base
	}
	var out []Message
	for _, b := range slices.Backward(chain) {
		var msgs []Message
		if err := json.Unmarshal(b.Data, &msgs); err != nil {
			return nil, fmt.Errorf("nodes: decode a history page of %s: %w", conversationID, err)
		}
		out = append(out, msgs...)
	}
	return out, nil
}

// pages reads whole conversations for states, loading each chain of
// pages once however many states name it.
type pages struct {
	saver          graph.Checkpointer
	conversationID string
	loaded         map[string][]Message
}

// whole puts the messages s keeps in pages back in front of its
// Messages, so s holds the whole conversation, as every reader of a
// state outside a turn expects.
func (p *pages) whole(ctx context.Context, s *ChatState) error {
	if s.HistoryPage == "" {
		return nil
	}
	older, ok := p.loaded[s.HistoryPage]
	if !ok {
		var err error
		if older, err = loadPages(ctx, p.saver, p.conversationID, s.HistoryPage); err != nil {
			return err
		}
		if p.loaded == nil {
			p.loaded = map[string][]Message{}
		}
		p.loaded[s.HistoryPage] = older
	}
	if len(older) != s.MessagesFrom {
		return fmt.Errorf("%w: %s of %s holds %d messages, the state says %d", errPageMissing,
			s.HistoryPage, p.conversationID, len(older), s.MessagesFrom)
	}
	s.Messages = append(slices.Clip(older), s.Messages...)
	s.MessagesFrom, s.HistoryPage = 0, ""
	return nil
}

// pageOut returns how many of the state's first messages a turn moves
// into a page: those before the extractive summary's end (upTo, an
// index in msgs), and before the turns a model summary still has to
// read when asked is set, once they are at least pageMessages.
func pageOut(msgs []Message, upTo int, asked bool, modelTurn, askTurn int) int {
	cut := min(upTo, len(msgs))
	if asked {
		cut = min(cut, turnStart(msgs, max(modelTurn, askTurn)))
	}
	if cut < pageMessages {
		return 0
	}
	return cut
}
