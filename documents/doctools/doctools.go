package doctools

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/trellis-ai/trellis/operators"
	"github.com/trellis-ai/trellis/store"
)

// Store is what the tools read of the record.
type Store interface {
	store.DocumentLister
	GetDocument(ctx context.Context, userID, conversationID, id string) (store.Document, error)
	DocumentChunks(ctx context.Context, userID, id string, indexes []int) ([]store.DocumentChunk, error)
	SearchChunks(ctx context.Context, q store.ChunkQuery) ([]store.ChunkHit, error)
}

// Config is what the tools are built from; Store is required.
type Config struct {
	Store Store
	// Wait is how long load_document waits for a document still being
	// processed. Default 30 s.
	Wait time.Duration
	// Poll is how often it looks again while waiting. Default 250 ms.
	Poll time.Duration
	// MaxChars is the most characters of document text one call returns
	// (at least one chunk's worth is always returned). Default 24,000.
	MaxChars int
}

// Limits of search_documents' limit.
const (
	DefaultSearchLimit = 5
	MaxSearchLimit     = 20
	// MaxLoadChunks is the most chunks load_document names or reads.
	MaxLoadChunks = 50
)

// New returns the three tools.
func New(cfg Config) []operators.Tool {
	if cfg.Wait <= 0 {
		cfg.Wait = 30 * time.Second
	}
	if cfg.Poll <= 0 {
		cfg.Poll = 250 * time.Millisecond
	}
	if cfg.MaxChars <= 0 {
		cfg.MaxChars = 24_000
	}
	t := &tools{cfg: cfg}
	return []operators.Tool{t.list(), t.search(), t.load()}
}

type tools struct{ cfg Config }

// errNoConversation is a call outside a conversation (over MCP, say).
var errNoConversation = errors.New("documents belong to a conversation, and this call has none")

// scoped is fn for calls inside a conversation; any other call fails
// with errNoConversation.
func scoped[In any](fn operators.ToolFunc[In]) operators.ToolFunc[In] {
	return func(ctx context.Context, call operators.Call, in In) (operators.Result, error) {
		if call.ConversationID == "" || call.UserID == "" {
			return operators.Result{}, errNoConversation
		}
		return fn(ctx, call, in)
	}
}

// inScope reports whether the call may see document id: every document
// of its conversation, or only those the chat request named.
func inScope(call operators.Call, id string) bool {
	return len(call.DocumentIDs) == 0 || slices.Contains(call.DocumentIDs, id)
}

// searchScope is the documents a search looks in: those asked for,
// within the call's scope; ok is false when none of them is in it.
func searchScope(call operators.Call, asked []string) (ids []string, ok bool) {
	if len(asked) == 0 {
		return call.DocumentIDs, true
	}
	for _, id := range asked {
		if inScope(call, id) {
			ids = append(ids, id)
		}
	}
	return ids, len(ids) > 0
}

// chunk is a passage as a citable data chunk.
func (p passage) chunk() operators.DataChunk {
	return operators.DataChunk{Source: fmt.Sprintf("document %s, chunk %d", p.DocumentID, p.Chunk), Title: p.Filename, Text: p.Text,
		Document: &operators.DocumentSpan{DocumentID: p.DocumentID, Filename: p.Filename, Chunk: p.Chunk, Start: p.Start, End: p.End}}
}

// notFound says the same of an unknown document and another's.
func notFound(id string) error {
	return fmt.Errorf("no document %q in this conversation: list_documents gives the ids", id)
}

// docItem is list_documents' item.
type docItem struct {
	ID           string `json:"document_id"`
	Filename     string `json:"filename"`
	Status       string `json:"status"`
	Error        string `json:"error,omitempty"`
	Summary      string `json:"summary,omitempty"`
	Chunks       int    `json:"chunks"`
	OmittedChars int    `json:"omitted_chars,omitempty"`
}

type listInput struct{}

func (t *tools) list() operators.Tool {
	return operators.NewTool("list_documents",
		"Lists the documents uploaded to this conversation: id, file name, processing status (uploading, chunking, summarizing, ready, error), summary and how many chunks each has.",
		scoped(func(ctx context.Context, call operators.Call, _ listInput) (operators.Result, error) {
			docs, err := store.AllDocuments(ctx, t.cfg.Store, call.UserID, call.ConversationID)
			if errors.Is(err, store.ErrNotFound) {
				docs, err = nil, nil // a conversation not stored yet has none
			}
			if err != nil {
				return operators.Result{}, err
			}
			items := make([]docItem, 0, len(docs))
			for _, d := range docs {
				if !inScope(call, d.ID) {
					continue
				}
				items = append(items, docItem{ID: d.ID, Filename: d.Filename, Status: string(d.Status), Error: d.Error,
					Summary: d.Summary, Chunks: d.Chunks, OmittedChars: d.OmittedChars})
			}
			return jsonResult(map[string]any{"documents": items})
		}), operators.ReadOnly(), operators.WithOutputTypes(operators.OutputJSON))
}

// searchInput is search_documents' arguments.
type searchInput struct {
	Query       string   `json:"query" jsonschema:"what to look for, in words; chunks matching more of them, and rarer ones, rank higher"`
	DocumentIDs []string `json:"document_ids,omitempty" jsonschema:"search only these documents (ids from list_documents); all of the conversation's when absent"`
	Limit       int      `json:"limit,omitempty" jsonschema:"the most chunks to return; default 5, at most 20"`
}

// passage is a chunk a tool returns: where it is in its document
// (character offsets [start, end), pages of a PDF) and its text.
type passage struct {
	DocumentID string `json:"document_id"`
	Filename   string `json:"filename,omitempty"`
	Chunk      int    `json:"chunk"`
	Start      int    `json:"start"`
	End        int    `json:"end"`
	Page       int    `json:"page,omitempty"`
	LastPage   int    `json:"last_page,omitempty"`
	Text       string `json:"text"`
}

func (t *tools) search() operators.Tool {
	return operators.NewTool("search_documents",
		"Searches the text of this conversation's documents and returns the best-matching passages, best first, each with its document id, file name, chunk number, character offsets and (for a PDF) pages.",
		scoped(func(ctx context.Context, call operators.Call, in searchInput) (operators.Result, error) {
			limit := in.Limit
			if limit <= 0 {
				limit = DefaultSearchLimit
			}
			limit = min(limit, MaxSearchLimit)
			ids, ok := searchScope(call, in.DocumentIDs)
			var hits []store.ChunkHit
			if ok {
				var err error
				hits, err = t.cfg.Store.SearchChunks(ctx, store.ChunkQuery{UserID: call.UserID, ConversationID: call.ConversationID,
					DocumentIDs: ids, Query: in.Query, Limit: limit})
				if err != nil {
					return operators.Result{}, err
				}
			}
			out := make([]passage, 0, len(hits))
			budget, cut := t.cfg.MaxChars, 0
			for _, h := range hits {
				n := len([]rune(h.Text))
				if len(out) > 0 && n > budget {
					cut = len(hits) - len(out)
					break
				}
				budget -= n
				out = append(out, passage{DocumentID: h.DocumentID, Filename: h.Filename, Chunk: h.Index, Start: h.Start, End: h.End,
					Page: h.Page, LastPage: h.LastPage, Text: h.Text})
			}
			if !ok {
				res := map[string]any{"query": in.Query, "results": out,
					"note": "none of these documents is among those this message is about"}
				return jsonResult(res)
			}
			res := map[string]any{"query": in.Query, "results": out}
			if cut > 0 {
				res["left_out"] = cut
			}
			if len(out) == 0 {
				res["note"] = t.pendingNote(ctx, call)
			}
			return withChunks(jsonResult(res))(out)
		}), operators.ReadOnly(), operators.WithOutputTypes(operators.OutputJSON),
		operators.WithSchema(func(s *jsonschema.Schema) {
			if p := s.Properties["limit"]; p != nil {
				p.Minimum, p.Maximum = ptr(0.0), ptr(float64(MaxSearchLimit))
			}
			if p := s.Properties["query"]; p != nil {
				p.MinLength = ptr(1)
			}
		}))
}

// pendingNote explains an empty search: no documents, or some still
// processing.
func (t *tools) pendingNote(ctx context.Context, call operators.Call) string {
	docs, _ := store.AllDocuments(ctx, t.cfg.Store, call.UserID, call.ConversationID)
	if len(docs) == 0 {
		return "this conversation has no documents"
	}
	for _, d := range docs {
		if d.Status != store.DocReady && d.Status != store.DocError {
			return "nothing matched; some documents are still being processed (list_documents tells which)"
		}
	}
	return "nothing matched"
}

// loadInput is load_document's arguments.
type loadInput struct {
	DocumentID string `json:"document_id" jsonschema:"the document's id, from list_documents or search_documents"`
	Chunks     []int  `json:"chunks,omitempty" jsonschema:"return only these chunks, by number (from 0)"`
	FromChunk  int    `json:"from_chunk,omitempty" jsonschema:"without chunks: read the text on from this chunk (the next_chunk of an earlier call); default 0"`
}

func (t *tools) load() operators.Tool {
	return operators.NewTool("load_document",
		"Reads a document of this conversation: its whole text, page by page of chunks (a long one takes several calls: pass next_chunk back as from_chunk), or only the chunks named. Waits up to 30 s for a document still being processed.",
		scoped(func(ctx context.Context, call operators.Call, in loadInput) (operators.Result, error) {
			if !inScope(call, in.DocumentID) {
				return operators.Result{}, notFound(in.DocumentID)
			}
			d, err := t.waitReadable(ctx, call, in.DocumentID)
			if err != nil {
				return operators.Result{}, err
			}
			if len(in.Chunks) > 0 {
				return t.loadChunks(ctx, call, d, in.Chunks)
			}
			return t.loadText(ctx, call, d, in.FromChunk)
		}), operators.ReadOnly(), operators.WithOutputTypes(operators.OutputJSON),
		operators.WithSchema(func(s *jsonschema.Schema) {
			if p := s.Properties["chunks"]; p != nil {
				p.MaxItems = ptr(MaxLoadChunks)
				if p.Items != nil {
					p.Items.Minimum = ptr(0.0)
				}
			}
			if p := s.Properties["from_chunk"]; p != nil {
				p.Minimum = ptr(0.0)
			}
			if p := s.Properties["document_id"]; p != nil {
				p.MinLength = ptr(1)
			}
		}))
}

// waitReadable returns the document once its chunks are stored (it is
// summarizing or ready), waiting up to Wait for one still processing.
func (t *tools) waitReadable(parent context.Context, call operators.Call, id string) (store.Document, error) {
	ctx, cancel := context.WithTimeout(parent, t.cfg.Wait)
	defer cancel()
	var status store.DocumentStatus
	for {
		d, err := t.cfg.Store.GetDocument(ctx, call.UserID, call.ConversationID, id)
		switch {
		case errors.Is(err, store.ErrNotFound):
			return store.Document{}, notFound(id)
		case err != nil && ctx.Err() == nil:
			return store.Document{}, err
		case err == nil:
			switch d.Status {
			case store.DocReady, store.DocSummarizing:
				return d, nil
			case store.DocError:
				return store.Document{}, fmt.Errorf("document %q (%s) could not be processed: %s", id, d.Filename, d.Error)
			}
			status = d.Status
			select {
			case <-ctx.Done():
			case <-time.After(t.cfg.Poll):
				continue
			}
		}
		// The wait is over: the call's own context ended, or Wait.
		if err := parent.Err(); err != nil {
			return store.Document{}, err
		}
		if status == "" {
			return store.Document{}, fmt.Errorf("document %q could not be read within %s; try again shortly", id, t.cfg.Wait)
		}
		return store.Document{}, fmt.Errorf("document %q is still being processed (%s) after %s; try again shortly", id, status, t.cfg.Wait)
	}
}

// loadChunks returns the chunks named, within the character budget.
func (t *tools) loadChunks(ctx context.Context, call operators.Call, d store.Document, want []int) (operators.Result, error) {
	chunks, err := t.cfg.Store.DocumentChunks(ctx, call.UserID, d.ID, want)
	if errors.Is(err, store.ErrNotFound) {
		return operators.Result{}, notFound(d.ID)
	}
	if err != nil {
		return operators.Result{}, err
	}
	out := make([]passage, 0, len(chunks))
	budget := t.cfg.MaxChars
	var left []int
	for _, c := range chunks {
		n := len([]rune(c.Text))
		if len(out) > 0 && n > budget {
			left = append(left, c.Index)
			continue
		}
		budget -= n
		out = append(out, passage{DocumentID: d.ID, Filename: d.Filename, Chunk: c.Index, Start: c.Start, End: c.End, Page: c.Page, LastPage: c.LastPage, Text: c.Text})
	}
	res := map[string]any{"document_id": d.ID, "filename": d.Filename, "status": d.Status, "total_chunks": d.Chunks, "chunks": out}
	if len(left) > 0 {
		res["left_out"] = left
		res["note"] = "too much text for one call: ask for the chunks left out in another"
	}
	if len(chunks) < len(want) {
		res["unknown_chunks"] = fmt.Sprintf("the document has chunks 0 to %d", d.Chunks-1)
	}
	return withChunks(jsonResult(res))(out)
}

// loadText returns the document's text from chunk from on, the chunks'
// overlaps removed, within the character budget.
func (t *tools) loadText(ctx context.Context, call operators.Call, d store.Document, from int) (operators.Result, error) {
	if d.Chunks == 0 {
		return jsonResult(map[string]any{"document_id": d.ID, "filename": d.Filename, "status": d.Status, "total_chunks": 0, "text": ""})
	}
	if from >= d.Chunks {
		return operators.Result{}, fmt.Errorf("document %q has chunks 0 to %d", d.ID, d.Chunks-1)
	}
	// The chunk before from tells where the text an earlier call
	// returned ends: this call's text begins there, without the overlap.
	idx := make([]int, 0, MaxLoadChunks+1)
	for i := max(from-1, 0); i < d.Chunks && len(idx) <= MaxLoadChunks; i++ {
		idx = append(idx, i)
	}
	chunks, err := t.cfg.Store.DocumentChunks(ctx, call.UserID, d.ID, idx)
	if errors.Is(err, store.ErrNotFound) {
		return operators.Result{}, notFound(d.ID)
	}
	if err != nil {
		return operators.Result{}, err
	}
	var text []rune
	var read []passage
	start, end, last := -1, 0, from-1
	budget := t.cfg.MaxChars
	for _, c := range chunks {
		if c.Index < from {
			end = c.End
			continue
		}
		r := []rune(c.Text)
		if c.Start < end { // the overlap with the text before
			r = r[min(end-c.Start, len(r)):]
		}
		if start >= 0 && len(r) > budget {
			break
		}
		if start < 0 {
			start = max(c.Start, end)
		}
		text = append(text, r...)
		read = append(read, passage{DocumentID: d.ID, Filename: d.Filename, Chunk: c.Index, Start: c.Start, End: c.End, Text: c.Text})
		budget -= len(r)
		end, last = c.End, c.Index
	}
	res := map[string]any{"document_id": d.ID, "filename": d.Filename, "status": d.Status, "total_chunks": d.Chunks,
		"from_chunk": from, "to_chunk": last, "start": start, "end": end, "text": string(text)}
	if last+1 < d.Chunks {
		res["next_chunk"] = last + 1
		res["note"] = "more text follows: call again with from_chunk set to next_chunk"
	} else if d.OmittedChars > 0 {
		res["omitted_chars"] = d.OmittedChars
		res["note"] = "the end of the document was not kept (it is longer than the chunk limit)"
	}
	return withChunks(jsonResult(res))(read)
}

func jsonResult(v any) (operators.Result, error) {
	c, err := operators.JSONContent(v)
	if err != nil {
		return operators.Result{}, err
	}
	return operators.Result{Status: operators.StatusSuccess, Contents: []operators.Content{c}}, nil
}

// withChunks adds the passages a result holds as its citable chunks.
func withChunks(res operators.Result, err error) func([]passage) (operators.Result, error) {
	return func(ps []passage) (operators.Result, error) {
		if err != nil {
			return res, err
		}
		for _, p := range ps {
			res.Chunks = append(res.Chunks, p.chunk())
		}
		return res, nil
	}
}

func ptr[T any](v T) *T { return &v }
