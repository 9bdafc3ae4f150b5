package main

import (
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/trellis-ai/trellis/documents/workspace"
)

func TestParseWorkspace(t *testing.T) {
	for approve, want := range map[string][]string{
		"delete":            {"delete"},
		"write, edit,write": {"write", "edit"},
		"none":              {},
		"":                  {},
	} {
		var c workspaceConfig
		if errs := parseWorkspace(&c, approve, "10", "20", "30"); len(errs) != 0 || !slices.Equal(c.approve, want) || c.approve == nil {
			t.Errorf("approve %q: %v %v", approve, c.approve, errs)
		}
		if c.limits != (workspace.Limits{FileBytes: 10, ScopeBytes: 20, ScopeFiles: 30}) {
			t.Errorf("limits %+v", c.limits)
		}
	}
	var c workspaceConfig
	if errs := parseWorkspace(&c, "rename", "0", "x", "-1"); len(errs) != 4 {
		t.Errorf("bad flags: %v", errs)
	}
}

// TestWorkspaceThroughServe: with no key, the offline model writes,
// lists, appends to and reads a file of the conversation's workspace,
// through a real trellis serve on either record; and another user's
// "show my files" lists none of them.
func TestWorkspaceThroughServe(t *testing.T) {
	for _, db := range []string{"sqlite", "postgres"} {
		t.Run(db, func(t *testing.T) {
			t.Parallel()
			env := []string{"TRELLIS_MODEL=offline", "TRELLIS_APPROVAL_TOOLS=", "TRELLIS_API_KEYS=" + aliceKey + ":alice," + bobKey + ":bob"}
			switch db {
			case "sqlite":
				env = append(env, "TRELLIS_DATA_DIR="+t.TempDir())
			case "postgres":
				env = append(env, "DATABASE_URL="+pgDSN(t), "TRELLIS_DOCUMENTS_DIR="+t.TempDir())
			}
			c := startServe(t, env...)
			say := func(key, conv, msg string) (string, string) {
				t.Helper()
				body := map[string]any{"message": msg}
				if conv != "" {
					body["conversation_id"] = conv
				}
				out := asJSON(t, c, key, "POST", "/api/v1/chat/sync", body, 200)
				text, _ := out["response"].(string)
				if out["status"] != "completed" {
					t.Fatalf("%q: %v", msg, out)
				}
				id, _ := out["conversation_id"].(string)
				return id, text
			}
			conv, text := say(aliceKey, "", "write a file notes.md with hello")
			if !strings.Contains(text, "Wrote notes.md") {
				t.Fatalf("write: %q", text)
			}
			if _, text = say(aliceKey, conv, "show my files"); !strings.Contains(text, "notes.md\t6 bytes\tversion 1") {
				t.Fatalf("show my files: %q", text)
			}
			if _, text = say(aliceKey, conv, "add a line to notes.md: world"); !strings.Contains(text, "version 2") {
				t.Fatalf("add a line: %q", text)
			}
			if _, text = say(aliceKey, conv, "read notes.md"); !strings.Contains(text, "     1\thello\n     2\tworld") {
				t.Fatalf("read: %q", text)
			}
			// Another conversation's workspace is its own; bob's is his.
			if _, text = say(aliceKey, "", "show my files"); !strings.Contains(text, "No files") {
				t.Fatalf("a new conversation's files: %q", text)
			}
			if code, _ := as(t, c, bobKey, "POST", "/api/v1/chat/sync", map[string]any{"message": "read notes.md", "conversation_id": conv}); code != 404 {
				t.Fatalf("bob in alice's conversation: %d", code)
			}
			c.stop(syscall.SIGTERM)
		})
	}
}
