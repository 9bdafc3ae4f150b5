package api_test

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/trellis-ai/trellis/store"
)

// Tests of the client-protocol adapters (api/agui, api/aisdk) mounted in
// the full server on a real listener, beside the interop tests with the
// real clients in cmd/trellis: isolation between users on both
// backends, a disconnect cancelling the run (goroutine leaks are checked
// by TestMain), and AG-UI's interrupt for a tool's question.

// frames reads an SSE response's data frames, as JSON objects (AI SDK's
// [DONE] as {"type":"[DONE]"}), until stop says so or the stream ends.
func frames(t *testing.T, resp *http.Response, stop func(map[string]any) bool) []map[string]any {
	t.Helper()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("stream: status %d", resp.StatusCode)
	}
	var out []map[string]any
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		data, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok {
			continue
		}
		f := map[string]any{"type": data}
		if data != "[DONE]" {
			f = map[string]any{}
			if err := json.Unmarshal([]byte(data), &f); err != nil {
				t.Fatalf("frame %q: %v", data, err)
			}
		}
		out = append(out, f)
		if stop != nil && stop(f) {
			break
		}
	}
	return out
}

func typesOf(fs []map[string]any) []string {
	var out []string
	for _, f := range fs {
		out = append(out, f["type"].(string))
	}
	return out
}

func aguiInput(thread, text string) map[string]any {
	return map[string]any{"threadId": thread, "runId": "r-" + text, "messages": []map[string]any{
		{"id": "m-" + text, "role": "user", "content": text}}}
}

func aisdkInput(chat, text string) map[string]any {
	return map[string]any{"id": chat, "trigger": "submit-message", "messages": []map[string]any{
		{"id": "m-" + text, "role": "user", "parts": []map[string]any{{"type": "text", "text": text}}}}}
}

func (e *env) post(key, path string, body any) *http.Response {
	e.t.Helper()
	resp, err := e.ts.Client().Do(e.request(http.MethodPost, path, body, key))
	if err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(func() { resp.Body.Close() })
	return resp
}

// TestProtocolsIsolation: a thread (chat) is its user's conversation;
// another user naming it gets 404, or 204 from the resume stream, and
// the first user's conversation is unchanged.
func TestProtocolsIsolation(t *testing.T) {
	for _, b := range backends {
		t.Run(string(b), func(t *testing.T) {
			e := newEnv(t, envOptions{backend: b})
			fs := frames(t, e.post(aliceKey, "/ag-ui", aguiInput("shared-thread", "hello")), nil)
			if last := fs[len(fs)-1]; last["type"] != "RUN_FINISHED" {
				t.Fatalf("alice's run: %v", typesOf(fs))
			}
			fs = frames(t, e.post(aliceKey, "/api/ai-sdk/chat", aisdkInput("shared-chat", "hello")), nil)
			if typesOf(fs)[len(fs)-1] != "[DONE]" {
				t.Fatalf("alice's chat: %v", typesOf(fs))
			}
			for _, tc := range []struct{ path, id string }{{"/ag-ui", "shared-thread"}, {"/api/ai-sdk/chat", "shared-chat"}} {
				body := aguiInput(tc.id, "bob's")
				if tc.path != "/ag-ui" {
					body = aisdkInput(tc.id, "bob's")
				}
				resp := e.post(bobKey, tc.path, body)
				if resp.StatusCode != http.StatusNotFound {
					t.Errorf("bob on alice's %s: %d, want 404", tc.id, resp.StatusCode)
				}
			}
			if st, _ := e.doAs(bobKey, http.MethodGet, "/api/ai-sdk/chat/shared-chat/stream", nil); st != http.StatusNoContent {
				t.Errorf("bob resuming alice's chat: %d, want 204", st)
			}
			for _, id := range []string{"shared-thread", "shared-chat"} {
				runs, err := e.store.ListRuns(t.Context(), "alice", id, store.RunQuery{})
				if err != nil || len(runs.Runs) != 1 {
					t.Errorf("alice's %s: %+v %v", id, runs.Runs, err)
				}
			}
			if st, _ := e.doAs(aliceKey, http.MethodPost, "/ag-ui", nil); st != http.StatusBadRequest {
				t.Errorf("an empty body: %d, want 400", st)
			}
			if st, _ := e.doAs("", http.MethodPost, "/ag-ui", aguiInput("t", "hi")); st != http.StatusUnauthorized {
				t.Errorf("no key: %d, want 401", st)
			}
		})
	}
}

// TestProtocolsClientIDsBounded: an id a client chooses for its thread,
// chat or context is at most store.MaxIDBytes; one byte more is refused
// on both backends (PostgreSQL could not index it, SQLite would), and
// nothing is stored. The longest is taken.
func TestProtocolsClientIDsBounded(t *testing.T) {
	for _, b := range backends {
		t.Run(string(b), func(t *testing.T) {
			e := newEnv(t, envOptions{backend: b})
			// Hex of a hash chain: an id that does not compress, as
			// PostgreSQL's index would need it to.
			var long strings.Builder
			for sum := sha256.Sum256([]byte("seed")); long.Len() < store.MaxIDBytes+1; sum = sha256.Sum256(sum[:]) {
				long.WriteString(hex.EncodeToString(sum[:]))
			}
			tooLong, longest := long.String()[:store.MaxIDBytes+1], long.String()[:store.MaxIDBytes]
			a2a := func(id string) map[string]any {
				return map[string]any{"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": map[string]any{"message": map[string]any{
					"role": "ROLE_USER", "messageId": "m1", "contextId": id, "parts": []map[string]any{{"text": "hi"}}}}}
			}
			before := e.snapshot()
			for _, tc := range []struct {
				path string
				body any
			}{{"/ag-ui", aguiInput(tooLong, "hi")}, {"/api/ai-sdk/chat", aisdkInput(tooLong, "hi")}, {"/a2a", a2a(tooLong)}} {
				status, res := e.do(http.MethodPost, tc.path, tc.body)
				if status != http.StatusBadRequest || !strings.Contains(string(res), "longer than") {
					t.Errorf("%s with a %d-byte id: %d %.300s", tc.path, len(tooLong), status, res)
				}
			}
			if after := e.snapshot(); after != before {
				t.Errorf("the store changed:\nbefore\n%s\nafter\n%s", before, after)
			}
			if fs := frames(t, e.post(aliceKey, "/ag-ui", aguiInput(longest, "hi")), nil); fs[len(fs)-1]["type"] != "RUN_FINISHED" {
				t.Errorf("a %d-byte thread id: %v", len(longest), typesOf(fs))
			}
		})
	}
}

// TestProtocolsDisconnectCancels: a client that aborts a run's stream
// cancels the run (AG-UI at once; the AI SDK when no client resumes
// it), and the next message on the thread is accepted at once.
func TestProtocolsDisconnectCancels(t *testing.T) {
	e := newEnv(t, envOptions{})
	for _, tc := range []struct{ name, path, id, started string }{
		{"agui", "/ag-ui", "gone-thread", "TOOL_CALL_START"},
		{"aisdk", "/api/ai-sdk/chat", "gone-chat", "tool-input-available"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			input := func(text string) map[string]any {
				if tc.path == "/ag-ui" {
					return aguiInput(tc.id, text)
				}
				return aisdkInput(tc.id, text)
			}
			resp := e.post(aliceKey, tc.path, input("please wait"))
			frames(t, resp, func(f map[string]any) bool { return f["type"] == tc.started })
			<-e.tools.waiting
			resp.Body.Close() // the client goes away mid-run
			fs := frames(t, e.post(aliceKey, tc.path, input("hello again")), nil)
			if len(fs) < 2 {
				t.Fatalf("the next message: %v", typesOf(fs))
			}
			runs, err := e.store.ListRuns(t.Context(), "alice", tc.id, store.RunQuery{})
			if err != nil || len(runs.Runs) != 2 || runs.Runs[0].Status != store.RunCancelled || runs.Runs[1].Status != store.RunCompleted {
				t.Fatalf("runs %+v %v: want cancelled, completed", runs.Runs, err)
			}
		})
	}
}

// TestAGUIElicitation: a tool's question ends the AG-UI run with an
// input_required interrupt carrying the question's schema; the resume's
// payload is the answer.
func TestAGUIElicitation(t *testing.T) {
	e := newEnv(t, envOptions{})
	fs := frames(t, e.post(aliceKey, "/ag-ui", aguiInput("asking", "ask me")), nil)
	last := fs[len(fs)-1]
	outcome, _ := last["outcome"].(map[string]any)
	interrupts, _ := outcome["interrupts"].([]any)
	if last["type"] != "RUN_FINISHED" || outcome["type"] != "interrupt" || len(interrupts) != 1 {
		t.Fatalf("events %v, last %v", typesOf(fs), last)
	}
	in := interrupts[0].(map[string]any)
	schema, _ := in["responseSchema"].(map[string]any)
	if in["reason"] != "input_required" || in["message"] != "What is your name?" || schema["type"] != "object" {
		t.Fatalf("interrupt %v", in)
	}
	resume := aguiInput("asking", "ask me")
	for _, f := range fs {
		if f["type"] == "MESSAGES_SNAPSHOT" {
			resume["messages"] = f["messages"] // the client's history, with the call that asked
		}
	}
	resume["resume"] = []map[string]any{{"interruptId": in["id"], "status": "resolved", "payload": map[string]any{"name": "Ada"}}}
	fs = frames(t, e.post(aliceKey, "/ag-ui", resume), nil)
	var result string
	for _, f := range fs {
		if f["type"] == "TOOL_CALL_RESULT" {
			result, _ = f["content"].(string)
		}
		if f["type"] == "TOOL_CALL_START" {
			t.Errorf("the resumed run announced its call again: %v", f)
		}
	}
	if result != "hello Ada" || fs[len(fs)-1]["type"] != "RUN_FINISHED" {
		t.Errorf("result %q, events %v", result, typesOf(fs))
	}
	// Answered once: a second answer is a conflict.
	if st, body := e.do(http.MethodPost, "/ag-ui", resume); st != http.StatusConflict {
		t.Errorf("the question answered again: %d %s", st, body)
	}
}

// TestAGUIApprovalEdited: an approval answered with editedArgs runs the
// call with them.
func TestAGUIApprovalEdited(t *testing.T) {
	e := newEnv(t, envOptions{})
	fs := frames(t, e.post(aliceKey, "/ag-ui", aguiInput("editing", "please delete it")), nil)
	outcome, _ := fs[len(fs)-1]["outcome"].(map[string]any)
	interrupts, _ := outcome["interrupts"].([]any)
	if len(interrupts) != 1 {
		t.Fatalf("events %v, last %v", typesOf(fs), fs[len(fs)-1])
	}
	id := interrupts[0].(map[string]any)["id"]
	resume := aguiInput("editing", "please delete it")
	resume["resume"] = []map[string]any{{"interruptId": id, "status": "resolved",
		"payload": map[string]any{"approved": true, "editedArgs": map[string]any{"path": "/tmp/b.txt"}}}}
	fs = frames(t, e.post(aliceKey, "/ag-ui", resume), nil)
	if fs[len(fs)-1]["type"] != "RUN_FINISHED" {
		t.Fatalf("events %v", typesOf(fs))
	}
	if got := <-e.tools.deleted; got != "/tmp/b.txt" {
		t.Errorf("deleted %q, want the edited path", got)
	}
	bad := aguiInput("editing", "x")
	bad["resume"] = []map[string]any{{"interruptId": id, "status": "resolved", "payload": map[string]any{"approved": "yes"}}}
	if st, body := e.do(http.MethodPost, "/ag-ui", bad); st != http.StatusBadRequest && st != http.StatusConflict {
		t.Errorf("a malformed payload: %d %s", st, body)
	}
}

// TestAISDKRegenerate: regenerate-message reruns the chat's last message
// as an edit: the first run is superseded.
func TestAISDKRegenerate(t *testing.T) {
	e := newEnv(t, envOptions{})
	frames(t, e.post(aliceKey, "/api/ai-sdk/chat", aisdkInput("regen", "hello")), nil)
	again := aisdkInput("regen", "hello")
	again["trigger"] = "regenerate-message"
	fs := frames(t, e.post(aliceKey, "/api/ai-sdk/chat", again), nil)
	if got := typesOf(fs); got[len(got)-1] != "[DONE]" || got[len(got)-2] != "finish" {
		t.Fatalf("chunks %v", got)
	}
	runs, err := e.store.ListRuns(t.Context(), "alice", "regen", store.RunQuery{})
	if err != nil || len(runs.Runs) != 2 || !runs.Runs[0].Superseded || runs.Runs[1].Superseded || runs.Runs[1].Status != store.RunCompleted {
		t.Fatalf("runs %+v %v: want the first superseded by a completed second", runs.Runs, err)
	}
	fresh := aisdkInput("never-ran", "hello")
	fresh["trigger"] = "regenerate-message"
	if st, body := e.do(http.MethodPost, "/api/ai-sdk/chat", fresh); st != http.StatusBadRequest {
		t.Errorf("regenerating in a chat without runs: %d %s", st, body)
	}
	if _, err := e.store.GetConversation(t.Context(), "alice", "never-ran"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("the refused regenerate made a conversation: %v", err)
	}
}
