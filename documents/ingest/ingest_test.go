package ingest_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"runtime"
	"runtime/metrics"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/trellis-ai/trellis/documents"
	"github.com/trellis-ai/trellis/documents/ingest"
	"github.com/trellis-ai/trellis/documents/ingest/ingesttest"
	"github.com/trellis-ai/trellis/internal/jobs"
	"github.com/trellis-ai/trellis/internal/pdfmake"
	"github.com/trellis-ai/trellis/store"
)

func TestUploadProcessDelete(t *testing.T) {
	md, err := os.ReadFile("../testdata/handbook.md")
	if err != nil {
		t.Fatal(err)
	}
	pdf, err := os.ReadFile("../testdata/handbook.pdf")
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range ingesttest.Backends {
		t.Run(b, func(t *testing.T) {
			r := ingesttest.New(t, b, ingest.Config{}, jobs.Config{})
			ctx := t.Context()
			d, err := r.Svc.Upload(ctx, ingest.Upload{UserID: "alice", Filename: "../../handbook.md", Data: md})
			if err != nil {
				t.Fatal(err)
			}
			if d.Status != store.DocUploading || d.Filename != "handbook.md" || d.ContentType != "text/markdown" || d.SizeBytes != int64(len(md)) || d.ConversationID == "" {
				t.Fatalf("upload answered %+v", d)
			}
			ready := ingesttest.WaitStatus(t, r.Svc, d, store.DocReady)
			if ready.Chunks != 1 || !strings.HasPrefix(ready.Summary, "Sections: Field guide") {
				t.Fatalf("ready %+v", ready)
			}
			p, err := r.Svc.Upload(ctx, ingest.Upload{UserID: "alice", ConversationID: d.ConversationID, Filename: "handbook.pdf", Data: pdf})
			if err != nil {
				t.Fatal(err)
			}
			ingesttest.WaitStatus(t, r.Svc, p, store.DocReady)
			hits, err := r.Store.SearchChunks(ctx, store.ChunkQuery{UserID: "alice", ConversationID: d.ConversationID, Query: "what is the office plant named"})
			if err != nil || len(hits) == 0 || hits[0].DocumentID != p.ID || hits[0].Page != 1 || hits[0].LastPage != 2 {
				t.Fatalf("search: %+v, %v", hits, err)
			}
			hits, _ = r.Store.SearchChunks(ctx, store.ChunkQuery{UserID: "alice", Query: "Bertha descaling"})
			if len(hits) == 0 || hits[0].DocumentID != d.ID || hits[0].Summary == "" {
				t.Fatalf("search for the coffee machine: %+v", hits)
			}
			_, content, err := r.Svc.Content(ctx, "alice", d.ConversationID, d.ID)
			if err != nil || string(content) != string(md) {
				t.Fatalf("content: %d bytes, %v", len(content), err)
			}
			if _, _, err := r.Svc.Content(ctx, "bob", d.ConversationID, d.ID); !errors.Is(err, store.ErrNotFound) {
				t.Fatalf("bob's content: %v", err)
			}
			if err := r.Svc.Delete(ctx, "alice", d.ConversationID, d.ID); err != nil {
				t.Fatal(err)
			}
			if keys, _ := r.Files.List(ctx, "user/alice/"); len(keys) != 1 {
				t.Fatalf("files after deleting one of two: %v", keys)
			}
			if err := r.Store.DeleteConversation(ctx, "alice", d.ConversationID); err != nil {
				t.Fatal(err)
			}
			if err := r.Svc.DeleteConversationFiles(ctx, "alice", d.ConversationID); err != nil {
				t.Fatal(err)
			}
			if keys, _ := r.Files.List(ctx, ""); len(keys) != 0 {
				t.Fatalf("files after deleting the conversation: %v", keys)
			}
		})
	}
}

func TestRefusedUploadsStoreNothing(t *testing.T) {
	bomb := pdfmake.Make([]pdfmake.Page{{"boom"}}, pdfmake.Options{Flate: true, Padding: 64 << 20})
	r := ingesttest.New(t, "sqlite", ingest.Config{MaxBytes: 500_000, MaxPerConversation: 1, Extract: documents.Limits{MaxDecodedBytes: 8 << 20}}, jobs.Config{})
	ctx := t.Context()
	first, err := r.Svc.Upload(ctx, ingest.Upload{UserID: "alice", Filename: "a.txt", Data: []byte("first")})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		u    ingest.Upload
		want error
	}{
		{"empty", ingest.Upload{Filename: "e.txt"}, documents.ErrEmpty},
		{"too big", ingest.Upload{Filename: "big.txt", Data: []byte(strings.Repeat("x", 500_001))}, ingest.ErrTooLarge},
		{"wrong type", ingest.Upload{Filename: "x.zip", Data: []byte("PK\x03\x04\x14\x00\x00\x00\x08\x00")}, documents.ErrUnsupported},
		{"claims pdf", ingest.Upload{Filename: "x.pdf", Data: []byte("\x00\x01\x02binary")}, documents.ErrUnreadable},
		{"text named pdf", ingest.Upload{Filename: "x.pdf", Data: []byte("plain words")}, documents.ErrUnreadable},
		{"broken pdf", ingest.Upload{Filename: "x.pdf", Data: []byte("%PDF-1.7\nnot really")}, documents.ErrUnreadable},
		{"bomb", ingest.Upload{Filename: "bomb.pdf", Data: bomb}, documents.ErrUnreadable},
		{"over the limit", ingest.Upload{ConversationID: first.ConversationID, Filename: "b.txt", Data: []byte("second")}, store.ErrTooMany},
		{"another user's conversation", ingest.Upload{UserID: "bob", ConversationID: first.ConversationID, Filename: "b.txt", Data: []byte("x")}, store.ErrNotFound},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.u.UserID == "" {
				tc.u.UserID = "alice"
			}
			if _, err := r.Svc.Upload(ctx, tc.u); !errors.Is(err, tc.want) {
				t.Fatalf("Upload: %v, want %v", err, tc.want)
			}
		})
	}
	if keys, _ := r.Files.List(ctx, ""); len(keys) != 1 {
		t.Fatalf("files after refusals: %v", keys)
	}
	if list, _ := r.Svc.All(ctx, "alice", first.ConversationID); len(list) != 1 {
		t.Fatalf("documents after refusals: %+v", list)
	}
}

// flaky fails its first chunk summaries, then works; or always, when
// broken.
type flaky struct {
	fails  atomic.Int64
	broken bool
}

func (f *flaky) SummarizeChunk(ctx context.Context, text string) (string, error) {
	if f.broken || f.fails.Add(1) <= 2 {
		return "", errors.New("model overloaded")
	}
	return documents.Extractive{}.SummarizeChunk(ctx, text)
}

func (f *flaky) SummarizeDocument(ctx context.Context, name, text string, sums []string) (string, error) {
	return documents.Extractive{}.SummarizeDocument(ctx, name, text, sums)
}

func TestSummaryRetriedThenError(t *testing.T) {
	ctx := t.Context()
	r := ingesttest.New(t, "sqlite", ingest.Config{Summarizer: &flaky{}}, jobs.Config{})
	d, err := r.Svc.Upload(ctx, ingest.Upload{UserID: "alice", Filename: "a.md", Data: []byte("# A\n\nsome text")})
	if err != nil {
		t.Fatal(err)
	}
	// Attempts 1 and 2 fail, after 1 s and 2 s of backoff the third works.
	if got := ingesttest.WaitStatus(t, r.Svc, d, store.DocReady); got.Summary == "" {
		t.Fatalf("ready without a summary: %+v", got)
	}

	r = ingesttest.New(t, "sqlite", ingest.Config{Summarizer: &flaky{broken: true}}, jobs.Config{MaxAttempts: 2})
	d, err = r.Svc.Upload(ctx, ingest.Upload{UserID: "alice", Filename: "a.md", Data: []byte("# A\n\nsome text")})
	if err != nil {
		t.Fatal(err)
	}
	if got := ingesttest.WaitStatus(t, r.Svc, d, store.DocError); !strings.Contains(got.Error, "model overloaded") {
		t.Fatalf("error status says %q", got.Error)
	}
}

// Deleting a document, or its conversation, before its job ran cancels
// the job.
func TestDeleteCancelsJob(t *testing.T) {
	r := ingesttest.New(t, "sqlite", ingest.Config{}, jobs.Config{})
	ctx := t.Context()
	// Stop the workers, so the jobs wait.
	sctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := r.Queue.Stop(sctx); err != nil {
		t.Fatal(err)
	}
	a, err := r.Svc.Upload(ctx, ingest.Upload{UserID: "alice", Filename: "a.txt", Data: []byte("alpha")})
	if err != nil {
		t.Fatal(err)
	}
	b, err := r.Svc.Upload(ctx, ingest.Upload{UserID: "alice", Filename: "b.txt", Data: []byte("beta")})
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range []store.Document{a, b} {
		if ids, err := r.Queue.Unfinished(ctx, "document_process", "document_id", d.ID); err != nil || len(ids) != 1 {
			t.Fatalf("jobs of %s: %v, %v; want one waiting", d.Filename, ids, err)
		}
	}
	if err := r.Svc.Delete(ctx, "alice", a.ConversationID, a.ID); err != nil {
		t.Fatal(err)
	}
	if ids, _ := r.Queue.Unfinished(ctx, "document_process", "document_id", a.ID); len(ids) != 0 {
		t.Fatalf("the deleted document's job is still waiting: %v", ids)
	}
	if ids, _ := r.Queue.Unfinished(ctx, "document_process", "document_id", b.ID); len(ids) != 1 {
		t.Fatalf("the other document's job went too: %v", ids)
	}
	if err := r.Store.DeleteConversation(ctx, "alice", b.ConversationID); err != nil {
		t.Fatal(err)
	}
	if err := r.Svc.DeleteConversationFiles(ctx, "alice", b.ConversationID); err != nil {
		t.Fatal(err)
	}
	if ids, _ := r.Queue.Unfinished(ctx, "document_process", "conversation_id", b.ConversationID); len(ids) != 0 {
		t.Fatalf("the deleted conversation's job is still waiting: %v", ids)
	}
}

// A Watcher sees each status change of its conversation's documents in
// order, and nothing once closed.
func TestWatch(t *testing.T) {
	ctx := t.Context()
	r := ingesttest.New(t, "sqlite", ingest.Config{}, jobs.Config{})
	first, err := r.Svc.Upload(ctx, ingest.Upload{UserID: "alice", Filename: "a.md", Data: []byte("# A\n\nsome text")})
	if err != nil {
		t.Fatal(err)
	}
	ingesttest.WaitStatus(t, r.Svc, first, store.DocReady)
	w := r.Svc.Watch(first.ConversationID)
	other := r.Svc.Watch("another conversation")
	defer other.Close()
	d, err := r.Svc.Upload(ctx, ingest.Upload{UserID: "alice", ConversationID: first.ConversationID, Filename: "b.md", Data: []byte("# B\n\nmore text")})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for len(got) == 0 || got[len(got)-1] != string(store.DocReady) {
		select {
		case <-w.C:
		case <-time.After(20 * time.Second):
			t.Fatalf("statuses so far: %v", got)
		}
		for _, c := range w.Take() {
			// The store shows a status before it is published, so the
			// first document's ready may reach a watcher made just after
			// WaitStatus saw it.
			if c.ID == first.ID && c.Status == store.DocReady {
				continue
			}
			if c.ID != d.ID || c.ConversationID != d.ConversationID {
				t.Fatalf("a change of another document: %+v", c)
			}
			got = append(got, string(c.Status))
		}
	}
	if s := strings.Join(got, " "); s != "uploading chunking summarizing ready" {
		t.Errorf("statuses: %s", s)
	}
	w.Close()
	e, err := r.Svc.Upload(ctx, ingest.Upload{UserID: "alice", ConversationID: first.ConversationID, Filename: "c.md", Data: []byte("# C\n\ntext")})
	if err != nil {
		t.Fatal(err)
	}
	ingesttest.WaitStatus(t, r.Svc, e, store.DocReady)
	if left := w.Take(); len(left) != 0 {
		t.Errorf("changes after Close: %v", left)
	}
	if left := other.Take(); len(left) != 0 {
		t.Errorf("another conversation's watcher got %v", left)
	}
}

// documentText records the text the document summary is asked of.
type documentText struct{ text chan string }

func (documentText) SummarizeChunk(ctx context.Context, text string) (string, error) {
	return documents.Extractive{}.SummarizeChunk(ctx, text)
}

func (d documentText) SummarizeDocument(ctx context.Context, name, text string, sums []string) (string, error) {
	d.text <- text
	return documents.Extractive{}.SummarizeDocument(ctx, name, text, sums)
}

// The document summary is asked of the whole text once, rebuilt from
// overlapping chunks whose offsets count characters, not bytes.
func TestDocumentSummaryReadsWholeText(t *testing.T) {
	var b strings.Builder
	for i := range 60 {
		fmt.Fprintf(&b, "## Größe %d\n\nÜber Straße %d führt ein Weg nach Köln — naïve café, 東京 %d.\n\n", i, i, i)
	}
	data := []byte(b.String())
	want, err := documents.Extract(t.Context(), data, "a.md", documents.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	got := documentText{text: make(chan string, 1)}
	r := ingesttest.New(t, "sqlite", ingest.Config{Summarizer: got,
		Chunks: documents.ChunkConfig{Size: 700, Overlap: 200, MinSize: 300}}, jobs.Config{})
	d, err := r.Svc.Upload(t.Context(), ingest.Upload{UserID: "alice", Filename: "a.md", Data: data})
	if err != nil {
		t.Fatal(err)
	}
	if ready := ingesttest.WaitStatus(t, r.Svc, d, store.DocReady); ready.Chunks < 5 {
		t.Fatalf("%d chunks, want several overlapping ones", ready.Chunks)
	}
	if text := <-got.text; text != want.Text {
		t.Fatalf("document summary asked of %d bytes, want the %d extracted", len(text), len(want.Text))
	}
}

// heapPeak samples the live heap every millisecond until stop is
// closed, and sends the largest value seen.
func heapPeak(stop <-chan struct{}) <-chan uint64 {
	out := make(chan uint64, 1)
	go func() {
		sample := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
		var peak uint64
		tick := time.NewTicker(time.Millisecond)
		defer tick.Stop()
		for {
			metrics.Read(sample)
			peak = max(peak, sample[0].Value.Uint64())
			select {
			case <-stop:
				out <- peak
				return
			case <-tick.C:
			}
		}
	}()
	return out
}

// A burst of 50 PDF uploads at once, each decoding to 6 MiB, extracts
// two at a time (MaxExtractions): the heap stays far below what fifty
// extractions at once would hold (300 MiB of decoded content alone),
// and every upload is stored.
func TestUploadBurstBounded(t *testing.T) {
	const burst, slots, decoded = 50, 2, 6 << 20
	pdf := pdfmake.Make([]pdfmake.Page{{"Launch notes", "The launch is on 3 May."}}, pdfmake.Options{Flate: true, Padding: decoded})
	r := ingesttest.New(t, "sqlite", ingest.Config{MaxPerConversation: burst, MaxExtractions: slots}, jobs.Config{})
	ctx := t.Context()
	first, err := r.Svc.Upload(ctx, ingest.Upload{UserID: "alice", Filename: "first.pdf", Data: pdf})
	if err != nil {
		t.Fatal(err)
	}
	runtime.GC()
	var base runtime.MemStats
	runtime.ReadMemStats(&base)
	stop := make(chan struct{})
	peak := heapPeak(stop)
	var wg sync.WaitGroup
	for i := range burst - 1 {
		wg.Go(func() {
			if _, err := r.Svc.Upload(ctx, ingest.Upload{UserID: "alice", ConversationID: first.ConversationID,
				Filename: fmt.Sprintf("notes-%d.pdf", i), Data: pdf}); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	close(stop)
	grew := int64(<-peak) - int64(base.HeapAlloc)
	t.Logf("a burst of %d uploads of a %d-byte PDF decoding to %d MiB, %d extractions at once: the heap grew by at most %.1f MiB",
		burst-1, len(pdf), decoded>>20, slots, float64(grew)/(1<<20))
	if limit := int64(burst/2) * decoded; grew > limit {
		t.Fatalf("the heap grew by %d MiB, more than %d MiB: extractions are not bounded", grew>>20, limit>>20)
	}
	if list, err := r.Svc.All(ctx, "alice", first.ConversationID); err != nil || len(list) != burst {
		t.Fatalf("%d documents stored, want %d (%v)", len(list), burst, err)
	}
}

// An upload waiting for an extraction slot gives up when its context
// ends, and stores nothing.
func TestUploadWaitingForASlotCancelled(t *testing.T) {
	r := ingesttest.New(t, "sqlite", ingest.Config{MaxExtractions: 1}, jobs.Config{})
	release := r.Svc.HoldExtractionSlots()
	defer release()
	ctx, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
	defer cancel()
	if _, err := r.Svc.Upload(ctx, ingest.Upload{UserID: "alice", Filename: "a.txt", Data: []byte("words")}); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Upload with every slot taken: %v, want the context's end", err)
	}
	if keys, _ := r.Files.List(t.Context(), ""); len(keys) != 0 {
		t.Fatalf("files after a cancelled upload: %v", keys)
	}
}

// An upload whose process was killed after its record (and its file)
// were stored but before its processing job was queued stays in status
// uploading with nothing to finish it: the periodic job clears it, its
// file too, and leaves alone an upload whose job is waiting.
func TestStrandedUploadCleared(t *testing.T) {
	for _, backend := range ingesttest.Backends {
		t.Run(backend, func(t *testing.T) {
			r := ingesttest.New(t, backend, ingest.Config{StrandedAfter: time.Nanosecond}, jobs.Config{})
			ctx := t.Context()
			sctx, cancel := context.WithTimeout(ctx, 10*time.Second)
			defer cancel()
			if err := r.Queue.Stop(sctx); err != nil { // the waiting upload's job stays queued
				t.Fatal(err)
			}
			waiting, err := r.Svc.Upload(ctx, ingest.Upload{UserID: "alice", Filename: "a.txt", Data: []byte("alpha")})
			if err != nil {
				t.Fatal(err)
			}
			// What a kill between Upload's file and its job leaves.
			stranded, err := r.Store.CreateDocument(ctx, store.NewDocument{UserID: "alice", ConversationID: waiting.ConversationID,
				Filename: "b.txt", ContentType: "text/plain", SizeBytes: 4, MaxPerConversation: 5})
			if err != nil {
				t.Fatal(err)
			}
			key := documents.Key{User: "alice", Conversation: stranded.ConversationID, Document: stranded.ID, Name: documents.Original}.String()
			if err := r.Files.Put(ctx, key, []byte("beta")); err != nil {
				t.Fatal(err)
			}

			n, err := r.Svc.ClearStranded(ctx)
			if err != nil || n != 1 {
				t.Fatalf("cleared %d: %v; want the stranded upload", n, err)
			}
			if _, err := r.Store.LookupDocument(ctx, stranded.ID); !errors.Is(err, store.ErrNotFound) {
				t.Errorf("the stranded record: %v, want it gone", err)
			}
			if _, err := r.Files.Get(ctx, key); !errors.Is(err, documents.ErrNotExist) {
				t.Errorf("the stranded file: %v, want it gone", err)
			}
			if d, err := r.Store.LookupDocument(ctx, waiting.ID); err != nil || d.Status != store.DocUploading {
				t.Errorf("the upload whose job waits: %+v %v, want it kept", d, err)
			}
			if n, err := r.Svc.ClearStranded(ctx); err != nil || n != 0 {
				t.Errorf("again: cleared %d: %v, want nothing", n, err)
			}
		})
	}
}
