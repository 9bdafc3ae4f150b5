package e2e_test

import (
	"context"
	"strings"
	"testing"

	"github.com/trellis-ai/trellis/api/apitest"
	"github.com/trellis-ai/trellis/graph"
	"github.com/trellis-ai/trellis/operators"
)

// The sub-agent events of the contract the page draws (subagent.start,
// subagent.end, and inner events carrying the sub-agent's "namespace" path).
// The sub-agent feature is built on another branch; here the test's
// delegate tool emits them into the real run as a fixture, so they travel
// through the real service, store and stream.
type (
	subagentStart struct {
		Subagent  string `json:"subagent"`
		Task      string `json:"task"`
		Namespace string `json:"namespace"`
	}
	subagentEnd struct {
		Subagent  string `json:"subagent"`
		Namespace string `json:"namespace"`
		Status    string `json:"status"`
		Result    string `json:"result"`
	}
	innerNodeStart struct {
		Node      string `json:"node"`
		Namespace string `json:"namespace"`
	}
	innerNodeEnd struct {
		Node       string `json:"node"`
		Namespace  string `json:"namespace"`
		DurationMS int64  `json:"duration_ms"`
	}
)

func (*subagentStart) EventType() string  { return "subagent.start" }
func (*subagentEnd) EventType() string    { return "subagent.end" }
func (*innerNodeStart) EventType() string { return "node.start" }
func (*innerNodeEnd) EventType() string   { return "node.end" }

const (
	researcher = "researcher:call_r1"
	checker    = researcher + "/checker:call_c1"
)

// withDelegate adds the delegate tool: it starts a researcher sub-agent
// that starts a checker, waits for release, then ends both.
func withDelegate(release <-chan struct{}) func(*server, *apitest.Config) {
	return func(s *server, _ *apitest.Config) {
		s.local.MustAdd(operators.NewTool("delegate", "Delegates research to a sub-agent.", func(ctx context.Context, c operators.Call, _ emptyIn) (operators.Result, error) {
			for _, ev := range []any{
				&subagentStart{Namespace: researcher, Subagent: "researcher", Task: "find the shed's measurements"},
				&innerNodeStart{Node: "supervisor", Namespace: researcher},
				&subagentStart{Namespace: checker, Subagent: "checker", Task: "check the sums"},
				&innerNodeStart{Node: "execute_tool", Namespace: checker},
			} {
				if err := graph.Emit(ctx, ev); err != nil {
					return operators.Result{}, err
				}
			}
			select {
			case <-release:
			case <-ctx.Done():
				return operators.Result{}, ctx.Err()
			}
			for _, ev := range []any{
				&innerNodeEnd{Node: "execute_tool", Namespace: checker, DurationMS: 5},
				&subagentEnd{Namespace: checker, Subagent: "checker", Status: "completed", Result: "the sums add up"},
				&innerNodeEnd{Node: "supervisor", Namespace: researcher, DurationMS: 9},
				&subagentEnd{Namespace: researcher, Subagent: "researcher", Status: "completed", Result: "2 m by 3 m"},
			} {
				if err := graph.Emit(ctx, ev); err != nil {
					return operators.Result{}, err
				}
			}
			return operators.TextResult("the researcher found 2 m by 3 m"), nil
		}))
	}
}

// TestE2ELiveViewAndTaskBoard: while a run delegates, the page lights the
// running node of the agent's graph, nests the checker sub-agent inside
// the researcher with its own running node, and shows the board the
// agent wrote; after a reload mid-run it shows the same again and follows
// the run to its end. Then the user edits the board on the page (status,
// title, order), the server keeps the edit, and the agent's next
// supervisor prompt shows it.
func TestE2ELiveViewAndTaskBoard(t *testing.T) {
	release := make(chan struct{})
	s := newServer(t, "live.json", withDelegate(release))
	p := open(t, s)
	p.WaitJS("the agent's graph drawn", `() => document.querySelectorAll("#graph-view .graph-node").length >= 11`)
	p.Send("plan the shed")

	lit := func() {
		t.Helper()
		p.WaitJS("execute_tool lit", `() => document.querySelector('#graph-view .graph-node.active')?.dataset.node === "execute_tool"`)
		p.WaitText("#graph-caption", "Running: execute_tool")
		p.WaitJS("the checker nested in the researcher, running execute_tool", `() => {
			const r = document.querySelector('#subagent-tree > li.subagent[data-namespace="researcher:call_r1"]');
			const c = r?.querySelector(':scope > ul > li.subagent[data-namespace="researcher:call_r1/checker:call_c1"]');
			return r?.dataset.status === "running" && r.querySelector(".subagent-node")?.dataset.node === "supervisor" &&
				c?.dataset.status === "running" && c.querySelector(".subagent-node")?.dataset.node === "execute_tool" &&
				c.textContent.includes("check the sums");
		}`)
		p.WaitJS("the board the agent wrote", `() => [...document.querySelectorAll("#task-list .task-title")].map((i) => i.value).join("|") ===
			"Buy the wood|Build the frame|Paint it"`)
		p.WaitText("#task-list li:nth-child(3) .task-owner", "researcher")
		p.WaitJS("the board locked while the run goes", `() => [...document.querySelectorAll("#task-list select, #task-list input")].every((c) => c.disabled)`)
	}
	lit()
	p.CheckAccessible()
	p.Screenshot("live-running")

	// A reload mid-run: the page reads the history and follows the run.
	p.Reload()
	lit()
	close(release)
	waitState(p, turn(1), "completed")
	p.WaitJS("nothing lit once the run ended", `() => !document.querySelector("#graph-view .graph-node.active")`)
	p.WaitJS("both sub-agents completed", `() => [...document.querySelectorAll("#subagent-tree li.subagent")].map((li) => li.dataset.status).join() === "completed,completed"`)
	p.WaitJS("visited nodes stay marked", `() => document.querySelector('#graph-view .graph-node.visited[data-node="reflect"]')`)

	// The user edits the board on the page.
	p.WaitJS("the board open again", `() => !document.querySelector("#task-list select").disabled`)
	p.Fill("#task-list li:nth-child(2) select.task-status", "done")
	p.WaitJS("task 2 done", `() => document.querySelector('#task-list li:nth-child(2)')?.dataset.status === "done" &&
		!document.querySelector("#task-list").hasAttribute("aria-busy")`)
	p.Fill("#task-list li:nth-child(3) input.task-title", "Paint it green")
	// Saved, and the board read again, before the next control is used.
	p.WaitJS("the new title kept", `() => document.querySelector('#task-list li:nth-child(3) .task-title')?.value === "Paint it green" &&
		document.querySelectorAll("#task-list li").length === 3 && !document.querySelector("#task-list").hasAttribute("aria-busy")`)
	p.Click("#task-list li:nth-child(3) button.task-up")
	p.WaitJS("task 3 moved up", `() => document.querySelector('#task-list li:nth-child(2)')?.dataset.taskId === "t3"`)
	p.CheckAccessible()
	p.Screenshot("board-edited")
	if n := len(s.requests("PATCH", "/api/v1/conversations/"+conversationID(t, p)+"/tasks/t2")) +
		len(s.requests("PATCH", "/api/v1/conversations/"+conversationID(t, p)+"/tasks/t3")); n != 3 {
		t.Errorf("%d PATCHes of tasks, want 3", n)
	}
	// The page shows the board the server has (each PATCH answers only
	// its task; the page reads the board again), positions included.
	board := getJSON[struct {
		Tasks []struct {
			ID, Title, Status string
			Position          int
		}
	}](s, "/api/v1/conversations/"+conversationID(t, p)+"/tasks")
	var got []string
	for i, tk := range board.Tasks {
		got = append(got, tk.ID+" "+tk.Status+" "+tk.Title)
		if tk.Position != i {
			t.Errorf("the server's task %s at %d has position %d", tk.ID, i, tk.Position)
		}
	}
	if want := "t1 in_progress Buy the wood|t3 pending Paint it green|t2 done Build the frame"; strings.Join(got, "|") != want {
		t.Errorf("the server's board: %q, want %q", strings.Join(got, "|"), want)
	}

	// The agent's next turn sees the edited board.
	p.Send("go on")
	p.WaitText(turn(2)+" .answer", "Going on with the plan.")
	waitState(p, turn(2), "completed")
	var prompt string
	for _, c := range s.model.Calls() {
		if c.Node == "supervisor" && c.LastHuman == "go on" {
			prompt = c.System
		}
	}
	if !strings.Contains(prompt, "- [in_progress] t1: Buy the wood\n- [pending] t3: Paint it green (owner: researcher)\n- [done] t2: Build the frame\n") {
		t.Errorf("the supervisor's prompt after the page's edits:\n%s", prompt)
	}
	s.checkScript()
}
