package sqlstore

import (
	"context"
	"maps"
	"slices"
	"strings"
	"time"
	"unicode"

	"github.com/trellis-ai/trellis/internal/ids"
	"github.com/trellis-ai/trellis/internal/stopword"
	"github.com/trellis-ai/trellis/store"
	"github.com/trellis-ai/trellis/store/internal/storeutil"
)

// documentCols are read by scanDocument.
const documentCols = `d.id, d.conversation_id, d.user_id, d.filename, d.content_type, d.size_bytes, d.status,
    d.error, d.summary, d.chunk_count, d.omitted_chars, d.created_at, d.updated_at`

func scanDocument(row Row) (store.Document, error) {
	var (
		d                store.Document
		created, updated dbTime
	)
	err := row.Scan(&d.ID, &d.ConversationID, &d.UserID, &d.Filename, &d.ContentType, &d.SizeBytes, &d.Status,
		&d.Error, &d.Summary, &d.Chunks, &d.OmittedChars, &created, &updated)
	d.CreatedAt, d.UpdatedAt = created.t, updated.t
	return d, err
}

// chunkCols are read by scanChunk, from chunks c joined by chunkSummary.
const (
	chunkCols    = `c.document_id, c.idx, c.start_char, c.end_char, c.page, c.last_page, c.text, COALESCE(cs.summary, '')`
	chunkSummary = ` LEFT JOIN chunk_summaries cs ON cs.document_id = c.document_id AND cs.idx = c.idx`
)

func scanChunk(row Row) (store.DocumentChunk, error) {
	var c store.DocumentChunk
	err := row.Scan(&c.DocumentID, &c.Index, &c.Start, &c.End, &c.Page, &c.LastPage, &c.Text, &c.Summary)
	return c, err
}

// CreateDocument implements store.Documents. The conversation's row is
// updated first, which locks it in PostgreSQL (SQLite's writers are one
// at a time anyway), so two uploads cannot both take the last place.
func (s *Store) CreateDocument(ctx context.Context, nd store.NewDocument) (store.Document, error) {
	if err := nd.Validate(); err != nil {
		return store.Document{}, s.errorf("create document: %w", err)
	}
	now := storeutil.Now()
	d := store.Document{ID: ids.New(), ConversationID: nd.ConversationID, UserID: nd.UserID, Filename: nd.Filename,
		ContentType: nd.ContentType, SizeBytes: nd.SizeBytes, Status: store.DocUploading, CreatedAt: now, UpdatedAt: now}
	err := s.db.Tx(ctx, func(ctx context.Context, q Querier) error {
		at := s.db.Time(now)
		if d.ConversationID == "" {
			d.ConversationID = ids.New()
			c := store.Conversation{ID: d.ConversationID, UserID: nd.UserID, Title: nd.Filename}
			if err := insertConversation(ctx, q, c, at); err != nil {
				return err
			}
		} else {
			if storeutil.CheckIDs(d.ConversationID) != nil {
				return store.ErrNotFound
			}
			n, err := q.Exec(ctx, `UPDATE conversations SET updated_at = ? WHERE id = ? AND user_id = ? AND NOT deleting`, at, d.ConversationID, nd.UserID)
			if err != nil {
				return err
			}
			if n == 0 {
				return notTaking(ctx, q, nd.UserID)
			}
		}
		if nd.MaxPerConversation > 0 {
			var have int
			if err := q.QueryRow(ctx, `SELECT count(*) FROM documents WHERE conversation_id = ?`, d.ConversationID).Scan(&have); err != nil {
				return err
			}
			if have >= nd.MaxPerConversation {
				return store.ErrTooMany
			}
		}
		_, err := q.Exec(ctx, `INSERT INTO documents (id, conversation_id, user_id, filename, content_type, size_bytes, status, created_at, updated_at)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			d.ID, d.ConversationID, d.UserID, d.Filename, d.ContentType, d.SizeBytes, d.Status, at, at)
		return err
	})
	if err != nil {
		return store.Document{}, s.errorf("create document: %w", s.refused(err))
	}
	return d, nil
}

// GetDocument implements store.Documents.
func (s *Store) GetDocument(ctx context.Context, userID, conversationID, id string) (store.Document, error) {
	d, err := s.getDocument(ctx, s.db, userID, conversationID, id)
	if err != nil {
		return store.Document{}, s.errorf("get document %s: %w", id, err)
	}
	return d, nil
}

func (s *Store) getDocument(ctx context.Context, q Querier, userID, conversationID, id string) (store.Document, error) {
	if storeutil.CheckIDs(userID, conversationID, id) != nil {
		return store.Document{}, store.ErrNotFound
	}
	d, err := scanDocument(q.QueryRow(ctx, `SELECT `+documentCols+` FROM documents d
        WHERE d.id = ? AND d.conversation_id = ? AND d.user_id = ?`, id, conversationID, userID))
	if noRows(err) {
		err = store.ErrNotFound
	}
	return d, err
}

// ListDocuments implements store.Documents.
func (s *Store) ListDocuments(ctx context.Context, userID, conversationID string, page store.Page) (store.DocumentPage, error) {
	if _, _, _, err := checkPage(page); err != nil {
		return store.DocumentPage{}, s.errorf("list documents of %s: %w", conversationID, err)
	}
	var p store.DocumentPage
	err := s.db.Read(ctx, func(q Querier) error {
		if storeutil.CheckIDs(userID, conversationID) != nil {
			return store.ErrNotFound
		}
		if err := ownsConversation(ctx, q, userID, conversationID); err != nil {
			return err
		}
		var err error
		p.Documents, p.NextCursor, err = readPage(ctx, s, q, keyed{sel: `SELECT ` + documentCols + ` FROM documents d`, alias: "d",
			where: `d.conversation_id = ?`, args: []any{conversationID}, oldest: true}, page, scanDocument,
			func(d store.Document) storeutil.Cursor { return storeutil.Cursor{CreatedAt: d.CreatedAt, ID: d.ID} },
			func(d store.Document) int {
				return len(d.Filename) + len(d.ContentType) + len(d.Error) + len(d.Summary)
			})
		return err
	})
	if err != nil {
		return store.DocumentPage{}, s.errorf("list documents of %s: %w", conversationID, err)
	}
	return p, nil
}

// DeleteDocument implements store.Documents: the foreign keys cascade to
// the chunks, and the index follows them (SQLite's triggers, PostgreSQL's
// GIN index on the chunks' own column).
func (s *Store) DeleteDocument(ctx context.Context, userID, conversationID, id string) (store.Document, error) {
	var d store.Document
	err := s.db.Tx(ctx, func(ctx context.Context, q Querier) error {
		var err error
		if d, err = s.getDocument(ctx, q, userID, conversationID, id); err != nil {
			return err
		}
		_, err = q.Exec(ctx, `DELETE FROM documents WHERE id = ?`, id)
		return err
	})
	if err != nil {
		return store.Document{}, s.errorf("delete document %s: %w", id, err)
	}
	return d, nil
}

// StrandedUploads implements store.Documents, over the partial index of
// documents in status uploading (documents_uploading).
func (s *Store) StrandedUploads(ctx context.Context, before time.Time, limit int) ([]store.Document, error) {
	if limit <= 0 {
		return nil, s.errorf("stranded uploads: %w: limit %d", store.ErrInvalid, limit)
	}
	var out []store.Document
	err := s.db.Read(ctx, func(q Querier) error {
		var err error
		out, err = queryAll(ctx, q, scanDocument, `SELECT `+documentCols+` FROM documents d
			WHERE d.status = 'uploading' AND d.created_at < ? ORDER BY d.created_at, d.id LIMIT ?`, s.db.Time(before.UTC()), limit)
		return err
	})
	if err != nil {
		return nil, s.errorf("stranded uploads: %w", err)
	}
	return out, nil
}

// LookupDocument implements store.Documents.
func (s *Store) LookupDocument(ctx context.Context, id string) (store.Document, error) {
	d, err := s.lookupDocument(ctx, s.db, id)
	if err != nil {
		return store.Document{}, s.errorf("lookup document %s: %w", id, err)
	}
	return d, nil
}

func (s *Store) lookupDocument(ctx context.Context, q Querier, id string) (store.Document, error) {
	if storeutil.CheckIDs(id) != nil {
		return store.Document{}, store.ErrNotFound
	}
	d, err := scanDocument(q.QueryRow(ctx, `SELECT `+documentCols+` FROM documents d WHERE d.id = ?`, id))
	if noRows(err) {
		err = store.ErrNotFound
	}
	return d, err
}

// SetDocumentStatus implements store.Documents.
func (s *Store) SetDocumentStatus(ctx context.Context, id string, status store.DocumentStatus, msg string) (store.Document, error) {
	if !status.Valid() {
		return store.Document{}, s.errorf("set document %s status: %w: status %q", id, store.ErrInvalid, status)
	}
	if status != store.DocError {
		msg = ""
	}
	msg = store.ToValidText(msg)
	return s.updateDocument(ctx, id, "set status", `UPDATE documents SET status = ?, error = ?, updated_at = ? WHERE id = ?`,
		status, msg)
}

// FinishDocument implements store.Documents.
func (s *Store) FinishDocument(ctx context.Context, id, summary string) (store.Document, error) {
	return s.updateDocument(ctx, id, "finish", `UPDATE documents SET status = 'ready', error = '', summary = ?, updated_at = ? WHERE id = ?`,
		store.ToValidText(summary))
}

// updateDocument runs query, whose arguments are args then the time and
// the id, and returns the document as it is after.
func (s *Store) updateDocument(ctx context.Context, id, what, query string, args ...any) (store.Document, error) {
	var d store.Document
	err := s.db.Tx(ctx, func(ctx context.Context, q Querier) error {
		if storeutil.CheckIDs(id) != nil {
			return store.ErrNotFound
		}
		n, err := q.Exec(ctx, query, append(args, s.db.Time(storeutil.Now()), id)...)
		if err != nil {
			return err
		}
		if n == 0 {
			return store.ErrNotFound
		}
		d, err = s.lookupDocument(ctx, q, id)
		return err
	})
	if err != nil {
		return store.Document{}, s.errorf("%s document %s: %w", what, id, err)
	}
	return d, nil
}

// PutChunks implements store.Documents.
func (s *Store) PutChunks(ctx context.Context, id string, chunks []store.NewChunk, omitted int) error {
	for _, c := range chunks {
		if !store.ValidText(c.Text) || c.Start < 0 || c.End < c.Start || c.Index < 0 {
			return s.errorf("put chunks of %s: %w: chunk %d", id, store.ErrInvalid, c.Index)
		}
	}
	err := s.db.Tx(ctx, func(ctx context.Context, q Querier) error {
		if storeutil.CheckIDs(id) != nil {
			return store.ErrNotFound
		}
		n, err := q.Exec(ctx, `UPDATE documents SET chunk_count = ?, omitted_chars = ?, updated_at = ? WHERE id = ?`,
			len(chunks), omitted, s.db.Time(storeutil.Now()), id)
		if err != nil {
			return err
		}
		if n == 0 {
			return store.ErrNotFound
		}
		if _, err := q.Exec(ctx, `DELETE FROM chunks WHERE document_id = ?`, id); err != nil {
			return err
		}
		// Rows go in batches, one statement each: a round trip per
		// batch, not per chunk. Index entries made in the client are
		// made for all the chunks at once, so the database is asked
		// what it must be asked once.
		cols, row := "", "(?, ?, ?, ?, ?, ?, ?), "
		var entries []any
		ix := s.db.ChunkSearch().Index
		if ix != nil {
			cols, row = ", "+ix.Column, "(?, ?, ?, ?, ?, ?, ?, ?), "
			texts := make([]string, len(chunks))
			for i, c := range chunks {
				texts[i] = c.Text
			}
			if entries, err = ix.Compute(ctx, q, texts); err != nil {
				return err
			}
		}
		for start := 0; start < len(chunks); start += rowsPerStatement {
			batch := chunks[start:min(start+rowsPerStatement, len(chunks))]
			args := make([]any, 0, 8*len(batch))
			for i, c := range batch {
				args = append(args, id, c.Index, c.Start, c.End, c.Page, c.LastPage, c.Text)
				if ix != nil {
					args = append(args, entries[start+i])
				}
			}
			_, err := q.Exec(ctx, `INSERT INTO chunks (document_id, idx, start_char, end_char, page, last_page, text`+cols+`) VALUES `+
				strings.TrimSuffix(strings.Repeat(row, len(batch)), ", "), args...)
			if err != nil {
				return err
			}
		}
		return s.db.ChunkSearch().Upkeep.run(ctx, q)
	})
	if err != nil {
		return s.errorf("put chunks of %s: %w", id, err)
	}
	return nil
}

// SetChunkSummaries implements store.Documents, in index order.
func (s *Store) SetChunkSummaries(ctx context.Context, id string, summaries map[int]string) error {
	err := s.db.Tx(ctx, func(ctx context.Context, q Querier) error {
		if storeutil.CheckIDs(id) != nil {
			return store.ErrNotFound
		}
		for batch := range slices.Chunk(slices.Sorted(maps.Keys(summaries)), rowsPerStatement) {
			// One statement a batch. The join with chunks keeps a
			// summary only where its chunk is, so a row short is a
			// chunk not found; WHERE true lets SQLite read ON CONFLICT
			// as the upsert's.
			args := make([]any, 0, 2*len(batch)+1)
			for _, i := range batch {
				args = append(args, i, store.ToValidText(summaries[i]))
			}
			args = append(args, id)
			n, err := q.Exec(ctx, `INSERT INTO chunk_summaries (document_id, idx, summary)
                SELECT c.document_id, c.idx, v.column2
                FROM (VALUES `+strings.TrimSuffix(strings.Repeat("(CAST(? AS integer), CAST(? AS text)), ", len(batch)), ", ")+`) AS v
                JOIN chunks c ON c.document_id = ? AND c.idx = v.column1
                WHERE true
                ON CONFLICT (document_id, idx) DO UPDATE SET summary = excluded.summary`, args...)
			if err != nil {
				return err
			}
			if n != int64(len(batch)) {
				return store.ErrNotFound
			}
		}
		return nil
	})
	if err != nil {
		return s.errorf("set chunk summaries of %s: %w", id, err)
	}
	return nil
}

// DocumentChunks implements store.Documents.
func (s *Store) DocumentChunks(ctx context.Context, userID, id string, indexes []int) ([]store.DocumentChunk, error) {
	var cs []store.DocumentChunk
	err := s.db.Read(ctx, func(q Querier) error {
		if storeutil.CheckIDs(userID, id) != nil {
			return store.ErrNotFound
		}
		if err := owned(ctx, q, "documents", userID, id); err != nil {
			return err
		}
		query := `SELECT ` + chunkCols + ` FROM chunks c` + chunkSummary + ` WHERE c.document_id = ?`
		args := []any{id}
		if len(indexes) > 0 {
			query += ` AND c.idx IN (` + placeholders(len(indexes)) + `)`
			for _, i := range indexes {
				args = append(args, i)
			}
		}
		var err error
		cs, err = queryAll(ctx, q, scanChunk, query+` ORDER BY c.idx`, args...)
		return err
	})
	if err != nil {
		return nil, s.errorf("chunks of document %s: %w", id, err)
	}
	return cs, nil
}

// rowsPerStatement bounds the rows one statement writes: few round trips,
// and far below either database's limit on parameters.
const rowsPerStatement = 100

// maxSearchTerms bounds the words a search looks for.
const maxSearchTerms = 32

// SearchTerms returns the words of a query that a search looks for: lower
// case runs of letters and digits, at least two characters long, each
// once, in order, at most 32, English stop words left out. A question is
// mostly made of stop words ("what do you remember about me?"), and they
// are in nearly every row: PostgreSQL's english configuration drops them
// from a tsquery, but SQLite's FTS5 index keeps them, and BM25 reads a
// word's whole posting list, across every user, to weigh it — 10 ms a
// search at 100,000 memories, for a weight of almost nothing. Dropped
// here, both backends search the same words.
func SearchTerms(query string) []string {
	var terms []string
	seen := map[string]bool{}
	for w := range strings.FieldsFuncSeq(strings.ToLower(query), func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsDigit(r)
	}) {
		if len([]rune(w)) < 2 || seen[w] || len(w) > 64 || stopword.Is(w) {
			continue
		}
		seen[w] = true
		terms = append(terms, w)
		if len(terms) == maxSearchTerms {
			break
		}
	}
	return terms
}

// searchLimit checks a search's user and limit and returns how many
// hits it may have: the default for 0, and never more than the maximum.
func searchLimit(userID string, limit int) (int, error) {
	switch {
	case userID == "" || limit < 0:
		return 0, store.ErrInvalid
	case limit == 0:
		return store.DefaultSearchLimit, nil
	default:
		return min(limit, store.MaxSearchLimit), nil
	}
}

// SearchChunks implements store.Documents with the backend's ChunkSearch.
func (s *Store) SearchChunks(ctx context.Context, cq store.ChunkQuery) ([]store.ChunkHit, error) {
	hits, err := s.searchChunks(ctx, cq)
	if err != nil {
		return nil, s.errorf("search chunks: %w", err)
	}
	return hits, nil
}

func (s *Store) searchChunks(ctx context.Context, cq store.ChunkQuery) ([]store.ChunkHit, error) {
	limit, err := searchLimit(cq.UserID, cq.Limit)
	if err != nil {
		return nil, err
	}
	terms := SearchTerms(cq.Query)
	if len(terms) == 0 || storeutil.CheckIDs(cq.UserID) != nil {
		return []store.ChunkHit{}, nil
	}
	cs := s.db.ChunkSearch()
	query := `SELECT ` + chunkCols + `, d.filename, ` + cs.Score + ` AS score FROM ` + cs.From + `
        JOIN documents d ON d.id = c.document_id` + chunkSummary + `
        WHERE ` + cs.Match + ` AND d.user_id = ?`
	args := []any{cs.Terms(terms), cq.UserID}
	if cq.ConversationID != "" {
		if storeutil.CheckIDs(cq.ConversationID) != nil {
			return []store.ChunkHit{}, nil
		}
		query += ` AND d.conversation_id = ?`
		args = append(args, cq.ConversationID)
	}
	if len(cq.DocumentIDs) > 0 {
		var valid []string
		for _, id := range cq.DocumentIDs {
			if storeutil.CheckIDs(id) == nil {
				valid = append(valid, id)
			}
		}
		if len(valid) == 0 {
			return []store.ChunkHit{}, nil
		}
		query += ` AND d.id IN (` + placeholders(len(valid)) + `)`
		for _, id := range valid {
			args = append(args, id)
		}
	}
	query += ` ORDER BY score DESC, c.document_id, c.idx LIMIT ?`
	args = append(args, limit)
	hits, err := queryAll(ctx, s.db, func(row Row) (store.ChunkHit, error) {
		var h store.ChunkHit
		c := &h.DocumentChunk
		err := row.Scan(&c.DocumentID, &c.Index, &c.Start, &c.End, &c.Page, &c.LastPage, &c.Text, &c.Summary, &h.Filename, &h.Score)
		return h, err
	}, query, args...)
	if hits == nil {
		hits = []store.ChunkHit{}
	}
	return hits, err
}

// placeholders returns n ? separated by commas.
func placeholders(n int) string {
	return strings.TrimSuffix(strings.Repeat("?, ", n), ", ")
}
