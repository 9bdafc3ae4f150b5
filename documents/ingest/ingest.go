package ingest

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/trellis-ai/trellis/documents"
	"github.com/trellis-ai/trellis/internal/jobs"
	"github.com/trellis-ai/trellis/store"
)

// Config is what the service is built from; Store, Files and Queue are
// required (Queue after Register: see New).
type Config struct {
	// Store keeps documents' records, chunks and index.
	Store Record
	// Files keeps the uploaded bytes.
	Files documents.Storage
	// Summarizer summarises chunks and documents; nil is
	// documents.Extractive.
	Summarizer documents.Summarizer
	// MaxBytes is the largest file accepted. Default 1 MB (1,000,000).
	MaxBytes int64
	// MaxPerConversation is how many documents a conversation may hold.
	// Default 5.
	MaxPerConversation int
	// Chunks shapes chunks; the zero value is seed 002's.
	Chunks documents.ChunkConfig
	// Extract bounds extraction.
	Extract documents.Limits
	// SummaryConcurrency is how many summaries of one document run at
	// once. Default 5.
	SummaryConcurrency int
	// MaxExtractions is how many extractions (an upload's check, a job's
	// read) run at once in this process; the others wait for a slot.
	// Each may hold the file and up to Extract's decode budget (16 MiB
	// by default), so this bounds what a burst of uploads costs. Default
	// GOMAXPROCS: extraction is CPU work, and more at once would not
	// finish sooner.
	MaxExtractions int
	// StrandedAfter is how long after its record an upload still in
	// status uploading, with no processing job, counts as stranded by a
	// process that died mid-upload, for the periodic job to clear: well
	// past any upload request's end. Default 1 hour.
	StrandedAfter time.Duration
	// Logger; nil discards.
	Logger *slog.Logger
}

// Record is what the service needs of the store: documents, and
// deleting a conversation an upload created when the upload fails.
type Record interface {
	store.Documents
	DeleteConversation(ctx context.Context, userID, id string) error
}

// Service is the document service. Build it with New, register its job
// with Register before the queue opens, then Attach the queue.
type Service struct {
	cfg   Config
	queue *jobs.Queue
	log   *slog.Logger
	watch watchers
	// slots holds a token per extraction running (MaxExtractions).
	slots chan struct{}
}

// New returns the service; Attach a queue before uploading.
func New(cfg Config) (*Service, error) {
	if cfg.Store == nil || cfg.Files == nil {
		return nil, errors.New("ingest: a store and a file storage are required")
	}
	if cfg.Summarizer == nil {
		cfg.Summarizer = documents.Extractive{}
	}
	if cfg.MaxBytes <= 0 {
		cfg.MaxBytes = 1_000_000
	}
	if cfg.MaxPerConversation <= 0 {
		cfg.MaxPerConversation = 5
	}
	if cfg.SummaryConcurrency <= 0 {
		cfg.SummaryConcurrency = 5
	}
	if cfg.MaxExtractions <= 0 {
		cfg.MaxExtractions = runtime.GOMAXPROCS(0)
	}
	if cfg.StrandedAfter <= 0 {
		cfg.StrandedAfter = time.Hour
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if _, err := (documents.Text{}).Chunk(cfg.Chunks); err != nil {
		return nil, fmt.Errorf("ingest: %w", err)
	}
	return &Service{cfg: cfg, log: cfg.Logger, slots: make(chan struct{}, cfg.MaxExtractions)}, nil
}

// extract reads data's text in one of the MaxExtractions slots, waiting
// for one as long as ctx lets it.
func (s *Service) extract(ctx context.Context, data []byte, filename string) (documents.Text, error) {
	select {
	case s.slots <- struct{}{}:
	case <-ctx.Done():
		return documents.Text{}, fmt.Errorf("ingest: waiting to extract %s: %w", filename, ctx.Err())
	}
	defer func() { <-s.slots }()
	return documents.Extract(ctx, data, filename, s.cfg.Extract)
}

// MaxBytes is the largest file the service accepts.
func (s *Service) MaxBytes() int64 { return s.cfg.MaxBytes }

// processArgs is the processing job of one document.
type processArgs struct {
	DocumentID     string `json:"document_id"`
	ConversationID string `json:"conversation_id"`
}

func (processArgs) Kind() string { return "document_process" }

// clearArgs is the periodic job that clears stranded uploads.
type clearArgs struct{}

func (clearArgs) Kind() string { return "document_clear_stranded" }

// clearEvery is how often the stranded uploads are looked for.
const clearEvery = 15 * time.Minute

// Register registers the jobs' handlers on ws, before the queue is
// opened with them.
func (s *Service) Register(ws *jobs.Workers) {
	jobs.Handle(ws, s.process, jobs.HandleOptions{})
	jobs.Handle(ws, func(ctx context.Context, _ jobs.Job[clearArgs]) error {
		_, err := s.clearStranded(ctx)
		return err
	}, jobs.HandleOptions{})
}

// Periodic is the service's periodic job (clearing stranded uploads),
// for jobs.Config.
func (s *Service) Periodic() []jobs.Periodic {
	return []jobs.Periodic{{Every: clearEvery, Args: clearArgs{}, RunOnStart: true}}
}

// Attach gives the service the queue its jobs go to.
func (s *Service) Attach(q *jobs.Queue) { s.queue = q }

// Sentinel errors of uploads; the store's (ErrNotFound, ErrTooMany) and
// extraction's (documents.ErrUnsupported, ErrUnreadable, ErrEmpty) pass
// through too.
var (
	// ErrTooLarge: the file is over MaxBytes. HTTP 413.
	ErrTooLarge = errors.New("ingest: the file is too large")
)

// TooLarge is ErrTooLarge with the limit, for the message.
type TooLarge struct{ Limit int64 }

func (e *TooLarge) Error() string {
	return fmt.Sprintf("the file is larger than %d bytes, the most a document may be", e.Limit)
}

func (e *TooLarge) Unwrap() error { return ErrTooLarge }

// Upload is one file a user uploads.
type Upload struct {
	UserID string
	// ConversationID is the conversation; "" creates one.
	ConversationID string
	Filename       string
	Data           []byte
}

// Upload checks the file (size, sniffed type, readable text), then stores
// its record (status uploading), its bytes and its processing job, and
// returns the record; processing goes on as a job. The text is read in
// an extraction slot (MaxExtractions), which the upload waits for while
// ctx lasts. A refused upload stores nothing: a failure after the record
// was stored deletes it and the file again.
func (s *Service) Upload(ctx context.Context, u Upload) (store.Document, error) {
	if s.queue == nil {
		return store.Document{}, errors.New("ingest: no queue attached")
	}
	if int64(len(u.Data)) > s.cfg.MaxBytes {
		return store.Document{}, &TooLarge{Limit: s.cfg.MaxBytes}
	}
	name := cleanName(u.Filename)
	text, err := s.extract(ctx, u.Data, name)
	if err != nil {
		return store.Document{}, err
	}
	d, err := s.cfg.Store.CreateDocument(ctx, store.NewDocument{UserID: u.UserID, ConversationID: u.ConversationID,
		Filename: name, ContentType: string(text.Type), SizeBytes: int64(len(u.Data)), MaxPerConversation: s.cfg.MaxPerConversation})
	if err != nil {
		return store.Document{}, err
	}
	key := documents.Key{User: d.UserID, Conversation: d.ConversationID, Document: d.ID, Name: documents.Original}.String()
	err = s.cfg.Files.Put(ctx, key, u.Data)
	if err == nil {
		// Told before the job is queued: the job's first change may be
		// stored at once, and a stream passes over a status that comes
		// after a later one, so told after it, uploading went unsaid.
		s.published(d)
		_, err = s.queue.Enqueue(ctx, processArgs{DocumentID: d.ID, ConversationID: d.ConversationID}, jobs.EnqueueOptions{Unique: true})
		if err != nil {
			failed := d
			failed.Status, failed.Error = store.DocError, "the upload could not be queued for processing"
			s.published(failed)
		}
	}
	if err != nil {
		// Undo, so a refused upload leaves nothing; past the request's
		// context, which may be what failed.
		undo := context.WithoutCancel(ctx)
		s.cfg.Store.DeleteDocument(undo, d.UserID, d.ConversationID, d.ID)
		s.cfg.Files.Delete(undo, key)
		if u.ConversationID == "" { // the upload made it
			s.cfg.Store.DeleteConversation(undo, d.UserID, d.ConversationID)
		}
		return store.Document{}, fmt.Errorf("ingest: store the upload: %w", err)
	}
	return d, nil
}

// clearStranded deletes the uploads that a process killed between their
// record and their processing job left in status uploading (Upload
// undoes a failure it lives through; a kill it cannot): their records,
// chunks and files, as Delete does. One whose job exists is processing's
// to finish, however late. It returns how many it cleared.
func (s *Service) clearStranded(ctx context.Context) (int, error) {
	const batch = 100
	n := 0
	for {
		ds, err := s.cfg.Store.StrandedUploads(ctx, time.Now().Add(-s.cfg.StrandedAfter), batch)
		if err != nil {
			return n, fmt.Errorf("ingest: clear stranded uploads: %w", err)
		}
		kept := 0
		for _, d := range ds {
			_, err := s.queue.Newest(ctx, processArgs{}.Kind(), "document_id", d.ID)
			switch {
			case err == nil:
				kept++
				continue
			case !errors.Is(err, jobs.ErrNotFound):
				return n, fmt.Errorf("ingest: clear stranded upload %s: %w", d.ID, err)
			}
			if err := s.Delete(ctx, d.UserID, d.ConversationID, d.ID); err != nil && !errors.Is(err, store.ErrNotFound) {
				return n, fmt.Errorf("ingest: clear stranded upload %s: %w", d.ID, err)
			}
			n++
			s.log.LogAttrs(ctx, slog.LevelWarn, "cleared an upload its process left unfinished", slog.String("document_id", d.ID),
				slog.String("conversation_id", d.ConversationID), slog.Time("created_at", d.CreatedAt))
		}
		if len(ds) < batch || kept == len(ds) {
			return n, nil
		}
	}
}

// cleanName keeps a file name's last path element, without control
// characters, at most 255 bytes; "document" when nothing is left.
func cleanName(name string) string {
	if i := strings.LastIndexAny(name, `/\`); i >= 0 {
		name = name[i+1:]
	}
	name = strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f {
			return -1
		}
		return r
	}, strings.ToValidUTF8(name, ""))
	name = strings.TrimSpace(name)
	for len(name) > 255 {
		name = strings.ToValidUTF8(name[:255], "")
	}
	if name == "" || name == "." || name == ".." {
		return "document"
	}
	return name
}

// List returns a page of the conversation's documents, oldest first.
func (s *Service) List(ctx context.Context, userID, conversationID string, page store.Page) (store.DocumentPage, error) {
	return s.cfg.Store.ListDocuments(ctx, userID, conversationID, page)
}

// All returns every document of the conversation (see
// store.AllDocuments).
func (s *Service) All(ctx context.Context, userID, conversationID string) ([]store.Document, error) {
	return store.AllDocuments(ctx, s.cfg.Store, userID, conversationID)
}

// Get returns one document's record.
func (s *Service) Get(ctx context.Context, userID, conversationID, id string) (store.Document, error) {
	return s.cfg.Store.GetDocument(ctx, userID, conversationID, id)
}

// Content returns the document's record and its original bytes.
func (s *Service) Content(ctx context.Context, userID, conversationID, id string) (store.Document, []byte, error) {
	d, err := s.cfg.Store.GetDocument(ctx, userID, conversationID, id)
	if err != nil {
		return store.Document{}, nil, err
	}
	data, err := s.cfg.Files.Get(ctx, documents.Key{User: d.UserID, Conversation: d.ConversationID, Document: d.ID, Name: documents.Original}.String())
	if err != nil {
		return store.Document{}, nil, fmt.Errorf("ingest: content of %s: %w", id, err)
	}
	return d, data, nil
}

// Delete deletes the document's record, chunks and index rows, its
// processing job if it has not finished, then its files. A job the cancel
// misses (it was being taken at that moment) finds the record gone and
// ends without doing anything.
func (s *Service) Delete(ctx context.Context, userID, conversationID, id string) error {
	d, err := s.cfg.Store.DeleteDocument(ctx, userID, conversationID, id)
	if err != nil {
		return err
	}
	s.cancelJobs(ctx, "document_id", d.ID)
	prefix, err := documents.DocumentPrefix(d.UserID, d.ConversationID, d.ID)
	if err == nil {
		err = documents.DeletePrefix(ctx, s.cfg.Files, prefix)
	}
	if err != nil {
		return fmt.Errorf("ingest: delete the files of %s: %w", id, err)
	}
	return nil
}

// DeleteConversationFiles deletes the processing jobs and the files of a
// conversation's documents, after the conversation's record is deleted
// (which takes its documents' rows with it).
func (s *Service) DeleteConversationFiles(ctx context.Context, userID, conversationID string) error {
	s.cancelJobs(ctx, "conversation_id", conversationID)
	prefix, err := documents.ConversationPrefix(userID, conversationID)
	if err == nil {
		err = documents.DeletePrefix(ctx, s.cfg.Files, prefix)
	}
	if err != nil {
		return fmt.Errorf("ingest: delete the files of conversation %s: %w", conversationID, err)
	}
	return nil
}

// Files is the file store the documents' bytes are kept in, which the
// agent's workspace shares (package documents/workspace).
func (s *Service) Files() documents.Storage { return s.cfg.Files }

// DeleteUserFiles deletes every file of the user's, for erasing the user
// once their conversations are gone: files a crash left behind after
// their records went are among them.
func (s *Service) DeleteUserFiles(ctx context.Context, userID string) error {
	prefix, err := documents.UserPrefix(userID)
	if err == nil {
		err = documents.DeletePrefix(ctx, s.cfg.Files, prefix)
	}
	if err != nil {
		return fmt.Errorf("ingest: delete the files of user %s: %w", userID, err)
	}
	return nil
}

// cancelJobs cancels the processing jobs whose field is value. A failure
// is logged: such a job finds its record gone and ends on its own.
func (s *Service) cancelJobs(ctx context.Context, field, value string) {
	if s.queue == nil {
		return
	}
	if _, err := s.queue.CancelMatching(ctx, processArgs{}.Kind(), field, value); err != nil {
		s.log.LogAttrs(ctx, slog.LevelWarn, "cannot cancel processing jobs", slog.String(field, value), slog.String("error", err.Error()))
	}
}

// process is the processing job: every step can run again (a retry, or a
// crash's rescue) and leaves the same result. A document deleted
// meanwhile ends the job quietly. The last attempt's failure is recorded
// as the document's error.
func (s *Service) process(ctx context.Context, j jobs.Job[processArgs]) error {
	err := s.processDocument(ctx, j.Args.DocumentID)
	switch {
	case err == nil, errors.Is(err, store.ErrNotFound):
		return nil
	case errors.Is(err, documents.ErrUnsupported), errors.Is(err, documents.ErrUnreadable), errors.Is(err, documents.ErrEmpty),
		errors.Is(err, documents.ErrDecrypt), errors.Is(err, documents.ErrNotExist):
		s.fail(ctx, j.Args.DocumentID, err)
		return jobs.Permanent(err)
	}
	if j.Attempt >= j.MaxAttempts {
		s.fail(ctx, j.Args.DocumentID, err)
	}
	s.log.LogAttrs(ctx, slog.LevelWarn, "document processing failed", slog.String("document_id", j.Args.DocumentID),
		slog.Int("attempt", j.Attempt), slog.String("error", err.Error()))
	return err
}

// fail records why processing failed.
func (s *Service) fail(ctx context.Context, id string, cause error) {
	ctx = context.WithoutCancel(ctx)
	d, err := s.cfg.Store.SetDocumentStatus(ctx, id, store.DocError, cause.Error())
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		s.log.LogAttrs(ctx, slog.LevelError, "cannot record a document's failure", slog.String("document_id", id), slog.String("error", err.Error()))
	}
	if err == nil {
		s.published(d)
	}
}

func (s *Service) processDocument(ctx context.Context, id string) error {
	d, err := s.cfg.Store.LookupDocument(ctx, id)
	if err != nil {
		return err
	}
	if d.Status == store.DocReady {
		return nil
	}
	// Chunks just stored are summarised as they are; a resumed document's
	// are read back, with the summaries an earlier attempt made.
	var chunks []store.DocumentChunk
	if d.Status != store.DocSummarizing || d.Chunks == 0 {
		chunks, err = s.chunk(ctx, d)
	} else {
		chunks, err = s.cfg.Store.DocumentChunks(ctx, d.UserID, d.ID, nil)
	}
	if err != nil {
		return err
	}
	return s.summarize(ctx, d, chunks)
}

// chunk extracts the file's text, cuts it and stores the chunks (their
// index rows with them), then moves the document to summarizing. It
// returns the chunks as stored.
func (s *Service) chunk(ctx context.Context, d store.Document) ([]store.DocumentChunk, error) {
	if err := s.setStatus(ctx, d.ID, store.DocChunking); err != nil {
		return nil, err
	}
	data, err := s.cfg.Files.Get(ctx, documents.Key{User: d.UserID, Conversation: d.ConversationID, Document: d.ID, Name: documents.Original}.String())
	if err != nil {
		return nil, err
	}
	text, err := s.extract(ctx, data, d.Filename)
	if err != nil {
		return nil, err
	}
	cut, err := text.Chunk(s.cfg.Chunks)
	if err != nil {
		return nil, err
	}
	chunks := make([]store.NewChunk, len(cut.Chunks))
	stored := make([]store.DocumentChunk, len(cut.Chunks))
	for i, c := range cut.Chunks {
		chunks[i] = store.NewChunk{Index: c.Index, Start: c.Start, End: c.End, Page: c.Page, LastPage: c.LastPage, Text: c.Text}
		stored[i] = store.DocumentChunk{DocumentID: d.ID, Index: c.Index, Start: c.Start, End: c.End, Page: c.Page, LastPage: c.LastPage, Text: c.Text}
	}
	if err := s.cfg.Store.PutChunks(ctx, d.ID, chunks, cut.Omitted); err != nil {
		return nil, err
	}
	if err := s.setStatus(ctx, d.ID, store.DocSummarizing); err != nil {
		return nil, err
	}
	return stored, nil
}

// setStatus stores the document's new status and tells the watchers.
func (s *Service) setStatus(ctx context.Context, id string, status store.DocumentStatus) error {
	d, err := s.cfg.Store.SetDocumentStatus(ctx, id, status, "")
	if err == nil {
		s.published(d)
	}
	return err
}

// summarize summarises the chunks not summarised yet (a retry does only
// what is left), SummaryConcurrency at a time, then the document, and
// makes it ready.
func (s *Service) summarize(ctx context.Context, d store.Document, chunks []store.DocumentChunk) error {
	// Every missing summary is tried, SummaryConcurrency at a time;
	// those made are stored together, also when others failed, so a
	// retry asks only for the rest.
	summaries := make([]string, len(chunks))
	made := map[int]string{}
	var (
		mu    sync.Mutex
		wg    sync.WaitGroup
		errs  []error
		slots = make(chan struct{}, s.cfg.SummaryConcurrency)
	)
	for i, c := range chunks {
		if c.Summary != "" {
			summaries[i] = c.Summary
			continue
		}
		slots <- struct{}{}
		wg.Go(func() {
			defer func() { <-slots }()
			sum, err := s.cfg.Summarizer.SummarizeChunk(ctx, c.Text)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				errs = append(errs, fmt.Errorf("summarise chunk %d: %w", c.Index, err))
				return
			}
			summaries[i], made[c.Index] = sum, sum
		})
	}
	wg.Wait()
	if len(made) > 0 {
		if err := s.cfg.Store.SetChunkSummaries(ctx, d.ID, made); err != nil {
			return err
		}
	}
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	var text strings.Builder
	if len(chunks) > 0 {
		text.Grow(chunks[len(chunks)-1].End)
	}
	for i, c := range chunks {
		// The chunks overlap: each adds what follows the one before.
		// Offsets count characters, so the overlap is skipped by runes.
		rest := c.Text
		if i > 0 {
			if skip := chunks[i-1].End - c.Start; skip > 0 {
				rest = skipRunes(c.Text, skip)
			}
		}
		text.WriteString(rest)
	}
	sum, err := s.cfg.Summarizer.SummarizeDocument(ctx, d.Filename, text.String(), summaries)
	if err != nil {
		return fmt.Errorf("summarise the document: %w", err)
	}
	done, err := s.cfg.Store.FinishDocument(ctx, d.ID, sum)
	if err == nil {
		s.published(done)
	}
	return err
}

// skipRunes is s without its first n characters, or s whole when it has
// fewer than n (offsets that do not line up are not trusted to cut).
func skipRunes(s string, n int) string {
	i := 0
	for range n {
		if i >= len(s) {
			return s
		}
		_, size := utf8.DecodeRuneInString(s[i:])
		i += size
	}
	return s[i:]
}
