package nodes_test

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/trellis-ai/trellis/events"
	"github.com/trellis-ai/trellis/nodes"
)

var testSubAgents = nodes.SubAgents{Agents: []nodes.SubAgent{
	{Name: "researcher", Description: "finds things on the web", SystemPrompt: "You research.", Tools: []string{"search"}},
	{Name: "janitor", Description: "cleans up files", Tools: []string{"delete_file"}},
}}

// delegateScript: the supervisor delegates two jobs at once; the
// researcher searches, the janitor deletes a file (which needs approval).
// Every step is matched by the message its agent works on, and consumed
// once: a sub-agent that ran again would find no step and fail.
const delegateScript = `{"steps": [
	{"match": {"node": "supervisor", "contains": "plan the launch", "tool_result": false, "tool": "task"},
	 "reply": {"tool_calls": [
		{"id": "call_r", "name": "task", "args": {"agent": "researcher", "task": "find the go news"}},
		{"id": "call_j", "name": "task", "args": {"agent": "janitor", "task": "delete /tmp/a.txt"}}]}},
	{"match": {"node": "supervisor", "contains": "find the go news", "tool_result": false},
	 "reply": {"tool_calls": [{"id": "s1", "name": "search", "args": {"q": "go news"}}]}},
	{"match": {"node": "reflect", "contains": "find the go news"}, "reply": {"json": {"assessment": "satisfied"}}},
	{"match": {"node": "write", "contains": "find the go news"}, "reply": {"text": "Go 1.26 adds new(expr)."}},
	{"match": {"node": "supervisor", "contains": "delete /tmp/a.txt", "tool_result": false},
	 "reply": {"tool_calls": [{"id": "d1", "name": "delete_file", "args": {"path": "/tmp/a.txt"}}]}},
	{"match": {"node": "reflect", "contains": "delete /tmp/a.txt"}, "reply": {"json": {"assessment": "satisfied"}}},
	{"match": {"node": "write", "contains": "delete /tmp/a.txt"}, "reply": {"text": "Deleted /tmp/a.txt."}},
	{"match": {"node": "reflect", "contains": "plan the launch"}, "reply": {"json": {"assessment": "satisfied"}}},
	{"match": {"node": "write", "contains": "plan the launch"}, "reply": {"text": "All done."}}
]}`

func TestSubagentsDelegateInParallelWithApproval(t *testing.T) {
	h := newHarness(t, delegateScript, nodes.Options{SubAgents: testSubAgents})
	r := h.run(t, "c1", "plan the launch")
	if r.err != nil {
		t.Fatal(r.err)
	}
	req := last[*events.ApprovalRequired](r)
	if req == nil || req.Tool != "delete_file" {
		t.Fatalf("no approval for the janitor's call: %s", r.trace())
	}
	var reqEv events.Event
	starts := map[string]string{}
	var researcherDone bool
	for _, e := range r.events {
		switch d := e.Data.(type) {
		case *events.ApprovalRequired:
			reqEv = e
		case *events.SubagentStart:
			if e.Namespace != "" {
				t.Errorf("subagent.start of %s carries namespace %q: the root emitted it", d.Namespace, e.Namespace)
			}
			starts[d.Subagent] = d.Namespace
		case *events.SubagentEnd:
			if d.Subagent == "researcher" && d.Namespace == "researcher:call_r" && d.Status == events.SubagentCompleted && d.Result == "Go 1.26 adds new(expr)." {
				researcherDone = true
			}
		case *events.ToolComplete:
			if d.Tool == "search" && e.Namespace != "researcher:call_r" {
				t.Errorf("the researcher's search carries namespace %q", e.Namespace)
			}
		case *events.ResponseChunk, *events.ResponseDone:
			t.Errorf("a sub-agent's answer reached the stream as %s", e.Type)
		}
	}
	if starts["researcher"] != "researcher:call_r" || starts["janitor"] != "janitor:call_j" {
		t.Errorf("subagent.start paths = %v", starts)
	}
	if !researcherDone {
		t.Errorf("the researcher did not finish while the janitor waited: %s", r.trace())
	}
	if reqEv.Namespace != "janitor:call_j" {
		t.Errorf("approval.required namespace = %q", reqEv.Namespace)
	}
	if len(*h.deleted) != 0 {
		t.Fatal("deleted before approval")
	}
	pend, err := h.agent.Pending(t.Context(), "c1")
	if err != nil || len(pend) != 1 || pend[0].ID != req.ApprovalID || pend[0].Namespace != "janitor:call_j" {
		t.Fatalf("pending = %+v, %v", pend, err)
	}

	r = h.resume(t, "c1", nodes.ApprovalDecision{ApprovalID: req.ApprovalID, Decision: events.DecisionApprove})
	if r.err != nil {
		t.Fatal(r.err)
	}
	if done := last[*events.ResponseDone](r); done == nil || done.Content != "All done." {
		t.Fatalf("after approval: %s", r.trace())
	}
	if !slices.Equal(*h.deleted, []string{"/tmp/a.txt"}) {
		t.Errorf("deleted = %v", *h.deleted)
	}
	for _, e := range r.events {
		if d, ok := e.Data.(*events.ToolStart); ok && d.Tool == "search" {
			t.Error("the researcher's search ran again after the approval")
		}
	}
	h.allConsumed(t)
	s := h.state(t, "c1")
	if got := toolNames(s.ToolResults); !slices.Equal(got, []string{"task=success", "task=success"}) {
		t.Errorf("root tool results = %v", got)
	}
	if !strings.Contains(s.ToolResults[0].Content, "new(expr)") || !strings.Contains(s.ToolResults[1].Content, "Deleted") {
		t.Errorf("task results = %+v", s.ToolResults)
	}
	if got := roles(s.Messages); got != "user,assistant,tool,tool,assistant" {
		t.Errorf("root messages = %s: a sub-agent's history leaked into the parent's", got)
	}
}

// A sub-agent may call only its tools; and approval is the parent's
// policy: the researcher, allowed delete_file, would still be asked.
func TestSubagentToolsAreLimited(t *testing.T) {
	const script = `{"steps": [
		{"match": {"node": "supervisor", "contains": "go", "tool_result": false, "tool": "task"},
		 "reply": {"tool_calls": [{"id": "c1", "name": "task", "args": {"agent": "researcher", "task": "tidy up"}}]}},
		{"match": {"node": "supervisor", "contains": "tidy up", "tool_result": false},
		 "reply": {"tool_calls": [{"id": "d1", "name": "delete_file", "args": {"path": "/x"}}]}},
		{"match": {"node": "reflect", "contains": "tidy up"}, "reply": {"json": {"assessment": "blocked", "reasoning": "no tool"}}},
		{"match": {"node": "write", "contains": "tidy up"}, "reply": {"text": "I cannot delete files."}},
		{"match": {"node": "reflect", "contains": "go"}, "reply": {"json": {"assessment": "satisfied"}}},
		{"match": {"node": "write", "contains": "go"}, "reply": {"text": "It could not."}}
	]}`
	h := newHarness(t, script, nodes.Options{SubAgents: testSubAgents})
	r := h.run(t, "c1", "go")
	if r.err != nil {
		t.Fatal(r.err)
	}
	if len(*h.deleted) != 0 || last[*events.ApprovalRequired](r) != nil {
		t.Fatalf("a tool outside the researcher's list was asked for or ran: %s", r.trace())
	}
	end := last[*events.SubagentEnd](r)
	if end == nil || end.Status != events.SubagentBlocked {
		t.Errorf("subagent.end = %+v", end)
	}
	h.allConsumed(t)
}

func TestSubagentBadDefinition(t *testing.T) {
	reg, _ := scriptedModels(t, `{"steps": [{"reply": {"text": "x"}, "repeat": true}]}`)
	for _, subs := range []nodes.SubAgents{
		{Agents: []nodes.SubAgent{{Name: "a b"}}},
		{Agents: []nodes.SubAgent{{Name: "a"}, {Name: "a"}}},
	} {
		if _, err := nodes.New(reg, nil, nil, nodes.Options{SubAgents: subs}); err == nil {
			t.Errorf("%+v: no error", subs)
		}
	}
}

// Cancelling the parent stops the sub-agents it runs; TestMain's goleak
// finds any goroutine left.
func TestSubagentCancel(t *testing.T) {
	const script = `{"steps": [
		{"match": {"node": "supervisor", "contains": "go", "tool_result": false, "tool": "task"},
		 "reply": {"tool_calls": [
			{"id": "c1", "name": "task", "args": {"agent": "researcher", "task": "slow one"}},
			{"id": "c2", "name": "task", "args": {"agent": "researcher", "task": "slow two"}}]}},
		{"match": {"node": "supervisor", "contains": "slow"}, "reply": {"text": "never", "delay_ms": 60000}, "repeat": true}
	]}`
	h := newHarness(t, script, nodes.Options{SubAgents: testSubAgents})
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	started := 0
	var last events.Event
	for ev := range h.agent.Run(ctx, "c1", nodes.Input{Message: "go"}) {
		if _, ok := ev.Data.(*events.SupervisorThinking); ok && ev.Namespace != "" {
			if started++; started == 2 {
				cancel()
			}
		}
		last = ev
	}
	if last.Type != events.TypeRunCancelled {
		t.Fatalf("last event %s", last.Type)
	}
}

func TestParseSubAgents(t *testing.T) {
	cfg, err := nodes.ParseSubAgents([]byte(`{"agents": [{"name": "researcher", "description": "finds things", "tools": ["search"], "model": "m"}], "max_depth": 1}`))
	if err != nil || len(cfg.Agents) != 1 || cfg.Agents[0].Tools[0] != "search" || cfg.MaxDepth != 1 {
		t.Fatalf("%+v, %v", cfg, err)
	}
	for _, bad := range []string{`{"agents": [{"name": "x"}]}`, `{"agents": [], "extra": 1}`, `{"agents": [{"name": "a b", "description": "d"}]}`,
		`{"max_depth": -1}`, `[]`, `{} {}`} {
		if _, err := nodes.ParseSubAgents([]byte(bad)); !errors.Is(err, nodes.ErrBadSubAgent) {
			t.Errorf("%s: %v", bad, err)
		}
	}
}

func FuzzParseSubAgents(f *testing.F) {
	f.Add([]byte(`{"agents": [{"name": "researcher", "description": "finds things", "tools": ["search"]}], "max_depth": 2, "max_parallel": 3}`))
	f.Add([]byte(`{"agents": [{"name": "a", "description": "b"}, {"name": "a", "description": "c"}]}`))
	f.Add([]byte(`{}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		cfg, err := nodes.ParseSubAgents(data)
		if err != nil {
			if !errors.Is(err, nodes.ErrBadSubAgent) {
				t.Fatalf("error %v does not match ErrBadSubAgent", err)
			}
			return
		}
		reg, _ := scriptedModels(t, `{"steps": [{"reply": {"text": "x"}, "repeat": true}]}`)
		if _, err := nodes.New(reg, nil, nil, nodes.Options{SubAgents: cfg}); err != nil {
			t.Fatalf("parsed %+v but New refuses it: %v", cfg, err)
		}
	})
}

// A plain call made beside a delegation that pauses is not made again
// when the run goes on: its outcome is kept.
func TestSubagentPlainCallBesideADelegationRunsOnce(t *testing.T) {
	const script = `{"steps": [
		{"match": {"node": "supervisor", "contains": "both", "tool_result": false},
		 "reply": {"tool_calls": [
			{"id": "call_s", "name": "search", "args": {"q": "go"}},
			{"id": "call_j", "name": "task", "args": {"agent": "janitor", "task": "delete /tmp/a.txt"}}]}},
		{"match": {"node": "supervisor", "contains": "delete /tmp/a.txt", "tool_result": false},
		 "reply": {"tool_calls": [{"id": "d1", "name": "delete_file", "args": {"path": "/tmp/a.txt"}}]}},
		{"match": {"node": "reflect", "contains": "delete /tmp/a.txt"}, "reply": {"json": {"assessment": "satisfied"}}},
		{"match": {"node": "write", "contains": "delete /tmp/a.txt"}, "reply": {"text": "Deleted."}},
		{"match": {"node": "reflect", "contains": "both"}, "reply": {"json": {"assessment": "satisfied"}}},
		{"match": {"node": "write", "contains": "both"}, "reply": {"text": "Both done [1]."}}
	]}`
	h := newHarness(t, script, nodes.Options{SubAgents: testSubAgents})
	r := h.run(t, "c1", "both")
	req := last[*events.ApprovalRequired](r)
	if r.err != nil || req == nil {
		t.Fatalf("%v: %s", r.err, r.trace())
	}
	if !strings.Contains(r.trace(), "tool.complete:search") {
		t.Fatalf("search did not run beside the delegation: %s", r.trace())
	}
	r = h.resume(t, "c1", nodes.ApprovalDecision{ApprovalID: req.ApprovalID, Decision: events.DecisionApprove})
	if r.err != nil {
		t.Fatal(r.err)
	}
	if strings.Contains(r.trace(), "tool.start:search") {
		t.Errorf("search ran again: %s", r.trace())
	}
	s := h.state(t, "c1")
	if got := toolNames(s.ToolResults); !slices.Equal(got, []string{"search=success", "task=success"}) || len(s.DataChunks) != 2 {
		t.Errorf("results %v, chunks %d", got, len(s.DataChunks))
	}
	if d := last[*events.ResponseDone](r); d == nil || len(d.Citations) != 1 {
		t.Errorf("response.done = %+v", d)
	}
	h.allConsumed(t)
}

// A sub-agent's tool that asks the user parks the whole run on the
// question; answering it reaches the sub-agent, whose tool acts once.
func TestSubagentQuestionParksTheRun(t *testing.T) {
	const script = `{"steps": [
		{"match": {"node": "supervisor", "contains": "clean", "tool_result": false, "tool": "task"},
		 "reply": {"tool_calls": [{"id": "call_c", "name": "task", "args": {"agent": "cleaner", "task": "delete /tmp/b"}}]}},
		{"match": {"node": "supervisor", "contains": "delete /tmp/b", "tool_result": false},
		 "reply": {"tool_calls": [{"id": "cd1", "name": "careful_delete", "args": {"path": "/tmp/b"}}]}},
		{"match": {"node": "reflect", "contains": "delete /tmp/b"}, "reply": {"json": {"assessment": "satisfied"}}},
		{"match": {"node": "write", "contains": "delete /tmp/b"}, "reply": {"text": "Deleted /tmp/b."}},
		{"match": {"node": "reflect", "contains": "clean"}, "reply": {"json": {"assessment": "satisfied"}}},
		{"match": {"node": "write", "contains": "clean"}, "reply": {"text": "Clean."}}
	]}`
	q := &questionTools{}
	reg, model := scriptedModels(t, script)
	a, err := nodes.New(reg, q.provider(t), nil, nodes.Options{Elicitor: &parkingElicitor{},
		SubAgents: nodes.SubAgents{Agents: []nodes.SubAgent{{Name: "cleaner", Description: "cleans", Tools: []string{"careful_delete"}}}}})
	if err != nil {
		t.Fatal(err)
	}
	r := collect(a.Run(t.Context(), "c1", nodes.Input{Message: "clean up"}))
	ri := last[*events.RunInterrupted](r)
	if r.err != nil || ri == nil || ri.Reason != "elicitation" || len(ri.ElicitationIDs) != 1 || ri.Pending[0].Namespace != "cleaner:call_c" {
		t.Fatalf("%v: %s %+v", r.err, r.trace(), ri)
	}
	r = collect(a.AnswerElicitation(t.Context(), "c1", nodes.ElicitationAnswer{ElicitationID: ri.ElicitationIDs[0],
		Action: events.ElicitAccept, Content: json.RawMessage(`{"confirm": true}`)}))
	if d := last[*events.ResponseDone](r); r.err != nil || d == nil || d.Content != "Clean." {
		t.Fatalf("%v: %s", r.err, r.trace())
	}
	if n := q.deletes.Load(); n != 1 {
		t.Errorf("deleted %d times", n)
	}
	if left := model.Unconsumed(); len(left) > 0 {
		t.Errorf("unused steps %v", left)
	}
}

// Sub-agent frames and inner events speak API.md's names: subagent,
// task, status, result and the namespace path; a nested frame carries
// its own path once.
func TestSubagentEventJSON(t *testing.T) {
	for _, c := range []struct {
		ev   events.Event
		want string
	}{
		{events.Event{Type: events.TypeSubagentStart, Data: &events.SubagentStart{Subagent: "checker", Task: "sum", Namespace: "r:c1/checker:c2"}, Namespace: "r:c1"},
			`{"type":"subagent.start","subagent":"checker","task":"sum","namespace":"r:c1/checker:c2"}`},
		{events.Event{Type: events.TypeSubagentEnd, Data: &events.SubagentEnd{Subagent: "r", Namespace: "r:c1", Status: events.SubagentCompleted}},
			`{"type":"subagent.end","subagent":"r","namespace":"r:c1","status":"completed","result":""}`},
		{events.Event{Type: events.TypeNodeStart, Data: &events.NodeStart{Node: "supervisor"}, Namespace: "r:c1"},
			`{"type":"node.start","namespace":"r:c1","node":"supervisor"}`},
	} {
		got, err := json.Marshal(c.ev)
		if err != nil || string(got) != c.want {
			t.Errorf("%s: %s, %v\nwant %s", c.ev.Type, got, err, c.want)
		}
	}
}
