package main

import (
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/trellis-ai/trellis/store"
)

// memoryScript answers from the prompt it is given: the supervisor says
// what it was told of the user, and the writer answers in one word when
// the prompt carries the user's stated preference for concise answers,
// and names the boat when the prompt remembers it.
const memoryScript = `{"steps": [
  {"match": {"node": "supervisor", "system": "nautilus"}, "reply": {"json": {"action": "ANSWER", "reasoning": "I remember the boat"}}, "repeat": true},
  {"match": {"node": "supervisor", "system": "stated (style): concise"}, "reply": {"json": {"action": "ANSWER", "reasoning": "the user wants it short"}}, "repeat": true},
  {"match": {"node": "supervisor"}, "reply": {"json": {"action": "ANSWER", "reasoning": "nothing known of the user"}}, "repeat": true},
  {"match": {"node": "write", "system": "nautilus"}, "reply": {"text": "Nautilus."}, "repeat": true},
  {"match": {"node": "write", "system": "stated (style): concise"}, "reply": {"text": "Short."}, "repeat": true},
  {"match": {"node": "write"}, "reply": {"text": "A long and detailed answer, since nothing tells me how you like them."}, "repeat": true}
]}`

// turnResult is what a chat stream showed: the supervisor's reasoning
// and the answer.
type turnResult struct{ reasoning, answer string }

func chatTurn(t *testing.T, c *child, body map[string]any) turnResult {
	t.Helper()
	var r turnResult
	sseEvents(t, c.do(http.MethodPost, "/api/v1/chat", body), func(e event) bool {
		switch e.typ {
		case "supervisor.decided":
			r.reasoning, _ = e.data["reasoning"].(string)
		case "response.done":
			r.answer, _ = e.data["content"].(string)
			return true
		}
		return false
	})
	return r
}

type memoryItem struct {
	ID      string `json:"id"`
	Summary string `json:"summary"`
}

func listMemories(t *testing.T, c *child) []memoryItem {
	t.Helper()
	resp := c.do(http.MethodGet, "/api/v1/me/memories", nil)
	var page struct {
		Memories []memoryItem `json:"memories"`
	}
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK || json.Unmarshal(b, &page) != nil {
		t.Fatalf("memories: %d %s", resp.StatusCode, b)
	}
	return page.Memories
}

// waitFor polls cond every 100 ms for 30 s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within 30 s", what)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// The agent remembers across conversations through trellis serve, on
// SQLite and PostgreSQL: a preference and a fact stated in conversation
// A are learnt in the background; in conversation B the prompts the
// scripted model receives carry them (its replies say so) and the answer
// follows the preference; the user lists the memories, deletes the fact,
// and the next prompt no longer has it; "memory": false leaves the
// profile out; forgetting everything leaves the agent knowing nothing.
func TestServeRemembersAcrossConversations(t *testing.T) {
	t.Parallel()
	for _, backend := range []string{"sqlite", "postgres"} {
		t.Run(backend, func(t *testing.T) {
			dir := t.TempDir()
			script := filepath.Join(dir, "memory.json")
			if err := os.WriteFile(script, []byte(memoryScript), 0o600); err != nil {
				t.Fatal(err)
			}
			env := []string{"TRELLIS_DATA_DIR=" + dir, "TRELLIS_MODEL=scripted:" + script,
				// A loaded test machine may take more than 100 ms for a
				// first query; the budget has tests of its own.
				"TRELLIS_COGNITION_BUDGET=5s", "TRELLIS_LEARN_AFTER=0"}
			if backend == "postgres" {
				env = append(env, "DATABASE_URL="+pgDSN(t))
			}
			c := startServe(t, env...)
			if !strings.Contains(c.startLine, "memory on, learnt by rules") {
				t.Errorf("start line %q", c.startLine)
			}

			a := chatTurn(t, c, map[string]any{"message": "I prefer short answers. Remember that my boat is called Nautilus."})
			if a.reasoning != "nothing known of the user" || !strings.HasPrefix(a.answer, "A long") {
				t.Fatalf("conversation A: %+v", a)
			}
			var fact memoryItem
			waitFor(t, "learning from conversation A", func() bool {
				for _, m := range listMemories(t, c) {
					if strings.Contains(m.Summary, "Nautilus") {
						fact = m
					}
				}
				_, p := getJSON(t, c, "/api/v1/me/profile")
				return fact.ID != "" && p["communication_style"] == "concise"
			})

			b := chatTurn(t, c, map[string]any{"message": "What is my boat called?"})
			if b.reasoning != "I remember the boat" || b.answer != "Nautilus." {
				t.Fatalf("conversation B: %+v", b)
			}

			// Deleting the memory takes it out of the next prompt; the
			// stated preference stays.
			for _, m := range listMemories(t, c) {
				if strings.Contains(strings.ToLower(m.Summary), "nautilus") {
					if resp := c.do(http.MethodDelete, "/api/v1/me/memories/"+m.ID, nil); resp.StatusCode != http.StatusNoContent {
						t.Fatalf("delete memory: %d", resp.StatusCode)
					}
				}
			}
			if resp := c.do(http.MethodDelete, "/api/v1/me/memories/"+fact.ID, nil); resp.StatusCode != http.StatusNotFound {
				t.Errorf("delete again: %d, want 404", resp.StatusCode)
			}
			cc := chatTurn(t, c, map[string]any{"message": "What is my boat called?"})
			if cc.reasoning != "the user wants it short" || cc.answer != "Short." {
				t.Fatalf("after deleting the memory: %+v", cc)
			}

			// "memory": false: nothing remembered is loaded.
			d := chatTurn(t, c, map[string]any{"message": "What is my boat called?", "memory": false})
			if d.reasoning != "nothing known of the user" || !strings.HasPrefix(d.answer, "A long") {
				t.Fatalf("with memory false: %+v", d)
			}

			// Forgetting everything: the profile goes too.
			resp := c.do(http.MethodDelete, "/api/v1/me/memories", nil)
			if resp.StatusCode != http.StatusNoContent {
				t.Fatalf("forget all: %d", resp.StatusCode)
			}
			if ms := listMemories(t, c); len(ms) != 0 {
				t.Fatalf("memories after forgetting all: %+v", ms)
			}
			e := chatTurn(t, c, map[string]any{"message": "What is my boat called?"})
			if e.reasoning != "nothing known of the user" || !strings.HasPrefix(e.answer, "A long") {
				t.Fatalf("after forgetting all: %+v", e)
			}
		})
	}
}

// TRELLIS_COGNITION=off: nothing is loaded or learnt, and the endpoints
// are not there.
func TestServeCognitionOff(t *testing.T) {
	t.Parallel()
	c := startServe(t, "TRELLIS_DATA_DIR="+t.TempDir(), "TRELLIS_COGNITION=off")
	if !strings.Contains(c.startLine, "memory off") {
		t.Errorf("start line %q", c.startLine)
	}
	for _, path := range []string{"/api/v1/me/profile", "/api/v1/me/memories"} {
		if resp := c.do(http.MethodGet, path, nil); resp.StatusCode != http.StatusNotFound {
			t.Errorf("GET %s: %d, want 404", path, resp.StatusCode)
		}
	}
}

// "memory": false leaves nothing behind, on SQLite and PostgreSQL, with
// the offline model, which calls remember whenever it is offered and the
// user asks: a turn that asks to remember a fact and states a preference
// with memory off stores no memory, no profile and no identity counts. A
// turn with memory on that follows it is learnt, so waiting for that one
// shows the first had its chance to be learnt too.
func TestServeMemoryFalseLearnsNothing(t *testing.T) {
	t.Parallel()
	for _, backend := range []string{"sqlite", "postgres"} {
		t.Run(backend, func(t *testing.T) {
			// No rate limit: the wait below polls two endpoints, and a
			// slow machine's learning outlasts the burst.
			env := []string{"TRELLIS_DATA_DIR=" + t.TempDir(), "TRELLIS_MODEL=offline", "TRELLIS_COGNITION_BUDGET=5s", "TRELLIS_RATE_PER_MINUTE=-1",
				"TRELLIS_LEARN_AFTER=0"}
			if backend == "postgres" {
				env = append(env, "DATABASE_URL="+pgDSN(t))
			}
			c := startServe(t, env...)

			off := syncChat(t, c, map[string]any{"message": "Remember that my boat is called Nautilus. I prefer answers in French.", "memory": false})
			if calls, _ := off["tool_calls"].([]any); len(calls) != 0 {
				t.Errorf("memory false called tools: %v", calls)
			}
			on := syncChat(t, c, map[string]any{"message": "Remember that my cat is called Tom. I prefer answers in German."})
			if on["status"] != "completed" {
				t.Fatalf("memory on: %v", on)
			}
			waitFor(t, "learning from the turn with memory on", func() bool {
				_, p := getJSON(t, c, "/api/v1/me/profile")
				b, _ := json.Marshal(p["preferences"])
				_, id := getJSON(t, c, "/api/v1/cognition/identity")
				return strings.Contains(strings.ToLower(string(b)), "german") && agentCalls(id) > 0
			})
			if _, id := getJSON(t, c, "/api/v1/cognition/identity"); agentCalls(id) != 1 {
				t.Errorf("identity counts %v turns of the agent, want the one with memory on", agentCalls(id))
			}
			ms := listMemories(t, c)
			if len(ms) == 0 {
				t.Fatal("the turn with memory on left no memory")
			}
			for _, m := range ms {
				if strings.Contains(m.Summary, "Nautilus") {
					t.Errorf("memory false stored %q", m.Summary)
				}
			}
			_, p := getJSON(t, c, "/api/v1/me/profile")
			if b, _ := json.Marshal(p); strings.Contains(strings.ToLower(string(b)), "french") {
				t.Errorf("memory false changed the profile: %s", b)
			}
		})
	}
}

// syncChat posts body to /api/v1/chat/sync and returns the answer.
func syncChat(t *testing.T, c *child, body map[string]any) map[string]any {
	t.Helper()
	resp := c.do(http.MethodPost, "/api/v1/chat/sync", body)
	b, _ := io.ReadAll(resp.Body)
	var out map[string]any
	if resp.StatusCode != http.StatusOK || json.Unmarshal(b, &out) != nil {
		t.Fatalf("chat/sync: %d %s", resp.StatusCode, b)
	}
	return out
}

// agentCalls is how many turns GET /cognition/identity counts for the
// agent itself: one per turn learnt.
func agentCalls(identity map[string]any) float64 {
	tools, _ := identity["tools"].([]any)
	for _, t := range tools {
		if m, _ := t.(map[string]any); m["tool"] == store.AgentTool {
			n, _ := m["calls"].(float64)
			return n
		}
	}
	return 0
}
