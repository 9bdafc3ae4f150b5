package doctools_test

import (
	"context"
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/trellis-ai/trellis/documents"
	"github.com/trellis-ai/trellis/documents/doctools"
	"github.com/trellis-ai/trellis/documents/ingest"
	"github.com/trellis-ai/trellis/documents/ingest/ingesttest"
	"github.com/trellis-ai/trellis/internal/jobs"
	"github.com/trellis-ai/trellis/operators"
	"github.com/trellis-ai/trellis/store"
)

func provider(cfg doctools.Config) *operators.Provider {
	local := operators.NewRegistry()
	local.MustAdd(doctools.New(cfg)...)
	return operators.NewProvider(operators.ProviderConfig{Local: local})
}

// call runs a tool and decodes its JSON result into out; it returns the
// error text of an error result.
func call(t *testing.T, p *operators.Provider, c operators.Call, tool, args string, out any) string {
	t.Helper()
	res := p.Execute(t.Context(), tool, json.RawMessage(args), c)
	if res.Status == operators.StatusError {
		return res.Error
	}
	if len(res.Contents) != 1 || res.Contents[0].Type != operators.OutputJSON {
		t.Fatalf("%s %s: %+v", tool, args, res)
	}
	if err := json.Unmarshal(res.Contents[0].JSON, out); err != nil {
		t.Fatal(err)
	}
	return ""
}

type passage struct {
	DocumentID string `json:"document_id"`
	Filename   string `json:"filename"`
	Chunk      int    `json:"chunk"`
	Start      int    `json:"start"`
	End        int    `json:"end"`
	Page       int    `json:"page"`
	LastPage   int    `json:"last_page"`
	Text       string `json:"text"`
}

func TestTools(t *testing.T) {
	md, err := os.ReadFile("../testdata/handbook.md")
	if err != nil {
		t.Fatal(err)
	}
	pdf, err := os.ReadFile("../testdata/handbook.pdf")
	if err != nil {
		t.Fatal(err)
	}
	want, err := documents.Extract(t.Context(), md, "handbook.md", documents.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range []string{"sqlite", "postgres"} {
		t.Run(b, func(t *testing.T) {
			// Small chunks, so the Markdown file has several and
			// load_document pages through them.
			rig := ingesttest.New(t, b, ingest.Config{Chunks: documents.ChunkConfig{Size: 120, Overlap: 30, MinSize: 60}}, jobs.Config{})
			svc, st := rig.Svc, rig.Store
			ctx := t.Context()
			d, err := svc.Upload(ctx, ingest.Upload{UserID: "alice", Filename: "handbook.md", Data: md})
			if err != nil {
				t.Fatal(err)
			}
			p, err := svc.Upload(ctx, ingest.Upload{UserID: "alice", ConversationID: d.ConversationID, Filename: "handbook.pdf", Data: pdf})
			if err != nil {
				t.Fatal(err)
			}
			other, err := svc.Upload(ctx, ingest.Upload{UserID: "bob", Filename: "bob.md", Data: md})
			if err != nil {
				t.Fatal(err)
			}
			d, p = ingesttest.WaitStatus(t, svc, d, store.DocReady), ingesttest.WaitStatus(t, svc, p, store.DocReady)
			ingesttest.WaitStatus(t, svc, other, store.DocReady)
			if d.Chunks < 3 {
				t.Fatalf("want several chunks, got %+v", d)
			}
			tp := provider(doctools.Config{Store: st, MaxChars: 250})
			alice := operators.Call{UserID: "alice", ConversationID: d.ConversationID}

			var raw map[string][]map[string]any
			if e := call(t, tp, alice, "list_documents", `{}`, &raw); e != "" {
				t.Fatal(e)
			}
			docs := raw["documents"]
			if len(docs) != 2 || docs[0]["document_id"] != d.ID || docs[0]["filename"] != "handbook.md" || docs[0]["status"] != "ready" ||
				docs[0]["summary"] != d.Summary || docs[0]["chunks"] != float64(d.Chunks) || docs[1]["document_id"] != p.ID {
				t.Fatalf("list_documents: %+v", docs)
			}

			var found struct {
				Results []passage `json:"results"`
				Note    string    `json:"note"`
			}
			if e := call(t, tp, alice, "search_documents", `{"query":"Bertha descaling"}`, &found); e != "" {
				t.Fatal(e)
			}
			if len(found.Results) == 0 {
				t.Fatal("search found nothing")
			}
			h := found.Results[0]
			if h.DocumentID != d.ID || h.Filename != "handbook.md" || !strings.Contains(h.Text, "Bertha") ||
				h.End-h.Start != utf8.RuneCountInString(h.Text) || string([]rune(want.Text)[h.Start:h.End]) != h.Text {
				t.Fatalf("search: %+v", found.Results)
			}
			if e := call(t, tp, alice, "search_documents", `{"query":"what is the office plant named","limit":1}`, &found); e != "" {
				t.Fatal(e)
			}
			if len(found.Results) != 1 || found.Results[0].DocumentID != p.ID || found.Results[0].Page != 1 {
				t.Fatalf("search the PDF: %+v", found.Results)
			}
			if e := call(t, tp, alice, "search_documents", `{"query":"office plant named","document_ids":["`+d.ID+`"]}`, &found); e != "" {
				t.Fatal(e)
			}
			for _, r := range found.Results {
				if r.DocumentID != d.ID {
					t.Fatalf("search scoped to the Markdown file found %+v", r)
				}
			}
			if e := call(t, tp, alice, "search_documents", `{"query":"xylophone"}`, &found); e != "" || len(found.Results) != 0 || found.Note != "nothing matched" {
				t.Fatalf("a search that matches nothing: %+v %q", found, e)
			}
			for _, args := range []string{`{}`, `{"query":"x","limit":21}`, `{"query":"x","limit":"3"}`, `{"query":"x","extra":1}`} {
				if e := call(t, tp, alice, "search_documents", args, &found); !strings.Contains(e, "invalid arguments") {
					t.Errorf("search_documents %s: %q, want invalid arguments", args, e)
				}
			}

			// The whole text, page by page, is the extracted text.
			var text strings.Builder
			from := 0
			for pages := 0; ; pages++ {
				var page struct {
					Text      string `json:"text"`
					Start     int    `json:"start"`
					End       int    `json:"end"`
					NextChunk *int   `json:"next_chunk"`
				}
				if e := call(t, tp, alice, "load_document", `{"document_id":"`+d.ID+`","from_chunk":`+itoa(from)+`}`, &page); e != "" {
					t.Fatal(e)
				}
				if page.Start != utf8.RuneCountInString(text.String()) || page.End-page.Start != utf8.RuneCountInString(page.Text) {
					t.Fatalf("page from chunk %d: start %d end %d after %d characters", from, page.Start, page.End, text.Len())
				}
				text.WriteString(page.Text)
				if page.NextChunk == nil {
					break
				}
				if pages > d.Chunks {
					t.Fatal("load_document pages on forever")
				}
				from = *page.NextChunk
			}
			if from == 0 {
				t.Fatal("the text came in one call, want several")
			}
			if text.String() != want.Text {
				t.Fatalf("loaded text:\n%q\nwant\n%q", text.String(), want.Text)
			}
			var some struct {
				Chunks   []passage `json:"chunks"`
				Unknown  string    `json:"unknown_chunks"`
				LeftOut  []int     `json:"left_out"`
				Filename string    `json:"filename"`
			}
			if e := call(t, tp, alice, "load_document", `{"document_id":"`+d.ID+`","chunks":[1,99]}`, &some); e != "" {
				t.Fatal(e)
			}
			if len(some.Chunks) != 1 || some.Chunks[0].Chunk != 1 || some.Unknown == "" || some.Filename != "handbook.md" {
				t.Fatalf("chunks [1,99]: %+v", some)
			}
			if e := call(t, tp, alice, "load_document", `{"document_id":"`+d.ID+`","chunks":[0,1,2,3]}`, &some); e != "" {
				t.Fatal(e)
			}
			if len(some.LeftOut) == 0 || len(some.Chunks)+len(some.LeftOut) != 4 {
				t.Fatalf("four chunks over the budget: %+v", some)
			}
			for _, args := range []string{`{}`, `{"document_id":"x","chunks":[-1]}`, `{"document_id":"x","from_chunk":-1}`} {
				if e := call(t, tp, alice, "load_document", args, &some); !strings.Contains(e, "invalid arguments") {
					t.Errorf("load_document %s: %q, want invalid arguments", args, e)
				}
			}

			// Another user's documents, and another conversation's,
			// are unknown, and say nothing of themselves.
			bob := operators.Call{UserID: "bob", ConversationID: other.ConversationID}
			for _, c := range []operators.Call{bob, {UserID: "bob", ConversationID: d.ConversationID}} {
				e := call(t, tp, c, "load_document", `{"document_id":"`+d.ID+`"}`, &some)
				if !strings.Contains(e, "no document") || strings.Contains(e, "handbook") {
					t.Errorf("bob loads alice's document: %q", e)
				}
				if e := call(t, tp, c, "search_documents", `{"query":"Bertha"}`, &found); e != "" {
					t.Fatal(e)
				}
				for _, r := range found.Results {
					if r.DocumentID != other.ID {
						t.Errorf("bob's search found %+v", r)
					}
				}
			}
			if e := call(t, tp, alice, "load_document", `{"document_id":"`+other.ID+`"}`, &some); !strings.Contains(e, "no document") {
				t.Errorf("alice loads bob's document: %q", e)
			}
			if e := call(t, tp, operators.Call{UserID: "bob", ConversationID: d.ConversationID}, "list_documents", `{}`, &raw); e != "" || len(raw["documents"]) != 0 {
				t.Errorf("bob lists alice's conversation: %v %q", raw, e)
			}
			if e := call(t, tp, operators.Call{UserID: "alice"}, "list_documents", `{}`, &raw); !strings.Contains(e, "conversation") {
				t.Errorf("no conversation: %q", e)
			}

			// A request's document_ids scope every tool to those documents.
			onlyPDF := operators.Call{UserID: "alice", ConversationID: d.ConversationID, DocumentIDs: []string{p.ID}}
			if e := call(t, tp, onlyPDF, "list_documents", `{}`, &raw); e != "" || len(raw["documents"]) != 1 || raw["documents"][0]["document_id"] != p.ID {
				t.Errorf("scoped list: %v %q", raw, e)
			}
			if e := call(t, tp, onlyPDF, "search_documents", `{"query":"office plant named"}`, &found); e != "" || len(found.Results) == 0 {
				t.Fatalf("scoped search: %+v %q", found, e)
			}
			for _, r := range found.Results {
				if r.DocumentID != p.ID {
					t.Errorf("scoped search found %+v", r)
				}
			}
			if e := call(t, tp, onlyPDF, "search_documents", `{"query":"office plant named","document_ids":["`+d.ID+`"]}`, &found); e != "" || len(found.Results) != 0 {
				t.Errorf("search outside the scope: %+v %q", found, e)
			}
			if e := call(t, tp, onlyPDF, "load_document", `{"document_id":"`+d.ID+`"}`, &some); !strings.Contains(e, "no document") {
				t.Errorf("load outside the scope: %q", e)
			}
			// Every passage a tool returns is a citable chunk, placed in
			// its document.
			res := tp.Execute(ctx, "search_documents", json.RawMessage(`{"query":"Bertha descaling"}`), alice)
			if len(res.Chunks) == 0 {
				t.Fatalf("search_documents has no chunks: %+v", res)
			}
			for _, c := range res.Chunks {
				if c.Document == nil || c.Document.DocumentID == "" || c.Document.End-c.Document.Start != len([]rune(c.Text)) || c.Title != c.Document.Filename {
					t.Errorf("chunk %+v %+v", c, c.Document)
				}
			}
			res = tp.Execute(ctx, "load_document", json.RawMessage(`{"document_id":"`+d.ID+`","chunks":[1]}`), alice)
			if len(res.Chunks) != 1 || res.Chunks[0].Document.Chunk != 1 || res.Chunks[0].Document.Filename != "handbook.md" {
				t.Errorf("load_document chunks %+v", res.Chunks)
			}

			// load_document waits for a document being processed.
			w, err := svc.Upload(ctx, ingest.Upload{UserID: "alice", ConversationID: d.ConversationID, Filename: "again.md", Data: md})
			if err != nil {
				t.Fatal(err)
			}
			var page struct {
				Text string `json:"text"`
			}
			if e := call(t, provider(doctools.Config{Store: st}), alice, "load_document", `{"document_id":"`+w.ID+`"}`, &page); e != "" || page.Text != want.Text {
				t.Fatalf("load a document just uploaded: %q, %q", page.Text, e)
			}
		})
	}
}

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }

// stuck is a store whose documents never finish processing.
type stuck struct{ doctools.Store }

func (stuck) GetDocument(ctx context.Context, userID, conversationID, id string) (store.Document, error) {
	return store.Document{ID: id, ConversationID: conversationID, UserID: userID, Filename: "slow.pdf", Status: store.DocChunking}, nil
}

func TestLoadWaitBounded(t *testing.T) {
	p := provider(doctools.Config{Store: stuck{}, Wait: 150 * time.Millisecond, Poll: 10 * time.Millisecond})
	c := operators.Call{UserID: "alice", ConversationID: "c1"}
	start := time.Now()
	res := p.Execute(t.Context(), "load_document", json.RawMessage(`{"document_id":"d1"}`), c)
	if res.Status != operators.StatusError || !strings.Contains(res.Error, "still being processed (chunking)") {
		t.Fatalf("%+v", res)
	}
	if time.Since(start) > 5*time.Second {
		t.Fatalf("waited %s", time.Since(start))
	}
	// The call's own context ends the wait before Wait does.
	p = provider(doctools.Config{Store: stuck{}, Wait: time.Hour, Poll: 10 * time.Millisecond})
	ctx, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
	defer cancel()
	res = p.Execute(ctx, "load_document", json.RawMessage(`{"document_id":"d1"}`), c)
	if res.Status != operators.StatusError || strings.Contains(res.Error, "after 1h") {
		t.Fatalf("cancelled: %+v", res)
	}
}

// failed is a store whose documents failed processing.
type failed struct{ doctools.Store }

func (failed) GetDocument(ctx context.Context, userID, conversationID, id string) (store.Document, error) {
	return store.Document{ID: id, Filename: "broken.pdf", Status: store.DocError, Error: "the PDF is unreadable"}, nil
}

func TestLoadFailedDocument(t *testing.T) {
	p := provider(doctools.Config{Store: failed{}})
	res := p.Execute(t.Context(), "load_document", json.RawMessage(`{"document_id":"d1"}`), operators.Call{UserID: "alice", ConversationID: "c1"})
	if res.Status != operators.StatusError || !strings.Contains(res.Error, "could not be processed: the PDF is unreadable") {
		t.Fatalf("%+v", res)
	}
}

func TestSpecs(t *testing.T) {
	for _, tool := range doctools.New(doctools.Config{Store: stuck{}}) {
		s := tool.Spec()
		if !s.Annotations.ReadOnly || s.InputSchema == nil || s.RequiresApproval {
			t.Errorf("%s: %+v", s.Name, s)
		}
	}
}
