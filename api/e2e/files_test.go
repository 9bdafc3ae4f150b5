package e2e_test

import (
	"context"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/trellis-ai/trellis/api/apitest"
	"github.com/trellis-ai/trellis/api/web/webtest"
	"github.com/trellis-ai/trellis/documents"
	"github.com/trellis-ai/trellis/documents/workspace"
)

// withWorkspace gives the server the agent's workspace, its files in a
// directory, and its write_file and read_file tools (this harness has a
// delete_file of its own).
func withWorkspace(s *server, c *apitest.Config) {
	files, err := documents.NewFileStorage(s.t.TempDir())
	if err != nil {
		s.t.Fatal(err)
	}
	ws := workspace.New(c.API.Store.(workspace.Record), files, workspace.Limits{})
	for _, tool := range ws.Tools(workspace.ToolConfig{}) {
		if name := tool.Spec().Name; name == workspace.ToolWrite || name == workspace.ToolRead {
			s.local.MustAdd(tool)
		}
	}
	c.API.Workspace = ws
}

// TestFilesPanelLive: on the real server, the agent's write_file puts
// notes.md in the Files panel while the run streams; it previews,
// downloads through the server's signed link with no credentials, and a
// version written since is undone from the panel's history; a file the
// user uploads from the panel lands in the conversation's files.
func TestFilesPanelLive(t *testing.T) {
	s := newServer(t, "files.json", withWorkspace)
	p := open(t, s)
	p.Send("write a file notes.md with hello")
	p.WaitVisible(`#files-tree button[data-path="notes.md"]`)
	p.WaitText(turn(1)+" .answer", "I wrote notes.md.")
	p.Screenshot("files-live")

	p.Click(`#files-tree button[data-path="notes.md"]`)
	p.WaitText("#file-preview", "hello")
	p.Click("#file-download")
	p.WaitJS("a download link", `() => !!document.querySelector("#file-download").dataset.href`)
	href := webtest.Eval[string](p, `document.querySelector("#file-download").dataset.href`)
	if got := fetch(t, href); got != "hello" {
		t.Errorf("the download link %s gave %q, want hello", href, got)
	}

	// A second version, written over the API; the panel's history
	// restores the first.
	cid := conversationID(t, p)
	put(t, s.URL+"/api/v1/files/conversation/"+url.PathEscape(cid)+"/content?path=notes.md", "hello, world")
	p.Click("#file-close")
	p.Click(`#files-tree button[data-path="notes.md"]`)
	p.WaitText("#file-preview", "hello, world")
	p.Click(`#file-versions button[data-restore="1"]`)
	p.WaitVisible(`#file-versions li[data-version="3"]`)
	p.WaitJS("the preview shows version 1", `() => document.querySelector("#file-preview").textContent === "hello"`)

	// Upload puts a file of the user's into the conversation's files.
	local := filepath.Join(t.TempDir(), "todo.txt")
	if err := os.WriteFile(local, []byte("buy milk"), 0o600); err != nil {
		t.Fatal(err)
	}
	p.Do("upload a file", chromedp.SetUploadFiles(chromedp.CSS("#files-input"), []string{local}))
	p.WaitVisible(`#files-tree button[data-path="todo.txt"]`)
	if got := fetch(t, s.URL+"/api/v1/files/conversation/"+url.PathEscape(cid)+"/content?path=todo.txt"); got != "buy milk" {
		t.Errorf("the uploaded file holds %q", got)
	}
	s.checkScript()
}

// fetch GETs u with no credentials and returns the body, failing on
// anything but 200.
func fetch(t *testing.T, u string) string {
	t.Helper()
	resp, err := http.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s = %d %s", u, resp.StatusCode, b)
	}
	return string(b)
}

// put uploads body to u.
func put(t *testing.T, u, body string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, "PUT", u, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK && resp.StatusCode != http.StatusCreated {
		t.Fatalf("PUT %s = %d", u, resp.StatusCode)
	}
}
