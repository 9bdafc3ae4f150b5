package e2e_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/trellis-ai/trellis/api/apitest"
	"github.com/trellis-ai/trellis/api/web/webtest"
	"github.com/trellis-ai/trellis/documents"
	"github.com/trellis-ai/trellis/documents/doctools"
	"github.com/trellis-ai/trellis/documents/ingest"
	"github.com/trellis-ai/trellis/internal/jobs"
)

// withDocuments turns the document service on: files in the test's
// directory, the queue in a SQLite file beside them, at most maxBytes a
// file and two documents a conversation.
func withDocuments(t *testing.T, maxBytes int64) func(*server, *apitest.Config) {
	return func(s *server, cfg *apitest.Config) {
		dir := t.TempDir()
		files, err := documents.NewFileStorage(filepath.Join(dir, "files"))
		if err != nil {
			t.Fatal(err)
		}
		svc, err := ingest.New(ingest.Config{Store: cfg.API.Store.(ingest.Record), Files: files, MaxBytes: maxBytes, MaxPerConversation: 2})
		if err != nil {
			t.Fatal(err)
		}
		ws := jobs.NewWorkers()
		svc.Register(ws)
		queue, err := jobs.SQLite(context.Background(), filepath.Join(dir, "jobs.db"), ws, jobs.Config{PollInterval: 50 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		svc.Attach(queue)
		if err := queue.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
		s.stop = append(s.stop, func() {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			queue.Stop(ctx)
			queue.Close()
		})
		cfg.API.Documents = svc
		// The agent's document tools, in the one provider, as serve
		// adds them.
		if err := s.local.Add(doctools.New(doctools.Config{Store: cfg.API.Store.(doctools.Store)})...); err != nil {
			t.Fatal(err)
		}
	}
}

// drop drops a file with name and content on the chat, as a drag from
// the desktop does.
func drop(t *testing.T, p *webtest.Page, name, content string) {
	t.Helper()
	n, _ := json.Marshal(name)
	c, _ := json.Marshal(content)
	ok := webtest.Eval[bool](p, `(() => {
		const dt = new DataTransfer();
		dt.items.add(new File([`+string(c)+`], `+string(n)+`, { type: "text/plain" }));
		const main = document.querySelector("#main");
		main.dispatchEvent(new DragEvent("dragenter", { dataTransfer: dt, bubbles: true, cancelable: true }));
		main.dispatchEvent(new DragEvent("dragover", { dataTransfer: dt, bubbles: true, cancelable: true }));
		return !main.dispatchEvent(new DragEvent("drop", { dataTransfer: dt, bubbles: true, cancelable: true }));
	})()`)
	if !ok {
		t.Fatalf("the page did not take the dropped %s", name)
	}
}

// TestE2EDocuments drops a file on the chat of a new conversation, sees
// it become ready, attaches another with the button while a run's
// stream is open and sees its status come as document.status events,
// sees refusals (415, 413, 409) said clearly, and removes a document.
func TestE2EDocuments(t *testing.T) {
	s := newServer(t, "documents.json", withDocuments(t, 4096))
	p := open(t, s)

	drop(t, p, "notes.md", "# Notes\n\nThe trellis holds the vines. Bamboo is the usual wood.\n")
	p.WaitText("#document-list", "notes.md")
	cid := conversationID(t, p)
	p.WaitText(`#document-list li[data-status="ready"]`, "Ready")
	// Reloaded, the conversation lists its document again.
	p.Reload()
	p.WaitText(`#document-list li[data-status="ready"]`, "notes.md")

	// A run whose stream stays open (its approval waits on it) while
	// the second document is processed: the page learns its status from
	// document.status on the stream, not by reading the list again.
	p.Send("What is 6*7?")
	p.WaitVisible(pendingApproval)
	lists := len(s.requests("GET", "/api/v1/documents/"+cid))
	path := filepath.Join(t.TempDir(), "second.txt")
	if err := os.WriteFile(path, []byte("A second file about trellises and roses.\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	p.Do("attach a file", chromedp.SetUploadFiles(chromedp.CSS("#document-input"), []string{path}))
	p.WaitText(`#document-list li[data-status="ready"]:nth-of-type(2)`, "Ready")
	if n := len(s.requests("GET", "/api/v1/documents/"+cid)); n != lists {
		t.Errorf("the page read the list %d times while the stream was open", n-lists)
	}
	if p.Count("#document-list li") != 2 {
		t.Fatalf("documents listed: %s", p.Text("#document-list"))
	}
	p.Click(pendingApproval + ` [data-action="approve"]`)
	p.WaitText(webtest.LastAnswer, "6 × 7 = 42.")

	// Asked about it, the agent searches the documents and cites the
	// passage; the citation opens it.
	p.Send("What holds the vines?")
	p.WaitText(webtest.LastAnswer, "The trellis holds the vines [1].")
	p.Click(webtest.LastTurn + ` ol.citations button[data-cite="1"]`)
	p.WaitVisible("#passage")
	p.WaitText("#passage-title", "notes.md")
	p.WaitText("#passage-text", "The trellis holds the vines.")
	p.Click("#passage-close")

	// Refusals: a third document (409), then after removing one, a
	// type that cannot be read (415) and a file too large (413).
	drop(t, p, "third.txt", "three")
	p.WaitText("#error-text", "holds as many documents as it may")
	p.Click(`#document-list li:nth-of-type(2) button[data-remove]`)
	p.WaitJS("one document left", `() => document.querySelectorAll("#document-list li").length === 1`)
	if n := len(getJSON[struct{ Documents []any }](s, "/api/v1/documents/"+cid).Documents); n != 1 {
		t.Fatalf("documents stored after removing one: %d", n)
	}
	drop(t, p, "photo.png", "\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR")
	p.WaitText("#error-text", "not a type Trellis can read")
	drop(t, p, "big.txt", strings.Repeat("many words ", 500))
	p.WaitText("#error-text", "too large")
	p.CheckAccessible()
	s.checkScript()
}
