package cognition

import (
	"context"
	"maps"
	"slices"
	"strings"

	"github.com/trellis-ai/trellis/store"
)

// lesson is a user's memories as learning changes them, held here and
// written once, with the rest of what is learned (into, store.Lesson):
// several turns' facts and episodes that merge into one memory rewrite
// it once, not once a turn. It decides as
// remembering each alone against the record would: its list is the one
// ListMemories returns, newest first, with its own additions in front.
type lesson struct {
	store   Store
	userID  string
	mergeAt float64
	loaded  bool
	ms      []store.Memory // the list; an addition, not in the record yet, has no ID
	changed []bool         // by index of ms: rewritten or added
	// A model's decisions by id: updates of memories the list does not
	// hold (past its first page), and deletions.
	updates map[string]store.NewMemory
	deletes []string
}

func newLesson(st Store, userID string, mergeAt float64) *lesson {
	return &lesson{store: st, userID: userID, mergeAt: mergeAt}
}

// load reads the user's memories, once: when the lesson first remembers
// or decides on one.
func (l *lesson) load(ctx context.Context) error {
	if l.loaded {
		return nil
	}
	page, err := l.store.ListMemories(ctx, l.userID, store.Page{Limit: store.MaxLimit})
	if err != nil {
		return err
	}
	l.ms, l.loaded = page.Memories, true
	l.changed = make([]bool, len(l.ms))
	return nil
}

// remember adds a memory, or merges it into the user's memory whose
// topics are most similar, when they are at least mergeAt similar.
func (l *lesson) remember(ctx context.Context, conversationID, summary, outcome string, importance float64) error {
	if err := l.load(ctx); err != nil {
		return err
	}
	nm := store.NewMemory{UserID: l.userID, ConversationID: conversationID, Summary: summary, Outcome: outcome,
		Topics: Topics(summary, 8), Importance: importance}
	// Nearest looks at what one page of the record would hold.
	if i, ok := Nearest(l.ms[:min(len(l.ms), store.MaxLimit)], nm.Topics, l.mergeAt); ok {
		l.set(i, Merge(l.ms[i], nm))
		return nil
	}
	m := store.Memory{UserID: l.userID, ConversationID: conversationID, Summary: nm.Summary, Outcome: nm.Outcome,
		Topics: nm.Topics, Importance: nm.Importance}
	l.ms = slices.Insert(l.ms, 0, m)
	l.changed = slices.Insert(l.changed, 0, true)
	return nil
}

// set rewrites memory i with nm, as UpdateMemory does: its conversation
// stays.
func (l *lesson) set(i int, nm store.NewMemory) {
	m := &l.ms[i]
	m.Summary, m.Outcome, m.Topics, m.Importance = nm.Summary, nm.Outcome, nm.Topics, nm.Importance
	l.changed[i] = true
}

// apply carries out a model's memory decisions. An id the model made up
// (not one of the user's) is skipped.
func (l *lesson) apply(ctx context.Context, t Turn, ds []Decision) error {
	for _, d := range ds {
		text := clip(strings.TrimSpace(d.Text), 500)
		switch d.Event {
		case EventAdd:
			if text == "" {
				continue
			}
			if err := l.remember(ctx, t.ConversationID, text, "", 0.8); err != nil {
				return err
			}
		case EventUpdate:
			if text == "" {
				continue
			}
			if err := l.load(ctx); err != nil {
				return err
			}
			nm := store.NewMemory{Summary: text, Topics: Topics(text, 8), Importance: 0.8}
			if i := l.index(d.ID); i >= 0 {
				l.set(i, nm)
			} else if !slices.Contains(l.deletes, d.ID) {
				if l.updates == nil {
					l.updates = map[string]store.NewMemory{}
				}
				l.updates[d.ID] = nm
			}
		case EventDelete:
			if err := l.load(ctx); err != nil {
				return err
			}
			if i := l.index(d.ID); i >= 0 {
				l.ms, l.changed = slices.Delete(l.ms, i, i+1), slices.Delete(l.changed, i, i+1)
			}
			delete(l.updates, d.ID)
			l.deletes = append(l.deletes, d.ID)
		}
	}
	return nil
}

// index is the list's index of the stored memory id, -1 when it holds
// none.
func (l *lesson) index(id string) int {
	if id == "" {
		return -1
	}
	return slices.IndexFunc(l.ms, func(m store.Memory) bool { return m.ID == id })
}

// into puts what the lesson changed into sl, for the store to write in
// one transaction: deletions, rewrites, and additions oldest first, so
// that the record lists them as the lesson does. A memory the model
// named that is gone by then is passed over.
func (l *lesson) into(sl *store.Lesson) {
	sl.Deletes = l.deletes
	for _, id := range slices.Sorted(maps.Keys(l.updates)) {
		sl.Updates = append(sl.Updates, store.MemoryUpdate{ID: id, Memory: l.updates[id]})
	}
	for i := len(l.ms) - 1; i >= 0; i-- {
		if !l.changed[i] {
			continue
		}
		m := l.ms[i]
		nm := store.NewMemory{UserID: l.userID, ConversationID: m.ConversationID, Summary: m.Summary, Outcome: m.Outcome,
			Topics: m.Topics, Importance: m.Importance}
		if m.ID == "" {
			sl.Adds = append(sl.Adds, nm)
		} else {
			sl.Updates = append(sl.Updates, store.MemoryUpdate{ID: m.ID, Memory: nm})
		}
	}
}
