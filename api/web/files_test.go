package web_test

import (
	"strings"
	"testing"

	"github.com/trellis-ai/trellis/api/web/webtest"
)

// TestFilesPanel: a file the agent writes arrives in the Files panel by
// file.changed while the run streams; opened, it previews; the agent's
// next write asks an approval that shows its diff, whose content the
// user edits; the preview follows, the file downloads through its link
// without the key, and a click restores an earlier version.
func TestFilesPanel(t *testing.T) {
	second := make(chan struct{})
	f := newContractFake(t, func(r *fakeRun) {
		r.emit("response.chunk", map[string]any{"content": "Writing. "})
		r.writeFile("notes/today.md", "hello")
		if !r.await(second) {
			return
		}
		ans, ok := r.approveWrite("ap-1", "notes/today.md", "hello\nworld",
			"--- a/notes/today.md\n+++ b/notes/today.md\n@@ -1 +1,2 @@\n hello\n+world\n")
		if !ok {
			return
		}
		content := "hello\nworld"
		if args, _ := ans["args"].(map[string]any); ans["decision"] == "edit" {
			content, _ = args["content"].(string)
		}
		r.writeFile("notes/today.md", content)
		r.answer("Done.")
	})
	p := open(t, f)
	p.Send("write a file notes.md with hello")
	p.WaitVisible(`#files-tree button[data-path="notes/today.md"]`)
	if got := p.Text("#files-tree"); !strings.Contains(got, "notes/") || !strings.Contains(got, "today.md") {
		t.Errorf("the tree = %q, want the folder notes/ holding today.md", got)
	}
	p.Click(`#files-tree button[data-path="notes/today.md"]`)
	p.WaitText("#file-preview", "hello")
	p.WaitVisible(`#file-versions li[data-version="1"]`)

	close(second)
	card := `[data-approval-id="ap-1"]`
	p.WaitText(card+" .diff .diff-add", "+world")
	p.Click(card + ` [data-action="edit"]`)
	p.Fill(card+" textarea.json-input", `{"path": "notes/today.md", "content": "hello\nthere"}`)
	p.Click(card + ` [data-action="submit-edit"]`)
	p.WaitText("#file-preview", "hello\nthere")
	p.WaitVisible(`#file-versions button[data-restore="1"]`)
	p.WaitText(webtest.LastAnswer, "Done.")

	p.Click("#file-download")
	p.WaitJS("a download link", `() => !!document.querySelector("#file-download").dataset.href`)
	got := webtest.Eval[string](p, `fetch(document.querySelector("#file-download").dataset.href).then((r) => r.text())`)
	if got != "hello\nthere" {
		t.Errorf("the download link gave %q, want the current version", got)
	}

	p.Click(`#file-versions button[data-restore="1"]`)
	p.WaitVisible(`#file-versions li[data-version="3"]`)
	p.WaitText("#file-preview", "hello")
	if got := p.Text("#file-preview"); got != "hello" {
		t.Errorf("the preview after restoring version 1 = %q, want %q", got, "hello")
	}
	restore := f.requestsTo("POST", "/api/v1/files/conversation/conv-1/restore", 1)[0]
	jsonEqual(t, "the restore's body", restore.Body, `{"path": "notes/today.md", "version": 1}`)
	if got := p.Text(`#files-tree button[data-path="notes/today.md"] + .file-meta`); got != "v3" {
		t.Errorf("the tree shows %q for the restored file, want v3", got)
	}
	p.CheckAccessible()
}

// TestFilesPanelDelete: a file the agent deletes while the user has it
// open leaves the tree and closes its view, with no error.
func TestFilesPanelDelete(t *testing.T) {
	del := make(chan struct{})
	f := newContractFake(t, func(r *fakeRun) {
		r.writeFile("draft.md", "draft")
		if !r.await(del) {
			return
		}
		r.deleteFile("draft.md")
		r.answer("Deleted.")
	})
	p := open(t, f)
	p.Send("write a draft, then delete it")
	p.WaitVisible(`#files-tree button[data-path="draft.md"]`)
	p.Click(`#files-tree button[data-path="draft.md"]`)
	p.WaitText("#file-preview", "draft")
	close(del)
	p.WaitText(webtest.LastAnswer, "Deleted.")
	p.WaitGone("#file-view")
	if n := p.Count(`#files-tree button[data-path="draft.md"]`); n != 0 {
		t.Errorf("the deleted file is still in the tree")
	}
	if n := p.Count("#error-banner:not([hidden])"); n != 0 {
		t.Errorf("an error shows after the delete: %q", p.Text("#error-banner"))
	}
	if got := p.Text(webtest.LastTurn); !strings.Contains(got, "Deleted file draft.md") {
		t.Errorf("the turn's activity does not tell the delete: %q", got)
	}
}
