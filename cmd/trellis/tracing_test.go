package main

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"
)

// otlpReceiver is an OTLP/HTTP trace receiver: it decodes each export
// as the protobuf the collector takes and keeps the spans.
type otlpReceiver struct {
	mu       sync.Mutex
	spans    []*tracepb.Span
	services []string
}

func (o *otlpReceiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/v1/traces" || r.Header.Get("Content-Type") != "application/x-protobuf" {
		http.Error(w, "not an OTLP/HTTP protobuf trace export", http.StatusBadRequest)
		return
	}
	body, err := io.ReadAll(r.Body)
	var req coltracepb.ExportTraceServiceRequest
	if err == nil {
		err = proto.Unmarshal(body, &req)
	}
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	o.mu.Lock()
	for _, rs := range req.ResourceSpans {
		for _, a := range rs.GetResource().GetAttributes() {
			if a.Key == "service.name" {
				o.services = append(o.services, a.GetValue().GetStringValue())
			}
		}
		for _, ss := range rs.ScopeSpans {
			o.spans = append(o.spans, ss.Spans...)
		}
	}
	o.mu.Unlock()
	out, _ := proto.Marshal(&coltracepb.ExportTraceServiceResponse{})
	w.Header().Set("Content-Type", "application/x-protobuf")
	_, _ = w.Write(out)
}

func (o *otlpReceiver) byName(name string) []*tracepb.Span {
	o.mu.Lock()
	defer o.mu.Unlock()
	var out []*tracepb.Span
	for _, s := range o.spans {
		if s.Name == name {
			out = append(out, s)
		}
	}
	return out
}

func attr(s *tracepb.Span, key string) *commonpb.AnyValue {
	for _, a := range s.Attributes {
		if a.Key == key {
			return a.Value
		}
	}
	return nil
}

// TestTracesReachAnOTLPReceiver runs a turn with a tool call on trellis
// serve with OTEL_EXPORTER_OTLP_ENDPOINT set and finds, at the receiver,
// the run's span with its nodes under it, the model calls under their
// nodes with the GenAI attributes (operation, model, token usage), and
// the tool call under execute_tool.
func TestTracesReachAnOTLPReceiver(t *testing.T) {
	t.Parallel()
	recv := &otlpReceiver{}
	ts := httptest.NewServer(recv)
	defer ts.Close()
	c := startServe(t, "TRELLIS_DATA_DIR="+t.TempDir(), "OTEL_EXPORTER_OTLP_ENDPOINT="+ts.URL,
		"OTEL_BSP_SCHEDULE_DELAY=50", "TRELLIS_APPROVAL_TOOLS=")
	evs := sseEvents(t, c.do("POST", "/api/v1/chat", map[string]any{"message": "what is 2+2?"}), nil)
	if last := evs[len(evs)-1]; last.typ != "run.completed" {
		t.Fatalf("the run ended with %s", last.typ)
	}
	var run, write []*tracepb.Span
	deadline := time.Now().Add(10 * time.Second)
	for {
		run, write = recv.byName("invoke_agent trellis"), recv.byName("node write")
		if len(run) == 1 && len(write) == 1 && len(recv.byName("node stream")) == 1 || time.Now().After(deadline) {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if len(run) != 1 || len(write) != 1 {
		t.Fatalf("spans: %d invoke_agent, %d node write", len(run), len(write))
	}
	r := run[0]
	if attr(r, "gen_ai.operation.name").GetStringValue() != "invoke_agent" || attr(r, "gen_ai.conversation.id").GetStringValue() == "" ||
		attr(r, "trellis.run.status").GetStringValue() != "completed" || attr(r, "gen_ai.usage.output_tokens").GetIntValue() <= 0 {
		t.Errorf("run span attributes: %v", r.Attributes)
	}
	for _, name := range []string{"node initialize", "node supervisor", "node execute_tool", "node reflect", "node write", "node stream"} {
		n := recv.byName(name)
		if len(n) == 0 || string(n[0].ParentSpanId) != string(r.SpanId) || string(n[0].TraceId) != string(r.TraceId) {
			t.Errorf("%s: %d spans, not under the run's", name, len(n))
		}
	}
	chats := recv.byName("chat scripted")
	var underWrite *tracepb.Span
	for _, s := range chats {
		if string(s.ParentSpanId) == string(write[0].SpanId) {
			underWrite = s
		}
	}
	if underWrite == nil {
		t.Fatalf("no model call under node write among %d chat spans", len(chats))
	}
	if underWrite.Kind != tracepb.Span_SPAN_KIND_CLIENT || attr(underWrite, "gen_ai.operation.name").GetStringValue() != "chat" ||
		attr(underWrite, "gen_ai.request.model").GetStringValue() != "scripted" || attr(underWrite, "gen_ai.provider.name").GetStringValue() != "scripted" ||
		attr(underWrite, "gen_ai.usage.input_tokens").GetIntValue() != 10 || attr(underWrite, "gen_ai.usage.output_tokens").GetIntValue() != 3 ||
		attr(underWrite, "trellis.node").GetStringValue() != "write" {
		t.Errorf("the write node's model call: %v", underWrite.Attributes)
	}
	tools := recv.byName("execute_tool calculator")
	exec := recv.byName("node execute_tool")
	if len(tools) != 1 || len(exec) != 1 || string(tools[0].ParentSpanId) != string(exec[0].SpanId) ||
		attr(tools[0], "gen_ai.tool.name").GetStringValue() != "calculator" || attr(tools[0], "gen_ai.operation.name").GetStringValue() != "execute_tool" ||
		attr(tools[0], "gen_ai.tool.call.id").GetStringValue() == "" {
		t.Errorf("tool spans: %v", tools)
	}
	recv.mu.Lock()
	services := strings.Join(recv.services, ",")
	recv.mu.Unlock()
	if !strings.HasPrefix(services, "trellis") {
		t.Errorf("service.name: %q", services)
	}
}
