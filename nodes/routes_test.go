package nodes_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/trellis-ai/trellis/events"
	"github.com/trellis-ai/trellis/nodes"
)

func TestDirectAnswer(t *testing.T) {
	h := newHarness(t, `{"steps": [
		{"match": {"node": "supervisor"}, "reply": {"json": {"action": "ANSWER", "reasoning": "small talk"}, "usage": {"input_tokens": 10, "output_tokens": 2}}},
		{"match": {"node": "write"}, "reply": {"text": "Hello there, friend.", "usage": {"input_tokens": 12, "output_tokens": 4}}}
	]}`, nodes.Options{})
	r := h.run(t, "c1", "hi")
	if r.err != nil {
		t.Fatal(r.err)
	}
	wantTrace(t, r, `+initialize -initialize +supervisor supervisor.thinking supervisor.decided:answer -supervisor
		+write response.chunk* -write +stream response.done -stream run.completed`)
	if got := r.text(); got != "Hello there, friend." {
		t.Errorf("chunks = %q", got)
	}
	done := last[*events.ResponseDone](r)
	if done.Content != "Hello there, friend." || done.Usage.TotalTokens != 28 || len(done.Citations) != 0 {
		t.Errorf("response.done = %+v", done)
	}
	if c := last[*events.RunCompleted](r); c.Usage.TotalTokens != 28 || c.Status != "completed" {
		t.Errorf("run.completed = %+v", c)
	}
	s := h.state(t, "c1")
	if roles(s.Messages) != "user,assistant" || s.FinalResponse != "Hello there, friend." || s.Outcome != nodes.OutcomeAnswered || s.Iteration != 1 {
		t.Errorf("state: messages %s, final %q, outcome %q, iteration %d", roles(s.Messages), s.FinalResponse, s.Outcome, s.Iteration)
	}
	if s.Usage.TotalTokens != 28 || s.TurnUsage.TotalTokens != 28 {
		t.Errorf("usage = %+v, turn %+v", s.Usage, s.TurnUsage)
	}
	if len(h.answers) != 1 || h.answers[0].Message.Content != "Hello there, friend." || h.answers[0].RequestID != "req-hi" {
		t.Errorf("OnAnswer got %+v", h.answers)
	}
	h.allConsumed(t)
}

// TestAnAnswerThatCannotBeStoredIsNotShown: when OnAnswer fails (the
// database went away), the stream node fails before response.done, so
// no client is shown an answer the record does not keep.
func TestAnAnswerThatCannotBeStoredIsNotShown(t *testing.T) {
	gone := errors.New("database went away")
	h := newHarness(t, `{"steps": [
		{"match": {"node": "supervisor"}, "reply": {"json": {"action": "ANSWER", "reasoning": "small talk"}}},
		{"match": {"node": "write"}, "reply": {"text": "Hello there, friend."}}
	]}`, nodes.Options{Hooks: nodes.Hooks{OnAnswer: func(context.Context, nodes.Answer) error { return gone }}})
	r := h.run(t, "c1", "hi")
	if !errors.Is(r.err, gone) {
		t.Fatalf("err = %v, want the hook's", r.err)
	}
	if strings.Contains(r.trace(), "response.done") || !strings.HasSuffix(r.trace(), "run.failed") {
		t.Errorf("trace = %s", r.trace())
	}
}

func TestOneToolSatisfiedWithCitations(t *testing.T) {
	h := newHarness(t, `{"steps": [
		{"match": {"node": "supervisor", "tool_result": false}, "reply": {"tool_calls": [{"id": "s1", "name": "search", "args": {"q": "go 1.26"}}]}},
		{"match": {"node": "reflect"}, "reply": {"tool_calls": [{"name": "assess", "args": {"assessment": "satisfied", "reasoning": "found it"}}]}},
		{"match": {"node": "write", "tool_result": true}, "reply": {"text": "Go 1.26 adds new(expr) [1]; the GC changed too [2]."}}
	]}`, nodes.Options{})
	r := h.run(t, "c1", "what is new in go 1.26?")
	if r.err != nil {
		t.Fatal(r.err)
	}
	wantTrace(t, r, `+initialize -initialize +supervisor supervisor.thinking supervisor.decided:call_tool -supervisor
		+execute_tool tool.start:search tool.complete:search -execute_tool +reflect -reflect
		+synthesize -synthesize +write response.chunk* -write +stream response.done -stream run.completed`)
	done := last[*events.ResponseDone](r)
	if len(done.Citations) != 2 || done.Citations[0].Number != 1 || done.Citations[0].Source != "https://go.dev/doc/go1.26" || done.Citations[1].Title != "The Go Blog" {
		t.Errorf("citations = %+v", done.Citations)
	}
	start := last[*events.ToolStart](r)
	if start.ToolCallID != "s1" || start.Source != "local" || string(start.Args) != `{"q":"go 1.26"}` {
		t.Errorf("tool.start = %+v", start)
	}
	s := h.state(t, "c1")
	if roles(s.Messages) != "user,assistant,tool,assistant" {
		t.Errorf("messages = %s", roles(s.Messages))
	}
	if len(s.DataChunks) != 2 || s.SourceCounter != 2 || s.DataChunks[1].Number != 2 || s.DataChunks[1].ToolCallID != "s1" {
		t.Errorf("chunks = %+v, counter %d", s.DataChunks, s.SourceCounter)
	}
	if len(s.ToolResults) != 1 || s.ToolResults[0].Content != "2 results for go 1.26" || len(s.ToolResults[0].Sources) != 2 {
		t.Errorf("tool results = %+v", s.ToolResults)
	}
	if s.Reflection.Assessment != nodes.AssessSatisfied || s.Brief.Kind != nodes.BriefSynthesis || len(s.Citations) != 2 {
		t.Errorf("reflection %+v, brief %q, citations %d", s.Reflection, s.Brief.Kind, len(s.Citations))
	}
	h.allConsumed(t)
}

func TestNeedMoreLoop(t *testing.T) {
	h := newHarness(t, `{"steps": [
		{"match": {"node": "supervisor", "tool_result": false}, "reply": {"json": {"action": "CALL_TOOL", "reasoning": "look it up", "tool_calls": [{"tool": "flaky", "args": {"q": "population of Lyon"}}]}}},
		{"match": {"node": "reflect"}, "reply": {"json": {"assessment": "need_more", "reasoning": "also need the area"}}},
		{"match": {"node": "supervisor", "tool_result": true}, "reply": {"json": {"action": "CALL_TOOL", "reasoning": "area", "tool_calls": [{"tool": "flaky", "args": {"q": "area of Lyon"}}]}}},
		{"match": {"node": "reflect"}, "reply": {"json": {"assessment": "satisfied", "reasoning": "done"}}},
		{"match": {"node": "write"}, "reply": {"text": "Lyon: dense."}}
	]}`, nodes.Options{})
	r := h.run(t, "c1", "how dense is Lyon?")
	if r.err != nil {
		t.Fatal(r.err)
	}
	wantTrace(t, r, `+initialize -initialize
		+supervisor supervisor.thinking supervisor.decided:call_tool -supervisor
		+execute_tool tool.start:flaky tool.complete:flaky -execute_tool +reflect -reflect
		+supervisor supervisor.thinking supervisor.decided:call_tool -supervisor
		+execute_tool tool.start:flaky tool.complete:flaky -execute_tool +reflect -reflect
		+synthesize -synthesize +write response.chunk* -write +stream response.done -stream run.completed`)
	s := h.state(t, "c1")
	if s.Iteration != 2 || len(s.Actions) != 2 || len(s.ToolResults) != 2 || s.ToolResults[1].Iteration != 2 {
		t.Errorf("iteration %d, actions %+v, results %+v", s.Iteration, s.Actions, s.ToolResults)
	}
	if s.ToolResults[0].ToolCallID != "call_t1_i1_1" || s.ToolResults[1].ToolCallID != "call_t1_i2_1" {
		t.Errorf("tool call ids: %s, %s", s.ToolResults[0].ToolCallID, s.ToolResults[1].ToolCallID)
	}
	if s.TaskContext != "also need the area" {
		t.Errorf("task context = %q", s.TaskContext)
	}
	h.allConsumed(t)
}

func TestBlocked(t *testing.T) {
	h := newHarness(t, `{"steps": [
		{"match": {"node": "supervisor"}, "reply": {"json": {"action": "CALL_TOOL", "reasoning": "try", "tool_calls": [{"tool": "flaky", "args": {"q": "bad"}}]}}},
		{"match": {"node": "reflect"}, "reply": {"json": {"assessment": "blocked", "reasoning": "the service rejects the query"}}},
		{"match": {"node": "write"}, "reply": {"text": "Sorry, I couldn't: the lookup service rejected the query."}}
	]}`, nodes.Options{})
	r := h.run(t, "c1", "look up something")
	if r.err != nil {
		t.Fatal(r.err)
	}
	wantTrace(t, r, `+initialize -initialize +supervisor supervisor.thinking supervisor.decided:call_tool -supervisor
		+execute_tool tool.start:flaky tool.error:flaky -execute_tool +reflect -reflect
		+handle_blocked -handle_blocked +write response.chunk* -write +stream response.done -stream run.completed`)
	if e := last[*events.ToolError](r); e.Error != "upstream said 400: bad query" {
		t.Errorf("tool.error = %+v", e)
	}
	s := h.state(t, "c1")
	if s.Outcome != nodes.OutcomeBlocked || s.Brief.Kind != nodes.BriefBlocked ||
		!strings.Contains(s.Brief.Instructions, "the service rejects the query") || !strings.Contains(s.Brief.Instructions, "flaky failed: upstream said 400") {
		t.Errorf("outcome %q, brief %+v", s.Outcome, s.Brief)
	}
	h.allConsumed(t)
}

func TestDirectResponseFromOperator(t *testing.T) {
	h := newHarness(t, `{"steps": [
		{"match": {"node": "supervisor"}, "reply": {"tool_calls": [{"id": "ch", "name": "chart", "args": {"q": "sales"}}]}}
	]}`, nodes.Options{})
	r := h.run(t, "c1", "chart my sales")
	if r.err != nil {
		t.Fatal(r.err)
	}
	wantTrace(t, r, `+initialize -initialize +supervisor supervisor.thinking supervisor.decided:call_tool -supervisor
		+execute_tool tool.start:chart tool.progress direct.response tool.complete:chart -execute_tool +reflect -reflect
		+stream response.done -stream run.completed`)
	d := last[*events.DirectResponse](r)
	if d.Content != "<svg>sales</svg>" || d.ContentType != "widget" || d.WidgetType != "chart" || d.ToolCallID != "ch" {
		t.Errorf("direct.response = %+v", d)
	}
	if p := last[*events.ToolProgress](r); p.ToolCallID != "ch" || p.Progress != 1 || p.Total != 2 || p.Message != "drawing" {
		t.Errorf("tool.progress = %+v", p)
	}
	s := h.state(t, "c1")
	if s.Outcome != nodes.OutcomeDirect || len(s.DirectResponses) != 1 || s.Reflection.Assessment != nodes.AssessDirectResponse ||
		s.FinalResponse != "[widget: chart]" || roles(s.Messages) != "user,assistant,tool,assistant" {
		t.Errorf("outcome %q, direct %+v, final %q, messages %s", s.Outcome, s.DirectResponses, s.FinalResponse, roles(s.Messages))
	}
	h.allConsumed(t)
}

func TestClarifyThenAnswer(t *testing.T) {
	h := newHarness(t, `{"steps": [
		{"match": {"node": "supervisor", "contains": "book a table"}, "reply": {"json": {"action": "CLARIFY", "reasoning": "which city", "question": "In which city?"}}},
		{"match": {"node": "supervisor", "contains": "paris"}, "reply": {"json": {"action": "ANSWER", "reasoning": "now I know"}}},
		{"match": {"node": "write", "contains": "paris"}, "reply": {"text": "Booked in Paris."}}
	]}`, nodes.Options{})
	r := h.run(t, "c1", "book a table for two")
	if r.err != nil {
		t.Fatal(r.err)
	}
	wantTrace(t, r, `+initialize -initialize +supervisor supervisor.thinking supervisor.decided:clarify -supervisor
		+clarify -clarify +stream response.done -stream +clarify run.interrupted:clarification`)
	ri := last[*events.RunInterrupted](r)
	if ri.Question != "In which city?" || ri.ClarificationID == "" || len(ri.Pending) != 1 || ri.Pending[0].Kind != events.PendingClarification {
		t.Errorf("run.interrupted = %+v", ri)
	}
	if d := last[*events.ResponseDone](r); d.Content != "In which city?" {
		t.Errorf("response.done = %+v", d)
	}
	pending, err := h.agent.Pending(t.Context(), "c1")
	if err != nil || len(pending) != 1 || pending[0].ID != ri.ClarificationID {
		t.Fatalf("pending = %+v, %v", pending, err)
	}
	// The user's next message answers the question.
	r = h.run(t, "c1", "Paris")
	if r.err != nil {
		t.Fatal(r.err)
	}
	wantTrace(t, r, `+clarify -clarify +supervisor supervisor.thinking supervisor.decided:answer -supervisor
		+write response.chunk* -write +stream response.done -stream run.completed`)
	s := h.state(t, "c1")
	if roles(s.Messages) != "user,assistant,user,assistant" || s.Messages[1].Content != "In which city?" || s.Messages[2].Content != "Paris" {
		t.Errorf("messages = %+v", s.Messages)
	}
	if s.Turn != 1 || s.Iteration != 2 || s.ClarifyQuestion != "" || s.Outcome != nodes.OutcomeAnswered || s.FinalResponse != "Booked in Paris." {
		t.Errorf("turn %d, iteration %d, question %q, outcome %q, final %q", s.Turn, s.Iteration, s.ClarifyQuestion, s.Outcome, s.FinalResponse)
	}
	if len(h.answers) != 2 || h.answers[0].Outcome != nodes.OutcomeClarify || h.answers[1].Outcome != nodes.OutcomeAnswered {
		t.Errorf("answers = %+v", h.answers)
	}
	h.allConsumed(t)
}

func TestWorkflowParallelSteps(t *testing.T) {
	h := newHarness(t, `{"steps": [
		{"match": {"node": "supervisor"}, "reply": {"json": {"action": "CREATE_WORKFLOW", "reasoning": "two lookups then a sum",
			"workflow": [
				{"id": "a", "tool": "calculator", "args": {"expression": "6*7"}},
				{"id": "b", "tool": "calculator", "args": {"expression": "2^10"}},
				{"id": "sum", "tool": "calculator", "args": {"expression": "{{a}} + {{b}}"}, "depends_on": ["a", "b"]}
			]}}},
		{"match": {"node": "reflect"}, "reply": {"json": {"assessment": "satisfied", "reasoning": "ok"}}},
		{"match": {"node": "write"}, "reply": {"text": "1066."}}
	]}`, nodes.Options{})
	r := h.run(t, "c1", "add 6*7 and 2^10")
	if r.err != nil {
		t.Fatal(r.err)
	}
	// a and b run concurrently: their events may interleave; sum after both.
	tr := r.trace()
	if !strings.HasPrefix(tr, "+initialize -initialize +supervisor supervisor.thinking supervisor.decided:create_workflow -supervisor +execute_tool") ||
		!strings.HasSuffix(tr, "tool.start:calculator tool.complete:calculator -execute_tool +reflect -reflect +synthesize -synthesize +write response.chunk* -write +stream response.done -stream run.completed") ||
		strings.Count(tr, "tool.complete:calculator") != 3 {
		t.Errorf("events: %s", tr)
	}
	s := h.state(t, "c1")
	if got := toolNames(s.ToolResults); strings.Join(got, " ") != "calculator=success calculator=success calculator=success" {
		t.Fatalf("results = %v", got)
	}
	if s.ToolResults[2].Content != "1066" || string(s.ToolResults[2].Args) != `{"expression":"42 + 1024"}` {
		t.Errorf("sum step = %+v", s.ToolResults[2])
	}
	if len(s.WorkflowSteps) != 3 || s.WorkflowSteps[2].Status != nodes.ToolSuccess || s.WorkflowSteps[0].ToolCallID != "wf_t1_i1_a" {
		t.Errorf("workflow steps = %+v", s.WorkflowSteps)
	}
	if m := s.Messages[1]; m.Role != nodes.RoleAssistant || len(m.ToolCalls) != 3 {
		t.Errorf("assistant tool-call message = %+v", m)
	}
	h.allConsumed(t)
}

func TestWorkflowFailedDependencySkips(t *testing.T) {
	h := newHarness(t, `{"steps": [
		{"match": {"node": "supervisor"}, "reply": {"json": {"action": "CREATE_WORKFLOW", "reasoning": "chain",
			"workflow": [
				{"id": "look", "tool": "flaky", "args": {"q": "bad"}},
				{"id": "then", "tool": "search", "args": {"q": "{{look}}"}, "depends_on": ["look"]}
			]}}},
		{"match": {"node": "reflect"}, "reply": {"json": {"assessment": "blocked", "reasoning": "lookup failed"}}},
		{"match": {"node": "write"}, "reply": {"text": "It failed."}}
	]}`, nodes.Options{})
	r := h.run(t, "c1", "chain")
	if r.err != nil {
		t.Fatal(r.err)
	}
	s := h.state(t, "c1")
	if got := strings.Join(toolNames(s.ToolResults), " "); got != "flaky=error search=skipped" {
		t.Errorf("results = %s", got)
	}
	if !strings.Contains(s.ToolResults[1].Content, `step "look" it depends on did not succeed`) {
		t.Errorf("skip reason = %q", s.ToolResults[1].Content)
	}
	h.allConsumed(t)
}

func TestMaxIterations(t *testing.T) {
	h := newHarness(t, `{"steps": [
		{"match": {"node": "supervisor"}, "reply": {"json": {"action": "CALL_TOOL", "reasoning": "again", "tool_calls": [{"tool": "flaky", "args": {"q": "x"}}]}}, "repeat": true},
		{"match": {"node": "reflect"}, "reply": {"json": {"assessment": "need_more", "reasoning": "still not enough"}}, "repeat": true},
		{"match": {"node": "write"}, "reply": {"text": "I ran out of steps."}}
	]}`, nodes.Options{MaxIterations: 3})
	r := h.run(t, "c1", "keep going")
	if r.err != nil {
		t.Fatal(r.err)
	}
	if n := strings.Count(r.trace(), "supervisor.decided:call_tool"); n != 3 {
		t.Errorf("%d decisions, want 3: %s", n, r.trace())
	}
	if !strings.HasSuffix(r.trace(), "+reflect -reflect +handle_blocked -handle_blocked +write response.chunk* -write +stream response.done -stream run.completed") {
		t.Errorf("events: %s", r.trace())
	}
	s := h.state(t, "c1")
	if s.Iteration != 3 || s.Outcome != nodes.OutcomeBlocked || !strings.Contains(s.Brief.Instructions, "used all 3 steps") {
		t.Errorf("iteration %d, outcome %q, brief %q", s.Iteration, s.Outcome, s.Brief.Instructions)
	}
	h.allConsumed(t)
}

func TestToolErrorRecovered(t *testing.T) {
	h := newHarness(t, `{"steps": [
		{"match": {"node": "supervisor", "tool_result": false}, "reply": {"tool_calls": [{"id": "f1", "name": "flaky", "args": {"q": "bad"}}]}},
		{"match": {"node": "reflect"}, "reply": {"text": "not json at all"}},
		{"match": {"node": "supervisor", "tool_result": true}, "reply": {"tool_calls": [{"id": "f2", "name": "flaky", "args": {"q": "good"}}]}},
		{"match": {"node": "reflect"}, "reply": {"json": {"assessment": "satisfied"}}},
		{"match": {"node": "write"}, "reply": {"text": "Found good."}}
	]}`, nodes.Options{})
	r := h.run(t, "c1", "find it")
	if r.err != nil {
		t.Fatal(r.err)
	}
	wantTrace(t, r, `+initialize -initialize
		+supervisor supervisor.thinking supervisor.decided:call_tool -supervisor
		+execute_tool tool.start:flaky tool.error:flaky -execute_tool +reflect -reflect
		+supervisor supervisor.thinking supervisor.decided:call_tool -supervisor
		+execute_tool tool.start:flaky tool.complete:flaky -execute_tool +reflect -reflect
		+synthesize -synthesize +write response.chunk* -write +stream response.done -stream run.completed`)
	s := h.state(t, "c1")
	// The error went back to the model as the tool's result.
	if m := s.Messages[2]; m.Role != nodes.RoleTool || m.ToolCallID != "f1" || m.Content != "upstream said 400: bad query" {
		t.Errorf("tool message = %+v", m)
	}
	if got := strings.Join(toolNames(s.ToolResults), " "); got != "flaky=error flaky=success" {
		t.Errorf("results = %s", got)
	}
	h.allConsumed(t)
}

func TestMalformedDecisionRepaired(t *testing.T) {
	h := newHarness(t, `{"steps": [
		{"name": "bad", "match": {"node": "supervisor"}, "reply": {"text": "{\"action\": \"CALL_TOOL\", \"tool_calls\": [{\"tool\": "}},
		{"name": "repaired", "match": {"node": "supervisor", "contains": "could not be used"}, "reply": {"tool_calls": [{"name": "decide", "args": {"action": "ANSWER", "reasoning": "fine"}}]}},
		{"match": {"node": "write"}, "reply": {"text": "Answer."}}
	]}`, nodes.Options{})
	r := h.run(t, "c1", "something")
	if r.err != nil {
		t.Fatal(r.err)
	}
	wantTrace(t, r, `+initialize -initialize +supervisor supervisor.thinking supervisor.decided:answer -supervisor
		+write response.chunk* -write +stream response.done -stream run.completed`)
	calls := h.model.Calls()
	if len(calls) != 3 || !strings.Contains(calls[1].Step, "repaired") || !strings.Contains(calls[1].LastHuman, "not a decision object") {
		t.Errorf("calls = %+v", calls)
	}
	h.allConsumed(t)
}

func TestUnrepairableDecisionBlocks(t *testing.T) {
	h := newHarness(t, `{"steps": [
		{"match": {"node": "supervisor"}, "reply": {"json": {"action": "DANCE"}}, "repeat": true},
		{"match": {"node": "write"}, "reply": {"error": {"kind": "permanent"}}}
	]}`, nodes.Options{})
	r := h.run(t, "c1", "something")
	if r.err != nil {
		t.Fatal(r.err)
	}
	wantTrace(t, r, `+initialize -initialize +supervisor supervisor.thinking supervisor.decided:blocked -supervisor
		+handle_blocked -handle_blocked +write response.chunk* -write +stream response.done -stream run.completed`)
	// The model failed in write too: the honest fallback is written.
	if d := last[*events.ResponseDone](r); !strings.HasPrefix(d.Content, "I couldn't complete your request.") || !strings.Contains(d.Content, `unknown action "DANCE"`) {
		t.Errorf("response.done = %q", d.Content)
	}
	h.allConsumed(t)
}
