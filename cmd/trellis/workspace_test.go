package main

import (
	"io"
	"os"
	"path/filepath"

	"net/http"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	mcpgo "github.com/mark3labs/mcp-go/mcp"

	"github.com/trellis-ai/trellis/documents/workspace"
)

func TestParseWorkspace(t *testing.T) {
	t.Parallel()
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

// TestWorkspaceThroughServe: the offline model writes, lists, appends
// to and reads a file of the conversation's workspace, through a real
// trellis serve on either record; another conversation's workspace is
// its own, bob cannot chat in alice's conversation, and over /mcp he
// reaches none of alice's user files (mcpIsolation).
func TestWorkspaceThroughServe(t *testing.T) {
	t.Parallel()
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
			mcpIsolation(t, c)
			c.stop(syscall.SIGTERM)
		})
	}
}

// A write of the agent's workspace that asks for approval survives a
// SIGKILL of the process while it waits on the open stream: the next
// process finds the approval pending, with the change as a diff, and
// once it is approved with edited content the file is written once,
// with that content: one version.
func TestCrashWhileAFileWriteAwaitsApproval(t *testing.T) {
	t.Parallel()
	for _, db := range []string{"sqlite", "postgres"} {
		t.Run(db, func(t *testing.T) {
			t.Parallel()
			env := []string{"TRELLIS_MODEL=offline", "TRELLIS_APPROVAL_TOOLS=", "TRELLIS_WORKSPACE_APPROVE=write"}
			switch db {
			case "sqlite":
				env = append(env, "TRELLIS_DATA_DIR="+t.TempDir())
			case "postgres":
				env = append(env, "DATABASE_URL="+pgDSN(t))
			}
			first := startServe(t, env...)
			resp := first.do("POST", "/api/v1/chat", map[string]any{"message": "write a file notes.md with hello"})
			conv, runID := resp.Header.Get("X-Conversation-ID"), resp.Header.Get("X-Run-ID")
			seen := sseEvents(t, resp, func(ev event) bool { return ev.typ == "approval.required" })
			asked := seen[len(seen)-1].data
			approval, _ := asked["approval_id"].(string)
			if approval == "" || asked["tool"] != "write_file" || asked["diff"] != "--- /dev/null\n+++ b/notes.md\n@@ -0,0 +1 @@\n+hello\n" {
				t.Fatalf("approval.required %v", asked)
			}
			first.stop(syscall.SIGKILL)

			second := startServe(t, env...)
			runStatus(t, second, conv, "interrupted")
			if ids := pendingIDs(t, second, "approvals", conv); len(ids) != 1 || ids[0] != approval {
				t.Fatalf("pending approvals after the crash: %v, want [%s]", ids, approval)
			}
			edit := map[string]any{"decision": "edit", "args": map[string]any{"path": "notes.md", "content": "hello, edited\n"}}
			if r := second.do("POST", "/api/v1/approvals/"+approval, edit); r.StatusCode != http.StatusOK {
				b, _ := io.ReadAll(r.Body)
				t.Fatalf("approve: %d %s", r.StatusCode, b)
			}
			followToEnd(t, second, conv, runID, seen)
			out := syncChat(t, second, map[string]any{"message": "show my files", "conversation_id": conv})
			if text, _ := out["response"].(string); !strings.Contains(text, "notes.md\t14 bytes\tversion 1") {
				t.Fatalf("files after the approval: %q", text)
			}
			out = syncChat(t, second, map[string]any{"message": "read notes.md", "conversation_id": conv})
			if text, _ := out["response"].(string); !strings.Contains(text, "     1\thello, edited") {
				t.Fatalf("the file after the approval: %q", text)
			}
			second.stop(syscall.SIGTERM)
		})
	}
}

// mcpIsolation: over /mcp, where a call has no conversation, the file
// tools act in the caller's own user workspace: bob lists, reads and
// greps none of alice's user files, and his write lands in his own.
func mcpIsolation(t *testing.T, c *child) {
	t.Helper()
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodPut, c.url+"/api/v1/files/user/me/content?path=secret.md", strings.NewReader("alice's secret"))
	req.Header.Set("Authorization", "Bearer "+aliceKey)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("alice's upload into her user workspace: %d", resp.StatusCode)
	}
	mc, err := client.NewStreamableHttpClient(c.url+"/mcp", transport.WithHTTPHeaders(map[string]string{"Authorization": "Bearer " + bobKey}))
	if err != nil {
		t.Fatal(err)
	}
	defer mc.Close()
	ctx := t.Context()
	if err := mc.Start(ctx); err != nil {
		t.Fatal(err)
	}
	init := mcpgo.InitializeRequest{}
	init.Params.ClientInfo = mcpgo.Implementation{Name: "test", Version: "1"}
	if _, err := mc.Initialize(ctx, init); err != nil {
		t.Fatal(err)
	}
	call := func(tool string, args map[string]any) string {
		t.Helper()
		req := mcpgo.CallToolRequest{}
		req.Params.Name, req.Params.Arguments = tool, args
		res, err := mc.CallTool(ctx, req)
		if err != nil {
			t.Fatalf("%s: %v", tool, err)
		}
		var text strings.Builder
		for _, c := range res.Content {
			if tc, ok := c.(mcpgo.TextContent); ok {
				text.WriteString(tc.Text)
			}
		}
		return text.String()
	}
	user := map[string]any{"scope": "user"}
	if got := call("ls", user); strings.Contains(got, "secret.md") {
		t.Errorf("bob's ls over /mcp lists alice's file: %q", got)
	}
	if got := call("read_file", map[string]any{"scope": "user", "path": "secret.md"}); strings.Contains(got, "alice's secret") {
		t.Errorf("bob's read_file over /mcp reads alice's file: %q", got)
	}
	if got := call("grep", map[string]any{"scope": "user", "pattern": "secret"}); strings.Contains(got, "alice") {
		t.Errorf("bob's grep over /mcp finds alice's file: %q", got)
	}
	call("write_file", map[string]any{"scope": "user", "path": "secret.md", "content": "bob's own"})
	if got := call("ls", user); !strings.Contains(got, "secret.md") {
		t.Errorf("bob's ls over /mcp after his own write: %q", got)
	}
	code, b := as(t, c, aliceKey, "GET", "/api/v1/files/user/me/content?path=secret.md", nil)
	if code != http.StatusOK || string(b) != "alice's secret" {
		t.Errorf("alice's file after bob's write over /mcp: %d %q", code, b)
	}
	code, b = as(t, c, bobKey, "GET", "/api/v1/files/user/me/content?path=secret.md", nil)
	if code != http.StatusOK || string(b) != "bob's own" {
		t.Errorf("bob's own file, written over /mcp: %d %q", code, b)
	}
}

// TestSubagentWritesInTheParentsWorkspace: a sub-agent's write_file lands
// in the workspace of the conversation its parent runs in, where the
// parent, the API and the page read it.
func TestSubagentWritesInTheParentsWorkspace(t *testing.T) {
	t.Parallel()
	script, err := filepath.Abs("testdata/subagent_files.json")
	if err != nil {
		t.Fatal(err)
	}
	agents := filepath.Join(t.TempDir(), "subagents.json")
	if err := os.WriteFile(agents, []byte(`{"agents": [{"name": "scribe", "description": "writes files", "tools": ["write_file"]}]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	c := startServe(t, "TRELLIS_DATA_DIR="+t.TempDir(), "TRELLIS_MODEL=scripted:"+script, "TRELLIS_SUBAGENTS="+agents, "TRELLIS_APPROVAL_TOOLS=")
	out := asJSON(t, c, "", "POST", "/api/v1/chat/sync", map[string]any{"message": "draft the plan"}, http.StatusOK)
	conv, _ := out["conversation_id"].(string)
	if out["status"] != "completed" || conv == "" {
		t.Fatalf("chat: %v", out)
	}
	code, b := as(t, c, "", "GET", "/api/v1/files/conversation/"+conv+"/content?path=plan.md", nil)
	if code != http.StatusOK || string(b) != "the scribe's plan" {
		t.Fatalf("the parent's conversation workspace holds plan.md = %d %q", code, b)
	}
	c.stop(syscall.SIGTERM)
}
