package nodes_test

import (
	"testing"

	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/trellis-ai/trellis/events"
	"github.com/trellis-ai/trellis/nodes"
)

// With a tracer, every node is a span and a tool call a child of
// execute_tool's, failed when the tool failed; a pause for an approval
// is no error.
func TestTracerSpansNodesAndTools(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	defer func() { _ = tp.Shutdown(t.Context()) }()
	h := newHarness(t, `{"steps": [
		{"match": {"node": "supervisor", "contains": "delete", "tool_result": false},
		 "reply": {"tool_calls": [{"id": "d1", "name": "delete_file", "args": {"path": "/tmp/a.txt"}}]}},
		{"match": {"node": "supervisor", "tool_result": false}, "reply": {"tool_calls": [{"id": "f1", "name": "flaky", "args": {"q": "bad"}}]}},
		{"match": {"node": "supervisor"}, "reply": {"json": {"action": "ANSWER"}}, "repeat": true},
		{"match": {"node": "reflect"}, "reply": {"json": {"assessment": "satisfied"}}, "repeat": true},
		{"reply": {"text": "done"}, "repeat": true}
	]}`, nodes.Options{Tracer: tp.Tracer("test")})

	if r := h.run(t, "c", "look it up"); r.err != nil {
		t.Fatal(r.err)
	}
	spans := map[string]sdktrace.ReadOnlySpan{}
	for _, s := range rec.Ended() {
		spans[s.Name()] = s
	}
	for _, name := range []string{"node initialize", "node supervisor", "node execute_tool", "node reflect", "node synthesize", "node write", "node stream"} {
		if spans[name] == nil {
			t.Errorf("no span %q", name)
		}
	}
	tool, exec := spans["execute_tool flaky"], spans["node execute_tool"]
	if tool == nil || exec == nil || tool.Parent().SpanID() != exec.SpanContext().SpanID() || tool.Status().Code != codes.Error {
		t.Fatalf("tool span %v under %v", tool, exec)
	}

	rec2 := len(rec.Ended())
	if r := h.run(t, "d", "delete it"); r.err != nil || last[*events.RunInterrupted](r) == nil {
		t.Fatalf("the run did not pause for the approval: %v, %s", r.err, r.trace())
	}
	for _, s := range rec.Ended()[rec2:] {
		if s.Status().Code == codes.Error {
			t.Errorf("span %q of a run paused for approval is an error: %v", s.Name(), s.Status())
		}
	}
}
