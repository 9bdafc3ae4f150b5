package docs

import (
	"context"
	"encoding/json"
	"log/slog"
	"time"

	"github.com/trellis-ai/trellis/documents/ingest"
	"github.com/trellis-ai/trellis/events"
	"github.com/trellis-ai/trellis/internal/sse"
	"github.com/trellis-ai/trellis/store"
)

// documentPoll is how often an open stream reads its conversation's
// documents from the store for document.status: one indexed read of a
// conversation's rows (at most its document limit). It is how a stream
// learns of a job that another process runs; this process's own status
// changes come at once, each of them (ingest.Watcher).
const documentPoll = 250 * time.Millisecond

// documentSettled is how often a stream reads the store instead once
// every document of its conversation is ready or failed (or it has
// none): only an upload through another process can change that, and an
// idle stream should not cost the database four reads a second.
const documentSettled = 5 * time.Second

// documentWatch sends document.status on one open stream of a
// conversation: one event per document each time its status (or error)
// is not what the stream last said. The first read of the store tells
// every document's status, so a client that connects (or reconnects)
// learns where each one is; then each change this process stores comes
// as it is stored, and the reads of the store bring those of other
// processes (where a status held for less than a read's interval may be
// passed over; the latest one, ready or error included, always comes).
// A status never goes back: a read may run ahead of changes still
// waiting in the Watcher.
type documentWatch struct {
	h    *Handler
	ctx  context.Context
	user string
	conv string
	sw   *sse.Writer
	w    *ingest.Watcher
	sent map[string]store.Document // what the stream last said, by id
	read time.Time                 // the last read of the store
	// settled: the last read found nothing still being processed, and
	// this process has changed nothing since.
	settled bool
}

// tsFormat is the ts of a notice the service sends on a stream beside
// the run's events, as the run service writes its events' ts.
const tsFormat = "2006-01-02T15:04:05.000Z07:00"

// documentData is document.status's data line: the vocabulary's payload
// with conversation_id and ts, and no seq or run_id (it is no run's).
type documentData struct {
	Type           string `json:"type"`
	ConversationID string `json:"conversation_id"`
	TS             string `json:"ts"`
	events.DocumentStatus
}

// poll writes this process's status changes, then, once every
// documentPoll, what a read of the store tells. The store is read before
// the changes are taken: this process tells the Watcher of a change
// after storing it and before making the next, so every change of its
// own that the read shows has been handed to the Watcher by then, and
// goes out before the read's later status could hide it.
func (d *documentWatch) poll() (bool, error) {
	every := documentPoll
	if d.settled {
		every = documentSettled
	}
	var docs []store.Document
	read := false
	if time.Since(d.read) >= every-documentPoll/4 { // a tick comes every documentPoll, give or take
		d.read = time.Now()
		var err error
		docs, err = d.h.cfg.Documents.All(d.ctx, d.user, d.conv)
		switch {
		case err == nil:
			read = true
		case d.ctx.Err() == nil:
			// The stream goes on: the next read may succeed; a
			// conversation deleted has nothing left to tell.
			d.h.cfg.Logger.LogAttrs(d.ctx, slog.LevelDebug, "reading documents for document.status", slog.String("conversation_id", d.conv), slog.Any("error", err))
		}
	}
	wrote := false
	for _, doc := range d.w.Take() {
		if doc.UserID != d.user || doc.ConversationID != d.conv {
			continue
		}
		d.settled = false
		ok, err := d.tell(doc)
		if err != nil {
			return wrote, err
		}
		wrote = wrote || ok
	}
	if !read {
		return wrote, nil
	}
	listed := make(map[string]bool, len(docs))
	settled := true
	for _, doc := range docs {
		listed[doc.ID] = true
		settled = settled && (doc.Status == store.DocReady || doc.Status == store.DocError)
		ok, err := d.tell(doc)
		if err != nil {
			return wrote, err
		}
		wrote = wrote || ok
	}
	d.settled = settled
	for id := range d.sent {
		if !listed[id] {
			delete(d.sent, id) // deleted
		}
	}
	return wrote, nil
}

// statusRank orders statuses as processing moves through them.
var statusRank = map[store.DocumentStatus]int{
	store.DocUploading: 0, store.DocChunking: 1, store.DocSummarizing: 2, store.DocReady: 3, store.DocError: 3,
}

// tell writes doc's status unless the stream said it, or a later one,
// already.
func (d *documentWatch) tell(doc store.Document) (bool, error) {
	old, ok := d.sent[doc.ID]
	if ok && (old.Status == doc.Status && old.Error == doc.Error || statusRank[doc.Status] < statusRank[old.Status]) {
		return false, nil
	}
	b, err := json.Marshal(documentData{Type: events.TypeDocumentStatus, ConversationID: d.conv,
		TS:             time.Now().UTC().Format(tsFormat),
		DocumentStatus: events.DocumentStatus{DocumentID: doc.ID, Status: string(doc.Status), Error: doc.Error}})
	if err != nil {
		return false, err
	}
	if err := d.sw.Event(0, events.TypeDocumentStatus, b); err != nil {
		return false, err
	}
	if d.sent == nil {
		d.sent = map[string]store.Document{}
	}
	d.sent[doc.ID] = doc
	return true, nil
}
