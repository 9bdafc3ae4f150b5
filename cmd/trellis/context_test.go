package main

import (
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// operatorScript answers only when the prompts carry the operator's
// system prompt, and, for the writer, the request's context, fenced.
const operatorScript = `{"steps": [
  {"match": {"node": "supervisor", "system": "You are Quillby, the harbour's ledger keeper."}, "reply": {"json": {"action": "ANSWER", "reasoning": "the operator's prompt is here"}}, "repeat": true},
  {"match": {"node": "supervisor"}, "reply": {"json": {"action": "ANSWER", "reasoning": "the built-in prompt"}}, "repeat": true},
  {"match": {"node": "write", "system": "<client_context>\n{\"berth\":\"B7\"}\n</client_context>"}, "reply": {"text": "Quillby here: berth B7."}, "repeat": true},
  {"match": {"node": "write", "system": "You are Quillby"}, "reply": {"text": "Quillby here."}, "repeat": true},
  {"match": {"node": "write"}, "reply": {"text": "Not Quillby."}, "repeat": true}
]}`

// TestServeSystemPromptFileAndContext: with --system-prompt-file (here
// its variable), every model call opens with the operator's prompt, and
// a chat's context reaches the writer's prompt fenced as the client's
// data.
func TestServeSystemPromptFileAndContext(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	script := filepath.Join(dir, "operator.json")
	prompt := filepath.Join(dir, "prompt.txt")
	if err := os.WriteFile(script, []byte(operatorScript), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(prompt, []byte("\nYou are Quillby, the harbour's ledger keeper.\nAnswer in one line.\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	c := startServe(t, "TRELLIS_DATA_DIR="+dir, "TRELLIS_MODEL=scripted:"+script, "TRELLIS_SYSTEM_PROMPT_FILE="+prompt)
	if r := chatTurn(t, c, map[string]any{"message": "Who are you?"}); r.reasoning != "the operator's prompt is here" || r.answer != "Quillby here." {
		t.Errorf("without context: %+v", r)
	}
	if r := chatTurn(t, c, map[string]any{"message": "Where am I moored?", "context": map[string]any{"berth": "B7"}}); r.answer != "Quillby here: berth B7." {
		t.Errorf("with context: %+v", r)
	}

	// Without the file the built-in prompt is used: the script tells.
	d := startServe(t, "TRELLIS_DATA_DIR="+t.TempDir(), "TRELLIS_MODEL=scripted:"+script)
	if r := chatTurn(t, d, map[string]any{"message": "Who are you?"}); r.reasoning != "the built-in prompt" || r.answer != "Not Quillby." {
		t.Errorf("built-in prompt: %+v", r)
	}
}

// TestSystemPromptFileRefused: a system prompt file that is missing, a
// directory, empty, not text or too large stops the start with an error
// that names the file and what is wrong.
func TestSystemPromptFileRefused(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	write := func(name string, b []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b, 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	for _, tc := range []struct{ path, want string }{
		{filepath.Join(dir, "missing.txt"), "no such file"},
		{dir, "is a directory"},
		{write("empty.txt", []byte(" \n\t\n")), "the file is empty"},
		{write("binary.txt", []byte("You are\x00 a bot")), "not text"},
		{write("latin1.txt", []byte("Caf\xe9")), "not text"},
		{write("big.txt", []byte(strings.Repeat("a", 64<<10+1))), "larger than 65536 bytes"},
	} {
		_, err := parseServe([]string{"--system-prompt-file", tc.path}, func(string) string { return "" }, io.Discard)
		if err == nil || !strings.Contains(err.Error(), "system-prompt-file "+tc.path) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want an error naming the file and %q", tc.path, err, tc.want)
		}
	}
	ok := write("ok.txt", []byte(strings.Repeat("a", 64<<10)))
	if c, err := parseServe(nil, func(k string) string {
		if k == "TRELLIS_SYSTEM_PROMPT_FILE" {
			return ok
		}
		return ""
	}, io.Discard); err != nil || len(c.systemPrompt) != 64<<10 {
		t.Errorf("a prompt at the limit: %d bytes, %v", len(c.systemPrompt), err)
	}

	// serve says so on stderr and exits.
	var stderr strings.Builder
	code := run(t.Context(), []string{"serve", "--addr", "127.0.0.1:0", "--system-prompt-file", filepath.Join(dir, "missing.txt")},
		stdio{in: strings.NewReader(""), out: io.Discard, err: &stderr, getenv: func(string) string { return "" }})
	if code != 2 || !strings.Contains(stderr.String(), "system-prompt-file") {
		t.Errorf("serve with a missing system prompt file: exit %d, %q", code, stderr.String())
	}
}

// titleAgentScript answers every chat; titleModelScript is the fast
// model's, which titles: at once for the harbour, slowly for the
// lighthouse, whose user renames it meanwhile.
const (
	titleAgentScript = `{"steps": [
  {"match": {"node": "supervisor"}, "reply": {"json": {"action": "ANSWER", "reasoning": "known"}}, "repeat": true},
  {"match": {"node": "write"}, "reply": {"text": "Fees are 12 euros a night."}, "repeat": true}
]}`
	titleModelScript = `{"steps": [
  {"match": {"node": "title", "contains": "Kiel", "system": "Write a title"}, "reply": {"text": "\"Kiel harbour fees.\""}},
  {"match": {"node": "title", "contains": "lighthouse"}, "reply": {"text": "Lighthouse visits", "delay_ms": 1500}}
]}`
)

// TestServeTitlesConversations: with a fast model of its own, a
// conversation's title is first its message's gist, then, after the
// first answer, the model's, written by a background job; a title the
// user set while the job ran is kept. On SQLite and PostgreSQL.
func TestServeTitlesConversations(t *testing.T) {
	t.Parallel()
	for _, backend := range []string{"sqlite", "postgres"} {
		t.Run(backend, func(t *testing.T) {
			dir := t.TempDir()
			write := func(name, text string) string {
				p := filepath.Join(dir, name)
				if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
					t.Fatal(err)
				}
				return p
			}
			agent, titles := write("agent.json", titleAgentScript), write("titles.json", titleModelScript)
			models := write("models.json", `{"models": [
  {"id": "scripted", "provider": "scripted", "script_path": "`+agent+`", "tool_calling": true},
  {"id": "titler", "provider": "scripted", "script_path": "`+titles+`", "aliases": ["fast"]}]}`)
			env := []string{"TRELLIS_DATA_DIR=" + dir, "TRELLIS_MODELS_FILE=" + models, "TRELLIS_MODEL=scripted"}
			if backend == "postgres" {
				env = append(env, "DATABASE_URL="+pgDSN(t))
			}
			c := startServe(t, env...)
			if !strings.Contains(c.startLine, "titles by titler") {
				t.Errorf("start line %q", c.startLine)
			}
			titleOf := func(id string) string {
				_, conv := getJSON(t, c, "/api/v1/conversations/"+id)
				s, _ := conv["title"].(string)
				return s
			}

			harbour := chatConversation(t, c, "Hi! Could you tell me what the harbour fees in Kiel are?")
			waitFor(t, "the generated title", func() bool { return titleOf(harbour) == "Kiel harbour fees" })

			lighthouse := chatConversation(t, c, "When can I visit the lighthouse?")
			if got := titleOf(lighthouse); got != "When can I visit the lighthouse" {
				t.Errorf("first title %q, want the message's gist", got)
			}
			resp := c.do(http.MethodPatch, "/api/v1/conversations/"+lighthouse, map[string]any{"title": "  Trip to the lighthouse  "})
			b, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != http.StatusOK || !strings.Contains(string(b), `"title":"Trip to the lighthouse"`) {
				t.Fatalf("rename: %d %s", resp.StatusCode, b)
			}
			// The model's slow title comes after the rename, and is
			// dropped.
			time.Sleep(2500 * time.Millisecond)
			if got := titleOf(lighthouse); got != "Trip to the lighthouse" {
				t.Errorf("title after the job %q, want the user's", got)
			}
			if got := titleOf(harbour); got != "Kiel harbour fees" {
				t.Errorf("harbour title %q", got)
			}
		})
	}
}

// chatConversation sends a message in a new conversation, reads its
// stream to the end and returns the conversation's id.
func chatConversation(t *testing.T, c *child, msg string) string {
	t.Helper()
	resp := c.do(http.MethodPost, "/api/v1/chat", map[string]any{"message": msg})
	evs := sseEvents(t, resp, nil)
	if len(evs) == 0 || evs[len(evs)-1].typ != "run.completed" {
		t.Fatalf("chat %q: %v", msg, evs)
	}
	return resp.Header.Get("X-Conversation-ID")
}

// contextCrashScript calls the calculator (which needs approval) and
// answers from the request's context only if every prompt still has it.
const contextCrashScript = `{"steps": [
  {"match": {"node": "supervisor", "tool_result": false, "system": "{\"berth\":\"B7\"}"}, "reply": {"tool_calls": [{"name": "calculator", "args": {"expression": "2+2"}}]}, "repeat": true},
  {"match": {"node": "supervisor", "tool_result": true, "system": "{\"berth\":\"B7\"}"}, "reply": {"json": {"action": "ANSWER", "reasoning": "done"}}, "repeat": true},
  {"match": {"node": "reflect", "system": "{\"berth\":\"B7\"}"}, "reply": {"json": {"assessment": "satisfied", "reasoning": "done"}}, "repeat": true},
  {"match": {"node": "write", "system": "<client_context>\n{\"berth\":\"B7\"}\n</client_context>"}, "reply": {"text": "4, at berth B7."}, "repeat": true},
  {"match": {"node": "write"}, "reply": {"text": "The context was lost."}, "repeat": true}
]}`

// TestServeContextSurvivesACrash: a run parked on an approval when its
// process is killed is recovered by the next process with the request's
// context: the prompts after the approval still carry it. On SQLite and
// PostgreSQL.
func TestServeContextSurvivesACrash(t *testing.T) {
	t.Parallel()
	for _, db := range []string{"sqlite", "postgres"} {
		t.Run(db, func(t *testing.T) {
			dir := t.TempDir()
			script := filepath.Join(dir, "context.json")
			if err := os.WriteFile(script, []byte(contextCrashScript), 0o600); err != nil {
				t.Fatal(err)
			}
			env := []string{"TRELLIS_DATA_DIR=" + dir, "TRELLIS_MODEL=scripted:" + script}
			if db == "postgres" {
				env = append(env, "DATABASE_URL="+pgDSN(t))
			}
			first := startServe(t, env...)
			resp := first.do(http.MethodPost, "/api/v1/chat", map[string]any{"message": "what is 2+2?", "context": map[string]any{"berth": "B7"}})
			conv, runID := resp.Header.Get("X-Conversation-ID"), resp.Header.Get("X-Run-ID")
			seen := sseEvents(t, resp, func(e event) bool { return e.typ == "approval.required" })
			approval, _ := seen[len(seen)-1].data["approval_id"].(string)
			if approval == "" {
				t.Fatalf("no approval: %+v", seen)
			}
			first.stop(syscall.SIGKILL)

			second := startServe(t, env...)
			if r := second.do(http.MethodPost, "/api/v1/approvals/"+approval, map[string]any{"decision": "approve"}); r.StatusCode != http.StatusOK {
				b, _ := io.ReadAll(r.Body)
				t.Fatalf("approve: %d %s", r.StatusCode, b)
			}
			seen = followToEnd(t, second, conv, runID, seen)
			var answer string
			for _, e := range seen {
				if e.typ == "response.done" {
					answer, _ = e.data["content"].(string)
				}
			}
			if answer != "4, at berth B7." {
				t.Errorf("answer after the crash %q, want the one written from the context", answer)
			}
		})
	}
}
