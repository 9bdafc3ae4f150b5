package workspacetest

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/trellis-ai/trellis/internal/testcheck"

	"github.com/trellis-ai/trellis/documents"
	"github.com/trellis-ai/trellis/documents/workspace"
	"github.com/trellis-ai/trellis/store"
)

// Record is a record the workspace keeps its rows in, which can make
// and delete conversations and erase users for the suite.
type Record interface {
	workspace.Record
	CreateConversation(ctx context.Context, c store.NewConversation) (store.Conversation, error)
	DeleteConversation(ctx context.Context, userID, id string) error
	store.Users
}

// Env is what one case runs on: an empty record and an empty file store,
// not shared with other calls.
type Env struct {
	Record Record
	Files  documents.Storage
}

// Run checks that workspaces over the records and file stores that
// newEnv makes behave as package workspace says. Cases run in parallel.
func Run(t *testing.T, newEnv func(t *testing.T) Env) {
	testcheck.RunCases(t, newEnv, testcheck.Cases[Env]{
		{"WriteReadVersions", testWriteReadVersions},
		{"EmptyFile", testEmptyFile},
		{"Edit", testEdit},
		{"Append", testAppend},
		{"Restore", testRestore},
		{"Delete", testDelete},
		{"ListPages", testListPages},
		{"GlobGrep", testGlobGrep},
		{"Paths", testPaths},
		{"Quotas", testQuotas},
		{"ConcurrentEdits", testConcurrentEdits},
		{"Isolation", testIsolation},
		{"Projects", testProjects},
		{"ObjectsUnderOwnersPrefix", testObjectsUnderPrefix},
		{"ConversationDeleteAndErasure", testConversationDeleteAndErasure},
		{"OnChange", testOnChange},
	})
}

const (
	alice = "alice"
	bob   = "bob"
)

// conv makes a conversation of the user and returns its scope.
func conv(t *testing.T, e Env, user string) workspace.Scope {
	t.Helper()
	c := testcheck.Must(e.Record.CreateConversation(t.Context(), store.NewConversation{UserID: user}))(t)
	return workspace.Scope{Kind: workspace.KindConversation, ID: c.ID}
}

func newWorkspaces(e Env) *workspace.Workspaces {
	return workspace.New(e.Record, e.Files, workspace.Limits{})
}

func testWriteReadVersions(t *testing.T, e Env) {
	ctx, w := t.Context(), newWorkspaces(e)
	s := conv(t, e, alice)
	f := testcheck.Must(w.Write(ctx, alice, s, "notes/today.md", []byte("hello\n")))(t)
	if f.Path != "notes/today.md" || f.Version != 1 || f.Size != 6 || len(f.SHA256) != 64 || f.UpdatedAt.IsZero() {
		t.Fatalf("written %+v", f)
	}
	f2 := testcheck.Must(w.Write(ctx, alice, s, "notes/today.md", []byte("hello again\n")))(t)
	if f2.Version != 2 || f2.SHA256 == f.SHA256 {
		t.Fatalf("rewritten %+v", f2)
	}
	got, b := func() (workspace.File, []byte) {
		f, b, err := w.Read(ctx, alice, s, "./notes/today.md")
		return testcheck.Must(f, err)(t), b
	}()
	if string(b) != "hello again\n" || got != f2 {
		t.Fatalf("read %+v %q", got, b)
	}
	if st := testcheck.Must(w.Stat(ctx, alice, s, "notes/today.md"))(t); st != f2 {
		t.Fatalf("stat %+v, want %+v", st, f2)
	}
	v, old, err := w.ReadVersion(ctx, alice, s, "notes/today.md", 1)
	if err != nil || string(old) != "hello\n" || v.Version != 1 || v.Op != "write" || v.SHA256 != f.SHA256 {
		t.Fatalf("version 1: %+v %q %v", v, old, err)
	}
	vs := testcheck.Must(w.Versions(ctx, alice, s, "notes/today.md"))(t)
	if len(vs) != 2 || vs[0].Version != 1 || vs[1].Version != 2 || vs[1].Size != 12 {
		t.Fatalf("versions %+v", vs)
	}
	_, _, err = w.ReadVersion(ctx, alice, s, "notes/today.md", 3)
	testcheck.WantErr(t, "an unknown version", err, workspace.ErrNotFound)
	_, _, err = w.Read(ctx, alice, s, "missing.md")
	testcheck.WantErr(t, "a missing file", err, workspace.ErrNotFound)
	bin := []byte{0xff, 0x00, 0xfe}
	testcheck.Must(w.Write(ctx, alice, s, "blob.bin", bin))(t)
	if _, b, _ := w.Read(ctx, alice, s, "blob.bin"); !bytes.Equal(b, bin) {
		t.Fatalf("binary read back as %v", b)
	}
}

func testEmptyFile(t *testing.T, e Env) {
	ctx, w := t.Context(), newWorkspaces(e)
	s := conv(t, e, alice)
	f := testcheck.Must(w.Write(ctx, alice, s, "empty", nil))(t)
	if f.Size != 0 || f.Version != 1 {
		t.Fatalf("empty %+v", f)
	}
	if _, b, err := w.Read(ctx, alice, s, "empty"); err != nil || len(b) != 0 {
		t.Fatalf("read empty: %q %v", b, err)
	}
	testcheck.Must(w.Write(ctx, alice, s, "empty", []byte("now some")))(t)
	testcheck.Must(w.Restore(ctx, alice, s, "empty", 1))(t)
	if _, b, _ := w.Read(ctx, alice, s, "empty"); len(b) != 0 {
		t.Fatalf("restored empty reads %q", b)
	}
}

func testEdit(t *testing.T, e Env) {
	ctx, w := t.Context(), newWorkspaces(e)
	s := conv(t, e, alice)
	testcheck.Must(w.Write(ctx, alice, s, "a.txt", []byte("one two two three")))(t)
	f := testcheck.Must(w.Edit(ctx, alice, s, "a.txt", "one", "ONE", false))(t)
	if f.Version != 2 {
		t.Fatalf("edited to version %d", f.Version)
	}
	_, err := w.Edit(ctx, alice, s, "a.txt", "two", "2", false)
	testcheck.WantErr(t, "an ambiguous edit", err, workspace.ErrNotUnique)
	_, err = w.Edit(ctx, alice, s, "a.txt", "four", "4", false)
	testcheck.WantErr(t, "an edit of missing text", err, workspace.ErrNoMatch)
	_, err = w.Edit(ctx, alice, s, "missing.txt", "a", "b", false)
	testcheck.WantErr(t, "an edit of a missing file", err, workspace.ErrNotFound)
	testcheck.Must(w.Edit(ctx, alice, s, "a.txt", "two", "2", true))(t)
	if _, b, _ := w.Read(ctx, alice, s, "a.txt"); string(b) != "ONE 2 2 three" {
		t.Fatalf("after edits %q", b)
	}
	if vs := testcheck.Must(w.Versions(ctx, alice, s, "a.txt"))(t); len(vs) != 3 || vs[2].Op != "edit" {
		t.Fatalf("refused edits made versions: %+v", vs)
	}
	testcheck.Must(w.Write(ctx, alice, s, "bin", []byte{0xff, 'a'}))(t)
	_, err = w.Edit(ctx, alice, s, "bin", "a", "b", false)
	testcheck.WantErr(t, "an edit of binary", err, workspace.ErrNotText)
}

func testAppend(t *testing.T, e Env) {
	ctx, w := t.Context(), newWorkspaces(e)
	s := conv(t, e, alice)
	f := testcheck.Must(w.Append(ctx, alice, s, "log.md", []byte("one\n")))(t)
	if f.Version != 1 {
		t.Fatalf("appending to a new file made version %d", f.Version)
	}
	f = testcheck.Must(w.Append(ctx, alice, s, "log.md", []byte("two\n")))(t)
	if _, b, _ := w.Read(ctx, alice, s, "log.md"); string(b) != "one\ntwo\n" || f.Version != 2 {
		t.Fatalf("after two appends: %q, version %d", b, f.Version)
	}
	if vs := testcheck.Must(w.Versions(ctx, alice, s, "log.md"))(t); len(vs) != 2 || vs[0].Op != "write" || vs[1].Op != "edit" {
		t.Fatalf("versions %+v", vs)
	}
	_, err := w.Append(ctx, bob, s, "log.md", []byte("bob"))
	testcheck.WantErr(t, "bob appending to alice's file", err, workspace.ErrNotFound)
}

func testRestore(t *testing.T, e Env) {
	ctx, w := t.Context(), newWorkspaces(e)
	s := conv(t, e, alice)
	testcheck.Must(w.Write(ctx, alice, s, "r.md", []byte("first")))(t)
	testcheck.Must(w.Write(ctx, alice, s, "r.md", []byte("second")))(t)
	f := testcheck.Must(w.Restore(ctx, alice, s, "r.md", 1))(t)
	if f.Version != 3 {
		t.Fatalf("restored as version %d", f.Version)
	}
	if _, b, _ := w.Read(ctx, alice, s, "r.md"); string(b) != "first" {
		t.Fatalf("restored reads %q", b)
	}
	vs := testcheck.Must(w.Versions(ctx, alice, s, "r.md"))(t)
	if len(vs) != 3 || vs[2].Op != "restore" || vs[2].SHA256 != vs[0].SHA256 {
		t.Fatalf("versions %+v", vs)
	}
	if _, b, _ := w.ReadVersion(ctx, alice, s, "r.md", 2); string(b) != "second" {
		t.Fatalf("version 2 changed: %q", b)
	}
	_, err := w.Restore(ctx, alice, s, "r.md", 9)
	testcheck.WantErr(t, "restoring an unknown version", err, workspace.ErrNotFound)
}

func testDelete(t *testing.T, e Env) {
	ctx, w := t.Context(), newWorkspaces(e)
	s := conv(t, e, alice)
	testcheck.Must(w.Write(ctx, alice, s, "d.md", []byte("one")))(t)
	testcheck.Must(w.Write(ctx, alice, s, "d.md", []byte("two")))(t)
	testcheck.Must(0, w.Delete(ctx, alice, s, "d.md"))(t)
	_, err := w.Stat(ctx, alice, s, "d.md")
	testcheck.WantErr(t, "a deleted file", err, workspace.ErrNotFound)
	_, err = w.Versions(ctx, alice, s, "d.md")
	testcheck.WantErr(t, "a deleted file's versions", err, workspace.ErrNotFound)
	testcheck.WantErr(t, "deleting again", w.Delete(ctx, alice, s, "d.md"), workspace.ErrNotFound)
	prefix := testcheck.Must(documents.UserPrefix(alice))(t)
	if keys := testcheck.Must(e.Files.List(ctx, prefix))(t); len(keys) != 0 {
		t.Fatalf("a deleted file left objects %v", keys)
	}
	if f := testcheck.Must(w.Write(ctx, alice, s, "d.md", []byte("anew")))(t); f.Version != 1 {
		t.Fatalf("written again at version %d", f.Version)
	}
}

func testListPages(t *testing.T, e Env) {
	ctx, w := t.Context(), newWorkspaces(e)
	s := conv(t, e, alice)
	var want []string
	for i := range 7 {
		p := fmt.Sprintf("dir/f%d.md", i)
		want = append(want, p)
		testcheck.Must(w.Write(ctx, alice, s, p, []byte("x")))(t)
	}
	testcheck.Must(w.Write(ctx, alice, s, "top.md", []byte("x")))(t)
	testcheck.Must(w.Write(ctx, alice, s, "dirt.md", []byte("x")))(t)
	var got []string
	after := ""
	for pages := 0; ; pages++ {
		files, next, err := w.List(ctx, alice, s, "dir/", after, 3)
		if err != nil || pages > 5 {
			t.Fatalf("page %d: %v", pages, err)
		}
		for _, f := range files {
			got = append(got, f.Path)
		}
		if next == "" {
			break
		}
		after = next
	}
	if !slices.Equal(got, want) {
		t.Fatalf("listed %v, want %v", got, want)
	}
	for _, dir := range []string{"dir", "./dir/", "/dir"} {
		files, _, err := w.List(ctx, alice, s, dir, "", 0)
		if err != nil || len(files) != 7 {
			t.Errorf("List(%q) = %d files, %v", dir, len(files), err)
		}
	}
	all, next, err := w.List(ctx, alice, s, "", "", 0)
	if err != nil || len(all) != 9 || next != "" {
		t.Fatalf("all: %d %q %v", len(all), next, err)
	}
	_, _, err = w.List(ctx, alice, s, "a/../b", "", 0)
	testcheck.WantErr(t, "listing a bad directory", err, workspace.ErrBadPath)
}

func testGlobGrep(t *testing.T, e Env) {
	ctx, w := t.Context(), newWorkspaces(e)
	s := conv(t, e, alice)
	for p, text := range map[string]string{
		"README.md":        "# Garden\nplant tomatoes\n",
		"notes/plan.md":    "water daily\nplant beans\n",
		"notes/deep/x.txt": "nothing here\nplant nothing\n",
		"src/main.go":      "package main\n",
		"bin.dat":          "\xffplant\n",
	} {
		testcheck.Must(w.Write(ctx, alice, s, p, []byte(text)))(t)
	}
	paths := func(fs []workspace.File) []string {
		var out []string
		for _, f := range fs {
			out = append(out, f.Path)
		}
		return out
	}
	for pattern, want := range map[string][]string{
		"*.md":         {"README.md", "notes/plan.md"},
		"notes/*.md":   {"notes/plan.md"},
		"notes/**":     {"notes/deep/x.txt", "notes/plan.md"},
		"**/*.txt":     {"notes/deep/x.txt"},
		"src/ma?n.go":  {"src/main.go"},
		"[RS]*":        {"README.md"},
		"nothing.here": nil,
	} {
		if got := paths(testcheck.Must(w.Glob(ctx, alice, s, pattern, 0))(t)); !slices.Equal(got, want) {
			t.Errorf("Glob(%q) = %v, want %v", pattern, got, want)
		}
	}
	_, err := w.Glob(ctx, alice, s, "[unclosed", 0)
	testcheck.WantErr(t, "a bad glob", err, workspace.ErrInvalid)
	ms := testcheck.Must(w.Grep(ctx, alice, s, "^plant", "", 0))(t)
	want := []workspace.Match{{Path: "README.md", Line: 2, Text: "plant tomatoes"}, {Path: "notes/deep/x.txt", Line: 2, Text: "plant nothing"},
		{Path: "notes/plan.md", Line: 2, Text: "plant beans"}}
	if !slices.Equal(ms, want) {
		t.Errorf("Grep = %+v, want %+v", ms, want)
	}
	if ms := testcheck.Must(w.Grep(ctx, alice, s, "plant", "*.md", 1))(t); len(ms) != 1 || ms[0].Path != "README.md" {
		t.Errorf("Grep in *.md, limit 1 = %+v", ms)
	}
	_, err = w.Grep(ctx, alice, s, "(", "", 0)
	testcheck.WantErr(t, "a bad pattern", err, workspace.ErrInvalid)
}

func testPaths(t *testing.T, e Env) {
	ctx, w := t.Context(), newWorkspaces(e)
	s := conv(t, e, alice)
	for _, p := range []string{"", "/etc/passwd", "a/../b", "../x", "a//b", "a/./b", "a/", "bad\x00nul", "tab\there", "back\\slash",
		"\xff\xfe", strings.Repeat("a", workspace.MaxPathBytes+1), strings.Repeat("a/", workspace.MaxPathDepth) + "x", "max\U0010FFFF"} {
		_, err := w.Write(ctx, alice, s, p, []byte("x"))
		testcheck.WantErr(t, fmt.Sprintf("writing %q", p), err, workspace.ErrBadPath)
	}
	for _, p := range []string{"a", "ünï/cødé.md", "with space/and-dash_.txt", strings.Repeat("a/", workspace.MaxPathDepth-1) + "x"} {
		if _, err := w.Write(ctx, alice, s, p, []byte("x")); err != nil {
			t.Errorf("writing %q: %v", p, err)
		}
	}
	if files, _, _ := w.List(ctx, alice, s, "", "", 0); len(files) != 4 {
		t.Errorf("bad paths stored files: %d", len(files))
	}
}

func testQuotas(t *testing.T, e Env) {
	ctx := t.Context()
	w := workspace.New(e.Record, e.Files, workspace.Limits{FileBytes: 10, ScopeBytes: 25, ScopeFiles: 3})
	s := conv(t, e, alice)
	_, err := w.Write(ctx, alice, s, "big", bytes.Repeat([]byte("x"), 11))
	testcheck.WantErr(t, "a file over the per-file limit", err, workspace.ErrTooLarge)
	testcheck.Must(w.Write(ctx, alice, s, "a", bytes.Repeat([]byte("a"), 10)))(t)
	testcheck.Must(w.Write(ctx, alice, s, "a", bytes.Repeat([]byte("b"), 10)))(t)
	_, err = w.Write(ctx, alice, s, "a", bytes.Repeat([]byte("c"), 10))
	testcheck.WantErr(t, "over the scope's bytes (versions count)", err, workspace.ErrQuota)
	testcheck.Must(w.Write(ctx, alice, s, "b", nil))(t)
	testcheck.Must(w.Write(ctx, alice, s, "c", nil))(t)
	_, err = w.Write(ctx, alice, s, "d", nil)
	testcheck.WantErr(t, "over the scope's files", err, workspace.ErrQuota)
	// A refused write leaves no object behind.
	keys := testcheck.Must(e.Files.List(ctx, testcheck.Must(documents.UserPrefix(alice))(t)))(t)
	if len(keys) != 2 {
		t.Errorf("objects after refused writes: %v", keys)
	}
	// Deleting frees the quota.
	testcheck.Must(0, w.Delete(ctx, alice, s, "a"))(t)
	testcheck.Must(w.Write(ctx, alice, s, "d", bytes.Repeat([]byte("d"), 10)))(t)
	// Another scope has its own quota.
	testcheck.Must(w.Write(ctx, alice, workspace.Scope{Kind: workspace.KindUser, ID: alice}, "a", bytes.Repeat([]byte("a"), 10)))(t)
}

func testConcurrentEdits(t *testing.T, e Env) {
	ctx, w := t.Context(), newWorkspaces(e)
	s := conv(t, e, alice)
	testcheck.Must(w.Write(ctx, alice, s, "list.md", []byte("start\n")))(t)
	const editors = 3 // each succeeds: Edit reads again when the file changed meanwhile
	ok := len(testcheck.Race(t, "edit", editors, workspace.ErrConflict, func(i int) error {
		_, err := w.Edit(ctx, alice, s, "list.md", "start\n", fmt.Sprintf("start\nitem %d\n", i), false)
		return err
	}))
	_, b, _ := w.Read(ctx, alice, s, "list.md")
	if got := strings.Count(string(b), "item "); got != ok {
		t.Fatalf("%d edits succeeded, the file holds %d items: %q", ok, got, b)
	}
	if vs := testcheck.Must(w.Versions(ctx, alice, s, "list.md"))(t); len(vs) != 1+ok {
		t.Fatalf("%d versions after %d edits", len(vs), ok)
	}
}

func testIsolation(t *testing.T, e Env) {
	ctx, w := t.Context(), newWorkspaces(e)
	as := conv(t, e, alice)
	au := workspace.Scope{Kind: workspace.KindUser, ID: alice}
	p := testcheck.Must(w.CreateProject(ctx, alice, "alice's"))(t)
	ap := workspace.Scope{Kind: workspace.KindProject, ID: p.ID}
	for _, s := range []workspace.Scope{as, au, ap} {
		testcheck.Must(w.Write(ctx, alice, s, "secret.md", []byte("marmalade")))(t)
	}
	for _, s := range []workspace.Scope{as, au, ap, {Kind: workspace.KindConversation, ID: "nope"}, {Kind: workspace.KindProject, ID: "nope"}} {
		errs := map[string]error{}
		_, _, errs["list"] = w.List(ctx, bob, s, "", "", 0)
		_, errs["stat"] = w.Stat(ctx, bob, s, "secret.md")
		_, _, errs["read"] = w.Read(ctx, bob, s, "secret.md")
		_, _, errs["read version"] = w.ReadVersion(ctx, bob, s, "secret.md", 1)
		_, errs["write"] = w.Write(ctx, bob, s, "secret.md", []byte("jam"))
		_, errs["write new"] = w.Write(ctx, bob, s, "new.md", []byte("jam"))
		_, errs["edit"] = w.Edit(ctx, bob, s, "secret.md", "marmalade", "jam", false)
		errs["delete"] = w.Delete(ctx, bob, s, "secret.md")
		_, errs["versions"] = w.Versions(ctx, bob, s, "secret.md")
		_, errs["restore"] = w.Restore(ctx, bob, s, "secret.md", 1)
		_, errs["glob"] = w.Glob(ctx, bob, s, "*", 0)
		_, errs["grep"] = w.Grep(ctx, bob, s, "marmalade", "", 0)
		for _, name := range slices.Sorted(func(yield func(string) bool) {
			for k := range errs {
				if !yield(k) {
					return
				}
			}
		}) {
			testcheck.WantErr(t, fmt.Sprintf("bob's %s of alice's %s scope", name, s.Kind), errs[name], workspace.ErrNotFound)
		}
	}
	for _, s := range []workspace.Scope{as, au, ap} {
		if _, b, err := w.Read(ctx, alice, s, "secret.md"); err != nil || string(b) != "marmalade" {
			t.Errorf("alice's %s file after bob's tries: %q %v", s.Kind, b, err)
		}
		if vs := testcheck.Must(w.Versions(ctx, alice, s, "secret.md"))(t); len(vs) != 1 {
			t.Errorf("alice's %s file has %d versions", s.Kind, len(vs))
		}
	}
	_, err := w.Project(ctx, bob, p.ID)
	testcheck.WantErr(t, "a non-member's project", err, workspace.ErrNotFound)
	_, err = w.AddMember(ctx, bob, p.ID, bob)
	testcheck.WantErr(t, "a non-member adding himself", err, workspace.ErrNotFound)
	testcheck.WantErr(t, "a non-member deleting", w.DeleteProject(ctx, bob, p.ID), workspace.ErrNotFound)
	testcheck.WantErr(t, "attaching to a project one is not in", w.AttachConversation(ctx, bob, conv(t, e, bob).ID, p.ID), workspace.ErrNotFound)
	testcheck.WantErr(t, "attaching another's conversation", w.AttachConversation(ctx, bob, as.ID, ""), workspace.ErrNotFound)
}

func testProjects(t *testing.T, e Env) {
	ctx, w := t.Context(), newWorkspaces(e)
	p := testcheck.Must(w.CreateProject(ctx, alice, "garden"))(t)
	if p.Owner != alice || p.Name != "garden" || !slices.Equal(p.Members, []string{alice}) {
		t.Fatalf("created %+v", p)
	}
	_, err := w.CreateProject(ctx, alice, "")
	testcheck.WantErr(t, "a project without a name", err, workspace.ErrInvalid)
	p = testcheck.Must(w.AddMember(ctx, alice, p.ID, bob))(t)
	s := workspace.Scope{Kind: workspace.KindProject, ID: p.ID}
	testcheck.Must(w.Write(ctx, bob, s, "plan.md", []byte("by bob")))(t)
	testcheck.Must(w.Edit(ctx, alice, s, "plan.md", "bob", "bob and alice", false))(t)
	_, err = w.AddMember(ctx, bob, p.ID, "carol")
	testcheck.WantErr(t, "a member who is not the owner adding", err, workspace.ErrNotFound)
	_, err = w.RemoveMember(ctx, alice, p.ID, alice)
	testcheck.WantErr(t, "removing the owner", err, workspace.ErrConflict)
	if ps := testcheck.Must(w.Projects(ctx, bob))(t); len(ps) != 1 || ps[0].ID != p.ID {
		t.Fatalf("bob's projects %+v", ps)
	}

	bc := conv(t, e, bob)
	testcheck.Must(0, w.AttachConversation(ctx, bob, bc.ID, p.ID))(t)
	ps := testcheck.Must(w.ScopeOf(ctx, bob, bc.ID, workspace.KindProject))(t)
	if ps != s {
		t.Fatalf("the conversation's project scope %+v, want %+v", ps, s)
	}
	_, err = w.ScopeOf(ctx, bob, conv(t, e, bob).ID, workspace.KindProject)
	testcheck.WantErr(t, "the project of an unattached conversation", err, workspace.ErrBadScope)

	testcheck.Must(w.RemoveMember(ctx, alice, p.ID, bob))(t)
	_, _, err = w.Read(ctx, bob, s, "plan.md")
	testcheck.WantErr(t, "a removed member reading", err, workspace.ErrNotFound)

	testcheck.Must(0, w.DeleteProject(ctx, alice, p.ID))(t)
	_, err = w.Project(ctx, alice, p.ID)
	testcheck.WantErr(t, "a deleted project", err, workspace.ErrNotFound)
	if keys := testcheck.Must(e.Files.List(ctx, testcheck.Must(workspace.ProjectPrefix(p.ID))(t)))(t); len(keys) != 0 {
		t.Fatalf("a deleted project left objects %v", keys)
	}
	if got := testcheck.Must(w.ConversationProject(ctx, bob, bc.ID))(t); got != "" {
		t.Fatalf("still attached to %q", got)
	}
}

func testObjectsUnderPrefix(t *testing.T, e Env) {
	ctx, w := t.Context(), newWorkspaces(e)
	cs := conv(t, e, alice)
	testcheck.Must(w.Write(ctx, alice, cs, "c.md", []byte("c")))(t)
	testcheck.Must(w.Write(ctx, alice, workspace.Scope{Kind: workspace.KindUser, ID: alice}, "u.md", []byte("u")))(t)
	p := testcheck.Must(w.CreateProject(ctx, alice, "p"))(t)
	testcheck.Must(w.Write(ctx, alice, workspace.Scope{Kind: workspace.KindProject, ID: p.ID}, "p.md", []byte("p")))(t)
	convPrefix := testcheck.Must(documents.ConversationPrefix(alice, cs.ID))(t)
	userPrefix := testcheck.Must(documents.UserPrefix(alice))(t)
	projPrefix := testcheck.Must(workspace.ProjectPrefix(p.ID))(t)
	all := testcheck.Must(e.Files.List(ctx, ""))(t)
	if len(all) != 3 {
		t.Fatalf("objects %v", all)
	}
	var inConv, inUser, inProj int
	for _, k := range all {
		switch {
		case strings.HasPrefix(k, convPrefix):
			inConv++
			inUser++
		case strings.HasPrefix(k, userPrefix):
			inUser++
		case strings.HasPrefix(k, projPrefix):
			inProj++
		}
	}
	if inConv != 1 || inUser != 2 || inProj != 1 {
		t.Fatalf("objects %v: %d under the conversation, %d under the user, %d under the project", all, inConv, inUser, inProj)
	}
}

func testConversationDeleteAndErasure(t *testing.T, e Env) {
	ctx, w := t.Context(), newWorkspaces(e)
	cs := conv(t, e, alice)
	testcheck.Must(w.Write(ctx, alice, cs, "c.md", []byte("c")))(t)
	testcheck.Must(0, e.Files.Put(ctx, testcheck.Must(documents.ConversationPrefix(alice, cs.ID))(t)+"workspace/x", []byte("x")))(t)
	// As runs.Service.DeleteConversation does: the files, then the record.
	testcheck.Must(0, documents.DeletePrefix(ctx, e.Files, testcheck.Must(documents.ConversationPrefix(alice, cs.ID))(t)))(t)
	testcheck.Must(0, e.Record.DeleteConversation(ctx, alice, cs.ID))(t)
	_, err := w.Stat(ctx, alice, cs, "c.md")
	testcheck.WantErr(t, "a deleted conversation's file", err, workspace.ErrNotFound)

	us := workspace.Scope{Kind: workspace.KindUser, ID: alice}
	testcheck.Must(w.Write(ctx, alice, us, "u.md", []byte("u")))(t)
	testcheck.Must(w.Write(ctx, alice, conv(t, e, alice), "c.md", []byte("c")))(t)
	p := testcheck.Must(w.CreateProject(ctx, alice, "mine"))(t)
	testcheck.Must(w.Write(ctx, alice, workspace.Scope{Kind: workspace.KindProject, ID: p.ID}, "p.md", []byte("p")))(t)
	bp := testcheck.Must(w.CreateProject(ctx, bob, "bob's"))(t)
	testcheck.Must(w.AddMember(ctx, bob, bp.ID, alice))(t)
	bs := workspace.Scope{Kind: workspace.KindProject, ID: bp.ID}
	testcheck.Must(w.Write(ctx, alice, bs, "by-alice.md", []byte("shared")))(t)

	// The erasure's steps that concern files (cmd/trellis erase.go).
	testcheck.Must(0, e.Record.BeginErasure(ctx, alice))(t)
	testcheck.Must(0, w.EraseProjects(ctx, alice))(t)
	testcheck.Must(0, documents.DeletePrefix(ctx, e.Files, testcheck.Must(documents.UserPrefix(alice))(t)))(t)
	testcheck.Must(e.Record.EraseUser(ctx, alice))(t)

	if keys := testcheck.Must(e.Files.List(ctx, ""))(t); len(keys) != 1 {
		t.Fatalf("objects after the erasure: %v (want only the file in bob's project)", keys)
	}
	if _, _, err := w.Read(ctx, bob, bs, "by-alice.md"); err != nil {
		t.Fatalf("a file alice wrote in bob's project: %v", err)
	}
	if p := testcheck.Must(w.Project(ctx, bob, bp.ID))(t); !slices.Equal(p.Members, []string{bob}) {
		t.Fatalf("bob's project after alice's erasure: %+v", p)
	}
	if files, _, err := w.List(ctx, alice, us, "", "", 0); err != nil || len(files) != 0 {
		t.Fatalf("alice's user scope after her erasure: %v %v", files, err)
	}
}

func testOnChange(t *testing.T, e Env) {
	ctx, w := t.Context(), newWorkspaces(e)
	var (
		mu   sync.Mutex
		seen []workspace.Change
	)
	w.OnChange(func(_ context.Context, c workspace.Change) {
		mu.Lock()
		defer mu.Unlock()
		seen = append(seen, c)
	})
	s := conv(t, e, alice)
	cctx := workspace.WithConversation(ctx, s.ID)
	testcheck.Must(w.Write(cctx, alice, s, "x.md", []byte("a")))(t)
	testcheck.Must(w.Edit(cctx, alice, s, "x.md", "a", "b", false))(t)
	testcheck.Must(w.Restore(ctx, alice, s, "x.md", 1))(t)
	testcheck.Must(0, w.Delete(ctx, alice, s, "x.md"))(t)
	_, _ = w.Write(ctx, bob, s, "x.md", []byte("refused"))
	want := []workspace.Change{
		{Scope: s, Path: "x.md", Version: 1, Op: "write", Conversation: s.ID},
		{Scope: s, Path: "x.md", Version: 2, Op: "edit", Conversation: s.ID},
		{Scope: s, Path: "x.md", Version: 3, Op: "restore"},
		{Scope: s, Path: "x.md", Op: "delete"},
	}
	if !slices.Equal(seen, want) {
		t.Fatalf("changes %+v, want %+v", seen, want)
	}
}
