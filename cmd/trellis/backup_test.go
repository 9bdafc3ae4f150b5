package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
)

// trellis runs the command line in this process, with env as its only
// environment, and returns its exit code and what it printed.
func trellis(t *testing.T, env map[string]string, args ...string) (int, string) {
	t.Helper()
	var out, errs bytes.Buffer
	code := run(t.Context(), args, stdio{in: strings.NewReader(""), out: &out, err: &errs, getenv: func(k string) string { return env[k] }})
	return code, out.String() + errs.String()
}

// A backup taken while the server answers chats restores into a new
// data directory that a new server starts on: every conversation reads,
// the approval that was pending still is and, approved, runs its tool,
// and the uploaded document is still searched and cited.
func TestBackupUnderLoadRestores(t *testing.T) {
	t.Parallel()
	md, err := os.ReadFile("../../documents/testdata/handbook.md")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	data, restored, backup := filepath.Join(dir, "data"), filepath.Join(dir, "restored"), filepath.Join(dir, "backup")
	serveEnv := []string{"TRELLIS_MODEL=offline", "TRELLIS_COGNITION_BUDGET=5s"}
	first := startServe(t, append(serveEnv, "TRELLIS_DATA_DIR="+data)...)

	d := uploadTo(t, first, "", "handbook.md", md)
	docConv := d["conversation_id"].(string)
	waitDocReady(t, first, docConv, d)
	parked := syncChat(t, first, map[string]any{"message": "what is 6*7?"})
	approvalConv, _ := parked["conversation_id"].(string)
	approvals := pendingIDs(t, first, "approvals", approvalConv)
	if len(approvals) != 1 {
		t.Fatalf("pending approvals %v; the chat answered %v", approvals, parked)
	}

	// Load: chats keep the server writing to every database while the
	// backup runs.
	ctx, stop := context.WithCancel(t.Context())
	var answered atomic.Int64
	var wg sync.WaitGroup
	for range 2 {
		wg.Go(func() {
			for ctx.Err() == nil {
				resp, err := first.try(http.MethodPost, "/api/v1/chat/sync", map[string]any{"message": "hello there"})
				if err != nil {
					return
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode == http.StatusOK {
					answered.Add(1)
				}
			}
		})
	}
	for answered.Load() < 3 {
		if ctx.Err() != nil {
			t.Fatal(ctx.Err())
		}
	}
	code, out := trellis(t, map[string]string{"TRELLIS_DATA_DIR": data}, "backup", backup)
	stop()
	wg.Wait()
	if code != 0 {
		t.Fatalf("backup: exit %d: %s", code, out)
	}
	if !strings.Contains(out, "3 databases · 1 document files") {
		t.Errorf("backup said %q", out)
	}
	before := conversationIDs(t, first)
	first.stop(syscall.SIGKILL)

	if code, out := trellis(t, map[string]string{"TRELLIS_DATA_DIR": restored}, "restore", backup); code != 0 {
		t.Fatalf("restore: exit %d: %s", code, out)
	}
	second := startServe(t, append(serveEnv, "TRELLIS_DATA_DIR="+restored)...)
	got := conversationIDs(t, second)
	// The conversations the load started after the backup are not in it;
	// every one it holds reads.
	if len(got) < 3 || len(got) > len(before) {
		t.Fatalf("restored %d conversations; %d existed after the backup", len(got), len(before))
	}
	for _, id := range got {
		if code, conv := getJSON(t, second, "/api/v1/conversations/"+id); code != http.StatusOK || conv["id"] != id {
			t.Fatalf("conversation %s: %d %v", id, code, conv)
		}
	}

	if ids := pendingIDs(t, second, "approvals", approvalConv); len(ids) != 1 || ids[0] != approvals[0] {
		t.Fatalf("pending approvals after the restore: %v, want %v", ids, approvals)
	}
	resp := second.do(http.MethodPost, "/api/v1/approvals/"+approvals[0], map[string]any{"decision": "approve"})
	if b, _ := io.ReadAll(resp.Body); resp.StatusCode != http.StatusOK {
		t.Fatalf("approve: %d %s", resp.StatusCode, b)
	}
	runStatus(t, second, approvalConv, "completed")
	if _, conv := getJSON(t, second, "/api/v1/conversations/"+approvalConv); !strings.Contains(lastContent(conv), "42") {
		t.Errorf("the approved calculation answered %q", lastContent(conv))
	}

	tools, done, seen := askDocuments(t, second, map[string]any{"message": "When does the coffee machine need descaling?", "conversation_id": docConv})
	if cites := citationsOf(t, done); len(tools) != 1 || tools[0] != "search_documents" || len(cites) != 1 || !strings.Contains(cites[0].Text, "Bertha") {
		t.Fatalf("tools %v, response.done %v\nevents %v", tools, done, seen)
	}
	if code, _ := getJSON(t, second, "/api/v1/documents/"+docConv+"/"+d["document_id"].(string)+"/content"); code != http.StatusOK {
		t.Errorf("the restored document's file: %d", code)
	}
}

// conversationIDs lists the ids of the first 100 conversations on c.
func conversationIDs(t *testing.T, c *child) []string {
	t.Helper()
	var list struct {
		Conversations []struct {
			ID string `json:"id"`
		} `json:"conversations"`
	}
	if err := json.NewDecoder(c.do(http.MethodGet, "/api/v1/conversations?limit=100", nil).Body).Decode(&list); err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, c := range list.Conversations {
		ids = append(ids, c.ID)
	}
	return ids
}

// lastContent is the content of a conversation's last message.
func lastContent(conv map[string]any) string {
	ms, _ := conv["messages"].([]any)
	if len(ms) == 0 {
		return ""
	}
	m, _ := ms[len(ms)-1].(map[string]any)
	s, _ := m["content"].(string)
	return s
}

// What backup and restore refuse: a destination that exists, a data
// directory with no database, PostgreSQL, a directory that is no backup,
// and a restore over a data directory that already holds a database.
func TestBackupAndRestoreRefuse(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	data := filepath.Join(dir, "data")
	c := startServe(t, "TRELLIS_DATA_DIR="+data)
	syncChat(t, c, map[string]any{"message": "hi"})
	c.stop(syscall.SIGTERM)
	backup := filepath.Join(dir, "backup")
	env := map[string]string{"TRELLIS_DATA_DIR": data}
	if code, out := trellis(t, env, "backup", backup); code != 0 {
		t.Fatalf("backup: exit %d: %s", code, out)
	}
	// A backup whose manifest names the directory above it as a database.
	dotdot := filepath.Join(dir, "dotdot")
	if _, _, err := copyTree(backup, dotdot); err != nil {
		t.Fatal(err)
	}
	m, err := readManifest(dotdot)
	if err != nil {
		t.Fatal(err)
	}
	m.Databases = append(m.Databases, "..")
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dotdot, manifestName), b, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		env  map[string]string
		args []string
		code int
		says string
	}{
		{"no directory", env, []string{"backup"}, 2, "want one directory"},
		{"destination exists", env, []string{"backup", backup}, 1, "exists"},
		{"no database", map[string]string{"TRELLIS_DATA_DIR": filepath.Join(dir, "empty")}, []string{"backup", filepath.Join(dir, "b2")}, 1, "no Trellis database"},
		{"postgres", map[string]string{"TRELLIS_DATA_DIR": data, "DATABASE_URL": "postgres://x"}, []string{"backup", filepath.Join(dir, "b3")}, 2, "pg_dump"},
		{"not a backup", map[string]string{"TRELLIS_DATA_DIR": filepath.Join(dir, "r1")}, []string{"restore", data}, 1, "not a Trellis backup"},
		{"over a database", env, []string{"restore", backup}, 1, "already holds trellis.db"},
		{"a database named ..", map[string]string{"TRELLIS_DATA_DIR": filepath.Join(dir, "r2")}, []string{"restore", dotdot}, 1, `database ".." is not a file name`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, out := trellis(t, tc.env, tc.args...)
			if code != tc.code || !strings.Contains(out, tc.says) {
				t.Fatalf("exit %d, %q; want %d and %q", code, out, tc.code, tc.says)
			}
		})
	}
	for _, p := range []string{filepath.Join(dir, "b2"), filepath.Join(dir, "b3"), filepath.Join(dir, "r1", "trellis.db"), filepath.Join(dir, "r2", "trellis.db")} {
		if _, err := os.Stat(p); err == nil {
			t.Errorf("a refused command left %s", p)
		}
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if strings.Contains(e.Name(), ".partial-") {
			t.Errorf("a backup left %s", e.Name())
		}
	}
}
