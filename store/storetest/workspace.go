package storetest

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/trellis-ai/trellis/internal/testcheck"
	"github.com/trellis-ai/trellis/store"
)

// version makes the version of a write of data at path.
func version(sc store.FileScope, path, data string) store.NewFileVersion {
	sum := sha256.Sum256([]byte(data))
	v := store.NewFileVersion{Scope: sc, Path: path, Size: int64(len(data)), SHA256: hex.EncodeToString(sum[:]), Op: store.FileWrite}
	if data != "" {
		v.ObjectKey = fmt.Sprintf("obj/%s/%s/%x", sc.ID, path, sum[:8])
	}
	return v
}

func userScope(user string) store.FileScope {
	return store.FileScope{Kind: store.ScopeUser, ID: user, UserID: user}
}

func testProjects(t *testing.T, s Record) {
	ctx := t.Context()
	p := must(s.CreateProject(ctx, store.NewProject{Owner: alice, Name: "garden"}))(t)
	if p.ID == "" || p.Owner != alice || !slices.Equal(p.Members, []string{alice}) || p.CreatedAt.IsZero() {
		t.Fatalf("created %+v", p)
	}
	p = must(s.AddProjectMember(ctx, p.ID, bob))(t)
	p = must(s.AddProjectMember(ctx, p.ID, bob))(t) // again: no error
	if !slices.Equal(p.Members, []string{alice, bob}) {
		t.Fatalf("members %v", p.Members)
	}
	if got := must(s.UserProjects(ctx, bob))(t); len(got) != 1 || got[0].ID != p.ID || got[0].Name != "garden" {
		t.Fatalf("bob's projects %+v", got)
	}
	if got := must(s.UserProjects(ctx, "carol"))(t); len(got) != 0 {
		t.Fatalf("carol's projects %+v", got)
	}
	_, err := s.RemoveProjectMember(ctx, p.ID, alice)
	wantErr(t, "removing the owner", err, store.ErrConflict)
	p = must(s.RemoveProjectMember(ctx, p.ID, bob))(t)
	if !slices.Equal(p.Members, []string{alice}) {
		t.Fatalf("members after removal %v", p.Members)
	}
	c := newConversation(t, s, alice)
	if got := must(s.ConversationProject(ctx, alice, c.ID))(t); got != "" {
		t.Fatalf("a new conversation's project %q", got)
	}
	must(0, s.SetConversationProject(ctx, alice, c.ID, p.ID))(t)
	if got := must(s.ConversationProject(ctx, alice, c.ID))(t); got != p.ID {
		t.Fatalf("attached to %q, want %q", got, p.ID)
	}
	wantErr(t, "attaching another's conversation", s.SetConversationProject(ctx, bob, c.ID, p.ID), store.ErrNotFound)
	wantErr(t, "attaching to an unknown project", s.SetConversationProject(ctx, alice, c.ID, "nope"), store.ErrNotFound)
	_, err = s.ConversationProject(ctx, bob, c.ID)
	wantErr(t, "another's conversation's project", err, store.ErrNotFound)

	ps := store.FileScope{Kind: store.ScopeProject, ID: p.ID}
	must(s.PutFile(ctx, version(ps, "plan.md", "dig")))(t)
	must(0, s.DeleteProject(ctx, p.ID))(t)
	if got := must(s.ConversationProject(ctx, alice, c.ID))(t); got != "" {
		t.Fatalf("conversation still attached to a deleted project: %q", got)
	}
	_, err = s.GetProject(ctx, p.ID)
	wantErr(t, "a deleted project", err, store.ErrNotFound)
	_, err = s.WorkspaceFile(ctx, ps, "plan.md")
	wantErr(t, "a deleted project's file", err, store.ErrNotFound)
	wantErr(t, "deleting again", s.DeleteProject(ctx, p.ID), store.ErrNotFound)
	_, err = s.AddProjectMember(ctx, p.ID, bob)
	wantErr(t, "a member of a deleted project", err, store.ErrNotFound)
	_, err = s.PutFile(ctx, version(ps, "plan.md", "dig"))
	wantErr(t, "a file of a deleted project", err, store.ErrNotFound)
}

func testFileVersions(t *testing.T, s Record) {
	ctx := t.Context()
	sc := userScope(alice)
	f1 := must(s.PutFile(ctx, version(sc, "notes.md", "one")))(t)
	if f1.Version != 1 || f1.Size != 3 || f1.Path != "notes.md" || f1.ObjectKey == "" {
		t.Fatalf("first version %+v", f1)
	}
	v2 := version(sc, "notes.md", "two!")
	v2.Op = store.FileEdit
	f2 := must(s.PutFile(ctx, v2))(t)
	if f2.Version != 2 || f2.ID != f1.ID || f2.Size != 4 {
		t.Fatalf("second version %+v", f2)
	}
	empty := version(sc, "notes.md", "")
	f3 := must(s.PutFile(ctx, empty))(t)
	if f3.Version != 3 || f3.Size != 0 || f3.ObjectKey != "" {
		t.Fatalf("empty version %+v", f3)
	}
	if got := must(s.WorkspaceFile(ctx, sc, "notes.md"))(t); got != f3 {
		t.Fatalf("current %+v, want %+v", got, f3)
	}
	vs := must(s.FileVersions(ctx, sc, "notes.md"))(t)
	if len(vs) != 3 || vs[0].Version != 1 || vs[1].Op != store.FileEdit || vs[0].ObjectKey != f1.ObjectKey || vs[2].Size != 0 {
		t.Fatalf("versions %+v", vs)
	}
	if v := must(s.FileVersion(ctx, sc, "notes.md", 2))(t); v != vs[1] {
		t.Fatalf("version 2 %+v, want %+v", v, vs[1])
	}
	_, err := s.FileVersion(ctx, sc, "notes.md", 4)
	wantErr(t, "an unknown version", err, store.ErrNotFound)
	_, err = s.FileVersions(ctx, userScope(bob), "notes.md")
	wantErr(t, "another scope's file", err, store.ErrNotFound)
	if u := must(s.ScopeUsage(ctx, sc))(t); u != (store.ScopeUsage{Bytes: 7, Files: 1}) {
		t.Fatalf("usage %+v", u)
	}
	keys := must(s.DeleteFile(ctx, sc, "notes.md"))(t)
	if want := []string{f1.ObjectKey, f2.ObjectKey}; !slices.Equal(keys, slices.Sorted(slices.Values(want))) {
		t.Fatalf("deleted keys %v, want %v", keys, want)
	}
	_, err = s.WorkspaceFile(ctx, sc, "notes.md")
	wantErr(t, "a deleted file", err, store.ErrNotFound)
	_, err = s.DeleteFile(ctx, sc, "notes.md")
	wantErr(t, "deleting again", err, store.ErrNotFound)
	if f := must(s.PutFile(ctx, version(sc, "notes.md", "anew")))(t); f.Version != 1 {
		t.Fatalf("a file written again after its deletion starts at version %d", f.Version)
	}
}

func testFileList(t *testing.T, s Record) {
	ctx := t.Context()
	sc := userScope(alice)
	paths := []string{"a.md", "b/c.md", "b/d.md", "b/e/f.md", "bz.md", "é.md"}
	for _, p := range paths {
		must(s.PutFile(ctx, version(sc, p, "x")))(t)
	}
	must(s.PutFile(ctx, version(userScope(bob), "b/bob.md", "x")))(t)
	list := func(prefix, after string, limit int) []string {
		var out []string
		for _, f := range must(s.WorkspaceFiles(ctx, sc, prefix, after, limit))(t) {
			out = append(out, f.Path)
		}
		return out
	}
	for _, tc := range []struct {
		prefix, after string
		limit         int
		want          []string
	}{
		{"", "", 100, paths},
		{"", "", 2, paths[:2]},
		{"", "b/c.md", 2, []string{"b/d.md", "b/e/f.md"}},
		{"b/", "", 100, []string{"b/c.md", "b/d.md", "b/e/f.md"}},
		{"b/", "b/d.md", 100, []string{"b/e/f.md"}},
		{"b/", "a", 100, []string{"b/c.md", "b/d.md", "b/e/f.md"}},
		{"b/", "c", 100, nil},
		{"nope/", "", 100, nil},
	} {
		if got := list(tc.prefix, tc.after, tc.limit); !slices.Equal(got, tc.want) {
			t.Errorf("list(%q, %q, %d) = %v, want %v", tc.prefix, tc.after, tc.limit, got, tc.want)
		}
	}
	_, err := s.WorkspaceFiles(ctx, sc, "", "", 0)
	wantErr(t, "a zero limit", err, store.ErrInvalid)
}

func testFileConflicts(t *testing.T, s Record) {
	ctx := t.Context()
	sc := userScope(alice)
	v := version(sc, "x.md", "one")
	v.Expect = 1
	_, err := s.PutFile(ctx, v)
	wantErr(t, "expecting a version of a missing file", err, store.ErrConflict)
	v.Expect = store.ExpectNone
	must(s.PutFile(ctx, v))(t)
	_, err = s.PutFile(ctx, v)
	wantErr(t, "expecting no file", err, store.ErrConflict)
	v.Expect = 2
	_, err = s.PutFile(ctx, v)
	wantErr(t, "expecting a later version", err, store.ErrConflict)
	v.Expect = 1
	if f := must(s.PutFile(ctx, v))(t); f.Version != 2 {
		t.Fatalf("version %d", f.Version)
	}
	if vs := must(s.FileVersions(ctx, sc, "x.md"))(t); len(vs) != 2 {
		t.Fatalf("a refused write left %d versions", len(vs))
	}
}

func testFileConcurrentWrites(t *testing.T, s Record) {
	ctx := t.Context()
	sc := userScope(alice)
	// Two creators of one new file: one wins, the other has a conflict.
	ok := len(testcheck.Race(t, "write", 8, store.ErrConflict, func(i int) error {
		_, err := s.PutFile(ctx, version(sc, "busy.md", fmt.Sprint("writer ", i)))
		return err
	}))
	vs := must(s.FileVersions(ctx, sc, "busy.md"))(t)
	if len(vs) != ok {
		t.Fatalf("%d writes succeeded, %d versions stored", ok, len(vs))
	}
	for i, v := range vs {
		if v.Version != i+1 {
			t.Fatalf("versions %+v are not numbered 1..n", vs)
		}
	}
}

// A write and a delete of one file at once: each succeeds or finds the
// file gone, and the scope's usage is what its files hold. On PostgreSQL
// the delete took the usage's row before the file's, the write the other
// way round, and they deadlocked; and a version written after the delete
// summed the file's sizes was left counted.
func testFileWriteDeleteRace(t *testing.T, s Record) {
	ctx := t.Context()
	sc := userScope(alice)
	for round := range 40 {
		must(s.PutFile(ctx, version(sc, "race.md", "first")))(t)
		var putErr, delErr error
		together(func() {
			_, putErr = s.PutFile(ctx, version(sc, "race.md", fmt.Sprint("second, round ", round)))
		}, func() {
			_, delErr = s.DeleteFile(ctx, sc, "race.md")
		})
		if putErr != nil {
			t.Fatalf("round %d: write beside a delete: %v", round, putErr)
		}
		if delErr != nil && !errors.Is(delErr, store.ErrNotFound) {
			t.Fatalf("round %d: delete beside a write: %v", round, delErr)
		}
		var want store.ScopeUsage
		for _, f := range must(s.WorkspaceFiles(ctx, sc, "", "", 100))(t) {
			want.Files++
			for _, v := range must(s.FileVersions(ctx, sc, f.Path))(t) {
				want.Bytes += v.Size
			}
		}
		if u := must(s.ScopeUsage(ctx, sc))(t); u != want {
			t.Fatalf("round %d: usage %+v, but the files hold %+v", round, u, want)
		}
		if _, err := s.DeleteFile(ctx, sc, "race.md"); err != nil && !errors.Is(err, store.ErrNotFound) {
			t.Fatal(err)
		}
	}
}

func testFileQuota(t *testing.T, s Record) {
	ctx := t.Context()
	sc := userScope(alice)
	put := func(path, data string, maxBytes, maxFiles int64) error {
		v := version(sc, path, data)
		v.MaxBytes, v.MaxFiles = maxBytes, maxFiles
		_, err := s.PutFile(ctx, v)
		return err
	}
	must(0, put("a", "12345", 10, 2))(t)
	wantErr(t, "over the bytes", put("a", "123456", 10, 2), store.ErrQuota)
	must(0, put("b", "12345", 10, 2))(t)
	wantErr(t, "over the files", put("c", "", 10, 2), store.ErrQuota)
	if u := must(s.ScopeUsage(ctx, sc))(t); u != (store.ScopeUsage{Bytes: 10, Files: 2}) {
		t.Fatalf("usage after refusals %+v", u)
	}
	if _, err := s.WorkspaceFile(ctx, sc, "c"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("a refused file was stored: %v", err)
	}
}

func testFileInvalid(t *testing.T, s Record) {
	ctx := t.Context()
	sc := userScope(alice)
	bad := map[string]store.NewFileVersion{}
	v := version(sc, "x", "data")
	v.Scope.Kind = "desk"
	bad["kind"] = v
	v = version(sc, "x", "data")
	v.Scope.ID = bob
	bad["user scope of another"] = v
	v = version(sc, "", "data")
	bad["path"] = v
	v = version(sc, "x", "data")
	v.ObjectKey = ""
	bad["object"] = v
	v = version(sc, "x", "data")
	v.SHA256 = "abc"
	bad["sha"] = v
	v = version(sc, "x", "data")
	v.Op = "delete"
	bad["op"] = v
	v = version(sc, "x\x00", "data")
	bad["nul"] = v
	errs := map[string]error{}
	for name, v := range bad {
		_, errs[name] = s.PutFile(ctx, v)
	}
	wantErrs(t, "", errs, store.ErrInvalid)
	if u := must(s.ScopeUsage(ctx, sc))(t); u != (store.ScopeUsage{}) {
		t.Fatalf("invalid writes stored %+v", u)
	}
	_, err := s.CreateProject(ctx, store.NewProject{Owner: alice})
	wantErr(t, "a project without a name", err, store.ErrInvalid)
	cs := store.FileScope{Kind: store.ScopeConversation, ID: newConversation(t, s, bob).ID, UserID: alice}
	_, err = s.PutFile(ctx, version(cs, "x", "data"))
	wantErr(t, "a file in another's conversation", err, store.ErrNotFound)
}

func testFilesGoWithConversation(t *testing.T, s Record) {
	ctx := t.Context()
	c := newConversation(t, s, alice)
	cs := store.FileScope{Kind: store.ScopeConversation, ID: c.ID, UserID: alice}
	must(s.PutFile(ctx, version(cs, "draft.md", "words")))(t)
	must(0, s.DeleteConversation(ctx, alice, c.ID))(t)
	_, err := s.WorkspaceFile(ctx, cs, "draft.md")
	wantErr(t, "a deleted conversation's file", err, store.ErrNotFound)
	_, err = s.PutFile(ctx, version(cs, "draft.md", "words"))
	wantErr(t, "a file of a deleted conversation", err, store.ErrNotFound)
}

// A write of a conversation's file as the conversation is deleted: the
// write succeeds before the delete or finds the conversation gone, and
// the delete takes the file with it.
func testFileWriteConversationDeleteRace(t *testing.T, s Record) {
	ctx := t.Context()
	for round := range 40 {
		c := newConversation(t, s, alice)
		cs := store.FileScope{Kind: store.ScopeConversation, ID: c.ID, UserID: alice}
		must(s.PutFile(ctx, version(cs, "draft.md", "words")))(t)
		var putErr, delErr error
		together(func() {
			_, putErr = s.PutFile(ctx, version(cs, "draft.md", fmt.Sprint("more words, round ", round)))
		}, func() {
			delErr = s.DeleteConversation(ctx, alice, c.ID)
		})
		if putErr != nil && !errors.Is(putErr, store.ErrNotFound) {
			t.Fatalf("round %d: write beside the conversation's delete: %v", round, putErr)
		}
		if delErr != nil {
			t.Fatalf("round %d: delete beside a write of the conversation's file: %v", round, delErr)
		}
		if _, err := s.WorkspaceFile(ctx, cs, "draft.md"); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("round %d: the deleted conversation's file: %v", round, err)
		}
		if u := must(s.ScopeUsage(ctx, cs))(t); u != (store.ScopeUsage{}) {
			t.Fatalf("round %d: the deleted conversation's usage %+v", round, u)
		}
	}
}

func testFilesErased(t *testing.T, s Record) {
	ctx := t.Context()
	files := func(user string) (store.FileScope, store.FileScope, store.Project) {
		c := newConversation(t, s, user)
		cs := store.FileScope{Kind: store.ScopeConversation, ID: c.ID, UserID: user}
		must(s.PutFile(ctx, version(cs, "draft.md", "words of "+user)))(t)
		must(s.PutFile(ctx, version(userScope(user), "me.md", "about "+user)))(t)
		p := must(s.CreateProject(ctx, store.NewProject{Owner: user, Name: user + "'s"}))(t)
		must(s.PutFile(ctx, version(store.FileScope{Kind: store.ScopeProject, ID: p.ID}, "p.md", "plan")))(t)
		return cs, userScope(user), p
	}
	acs, aus, ap := files(alice)
	bcs, bus, bp := files(bob)
	must(s.AddProjectMember(ctx, bp.ID, alice))(t)
	must(s.AddProjectMember(ctx, ap.ID, bob))(t)

	must(0, s.BeginErasure(ctx, alice))(t)
	_, err := s.PutFile(ctx, version(aus, "late.md", "late"))
	wantErr(t, "a file of a user being erased", err, store.ErrErasing)
	_, err = s.CreateProject(ctx, store.NewProject{Owner: alice, Name: "late"})
	wantErr(t, "a project of a user being erased", err, store.ErrErasing)
	must(s.EraseUser(ctx, alice))(t)

	for _, sc := range []store.FileScope{acs, aus, {Kind: store.ScopeProject, ID: ap.ID}} {
		if got := must(s.WorkspaceFiles(ctx, sc, "", "", 10))(t); len(got) != 0 {
			t.Errorf("%s scope of the erased user lists %+v", sc.Kind, got)
		}
		if u := must(s.ScopeUsage(ctx, sc))(t); u != (store.ScopeUsage{}) {
			t.Errorf("%s scope of the erased user holds %+v", sc.Kind, u)
		}
	}
	_, err = s.GetProject(ctx, ap.ID)
	wantErr(t, "the erased user's project", err, store.ErrNotFound)
	if p := must(s.GetProject(ctx, bp.ID))(t); !slices.Equal(p.Members, []string{bob}) {
		t.Errorf("bob's project keeps members %v", p.Members)
	}
	for _, sc := range []store.FileScope{bcs, bus, {Kind: store.ScopeProject, ID: bp.ID}} {
		if u := must(s.ScopeUsage(ctx, sc))(t); u.Files != 1 {
			t.Errorf("bob's %s scope holds %+v after alice's erasure", sc.Kind, u)
		}
	}
	if got := must(s.UserProjects(ctx, alice))(t); len(got) != 0 {
		t.Errorf("alice is still in %+v", got)
	}
}
