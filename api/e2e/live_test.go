package e2e_test

import (
	"context"
	"strings"
	"testing"

	"github.com/trellis-ai/trellis/api/apitest"
	"github.com/trellis-ai/trellis/nodes"
	"github.com/trellis-ai/trellis/operators"
)

// The sub-agents the live view shows: testdata/live.json has the agent
// delegate to the researcher, which delegates to the checker, whose
// measure call holds the whole tree running until the test releases it.
const (
	researcher = "researcher:call_r1"
	checker    = researcher + "/checker:call_c1"
)

// withSubagents defines the researcher and the checker (the task tool's
// sub-agents) and adds the measure tool, which the checker calls and
// which returns once release is closed.
func withSubagents(release <-chan struct{}) func(*server, *apitest.Config) {
	return func(s *server, cfg *apitest.Config) {
		cfg.Runs.Agent.SubAgents = nodes.SubAgents{Agents: []nodes.SubAgent{
			{Name: "researcher", Description: "finds measurements"},
			{Name: "checker", Description: "checks sums", Tools: []string{"measure"}},
		}}
		s.local.MustAdd(operators.NewTool("measure", "Measures the shed.", func(ctx context.Context, _ operators.Call, _ emptyIn) (operators.Result, error) {
			select {
			case <-release:
				return operators.TextResult("2 m by 3 m"), nil
			case <-ctx.Done():
				return operators.Result{}, ctx.Err()
			}
		}))
	}
}

// TestE2ELiveViewAndTaskBoard: while a run delegates through the task
// tool, the page lights the running node of the agent's graph, nests the
// checker sub-agent inside the researcher, each with its task and its
// running node, and shows the board the agent wrote; after a reload
// mid-run it shows the same again and follows the run to its end. Then the user edits the board on the page (status,
// title, order), the server keeps the edit, and the agent's next
// supervisor prompt shows it.
func TestE2ELiveViewAndTaskBoard(t *testing.T) {
	release := make(chan struct{})
	s := newServer(t, "live.json", withSubagents(release))
	p := open(t, s)
	p.WaitJS("the agent's graph drawn", `() => document.querySelectorAll("#graph-view .graph-node").length >= 11`)
	p.Send("plan the shed")

	lit := func() {
		t.Helper()
		p.WaitJS("execute_tool lit", `() => document.querySelector('#graph-view .graph-node.active')?.dataset.node === "execute_tool"`)
		p.WaitText("#graph-caption", "Running: execute_tool")
		// The researcher runs execute_tool (its task call), and so does
		// the checker nested in it (its measure call).
		p.WaitJS("the checker nested in the researcher, both running execute_tool", `() => {
			const r = document.querySelector('#subagent-tree > li.subagent[data-namespace="`+researcher+`"]');
			const c = r?.querySelector(':scope > ul > li.subagent[data-namespace="`+checker+`"]');
			return r?.dataset.status === "running" && r.querySelector(":scope > .subagent-head .subagent-node")?.dataset.node === "execute_tool" &&
				r.querySelector(":scope > .subagent-task")?.textContent === "find the shed's measurements" &&
				c?.dataset.status === "running" && c.querySelector(".subagent-node")?.dataset.node === "execute_tool" &&
				c.querySelector(".subagent-task")?.textContent === "check the sums";
		}`)
		p.WaitJS("the board the agent wrote", `() => [...document.querySelectorAll("#task-list .task-title")].map((i) => i.value).join("|") ===
			"Buy the wood|Build the frame|Paint it"`)
		p.WaitText("#task-list li:nth-child(3) .task-owner", "researcher")
		p.WaitJS("the board locked while the run goes", `() => [...document.querySelectorAll("#task-list select, #task-list textarea")].every((c) => c.disabled)`)
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
	p.WaitJS("the task call done with the researcher's answer", `(sel) => {
		const call = document.querySelector(sel + ' li[data-tool-call-id="call_r1"]');
		return call?.classList.contains("done") && call.textContent.includes("The shed is 2 m by 3 m.");
	}`, turn(1))
	p.WaitJS("visited nodes stay marked", `() => document.querySelector('#graph-view .graph-node.visited[data-node="reflect"]')`)

	// The user edits the board on the page.
	p.WaitJS("the board open again", `() => !document.querySelector("#task-list select").disabled`)
	p.Fill("#task-list li:nth-child(2) select.task-status", "done")
	p.WaitJS("task 2 done", `() => document.querySelector('#task-list li:nth-child(2)')?.dataset.status === "done" &&
		!document.querySelector("#task-list").hasAttribute("aria-busy")`)
	p.Fill("#task-list li:nth-child(3) textarea.task-title", "Paint it green")
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
