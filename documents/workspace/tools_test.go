package workspace_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/trellis-ai/trellis/documents/workspace"
	"github.com/trellis-ai/trellis/documents/workspace/sandbox"
	"github.com/trellis-ai/trellis/events"
	"github.com/trellis-ai/trellis/operators"
	"github.com/trellis-ai/trellis/store"
)

// emitter is a run's messenger as far as the tools use it: it keeps
// the events they put on the stream.
type emitter struct {
	operators.NopMessenger
	mu  sync.Mutex
	evs []events.Payload
}

func (e *emitter) Emit(_ context.Context, p events.Payload) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.evs = append(e.evs, p)
	return nil
}

type toolEnv struct {
	w        *workspace.Workspaces
	rec      workspaceRecord
	provider *operators.Provider
	msgs     *emitter
}

type workspaceRecord interface {
	workspace.Record
	CreateConversation(ctx context.Context, c store.NewConversation) (store.Conversation, error)
}

func newToolEnv(t *testing.T, cfg workspace.ToolConfig) toolEnv {
	rec := sqliteRecord(t)
	w := workspace.New(rec, fsFiles(t), workspace.Limits{})
	local := operators.NewRegistry()
	local.MustAdd(w.Tools(cfg)...)
	local.MustAdd(w.CodeTool(sandbox.Limits{Time: 5 * time.Second}, cfg))
	return toolEnv{w: w, rec: rec, provider: operators.NewProvider(operators.ProviderConfig{Local: local}), msgs: &emitter{}}
}

func (e toolEnv) call(t *testing.T, user, conv, tool, args string) operators.Result {
	t.Helper()
	return e.provider.Execute(t.Context(), tool, json.RawMessage(args), operators.Call{UserID: user, ConversationID: conv, Messenger: e.msgs})
}

func (e toolEnv) ok(t *testing.T, user, conv, tool, args string) string {
	t.Helper()
	res := e.call(t, user, conv, tool, args)
	if res.IsError() {
		t.Fatalf("%s %s: %s", tool, args, res.Error)
	}
	return res.Text()
}

func (e toolEnv) conv(t *testing.T, user string) string {
	c, err := e.rec.CreateConversation(t.Context(), store.NewConversation{UserID: user})
	if err != nil {
		t.Fatal(err)
	}
	return c.ID
}

// TestTools: every file tool through the one provider, as a run calls
// it, with the errors the model reads.
func TestTools(t *testing.T) {
	e := newToolEnv(t, workspace.ToolConfig{})
	c := e.conv(t, "alice")
	if got := e.ok(t, "alice", c, "ls", `{}`); !strings.Contains(got, "No files") {
		t.Errorf("ls of nothing: %q", got)
	}
	e.ok(t, "alice", c, "write_file", `{"path":"notes.md","content":"hello\nworld\n"}`)
	if got := e.ok(t, "alice", c, "ls", `{}`); !strings.HasPrefix(got, "notes.md\t12 bytes\tversion 1") {
		t.Errorf("ls: %q", got)
	}
	if got := e.ok(t, "alice", c, "read_file", `{"path":"notes.md"}`); got != "     1\thello\n     2\tworld" {
		t.Errorf("read_file: %q", got)
	}
	if got := e.ok(t, "alice", c, "read_file", `{"path":"notes.md","offset":1,"limit":1}`); got != "     2\tworld" {
		t.Errorf("read_file with offset: %q", got)
	}
	e.ok(t, "alice", c, "edit_file", `{"path":"notes.md","old_string":"world","new_string":"there"}`)
	e.ok(t, "alice", c, "write_file", `{"path":"log.md","content":"one\n","append":true}`)
	e.ok(t, "alice", c, "write_file", `{"path":"log.md","content":"two\n","append":true}`)
	if got := e.ok(t, "alice", c, "read_file", `{"path":"log.md"}`); got != "     1\tone\n     2\ttwo" {
		t.Errorf("after appends: %q", got)
	}
	e.ok(t, "alice", c, "write_file", `{"path":"dup.md","content":"a a"}`)
	for args, want := range map[string]error{
		`{"path":"dup.md","old_string":"a","new_string":"b"}`:                   workspace.ErrNotUnique,
		`{"path":"dup.md","old_string":"zzz","new_string":"b"}`:                 workspace.ErrNoMatch,
		`{"path":"missing.md","old_string":"a","new_string":"b"}`:               workspace.ErrNotFound,
		`{"path":"../up.md","old_string":"a","new_string":"b"}`:                 workspace.ErrBadPath,
		`{"path":"dup.md","old_string":"a","new_string":"b","scope":"desk"}`:    operators.ErrInvalidArguments,
		`{"path":"dup.md","old_string":"a","new_string":"b","scope":"project"}`: workspace.ErrBadScope,
	} {
		if res := e.call(t, "alice", c, "edit_file", args); !errors.Is(res.Err, want) {
			t.Errorf("edit_file %s: %v, want %v", args, res.Err, want)
		}
	}
	e.ok(t, "alice", c, "edit_file", `{"path":"dup.md","old_string":"a","new_string":"b","replace_all":true}`)
	if got := e.ok(t, "alice", c, "read_file", `{"path":"dup.md"}`); got != "     1\tb b" {
		t.Errorf("after replace_all: %q", got)
	}
	if got := e.ok(t, "alice", c, "glob", `{"pattern":"*.md"}`); got != "dup.md\nlog.md\nnotes.md" {
		t.Errorf("glob: %q", got)
	}
	if got := e.ok(t, "alice", c, "grep", `{"pattern":"^hel"}`); got != "notes.md:1: hello" {
		t.Errorf("grep: %q", got)
	}
	e.ok(t, "alice", c, "write_file", `{"path":"mine.md","content":"across conversations","scope":"user"}`)
	if got := e.ok(t, "alice", e.conv(t, "alice"), "read_file", `{"path":"mine.md","scope":"user"}`); !strings.Contains(got, "across") {
		t.Errorf("the user scope from another conversation: %q", got)
	}
	e.ok(t, "alice", c, "delete_file", `{"path":"dup.md"}`)
	if res := e.call(t, "alice", c, "read_file", `{"path":"dup.md"}`); !errors.Is(res.Err, workspace.ErrNotFound) {
		t.Errorf("a deleted file: %+v", res)
	}
	if res := e.call(t, "", "", "ls", `{}`); !res.IsError() {
		t.Errorf("a call with no user: %+v", res)
	}

	var changes []string
	for _, p := range e.msgs.evs {
		f := p.(*events.FileChanged)
		changes = append(changes, f.Op+" "+f.Scope+" "+f.Path)
	}
	want := "write conversation notes.md|edit conversation notes.md|write conversation log.md|edit conversation log.md|write conversation dup.md|edit conversation dup.md|write user mine.md|delete conversation dup.md"
	if got := strings.Join(changes, "|"); got != want {
		t.Errorf("file.changed events:\n%s\nwant\n%s", got, want)
	}
}

// TestToolsIsolation: through the tools, bob reaches none of alice's
// files: not in her conversation, her user scope or her project.
func TestToolsIsolation(t *testing.T) {
	e := newToolEnv(t, workspace.ToolConfig{})
	ctx := t.Context()
	c := e.conv(t, "alice")
	e.ok(t, "alice", c, "write_file", `{"path":"secret.md","content":"marmalade"}`)
	e.ok(t, "alice", c, "write_file", `{"path":"secret.md","content":"marmalade","scope":"user"}`)
	p, err := e.w.CreateProject(ctx, "alice", "hers")
	if err != nil {
		t.Fatal(err)
	}
	if err := e.w.AttachConversation(ctx, "alice", c, p.ID); err != nil {
		t.Fatal(err)
	}
	e.ok(t, "alice", c, "write_file", `{"path":"secret.md","content":"marmalade","scope":"project"}`)
	for _, scope := range []string{"", `,"scope":"user"`, `,"scope":"project"`} {
		for tool, args := range map[string]string{
			"ls": `{` + strings.TrimPrefix(scope, ",") + `}`, "read_file": `{"path":"secret.md"` + scope + `}`,
			"write_file": `{"path":"secret.md","content":"jam"` + scope + `}`, "grep": `{"pattern":"marmalade"` + scope + `}`,
			"edit_file":   `{"path":"secret.md","old_string":"marmalade","new_string":"jam"` + scope + `}`,
			"delete_file": `{"path":"secret.md"` + scope + `}`, "run_code": `{"code":"files.read('secret.md')"}`,
		} {
			res := e.call(t, "bob", c, tool, args)
			// bob's user scope is his own: his calls there may succeed,
			// on his files.
			if !res.IsError() && scope != `,"scope":"user"` {
				t.Errorf("bob's %s %s in alice's conversation: %q", tool, args, res.Text())
			}
			if strings.Contains(res.Text(), "marmalade") || strings.Contains(res.Error, "marmalade\n") {
				t.Errorf("bob's %s %s read alice's file: %+v", tool, args, res)
			}
		}
	}
	// bob's own user scope is his: what he wrote there is not alice's.
	for _, s := range []workspace.Scope{{Kind: workspace.KindConversation, ID: c}, {Kind: workspace.KindUser, ID: "alice"}, {Kind: workspace.KindProject, ID: p.ID}} {
		if _, b, err := e.w.Read(ctx, "alice", s, "secret.md"); err != nil || string(b) != "marmalade" {
			t.Errorf("alice's %s file after bob's calls: %q %v", s.Kind, b, err)
		}
	}
}

// TestToolsApprovalAndPreview: delete asks by default, write and edit
// when configured, and run_code (whose programs write) when write or
// edit is; the preview of each is the unified diff of its
// change.
func TestToolsApprovalAndPreview(t *testing.T) {
	def := newToolEnv(t, workspace.ToolConfig{})
	for tool, want := range map[string]bool{"write_file": false, "edit_file": false, "delete_file": true, "ls": false, "read_file": false, "run_code": false} {
		if got := def.provider.NeedsApproval(tool); got != want {
			t.Errorf("by default %s asks: %v, want %v", tool, got, want)
		}
	}
	all := newToolEnv(t, workspace.ToolConfig{Approve: []string{workspace.ApproveWrite, workspace.ApproveEdit}})
	for tool, want := range map[string]bool{"write_file": true, "edit_file": true, "delete_file": false, "run_code": true} {
		if got := all.provider.NeedsApproval(tool); got != want {
			t.Errorf("configured, %s asks: %v, want %v", tool, got, want)
		}
	}
	for _, op := range []string{workspace.ApproveWrite, workspace.ApproveEdit} {
		one := newToolEnv(t, workspace.ToolConfig{Approve: []string{op}})
		if !one.provider.NeedsApproval("run_code") {
			t.Errorf("with %s approved, run_code does not ask", op)
		}
	}
	c := def.conv(t, "alice")
	call := operators.Call{UserID: "alice", ConversationID: c}
	preview := func(tool, args string) string {
		return def.provider.Preview(t.Context(), tool, json.RawMessage(args), call)
	}
	if got, want := preview("write_file", `{"path":"n.md","content":"one\ntwo\n"}`), "--- /dev/null\n+++ b/n.md\n@@ -0,0 +1,2 @@\n+one\n+two\n"; got != want {
		t.Errorf("preview of a new file:\n%s\nwant\n%s", got, want)
	}
	def.ok(t, "alice", c, "write_file", `{"path":"n.md","content":"one\ntwo\n"}`)
	if got, want := preview("edit_file", `{"path":"n.md","old_string":"two","new_string":"2"}`), "--- a/n.md\n+++ b/n.md\n@@ -1,2 +1,2 @@\n one\n-two\n+2\n"; got != want {
		t.Errorf("preview of an edit:\n%s\nwant\n%s", got, want)
	}
	if got, want := preview("delete_file", `{"path":"n.md"}`), "--- a/n.md\n+++ /dev/null\n@@ -1,2 +0,0 @@\n-one\n-two\n"; got != want {
		t.Errorf("preview of a delete:\n%s\nwant\n%s", got, want)
	}
	if got := def.provider.Preview(t.Context(), "write_file", json.RawMessage(`{"path":"n.md","content":"x"}`), operators.Call{UserID: "bob", ConversationID: c}); got != "" {
		t.Errorf("bob's preview of alice's file: %q", got)
	}
	if got := preview("ls", `{}`); got != "" {
		t.Errorf("a preview of ls: %q", got)
	}
}

// TestRunCodeFiles: run_code's programs read and write the
// conversation's files.
func TestRunCodeFiles(t *testing.T) {
	e := newToolEnv(t, workspace.ToolConfig{})
	c := e.conv(t, "alice")
	e.ok(t, "alice", c, "write_file", `{"path":"in.txt","content":"3,4"}`)
	got := e.ok(t, "alice", c, "run_code", `{"code":"const [a,b] = files.read('in.txt').split(',').map(Number); files.write('out/sum.txt', String(a+b)); files.list('')"}`)
	if got != "=> [ 'in.txt', 'out/sum.txt' ]" && got != `=> ["in.txt","out/sum.txt"]` && !strings.Contains(got, "out/sum.txt") {
		t.Errorf("run_code: %q", got)
	}
	if got := e.ok(t, "alice", c, "read_file", `{"path":"out/sum.txt"}`); got != "     1\t7" {
		t.Errorf("written by the program: %q", got)
	}
	if res := e.call(t, "alice", c, "run_code", `{"code":"files.write('../escape', 'x')"}`); !res.IsError() || !strings.Contains(res.Error, "invalid path") {
		t.Errorf("a program writing outside: %+v", res)
	}
}

// TestDiffMatchesGNUDiff: Diff's hunks are those of diff -u.
func TestDiffMatchesGNUDiff(t *testing.T) {
	if _, err := exec.LookPath("diff"); err != nil {
		t.Skip("no diff on this machine")
	}
	cases := map[string][2]string{
		"middle":        {"a\nb\nc\nd\ne\nf\ng\nh\ni\nj\nk\n", "a\nb\nc\nd\nE\nf\ng\nh\ni\nj\nk\n"},
		"two hunks":     {"1\n2\n3\n4\n5\n6\n7\n8\n9\n10\n11\n12\n13\n14\n15\n", "0\n1\n2\n3\n4\n5\n6\n7\n8\n9\n10\n11\n12\n13\n14\n15\n16\n"},
		"no newline":    {"a\nb", "a\nc"},
		"insert":        {"x\ny\n", "x\nnew\ny\n"},
		"all different": {"p\nq\n", "r\ns\nt\n"},
		"interleaved":   {"a\nb\nc\nd\ne\nf\n", "a\nX\nc\nY\ne\nZ\n"},
	}
	dir := t.TempDir()
	for name, c := range cases {
		a, b := filepath.Join(dir, "a"), filepath.Join(dir, "b")
		os.WriteFile(a, []byte(c[0]), 0o600)
		os.WriteFile(b, []byte(c[1]), 0o600)
		out, _ := exec.Command("diff", "-u", a, b).Output()
		want := string(out)
		want = want[strings.Index(want, "@@"):]
		got := workspace.Diff("f", []byte(c[0]), []byte(c[1]), true, true)
		got = got[strings.Index(got, "@@"):]
		if got != want {
			t.Errorf("%s:\n%s\nwant (diff -u)\n%s", name, got, want)
		}
	}
}
