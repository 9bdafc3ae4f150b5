package store

import (
	"context"
	"fmt"
	"time"
)

// Documents keeps the files users upload into conversations (their
// records: the bytes are in documents.Storage), each document's chunks,
// and the full-text index over chunks: SQLite's FTS5 ranked by BM25, or
// PostgreSQL's tsvector under a GIN index ranked by ts_rank. Deleting a
// document or its conversation deletes its chunks and their index rows
// with it.
//
// Methods a request names ids through take the user id (ErrNotFound for
// another user's); methods only document processing calls take the
// document id alone.
type Documents interface {
	// CreateDocument stores a document in status uploading, in
	// d.ConversationID, or in a new conversation (titled with the file
	// name, created in the same transaction) when that is "". It returns
	// ErrTooMany when the conversation has d.MaxPerConversation
	// documents already, ErrNotFound when the conversation is unknown or
	// another user's, ErrErasing when the user is being erased (see
	// Users.BeginErasure), and ErrInvalid for a document that cannot be
	// stored; then nothing is stored.
	CreateDocument(ctx context.Context, d NewDocument) (Document, error)

	// GetDocument returns the user's document of the conversation.
	// Returns ErrNotFound when it is unknown, of another conversation or
	// another user's.
	GetDocument(ctx context.Context, userID, conversationID, id string) (Document, error)

	// ListDocuments returns a page of the conversation's documents,
	// oldest first. Returns ErrNotFound when the conversation is unknown
	// or another user's, and ErrInvalid for a negative limit or a cursor
	// that ListDocuments did not make.
	ListDocuments(ctx context.Context, userID, conversationID string, page Page) (DocumentPage, error)

	// DeleteDocument deletes the user's document, its chunks and their
	// index rows, and returns it as it was. Returns ErrNotFound as
	// GetDocument does.
	DeleteDocument(ctx context.Context, userID, conversationID, id string) (Document, error)

	// StrandedUploads returns up to limit documents, oldest first, still
	// in status uploading though made before before: the record of an
	// upload whose process died before it stored the file or queued the
	// processing, for processing alone to clear. Returns ErrInvalid for
	// a limit that is not positive.
	StrandedUploads(ctx context.Context, before time.Time, limit int) ([]Document, error)

	// LookupDocument returns the document by id alone, for processing.
	// Returns ErrNotFound when it is unknown (deleted, say).
	LookupDocument(ctx context.Context, id string) (Document, error)

	// SetDocumentStatus moves the document to status, with msg as its
	// Error (kept only with DocError), and returns it. Returns
	// ErrNotFound when it is unknown, and ErrInvalid for an unknown
	// status.
	SetDocumentStatus(ctx context.Context, id string, status DocumentStatus, msg string) (Document, error)

	// PutChunks replaces the document's chunks (and their index rows)
	// with chunks, and records how many characters were left out, in one
	// transaction: running it again, as a retried job does, leaves the
	// same chunks. Returns ErrNotFound when the document is unknown and
	// ErrInvalid for chunks that cannot be stored.
	PutChunks(ctx context.Context, id string, chunks []NewChunk, omitted int) error

	// SetChunkSummaries records summaries of the document's chunks, by
	// chunk index, in one transaction. Returns ErrNotFound, and changes
	// nothing, when the document or one of the chunks is unknown.
	SetChunkSummaries(ctx context.Context, id string, summaries map[int]string) error

	// FinishDocument records the document's summary and makes it ready.
	// Returns ErrNotFound when it is unknown.
	FinishDocument(ctx context.Context, id, summary string) (Document, error)

	// DocumentChunks returns the user's document's chunks with the given
	// indexes (all of them for none), in index order; unknown indexes are
	// skipped. Returns ErrNotFound when the document is unknown or
	// another user's.
	DocumentChunks(ctx context.Context, userID, id string, indexes []int) ([]DocumentChunk, error)

	// SearchChunks returns the chunks that best match q.Query, best
	// first, of the user's documents in q's scope. A query with no word
	// to search for matches nothing. Returns ErrInvalid for a negative
	// limit or a missing user.
	SearchChunks(ctx context.Context, q ChunkQuery) ([]ChunkHit, error)
}

// DocumentStatus is where a document is in its processing.
type DocumentStatus string

// Document statuses, in the order processing moves through them; error
// may follow any of them.
const (
	DocUploading   DocumentStatus = "uploading"
	DocChunking    DocumentStatus = "chunking"
	DocSummarizing DocumentStatus = "summarizing"
	DocReady       DocumentStatus = "ready"
	DocError       DocumentStatus = "error"
)

// Valid reports whether s is a known status.
func (s DocumentStatus) Valid() bool {
	switch s {
	case DocUploading, DocChunking, DocSummarizing, DocReady, DocError:
		return true
	}
	return false
}

// Document is the record of an uploaded file. Its JSON is the item of
// GET /documents/{conversation_id}.
type Document struct {
	ID             string         `json:"document_id"`
	ConversationID string         `json:"conversation_id"`
	UserID         string         `json:"-"`
	Filename       string         `json:"filename"`
	ContentType    string         `json:"content_type"`
	SizeBytes      int64          `json:"size_bytes"`
	Status         DocumentStatus `json:"status"`
	// Error says why processing failed (status error); "" otherwise.
	Error   string `json:"error"`
	Summary string `json:"summary"`
	// Chunks is how many chunks the document was cut into.
	Chunks int `json:"chunks"`
	// OmittedChars is how many characters at the end of the text no
	// chunk holds (the document had more than the chunk limit).
	OmittedChars int       `json:"omitted_chars"`
	CreatedAt    time.Time `json:"created_at"`
	UpdatedAt    time.Time `json:"updated_at"`
}

// DocumentPage is one page of ListDocuments.
type DocumentPage struct {
	Documents []Document
	// NextCursor fetches the next page; "" when this page is the last.
	NextCursor string
}

// DocumentLister is the part of Documents that AllDocuments reads.
type DocumentLister interface {
	ListDocuments(ctx context.Context, userID, conversationID string, page Page) (DocumentPage, error)
}

// AllDocuments reads every document of the conversation, oldest first,
// a page at a time, for a reader that needs each one's status: they are
// as many as the conversation may hold (NewDocument.MaxPerConversation).
// Its errors are ListDocuments'.
func AllDocuments(ctx context.Context, d DocumentLister, userID, conversationID string) ([]Document, error) {
	docs := []Document{}
	for page := (Page{Limit: MaxLimit}); ; {
		p, err := d.ListDocuments(ctx, userID, conversationID, page)
		if err != nil {
			return nil, err
		}
		docs = append(docs, p.Documents...)
		if page.Cursor = p.NextCursor; page.Cursor == "" {
			return docs, nil
		}
	}
}

// NewDocument is what CreateDocument needs.
type NewDocument struct {
	UserID string // required
	// ConversationID is the conversation; "" creates one.
	ConversationID string
	Filename       string // required
	ContentType    string // required: the sniffed type
	SizeBytes      int64
	// MaxPerConversation is the most documents the conversation may
	// hold, this one included; 0 is no limit.
	MaxPerConversation int
}

// Validate reports an ErrInvalid error for a document that cannot be
// stored.
func (d NewDocument) Validate() error {
	switch {
	case d.UserID == "":
		return fmt.Errorf("%w: user id is required", ErrInvalid)
	case d.Filename == "":
		return fmt.Errorf("%w: file name is required", ErrInvalid)
	case d.ContentType == "":
		return fmt.Errorf("%w: content type is required", ErrInvalid)
	case d.SizeBytes < 0 || d.MaxPerConversation < 0:
		return fmt.Errorf("%w: negative size or limit", ErrInvalid)
	}
	return checkText("user id", d.UserID, "conversation id", d.ConversationID,
		"file name", d.Filename, "content type", d.ContentType)
}

// NewChunk is a chunk PutChunks stores: its place in the document's text
// (character offsets, pages from 1 or 0) and its text.
type NewChunk struct {
	Index, Start, End, Page, LastPage int
	Text                              string
}

// DocumentChunk is a stored chunk.
type DocumentChunk struct {
	DocumentID string `json:"document_id"`
	Index      int    `json:"chunk"`
	Start      int    `json:"start"`
	End        int    `json:"end"`
	Page       int    `json:"page,omitempty"`
	LastPage   int    `json:"last_page,omitempty"`
	Text       string `json:"text"`
	Summary    string `json:"summary,omitempty"`
}

// ChunkQuery asks SearchChunks for chunks.
type ChunkQuery struct {
	UserID string // required
	// ConversationID limits the search to one conversation's documents;
	// "" searches all the user's.
	ConversationID string
	// DocumentIDs, when not empty, limits it to these documents.
	DocumentIDs []string
	// Query is what to look for, in words; every word counts, and
	// chunks matching more of them, and rarer ones, rank higher.
	Query string
	// Limit is the most hits; 0 is DefaultSearchLimit, and more than
	// MaxSearchLimit is MaxSearchLimit.
	Limit int
}

// Limits of ChunkQuery.Limit.
const (
	DefaultSearchLimit = 10
	MaxSearchLimit     = 50
)

// ChunkHit is a chunk SearchChunks found, with its document's file name
// and its score: higher is better, comparable only within one search.
type ChunkHit struct {
	DocumentChunk
	Filename string  `json:"filename"`
	Score    float64 `json:"score"`
}
