package mcp_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/server"

	"github.com/trellis-ai/trellis/events"
	"github.com/trellis-ai/trellis/mcp"
	"github.com/trellis-ai/trellis/operators"
)

// TestFakeServerEras runs the fake mcp-go server over stdio and streamable
// HTTP in each protocol era: detected (2026-07-28, stateless, input
// requests) and pinned to the session revisions (initialize,
// server-initiated elicitation/create).
func TestFakeServerEras(t *testing.T) {
	for _, via := range []string{"stdio", "http"} {
		for _, tc := range []struct{ pin, want string }{
			{"", "2026-07-28"},
			{"2025-11-25", "2025-11-25"},
			{"2025-06-18", "2025-06-18"},
		} {
			t.Run(via+"/"+tc.want, func(t *testing.T) {
				t.Parallel()
				cfg := fakeStdio(t, "fake", "stdio")
				if via == "http" {
					ts := httptest.NewServer(server.NewStreamableHTTPServer(newFakeServer(func(string) {})))
					t.Cleanup(ts.Close)
					cfg = mcp.ServerConfig{Name: "fake", Transport: mcp.TransportHTTP, URL: ts.URL + "/mcp"}
				}
				cfg.ProtocolVersion = tc.pin
				cfg.RequireApproval = []string{"fail"}
				h := newHarness(t, []mcp.ServerConfig{cfg}, harnessOptions{Approval: operators.ApprovalPolicy{Destructive: true}})
				h.wait()
				st := h.status("fake")
				if st.ProtocolVersion != tc.want || (via == "stdio") != (st.PID != 0) || st.State != mcp.StateConnected || st.Tools != 8 {
					t.Fatalf("status = %+v", st)
				}
				checkFakeServer(t, h, "fake")
			})
		}
	}
}

// checkFakeServer exercises every tool of the fake server named server.
func checkFakeServer(t *testing.T, h *harness, server string) {
	t.Helper()
	t.Run("list", func(t *testing.T) {
		var names []string
		for _, ti := range h.provider.Tools() {
			if ti.Server != server {
				continue
			}
			names = append(names, ti.Name)
			if ti.Source != operators.SourceMCP || !ti.Available {
				t.Errorf("%s: source %s available %v", ti.Name, ti.Source, ti.Available)
			}
		}
		want := []string{"add", "ask", "badstructured", "fail", "grow", "odd_name_x", "slow", "structured"}
		if !slices.Equal(names, want) && !slices.Equal(names, slices.Insert(slices.Clone(want), 4, "grown")) {
			t.Fatalf("tools = %v, want %v", names, want)
		}
		add, _ := h.tool("add")
		if !add.Annotations.ReadOnly || add.Annotations.Destructive || add.RequiresApproval || add.InputSchema == nil || len(add.InputSchema.Required) != 2 {
			t.Errorf("add = %+v", add)
		}
		slow, _ := h.tool("slow")
		if slow.Annotations.Destructive || slow.RequiresApproval {
			t.Errorf("slow = %+v (destructiveHint false)", slow)
		}
		ask, _ := h.tool("ask")
		if !ask.Annotations.Destructive || !ask.RequiresApproval {
			t.Errorf("ask = %+v (no hints: destructive by MCP's default, so the policy asks)", ask)
		}
		fail, _ := h.tool("fail")
		if !fail.RequiresApproval || !h.provider.NeedsApproval(server+".fail") {
			t.Errorf("fail should need approval (configured)")
		}
		if st, _ := h.tool("structured"); !slices.Contains(st.OutputTypes, operators.OutputJSON) {
			t.Errorf("structured output types = %v", st.OutputTypes)
		}
	})
	t.Run("call", func(t *testing.T) {
		if r := h.exec("add", map[string]any{"a": 2, "b": 3}, operators.Call{}); r.IsError() || textOf(r) != "5" {
			t.Fatalf("add = %+v", r)
		}
		if r := h.exec(server+".odd_name_x", nil, operators.Call{}); textOf(r) != "odd" {
			t.Fatalf("odd_name_x = %+v", r)
		}
		if r := h.exec("add", map[string]any{"a": "two"}, operators.Call{}); !errors.Is(r.Err, operators.ErrInvalidArguments) {
			t.Fatalf("bad args = %+v", r)
		}
	})
	t.Run("errors and structure", func(t *testing.T) {
		r := h.exec("fail", nil, operators.Call{})
		if !r.IsError() || r.Error != "the widget is broken" || !errors.Is(r.Err, mcp.ErrToolFailed) {
			t.Fatalf("fail = %+v", r)
		}
		r = h.exec("structured", nil, operators.Call{})
		if r.IsError() || len(r.Contents) != 1 || r.Contents[0].Type != operators.OutputJSON || string(r.Contents[0].JSON) != `{"temperature":21.5}` {
			t.Fatalf("structured = %+v", r)
		}
		r = h.exec("badstructured", nil, operators.Call{})
		if !r.IsError() || !errors.Is(r.Err, mcp.ErrOutputSchema) {
			t.Fatalf("badstructured = %+v", r)
		}
	})
	t.Run("progress", func(t *testing.T) {
		var rec operators.Recorder
		r := h.exec("slow", map[string]any{"steps": 4, "step_ms": 5}, operators.Call{ToolCallID: "tc-7", Messenger: &rec})
		if r.IsError() || textOf(r) != "done 4 steps" {
			t.Fatalf("slow = %+v", r)
		}
		var got []string
		for _, e := range rec.Events() {
			var p events.ToolProgress
			if e.Type != events.TypeToolProgress || json.Unmarshal(e.Data, &p) != nil || p.ToolCallID != "tc-7" || p.Total != 4 {
				t.Fatalf("event %s %s", e.Type, e.Data)
			}
			got = append(got, p.Message)
		}
		// Updates that overtook one another over HTTP are dropped, never
		// delivered out of order: what comes is in order, up to the last.
		want := []string{"step 1", "step 2", "step 3", "step 4"}
		if len(got) == 0 || got[len(got)-1] != "step 4" || !isSubsequence(got, want) {
			t.Fatalf("progress = %v, want in the order of %v, ending with the last", got, want)
		}
	})
	t.Run("elicitation", func(t *testing.T) {
		for _, tc := range []struct {
			action events.ElicitAction
			want   string
		}{
			{events.ElicitAccept, "action=accept name=Ada"},
			{events.ElicitDecline, "action=decline name="},
			{events.ElicitCancel, "action=cancel name="},
		} {
			errc := make(chan error, 1)
			call := operators.Call{ToolCallID: "tc-1", ConversationID: "c1", UserID: "u1",
				Messenger: user{answer: func(_ context.Context, p operators.ElicitRequest) operators.ElicitResponse {
					if p.Message != "Who are you?" || p.Schema == nil || p.Schema.Properties["name"] == nil || p.Source != "ask" {
						errc <- errors.New("unexpected request: " + jsonText(p))
						return operators.ElicitResponse{Action: events.ElicitCancel}
					}
					errc <- nil
					return operators.ElicitResponse{Action: tc.action, Content: json.RawMessage(`{"name":"Ada"}`)}
				}}}
			r := h.exec("ask", nil, call)
			select {
			case err := <-errc:
				if err != nil {
					t.Fatal(err)
				}
			case <-time.After(5 * time.Second):
				t.Fatalf("%s: the user was never asked; ask = %+v", tc.action, r)
			}
			if textOf(r) != tc.want {
				t.Fatalf("%s: ask = %+v, want %q", tc.action, r, tc.want)
			}
		}
		// With nobody to ask, the server gets a decline.
		if r := h.exec("ask", nil, operators.Call{}); textOf(r) != "action=decline name=" {
			t.Fatalf("ask with no user = %+v", r)
		}
	})
	t.Run("list changed", func(t *testing.T) {
		if r := h.exec("grow", nil, operators.Call{}); textOf(r) != "grew" {
			t.Fatalf("grow = %+v", r)
		}
		eventually(t, "the new tool to be listed", func() bool { _, ok := h.tool("grown"); return ok })
		if r := h.exec("grown", nil, operators.Call{}); !strings.Contains(textOf(r), "I am new") {
			t.Fatalf("grown = %+v", r)
		}
	})
}

// isSubsequence reports whether sub's elements appear in all, in order.
func isSubsequence(sub, all []string) bool {
	i := 0
	for _, v := range all {
		if i < len(sub) && sub[i] == v {
			i++
		}
	}
	return i == len(sub)
}
