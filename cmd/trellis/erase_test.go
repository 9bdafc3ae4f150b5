package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"mime/multipart"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/jackc/pgx/v5"
)

// Keys of the two users of the erasure tests.
const (
	aliceKey = "key-alice"
	bobKey   = "key-bob"
)

// newCanary is a word found nowhere but where a test plants it: lower
// case, so a full-text index keeps it as it is.
func newCanary(t *testing.T) string {
	b := make([]byte, 8)
	rand.Read(b)
	return "zqx" + hex.EncodeToString(b)
}

// as sends a request as the user of key and returns its status and body.
func as(t *testing.T, c *child, key, method, path string, body any) (int, []byte) {
	t.Helper()
	resp := c.do(method, path, body, "Authorization", "Bearer "+key)
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

// asJSON is as, for a JSON answer of want.
func asJSON(t *testing.T, c *child, key, method, path string, body any, want int) map[string]any {
	t.Helper()
	code, b := as(t, c, key, method, path, body)
	var out map[string]any
	if code != want || json.Unmarshal(b, &out) != nil {
		t.Fatalf("%s %s: %d %s", method, path, code, b)
	}
	return out
}

// uploadAs uploads a document as the user of key into the conversation
// ("" for a new one) and waits until it is ready.
func uploadAs(t *testing.T, c *child, key, conv, name, text string) (convID string) {
	t.Helper()
	var body bytes.Buffer
	mw := multipart.NewWriter(&body)
	if conv != "" {
		mw.WriteField("conversation_id", conv)
	}
	fw, _ := mw.CreateFormFile("file", name)
	fw.Write([]byte(text))
	mw.Close()
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, c.url+"/api/v1/documents", &body)
	req.Header.Set("Content-Type", mw.FormDataContentType())
	req.Header.Set("Authorization", "Bearer "+key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var d map[string]any
	if b, _ := io.ReadAll(resp.Body); resp.StatusCode != http.StatusAccepted || json.Unmarshal(b, &d) != nil {
		t.Fatalf("upload: %d %s", resp.StatusCode, b)
	}
	convID = d["conversation_id"].(string)
	waitFor(t, "document ready", func() bool {
		st := asJSON(t, c, key, http.MethodGet, "/api/v1/documents/"+convID+"/"+d["document_id"].(string)+"/status", nil, http.StatusOK)
		if st["status"] == "error" {
			t.Fatalf("document: %v", st)
		}
		return st["status"] == "ready"
	})
	return convID
}

// plant gives the user of key a canary in every kind of record: a
// document (its file, row and chunks), messages, tool calls' arguments
// and results (remember, the document search), events, checkpoints, a
// memory, the profile, a learning job and a file of the conversation's
// workspace (its object and its rows). It returns the conversation.
func plant(t *testing.T, c *child, key, canary string, memory bool) string {
	t.Helper()
	conv := uploadAs(t, c, key, "", "notes.md", "# Notes\n\nThe code word is "+canary+".\n")
	chat := func(msg string) {
		out := asJSON(t, c, key, http.MethodPost, "/api/v1/chat/sync",
			map[string]any{"message": msg, "conversation_id": conv, "memory": memory}, http.StatusOK)
		if out["status"] != "completed" || !strings.Contains(fmt.Sprint(out["tool_calls"]), canary) {
			t.Fatalf("chat %q: %v", msg, out)
		}
	}
	if memory {
		chat("Remember that my code word is " + canary + ".")
		asJSON(t, c, key, http.MethodPatch, "/api/v1/me/profile", map[string]any{"preferences": map[string]string{"code": canary}}, http.StatusOK)
	}
	chat("What do the documents say about " + canary + "?")
	chat("write a file secret.md with the code word is " + canary) // a file of the workspace
	return conv
}

// fileScan finds which files under dir hold a canary, byte for byte.
func fileScan(t *testing.T, dir string, canaries ...string) map[string][]string {
	t.Helper()
	found := map[string][]string{}
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, path)
		for _, cn := range canaries {
			if bytes.Contains(b, []byte(cn)) {
				found[cn] = append(found[cn], rel)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return found
}

// tableScan finds which tables of the database's schema hold a canary in
// any row: the row cast to text, and each bytea column's bytes.
func tableScan(t *testing.T, dsn string, canaries ...string) map[string][]string {
	t.Helper()
	ctx := t.Context()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	rows, err := conn.Query(ctx, `SELECT c.table_name, string_agg(CASE WHEN c.data_type = 'bytea' THEN quote_ident(c.column_name) END, ',')
        FROM information_schema.columns c JOIN information_schema.tables tb USING (table_schema, table_name)
        WHERE c.table_schema = current_schema() AND tb.table_type = 'BASE TABLE' GROUP BY c.table_name ORDER BY 1`)
	if err != nil {
		t.Fatal(err)
	}
	type table struct {
		name  string
		bytea *string
	}
	var tables []table
	for rows.Next() {
		var tb table
		if err := rows.Scan(&tb.name, &tb.bytea); err != nil {
			t.Fatal(err)
		}
		tables = append(tables, tb)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	found := map[string][]string{}
	for _, tb := range tables {
		cond := "t::text LIKE '%' || $1 || '%'"
		if tb.bytea != nil {
			for col := range strings.SplitSeq(*tb.bytea, ",") {
				cond += " OR position(convert_to($1, 'UTF8') in t." + col + ") > 0"
			}
		}
		for _, cn := range canaries {
			var n int
			if err := conn.QueryRow(ctx, "SELECT count(*) FROM "+pgx.Identifier{tb.name}.Sanitize()+" t WHERE "+cond, cn).Scan(&n); err != nil {
				t.Fatalf("scan %s: %v", tb.name, err)
			}
			if n > 0 {
				found[cn] = append(found[cn], tb.name)
			}
		}
	}
	return found
}

// erasureEnv is a trellis serve of two users on a backend, and how to
// scan everything it stores.
type erasureEnv struct {
	t        *testing.T
	env      []string
	dir, dsn string
}

func newErasureEnv(t *testing.T, backend string) *erasureEnv {
	e := &erasureEnv{t: t, dir: t.TempDir()}
	e.env = []string{"TRELLIS_DATA_DIR=" + filepath.Join(e.dir, "data"), "TRELLIS_MODEL=offline", "TRELLIS_COGNITION_BUDGET=5s",
		"TRELLIS_API_KEYS=" + aliceKey + ":alice," + bobKey + ":bob"}
	if backend == "postgres" {
		e.dsn = pgDSN(t)
		// Documents where PostgreSQL keeps them by default: its own
		// table, which the table scan reads byte for byte.
		e.env = append(e.env, "DATABASE_URL="+e.dsn)
	}
	return e
}

// scan finds the canaries in every file of the data and documents
// directories, and on PostgreSQL in every table too.
func (e *erasureEnv) scan(canaries ...string) map[string][]string {
	found := fileScan(e.t, e.dir, canaries...)
	if e.dsn != "" {
		for cn, tables := range tableScan(e.t, e.dsn, canaries...) {
			found[cn] = append(found[cn], tables...)
		}
	}
	return found
}

// waitErased polls the user's erasure until it completed.
func waitErased(t *testing.T, c *child, key string) map[string]any {
	t.Helper()
	var e map[string]any
	waitFor(t, "erasure", func() bool {
		e = asJSON(t, c, key, http.MethodGet, "/api/v1/me/erasure", nil, http.StatusOK)
		if e["status"] == "failed" {
			t.Fatalf("erasure failed: %v", e)
		}
		return e["status"] == "completed"
	})
	return e
}

// Erasure leaves nothing behind, on SQLite and PostgreSQL. Alice and Bob
// each have a canary in every kind of record, and Alice a second one in a
// conversation of its own. Deleting that conversation takes its canary
// out of every file (SQLite's databases, their write-ahead logs, the
// documents' files) and, on PostgreSQL, every table; erasing Alice takes
// hers. Bob's stays, and so does what the API shows him.
func TestEraseLeavesNothingBehind(t *testing.T) {
	t.Parallel()
	for _, backend := range []string{"sqlite", "postgres"} {
		t.Run(backend, func(t *testing.T) {
			e := newErasureEnv(t, backend)
			c := startServe(t, e.env...)
			alice, aliceConv, bob := newCanary(t), newCanary(t), newCanary(t)
			plant(t, c, aliceKey, alice, true)
			gone := plant(t, c, aliceKey, aliceConv, false)
			bobConv := plant(t, c, bobKey, bob, true)

			// The scan finds what is there: every database holds the
			// canaries, and the documents' files.
			before := e.scan(alice, aliceConv, bob)
			for _, cn := range []string{alice, aliceConv, bob} {
				where := strings.Join(before[cn], " ")
				for _, want := range wantHolders(backend) {
					if !strings.Contains(where, want) {
						t.Fatalf("before deleting, %s is not in %s: found in %v", cn, want, before[cn])
					}
				}
			}

			if code, b := as(t, c, aliceKey, http.MethodDelete, "/api/v1/conversations/"+gone, nil); code != http.StatusNoContent {
				t.Fatalf("delete conversation: %d %s", code, b)
			}
			if found := e.scan(aliceConv); len(found[aliceConv]) > 0 {
				t.Errorf("a deleted conversation's canary is still in %v", found[aliceConv])
			}

			resp := asJSON(t, c, aliceKey, http.MethodDelete, "/api/v1/me", nil, http.StatusAccepted)
			if s := resp["status"]; s != "queued" && s != "running" && s != "completed" {
				t.Errorf("DELETE /me: %v", resp)
			}
			done := waitErased(t, c, aliceKey)
			if done["completed_at"] == nil || done["error"] != "" {
				t.Errorf("completed erasure: %v", done)
			}
			after := e.scan(alice, bob)
			if len(after[alice]) > 0 {
				t.Errorf("an erased user's canary is still in %v", after[alice])
			}
			if len(after[bob]) == 0 {
				t.Errorf("erasing alice took bob's canary from every file")
			}

			// Alice is gone from the API; Bob is not.
			for path, key := range map[string]string{"/api/v1/conversations": "conversations", "/api/v1/me/memories": "memories"} {
				if l, _ := asJSON(t, c, aliceKey, http.MethodGet, path, nil, http.StatusOK)[key].([]any); len(l) != 0 {
					t.Errorf("alice's %s after the erasure: %v", key, l)
				}
				if l, _ := asJSON(t, c, bobKey, http.MethodGet, path, nil, http.StatusOK)[key].([]any); len(l) == 0 {
					t.Errorf("bob has no %s after alice's erasure", key)
				}
			}
			if p := asJSON(t, c, aliceKey, http.MethodGet, "/api/v1/me/profile", nil, http.StatusOK); len(p["preferences"].(map[string]any)) != 0 {
				t.Errorf("alice's profile after the erasure: %v", p)
			}
			if p := asJSON(t, c, bobKey, http.MethodGet, "/api/v1/me/profile", nil, http.StatusOK); p["preferences"].(map[string]any)["code"] != bob {
				t.Errorf("bob's profile after alice's erasure: %v", p)
			}
			if code, b := as(t, c, bobKey, http.MethodGet, "/api/v1/conversations/"+bobConv, nil); code != http.StatusOK || !strings.Contains(string(b), bob) {
				t.Errorf("bob's conversation after alice's erasure: %d %s", code, b)
			}

			// Asking again is fine: a new erasure, of nothing.
			asJSON(t, c, aliceKey, http.MethodDelete, "/api/v1/me", nil, http.StatusAccepted)
			waitErased(t, c, aliceKey)
			if code, _ := as(t, c, bobKey, http.MethodGet, "/api/v1/me/erasure", nil); code != http.StatusNotFound {
				t.Errorf("bob's erasure, never asked for: %d", code)
			}
		})
	}
}

// wantHolders are the files (SQLite) or tables (PostgreSQL) a planted
// canary must be found in before anything is deleted, for the scan to
// prove anything.
func wantHolders(backend string) []string {
	if backend == "sqlite" {
		return []string{"trellis.db", "checkpoints.db", "documents" + string(filepath.Separator)}
	}
	return []string{"messages", "events", "chunks", "document_files", "checkpoint"}
}

// An erasure survives a crash, on SQLite and PostgreSQL: the process is
// killed while the erasure job waits to delete a conversation's
// checkpoints (a transaction of the test holds their lock), and the next
// process takes the abandoned job again and completes it. Nothing of the
// erased user is left; the other user keeps everything.
func TestCrashWhileErasing(t *testing.T) {
	t.Parallel()
	for _, backend := range []string{"sqlite", "postgres"} {
		t.Run(backend, func(t *testing.T) {
			e := newErasureEnv(t, backend)
			c := startServe(t, e.env...)
			alice, bob := newCanary(t), newCanary(t)
			plant(t, c, aliceKey, alice, true)
			plant(t, c, aliceKey, alice, true)
			plant(t, c, bobKey, bob, true)

			locked := &crashEnv{t: t, data: filepath.Join(e.dir, "data"), dsn: e.dsn}
			release := locked.holdCheckpoints()
			asJSON(t, c, aliceKey, http.MethodDelete, "/api/v1/me", nil, http.StatusAccepted)
			waitFor(t, "the erasure to run", func() bool {
				s := asJSON(t, c, aliceKey, http.MethodGet, "/api/v1/me/erasure", nil, http.StatusOK)
				return s["status"] == "running"
			})
			c.stop(syscall.SIGKILL)
			release()
			if found := e.scan(alice); len(found[alice]) == 0 {
				t.Fatal("the killed erasure left nothing to finish: the test proves nothing")
			}

			// A short job timeout takes the dead process's job again soon.
			c = startServe(t, append(e.env, "TRELLIS_JOB_TIMEOUT=2s")...)
			done := waitErased(t, c, aliceKey)
			if done["attempt"].(float64) < 2 {
				t.Errorf("the erasure completed in attempt %v, not after the crash", done["attempt"])
			}
			found := e.scan(alice, bob)
			if len(found[alice]) > 0 {
				t.Errorf("after the crash and the erasure, alice's canary is still in %v", found[alice])
			}
			if len(found[bob]) == 0 {
				t.Error("bob's canary is gone")
			}
			if l := asJSON(t, c, bobKey, http.MethodGet, "/api/v1/conversations", nil, http.StatusOK)["conversations"].([]any); len(l) != 1 {
				t.Errorf("bob's conversations: %v", l)
			}
		})
	}
}

// An erasure's progress is readable, and asking again while it runs
// answers that erasure, on SQLite and PostgreSQL. The erasure is held in
// its first step (a transaction of the test holds the checkpoints' lock
// as it deletes Alice's first conversation): GET /me/erasure says so,
// and a second DELETE /me answers 202 with the same erasure (its
// requested_at) and starts no other: once released, the erasure that
// completes is the first, in one attempt, through every step, having
// deleted both conversations; nothing of Alice's is left and Bob keeps
// his.
func TestEraseAgainWhileRunning(t *testing.T) {
	t.Parallel()
	for _, backend := range []string{"sqlite", "postgres"} {
		t.Run(backend, func(t *testing.T) {
			e := newErasureEnv(t, backend)
			c := startServe(t, e.env...)
			alice, bob := newCanary(t), newCanary(t)
			plant(t, c, aliceKey, alice, true)
			plant(t, c, aliceKey, alice, false)
			plant(t, c, bobKey, bob, true)

			release := (&crashEnv{t: t, data: filepath.Join(e.dir, "data"), dsn: e.dsn}).holdCheckpoints()
			first := asJSON(t, c, aliceKey, http.MethodDelete, "/api/v1/me", nil, http.StatusAccepted)
			var held map[string]any
			// The job runs (status running) a moment before its first step
			// records its progress.
			waitFor(t, "the erasure to run its first step", func() bool {
				held = asJSON(t, c, aliceKey, http.MethodGet, "/api/v1/me/erasure", nil, http.StatusOK)
				return held["status"] == "running" && held["progress"] != nil
			})
			want := map[string]any{"step": "conversations", "steps_done": 0.0, "steps": 6.0, "conversations_deleted": 0.0}
			if p, _ := held["progress"].(map[string]any); !maps.Equal(p, want) {
				t.Errorf("progress while held in the first step: %v, want %v", held["progress"], want)
			}
			again := asJSON(t, c, aliceKey, http.MethodDelete, "/api/v1/me", nil, http.StatusAccepted)
			if again["requested_at"] != first["requested_at"] || again["status"] != "running" {
				t.Errorf("DELETE /me again while erasing: %v; the first: %v", again, first)
			}
			release()

			done := waitErased(t, c, aliceKey)
			if done["requested_at"] != first["requested_at"] || done["attempt"] != 1.0 {
				t.Errorf("the erasure completed is not the first, in one attempt: %v; the first: %v", done, first)
			}
			want = map[string]any{"step": "done", "steps_done": 6.0, "steps": 6.0, "conversations_deleted": 2.0}
			if p, _ := done["progress"].(map[string]any); !maps.Equal(p, want) {
				t.Errorf("progress once completed: %v, want %v", done["progress"], want)
			}
			found := e.scan(alice, bob)
			if len(found[alice]) > 0 {
				t.Errorf("an erased user's canary is still in %v", found[alice])
			}
			if len(found[bob]) == 0 {
				t.Error("erasing alice took bob's canary")
			}
			if l := asJSON(t, c, bobKey, http.MethodGet, "/api/v1/conversations", nil, http.StatusOK)["conversations"].([]any); len(l) != 1 {
				t.Errorf("bob's conversations: %v", l)
			}
		})
	}
}

// Deleting a conversation as a LangGraph thread deletes its documents'
// files too, as DELETE /conversations/{id} does: before, it left them.
func TestLangGraphThreadDeleteRemovesFiles(t *testing.T) {
	t.Parallel()
	e := newErasureEnv(t, "sqlite")
	c := startServe(t, e.env...)
	canary := newCanary(t)
	conv := uploadAs(t, c, aliceKey, "", "notes.md", "# Notes\n\nThe code word is "+canary+".\n")
	if found := e.scan(canary); len(found[canary]) == 0 {
		t.Fatal("the canary is in no file: the test proves nothing")
	}
	if code, b := as(t, c, aliceKey, http.MethodDelete, "/langgraph/threads/"+conv, nil); code != http.StatusNoContent && code != http.StatusOK {
		t.Fatalf("delete thread: %d %s", code, b)
	}
	if found := e.scan(canary); len(found[canary]) > 0 {
		t.Errorf("a deleted thread's document is still in %v", found[canary])
	}
}

// activeRuns reads how many runs are live in the process, from its
// /metrics.
func activeRuns(t *testing.T, c *child) string {
	t.Helper()
	_, b := as(t, c, aliceKey, http.MethodGet, "/metrics", nil)
	for line := range strings.Lines(string(b)) {
		if v, ok := strings.CutPrefix(line, "trellis_runs_active "); ok {
			return strings.TrimSpace(v)
		}
	}
	t.Fatalf("no trellis_runs_active in /metrics:\n%s", b)
	return ""
}

// waitingIn starts a chat as Alice in process c whose run waits there
// for an approval on the stream she follows, and returns the stream and
// the conversation.
func waitingIn(t *testing.T, c *child, msg string) (*http.Response, string) {
	t.Helper()
	resp := c.do(http.MethodPost, "/api/v1/chat", map[string]any{"message": msg}, "Authorization", "Bearer "+aliceKey)
	t.Cleanup(func() { resp.Body.Close() })
	sseEvents(t, resp, func(ev event) bool { return ev.typ == "approval.required" })
	if n := activeRuns(t, c); n != "1" {
		t.Fatalf("runs live as the run waits: %s", n)
	}
	return resp, resp.Header.Get("X-Conversation-ID")
}

// ended checks that the run of the stream resp has ended in process c:
// its stream ended with run.cancelled, and no run is live in c.
func ended(t *testing.T, c *child, resp *http.Response) {
	t.Helper()
	if n := activeRuns(t, c); n != "0" {
		t.Errorf("runs live once the conversation went: %s", n)
	}
	rest := sseEvents(t, resp, nil)
	if len(rest) == 0 || rest[len(rest)-1].typ != "run.cancelled" {
		t.Errorf("the stream after the conversation went: %v", rest)
	}
}

// Deleting a conversation in one process stops its run that another
// process of the cluster runs, and waits for it to end: the stream in B
// ends with run.cancelled before A answers 204.
func TestDeleteConversationStopsARunInAnotherProcess(t *testing.T) {
	t.Parallel()
	e := newErasureEnv(t, "postgres")
	a, b := startServe(t, e.env...), startServe(t, e.env...)
	canary := newCanary(t)
	resp, conv := waitingIn(t, b, "what is 2+2? My code word is "+canary+".")
	if code, body := as(t, a, aliceKey, http.MethodDelete, "/api/v1/conversations/"+conv, nil); code != http.StatusNoContent {
		t.Fatalf("delete in A: %d %s", code, body)
	}
	ended(t, b, resp)
	if found := e.scan(canary); len(found[canary]) > 0 {
		t.Errorf("the deleted conversation's canary is still in %v", found[canary])
	}
}

// An erasure stops the user's run wherever it runs, and waits for it to
// end, before deleting its conversation. Two processes share one
// PostgreSQL database; Alice's run waits in process B for an approval,
// on the stream she follows there, and she asks process A to erase her
// (the erasure's job runs in either). Once the erasure has completed,
// the run has ended in B (her stream ended with run.cancelled; no run
// is live in B) and nothing of hers is in any table or file: the run
// wrote nothing after its conversation went.
func TestEraseStopsARunInAnotherProcess(t *testing.T) {
	t.Parallel()
	e := newErasureEnv(t, "postgres")
	a, b := startServe(t, e.env...), startServe(t, e.env...)
	alice, bob := newCanary(t), newCanary(t)
	plant(t, a, aliceKey, alice, true)
	plant(t, a, bobKey, bob, true)

	resp, _ := waitingIn(t, b, "what is 2+2? My code word is "+alice+".")
	asJSON(t, a, aliceKey, http.MethodDelete, "/api/v1/me", nil, http.StatusAccepted)
	waitErased(t, a, aliceKey)
	ended(t, b, resp)
	found := e.scan(alice, bob)
	if len(found[alice]) > 0 {
		t.Errorf("an erased user's canary is still in %v", found[alice])
	}
	if len(found[bob]) == 0 {
		t.Error("erasing alice took bob's canary")
	}
}

// From DELETE /me until the erasure completes, every surface refuses
// what would store something new of the user's with 409
// erasure_in_progress, in its own error shape, and stores nothing:
// chat, a document, the profile, an OpenAI chat completion, a LangGraph
// thread, an AG-UI run, an AI SDK chat. Reads are answered. The erasure is held in its first step (a
// transaction of the test holds the checkpoints' lock) while the
// requests are made. Once it completed, nothing of the user is left,
// and the user starts afresh: a chat works, and it is all they have.
func TestErasureRefusesWrites(t *testing.T) {
	t.Parallel()
	for _, backend := range []string{"sqlite", "postgres"} {
		t.Run(backend, func(t *testing.T) {
			e := newErasureEnv(t, backend)
			c := startServe(t, e.env...)
			alice, late, bob := newCanary(t), newCanary(t), newCanary(t)
			conv := plant(t, c, aliceKey, alice, true)
			plant(t, c, bobKey, bob, true)

			locked := &crashEnv{t: t, data: filepath.Join(e.dir, "data"), dsn: e.dsn}
			release := locked.holdCheckpoints()
			asJSON(t, c, aliceKey, http.MethodDelete, "/api/v1/me", nil, http.StatusAccepted)

			var body bytes.Buffer
			mw := multipart.NewWriter(&body)
			fw, _ := mw.CreateFormFile("file", "late.md")
			fw.Write([]byte("# Late\n\n" + late + "\n"))
			mw.Close()
			refused := []struct {
				name, method, path string
				body               any
				contentType        string
			}{
				{"chat", http.MethodPost, "/api/v1/chat/sync", map[string]any{"message": "hello " + late}, ""},
				{"chat in a conversation", http.MethodPost, "/api/v1/chat/sync", map[string]any{"message": "hello " + late, "conversation_id": conv}, ""},
				{"stream", http.MethodPost, "/api/v1/chat", map[string]any{"message": "hello " + late}, ""},
				{"profile", http.MethodPatch, "/api/v1/me/profile", map[string]any{"preferences": map[string]string{"late": late}}, ""},
				{"openai", http.MethodPost, "/v1/chat/completions", map[string]any{"model": "offline",
					"messages": []map[string]string{{"role": "user", "content": "hello " + late}}}, ""},
				{"openai responses", http.MethodPost, "/v1/responses", map[string]any{"model": "offline", "input": "hello " + late}, ""},
				{"langgraph thread", http.MethodPost, "/langgraph/threads", map[string]any{"metadata": map[string]string{"late": late}}, ""},
				{"ag-ui", http.MethodPost, "/ag-ui", map[string]any{"threadId": "late-thread", "runId": "late-run", "messages": []map[string]any{
					{"id": "m-late", "role": "user", "content": "hello " + late}}}, ""},
				{"ai-sdk", http.MethodPost, "/api/ai-sdk/chat", map[string]any{"id": "late-chat", "trigger": "submit-message", "messages": []map[string]any{
					{"id": "m-late", "role": "user", "parts": []map[string]any{{"type": "text", "text": "hello " + late}}}}}, ""},
				{"document", http.MethodPost, "/api/v1/documents", body.Bytes(), mw.FormDataContentType()},
			}
			for _, r := range refused {
				var resp *http.Response
				if raw, ok := r.body.([]byte); ok {
					req, _ := http.NewRequestWithContext(t.Context(), r.method, c.url+r.path, bytes.NewReader(raw))
					req.Header.Set("Content-Type", r.contentType)
					req.Header.Set("Authorization", "Bearer "+aliceKey)
					var err error
					if resp, err = http.DefaultClient.Do(req); err != nil {
						t.Fatal(err)
					}
				} else {
					resp = c.do(r.method, r.path, r.body, "Authorization", "Bearer "+aliceKey)
				}
				b, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				var got struct {
					Error struct {
						Code string `json:"code"`
					} `json:"error"`
				}
				if resp.StatusCode != http.StatusConflict || json.Unmarshal(b, &got) != nil || got.Error.Code != "erasure_in_progress" {
					t.Errorf("%s while erasing: %d %s", r.name, resp.StatusCode, b)
				}
			}
			// Reads are answered.
			if l := asJSON(t, c, aliceKey, http.MethodGet, "/api/v1/conversations", nil, http.StatusOK)["conversations"].([]any); len(l) == 0 {
				t.Error("alice lists no conversation while her erasure waits")
			}
			asJSON(t, c, aliceKey, http.MethodGet, "/api/v1/me/erasure", nil, http.StatusOK)

			release()
			// Bob writes as ever, also while Alice's erasure runs.
			asJSON(t, c, bobKey, http.MethodPost, "/api/v1/chat/sync", map[string]any{"message": "hello"}, http.StatusOK)
			waitErased(t, c, aliceKey)
			if found := e.scan(alice, late, bob); len(found[alice]) > 0 || len(found[late]) > 0 || len(found[bob]) == 0 {
				t.Errorf("after the erasure, alice's canaries are in %v and %v, bob's in %v", found[alice], found[late], found[bob])
			}

			// Afresh: the user writes again, and has only what is new.
			out := asJSON(t, c, aliceKey, http.MethodPost, "/api/v1/chat/sync", map[string]any{"message": "hello again", "memory": false}, http.StatusOK)
			l := asJSON(t, c, aliceKey, http.MethodGet, "/api/v1/conversations", nil, http.StatusOK)["conversations"].([]any)
			if len(l) != 1 || l[0].(map[string]any)["id"] != out["conversation_id"] {
				t.Errorf("alice's conversations after starting afresh: %v", l)
			}
			if m := asJSON(t, c, aliceKey, http.MethodGet, "/api/v1/me/memories", nil, http.StatusOK)["memories"].([]any); len(m) != 0 {
				t.Errorf("alice's memories after starting afresh: %v", m)
			}
		})
	}
}
