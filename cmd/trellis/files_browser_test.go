package main

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/trellis-ai/trellis/api/web/webtest"
)

// In Chromium, against trellis serve with the offline model: asked to
// write notes.md, the agent's write_file puts it in the Files panel
// while the run streams; the preview follows the agent's next change
// live, the download link works without credentials, and the panel
// restores the first version.
func TestServeFilesPanel(t *testing.T) {
	t.Parallel()
	c := startServe(t, "TRELLIS_DATA_DIR="+t.TempDir(), "TRELLIS_MODEL=offline")
	p := webtest.Open(t, webtest.Browser(t), c.url)
	p.Send("write a file notes.md with hello")
	p.WaitVisible(`#files-tree button[data-path="notes.md"]`)
	p.Click(`#files-tree button[data-path="notes.md"]`)
	p.WaitText("#file-preview", "hello")

	p.Send("add a line to notes.md: world")
	p.WaitText("#file-preview", "world")
	p.WaitVisible(`#file-versions button[data-restore="1"]`)

	p.Click("#file-download")
	p.WaitJS("a download link", `() => !!document.querySelector("#file-download").dataset.href`)
	href := webtest.Eval[string](p, `document.querySelector("#file-download").dataset.href`)
	resp, err := http.Get(href)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(b), "world") {
		t.Errorf("GET the download link %s without credentials = %d %q", href, resp.StatusCode, b)
	}

	p.Click(`#file-versions button[data-restore="1"]`)
	p.WaitVisible(`#file-versions li[data-version="3"]`)
	p.WaitJS("the preview shows version 1", `() => !document.querySelector("#file-preview").textContent.includes("world")`)
	p.Screenshot("files-panel")
}

// In Chromium, against trellis serve with writes under approval: the
// agent's write_file waits on a card that shows the change as a diff;
// the user edits the content in the card and approves, and the file the
// Files panel shows, the one version stored, holds the user's content,
// not the agent's.
func TestServeFileApprovalEdited(t *testing.T) {
	t.Parallel()
	c := startServe(t, "TRELLIS_DATA_DIR="+t.TempDir(), "TRELLIS_MODEL=offline", "TRELLIS_WORKSPACE_APPROVE=write")
	p := webtest.Open(t, webtest.Browser(t), c.url)
	p.Send("write a file notes.md with hello")
	p.WaitVisible(`.card[data-approval-id] pre.diff`)
	p.WaitText(`.card[data-approval-id] pre.diff`, "+hello")
	p.Click(`.card[data-approval-id] [data-action="edit"]`)
	p.Fill(`.card[data-approval-id] textarea.json-input`, `{"path": "notes.md", "content": "hello, as the reviewer wrote it"}`)
	p.Click(`.card[data-approval-id] [data-action="submit-edit"]`)

	p.WaitVisible(`#files-tree button[data-path="notes.md"]`)
	p.Click(`#files-tree button[data-path="notes.md"]`)
	p.WaitText("#file-preview", "hello, as the reviewer wrote it")
	p.WaitVisible(`#file-versions li[data-version="1"]`)
	if n := p.Count(`#file-versions li[data-version]`); n != 1 {
		t.Errorf("the file has %d versions after one approved write, want 1", n)
	}
}
