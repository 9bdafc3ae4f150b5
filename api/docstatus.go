package api

import (
	"context"
	"encoding/json"
	"log/slog"
	"time"

	"github.com/trellis-ai/trellis/api/store"
	"github.com/trellis-ai/trellis/nodes"
)

// documentPoll is how often an open stream reads its conversation's
// documents for document.status: one indexed read of a conversation's
// rows (at most its document limit), the same whichever process runs
// the document's job.
const documentPoll = 250 * time.Millisecond

// documentWatch sends document.status on one open stream of a
// conversation: each time it reads the conversation's documents, one
// event per document whose status (or error) is not what the stream
// last said. The first read tells every document's status, so a client
// that connects (or reconnects) learns where each one is. A status held
// for less than a read's interval may be passed over; the latest one,
// ready or error included, always comes.
type documentWatch struct {
	s    *Server
	ctx  context.Context
	user string
	conv string
	sw   *sseWriter
	seen map[string]store.Document
}

// documentData is document.status's data line: the vocabulary's payload
// with conversation_id and ts, and no seq or run_id (it is no run's).
type documentData struct {
	Type           string `json:"type"`
	ConversationID string `json:"conversation_id"`
	TS             string `json:"ts"`
	nodes.DocumentStatus
}

// poll reads the conversation's documents and writes what changed.
func (d *documentWatch) poll() (bool, error) {
	docs, err := d.s.cfg.Documents.List(d.ctx, d.user, d.conv)
	if err != nil {
		// The stream goes on: the next read may succeed; a
		// conversation deleted has nothing left to tell.
		if d.ctx.Err() == nil {
			d.s.log.LogAttrs(d.ctx, slog.LevelDebug, "reading documents for document.status", slog.String("conversation_id", d.conv), slog.Any("error", err))
		}
		return false, nil
	}
	wrote := false
	now := make(map[string]store.Document, len(docs))
	for _, doc := range docs {
		now[doc.ID] = doc
		old, ok := d.seen[doc.ID]
		if ok && old.Status == doc.Status && old.Error == doc.Error {
			continue
		}
		b, err := json.Marshal(documentData{Type: nodes.EventDocumentStatus, ConversationID: d.conv,
			TS:             time.Now().UTC().Format("2006-01-02T15:04:05.000Z07:00"),
			DocumentStatus: nodes.DocumentStatus{DocumentID: doc.ID, Status: string(doc.Status), Error: doc.Error}})
		if err != nil {
			return wrote, err
		}
		if err := d.sw.notice(nodes.EventDocumentStatus, b); err != nil {
			return wrote, err
		}
		wrote = true
	}
	d.seen = now
	return wrote, nil
}
