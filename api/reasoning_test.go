package api_test

import (
	"net/http"
	"slices"
	"strings"
	"testing"
)

// TestChatStreamsReasoning: a thinking model's reasoning reaches the
// native stream as reasoning.chunk events of each node, in their place
// among the node's events, with the whole on the node's node.end; the
// answer carries none of it, and the history keeps it as sent.
func TestChatStreamsReasoning(t *testing.T) {
	for _, b := range backends {
		t.Run(string(b), func(t *testing.T) {
			e := newEnv(t, envOptions{backend: b})
			s := e.chat(map[string]any{"message": "please think it over"})
			conv, runID := s.header("X-Conversation-ID"), s.header("X-Run-ID")
			evs := s.all()
			checkRun(t, evs, 1, runID, conv)
			reasoning := map[string]string{}
			ends := map[string]string{}
			var order []string
			for _, ev := range evs {
				switch ev.Type {
				case "reasoning.chunk":
					reasoning[ev.str("node")] += ev.str("content")
					order = append(order, "reasoning:"+ev.str("node"))
				case "node.end":
					ends[ev.str("node")] = ev.str("reasoning")
				case "supervisor.thinking", "supervisor.decided", "response.chunk", "response.done":
					order = append(order, ev.Type)
				}
			}
			want := map[string]string{"supervisor": "The user asks me to think; an answer will do.", "write": "Keep it short."}
			for node, w := range want {
				if reasoning[node] != w || ends[node] != w {
					t.Errorf("%s: streamed %q, node.end %q; want %q", node, reasoning[node], ends[node], w)
				}
			}
			if len(reasoning) != 2 {
				t.Errorf("reasoning from %v, want supervisor and write only", reasoning)
			}
			if got := slices.Compact(order); !slices.Equal(got, []string{"supervisor.thinking", "reasoning:supervisor", "supervisor.decided",
				"reasoning:write", "response.chunk", "response.done"}) {
				t.Errorf("order %v", got)
			}
			done := evs[slices.IndexFunc(evs, func(ev event) bool { return ev.Type == "response.done" })]
			if done.str("content") != "Thought it over." {
				t.Errorf("answer %q", done.str("content"))
			}

			// The history keeps the reasoning as the stream sent it.
			status, body := e.do("GET", "/api/v1/conversations/"+conv, nil)
			if status != http.StatusOK {
				t.Fatalf("get conversation: %d %s", status, body)
			}
			c := jsonOf[struct {
				Runs []struct{ Events []map[string]any }
			}](t, body)
			var stored strings.Builder
			for _, ev := range c.Runs[0].Events {
				if ev["type"] == "reasoning.chunk" && ev["node"] == "supervisor" {
					stored.WriteString(ev["content"].(string))
				}
			}
			if stored.String() != want["supervisor"] {
				t.Errorf("history's supervisor reasoning %q", stored.String())
			}
		})
	}
}
