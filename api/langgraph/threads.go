package langgraph

import (
	"context"
	"encoding/json"
	"errors"
	"maps"
	"net/http"
	"reflect"

	"github.com/go-chi/chi/v5"

	"github.com/trellis-ai/trellis/api/httperr"
	"github.com/trellis-ai/trellis/api/jsonbody"
	"github.com/trellis-ai/trellis/runs"
)

// thread is a Trellis conversation as LangGraph's thread.
type thread struct {
	ThreadID   string                 `json:"thread_id"`
	CreatedAt  string                 `json:"created_at"`
	UpdatedAt  string                 `json:"updated_at"`
	Metadata   json.RawMessage        `json:"metadata"`
	Status     string                 `json:"status"`
	Config     map[string]any         `json:"config"`
	Values     *values                `json:"values"`
	Interrupts map[string][]interrupt `json:"interrupts"`
}

// threadStatus maps a conversation's status (its latest run's) to a
// thread's: busy while a run goes, interrupted while one waits.
func threadStatus(s runs.RunStatus) string {
	switch s {
	case runs.RunRunning:
		return "busy"
	case runs.RunInterrupted:
		return "interrupted"
	case runs.RunFailed:
		return "error"
	}
	return "idle"
}

// threadOf builds the thread of c with its interrupts, and its values
// unless fits, when given, refuses its state.
func (h *handler) threadOf(ctx context.Context, c runs.Conversation, fits func(runs.Snapshot) bool) (thread, error) {
	t := thread{ThreadID: c.ID, CreatedAt: timestamp(c.CreatedAt), UpdatedAt: timestamp(c.UpdatedAt),
		Metadata: c.Metadata, Status: threadStatus(c.Status), Config: map[string]any{}, Interrupts: map[string][]interrupt{}}
	if len(t.Metadata) == 0 {
		t.Metadata = json.RawMessage("{}")
	}
	snap, err := h.runs.State(ctx, c.ID)
	if errors.Is(err, runs.ErrNoConversation) {
		t.Values = &values{Messages: []message{}}
		return t, nil
	}
	if err != nil {
		return thread{}, err
	}
	if fits == nil || fits(snap) {
		t.Values = &values{Messages: fromState(snap.State.Messages)}
	}
	if ins := interruptsOf(snap.Pending); len(ins) > 0 {
		t.Interrupts[snap.CheckpointID] = ins
	}
	return t, nil
}

// conversation returns the user's conversation the path names: 404 for
// an unknown thread or another user's.
func (h *handler) conversation(r *http.Request) (runs.Conversation, error) {
	return h.runs.Conversation(r.Context(), user(r), chi.URLParam(r, "thread_id"))
}

func (h *handler) createThread(w http.ResponseWriter, r *http.Request) {
	var tb threadBody
	if err := decode(r, &tb); err != nil {
		h.fail(w, r, err)
		return
	}
	if isSet(tb.Metadata) && runs.CheckMetadata(tb.Metadata) != nil {
		h.fail(w, r, httperr.Invalid("metadata must be a JSON object"))
		return
	}
	if tb.ThreadID != "" {
		c, err := h.runs.Conversation(r.Context(), user(r), tb.ThreadID)
		switch {
		case err == nil && tb.IfExists == "do_nothing":
			h.writeThread(w, r, c, http.StatusOK)
		case err == nil:
			h.fail(w, r, errorf(http.StatusConflict, "thread_exists", "thread %s exists; pass if_exists: do_nothing to get it", tb.ThreadID))
		case errors.Is(err, runs.ErrNotFound), errors.Is(err, runs.ErrInvalid):
			h.fail(w, r, errorf(http.StatusUnprocessableEntity, "thread_id_not_supported", "Trellis chooses thread ids; create the thread without thread_id"))
		default:
			h.fail(w, r, err)
		}
		return
	}
	var md json.RawMessage
	if isSet(tb.Metadata) {
		md = tb.Metadata
	}
	c, err := h.runs.CreateConversation(r.Context(), runs.NewConversation{UserID: user(r), Metadata: md})
	if err != nil {
		h.fail(w, r, err)
		return
	}
	h.writeThread(w, r, c, http.StatusOK)
}

func (h *handler) writeThread(w http.ResponseWriter, r *http.Request, c runs.Conversation, status int) {
	t, err := h.threadOf(r.Context(), c, nil)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	jsonbody.Write(w, status, t)
}

func (h *handler) getThread(w http.ResponseWriter, r *http.Request) {
	c, err := h.conversation(r)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	h.writeThread(w, r, c, http.StatusOK)
}

// patchThread merges the body's metadata into the thread's.
func (h *handler) patchThread(w http.ResponseWriter, r *http.Request) {
	c, err := h.conversation(r)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	var tb threadBody
	if err := decode(r, &tb); err != nil {
		h.fail(w, r, err)
		return
	}
	add, err := metadataObject(tb.Metadata)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	if c, err = h.mergeMetadata(r.Context(), c, add); err != nil {
		h.fail(w, r, err)
		return
	}
	h.writeThread(w, r, c, http.StatusOK)
}

// mergeMetadata sets add's keys in the conversation's metadata, storing
// only when something changes.
func (h *handler) mergeMetadata(ctx context.Context, c runs.Conversation, add map[string]any) (runs.Conversation, error) {
	md := map[string]any{}
	_ = json.Unmarshal(c.Metadata, &md)
	next := maps.Clone(md)
	maps.Copy(next, add)
	if reflect.DeepEqual(md, next) {
		return c, nil
	}
	b, err := json.Marshal(next)
	if err != nil {
		return c, err
	}
	return h.runs.SetMetadata(ctx, c.UserID, c.ID, b)
}

func (h *handler) deleteThread(w http.ResponseWriter, r *http.Request) {
	if err := h.runs.DeleteConversation(r.Context(), user(r), chi.URLParam(r, "thread_id")); err != nil {
		h.fail(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// searchThreads is POST /threads/search: the user's threads, newest
// first, whose metadata holds every key of the query's with an equal
// value, of the status asked, a page at a time.
func (h *handler) searchThreads(w http.ResponseWriter, r *http.Request) {
	q, limit, offset, err := search(r)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	want, err := metadataObject(q.Metadata)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	match := func(c runs.Conversation) bool {
		if q.Status != "" && threadStatus(c.Status) != q.Status {
			return false
		}
		var md map[string]any
		_ = json.Unmarshal(c.Metadata, &md)
		for k, v := range want {
			if got, ok := md[k]; !ok || !reflect.DeepEqual(got, v) {
				return false
			}
		}
		return true
	}
	var found []runs.Conversation
	if len(q.IDs) > 0 {
		for _, id := range q.IDs {
			c, err := h.runs.Conversation(r.Context(), user(r), id)
			if errors.Is(err, runs.ErrNotFound) || errors.Is(err, runs.ErrInvalid) {
				continue
			}
			if err != nil {
				h.fail(w, r, err)
				return
			}
			if match(c) {
				found = append(found, c)
			}
		}
		found = found[min(offset, len(found)):]
		found = found[:min(limit, len(found))]
	} else {
		// A page of the store at a time, so what is held is bounded by
		// the answer's size.
		cursor, skipped := "", 0
		for len(found) < limit {
			p, err := h.runs.Conversations(r.Context(), user(r), runs.Page{Limit: runs.MaxConversations, Cursor: cursor})
			if err != nil {
				h.fail(w, r, err)
				return
			}
			for _, c := range p.Conversations {
				if !match(c) {
					continue
				}
				if skipped < offset {
					skipped++
					continue
				}
				if len(found) < limit {
					found = append(found, c)
				}
			}
			if cursor = p.NextCursor; cursor == "" {
				break
			}
		}
	}
	// Each thread's values are its conversation so far: a thread whose
	// values would take the page past runs.Budget comes without them
	// (its state is GET /threads/{id}/state), so the list stays whole.
	var b runs.Budget
	fits := func(s runs.Snapshot) bool { return b.Take(runs.StateBytes(s)) }
	out := make([]thread, 0, len(found))
	for _, c := range found {
		t, err := h.threadOf(r.Context(), c, fits)
		if err != nil {
			h.fail(w, r, err)
			return
		}
		out = append(out, t)
	}
	jsonbody.Write(w, http.StatusOK, out)
}

// getState is GET /threads/{id}/state: the newest checkpoint.
func (h *handler) getState(w http.ResponseWriter, r *http.Request) {
	c, err := h.conversation(r)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	snap, err := h.runs.State(r.Context(), c.ID)
	if errors.Is(err, runs.ErrNoConversation) {
		jsonbody.Write(w, http.StatusOK, threadState{Values: values{Messages: []message{}}, Next: []string{}, Tasks: []task{},
			Metadata: map[string]any{}, CreatedAt: timestamp(c.CreatedAt), Checkpoint: checkpointRef{ThreadID: c.ID}})
		return
	}
	if err != nil {
		h.fail(w, r, err)
		return
	}
	jsonbody.Write(w, http.StatusOK, stateOf(c.ID, snap))
}

// historyMost bounds how many checkpoints a history page holds.
const historyMost = 1000

func (h *handler) postHistory(w http.ResponseWriter, r *http.Request) {
	var q historyBody
	if err := decode(r, &q); err != nil {
		h.fail(w, r, err)
		return
	}
	before := ""
	if q.Before != nil {
		before = q.Before.Configurable.CheckpointID
	}
	h.history(w, r, q.Limit, before)
}

func (h *handler) getHistory(w http.ResponseWriter, r *http.Request) {
	var limit *int
	if s := r.URL.Query().Get("limit"); s != "" {
		var n int
		if err := json.Unmarshal([]byte(s), &n); err != nil {
			h.fail(w, r, httperr.Invalid("limit must be a number"))
			return
		}
		limit = &n
	}
	h.history(w, r, limit, r.URL.Query().Get("before"))
}

// history answers the thread's checkpoints, newest first, limit of
// them (10 by default), those older than before when it is given. A
// page also stops once it holds a megabyte of messages (runs.History):
// a client reads on with before set to its last checkpoint until a page
// is empty.
func (h *handler) history(w http.ResponseWriter, r *http.Request, limitIn *int, before string) {
	c, err := h.conversation(r)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	limit, _, err := page(limitIn, 0, 10, historyMost)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	snaps, err := h.runs.History(r.Context(), c.ID, limit, before)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	out := make([]threadState, 0, len(snaps))
	for _, s := range snaps {
		out = append(out, stateOf(c.ID, s))
	}
	jsonbody.Write(w, http.StatusOK, out)
}
