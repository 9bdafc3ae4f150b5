package operators_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/trellis-ai/trellis/events"
	"github.com/trellis-ai/trellis/operators"
)

// A tool that uses every messaging feature, in a fixed order.
func chattyTool() operators.Tool {
	return operators.NewTool("chatty", "Talks to the user.", func(ctx context.Context, call operators.Call, _ struct{}) (operators.Result, error) {
		if err := call.Progress(ctx, 1, 3, "starting"); err != nil {
			return operators.Result{}, err
		}
		ok, err := call.Confirm(ctx, "Proceed?")
		if err != nil || !ok {
			return operators.TextResult("stopped"), err
		}
		format, err := call.Choose(ctx, "Format?", []string{"JSON", "CSV"})
		if err != nil {
			return operators.Result{}, err
		}
		_ = call.Progress(ctx, 2, 3, "rendering "+format)
		_ = call.SendWidget(ctx, "chart", "<div>chart</div>")
		_ = call.Stream(ctx, "par", false)
		_ = call.Stream(ctx, "tial", true)
		_ = call.Progress(ctx, 3, 3, "done")
		return operators.TextResult("sent " + format), nil
	}, operators.WithMessaging(operators.Capabilities{Progress: true, Elicitation: true, DirectResponse: true, Streaming: true}))
}

func TestMessagingEventsInOrder(t *testing.T) {
	local := operators.NewRegistry()
	local.MustAdd(chattyTool())
	p := operators.NewProvider(operators.ProviderConfig{Local: local})
	rec := &operators.Recorder{Answer: func(r operators.ElicitRequest) operators.ElicitResponse {
		if strings.Contains(r.Message, "Proceed") {
			return operators.ElicitResponse{Action: events.ElicitAccept, Content: json.RawMessage(`{"confirm":true}`)}
		}
		return operators.ElicitResponse{Action: events.ElicitAccept, Content: json.RawMessage(`{"choice":"CSV"}`)}
	}}
	res := p.Execute(t.Context(), "chatty", nil, operators.Call{ToolCallID: "tc1", Messenger: rec})
	if res.Text() != "sent CSV" || !res.DirectResponse {
		t.Fatalf("result = %+v, want sent CSV with DirectResponse", res)
	}
	want := []string{
		`tool.progress {"tool_call_id":"tc1","progress":1,"total":3,"message":"starting"}`,
		`elicitation.request {"elicitation_id":"elicit-1","source":"chatty","message":"Proceed?","schema":{"type":"object","properties":{"confirm":{"type":"boolean","description":"Proceed?"}},"required":["confirm"]}}`,
		`elicitation.response {"elicitation_id":"elicit-1","action":"accept"}`,
		`elicitation.request {"elicitation_id":"elicit-2","source":"chatty","message":"Format?","schema":{"type":"object","properties":{"choice":{"type":"string","description":"Format?","enum":["JSON","CSV"]}},"required":["choice"]}}`,
		`elicitation.response {"elicitation_id":"elicit-2","action":"accept"}`,
		`tool.progress {"tool_call_id":"tc1","progress":2,"total":3,"message":"rendering CSV"}`,
		`direct.response {"content":"\u003cdiv\u003echart\u003c/div\u003e","content_type":"widget","widget_type":"chart","tool_call_id":"tc1"}`,
		`response.chunk {"tool_call_id":"tc1","content":"par","content_type":"text"}`,
		`response.chunk {"tool_call_id":"tc1","content":"tial","content_type":"text","done":true}`,
		`tool.progress {"tool_call_id":"tc1","progress":3,"total":3,"message":"done"}`,
	}
	got := rec.Events()
	if len(got) != len(want) {
		t.Fatalf("got %d events %v, want %d", len(got), rec.Types(), len(want))
	}
	for i, e := range got {
		if s := e.Type + " " + string(e.Data); s != want[i] {
			t.Errorf("event %d\n got %s\nwant %s", i, s, want[i])
		}
	}
}

func TestDeclineAndNoUser(t *testing.T) {
	local := operators.NewRegistry()
	local.MustAdd(chattyTool())
	p := operators.NewProvider(operators.ProviderConfig{Local: local})

	rec := &operators.Recorder{} // declines
	if res := p.Execute(t.Context(), "chatty", nil, operators.Call{Messenger: rec}); res.Text() != "stopped" || res.DirectResponse {
		t.Errorf("declined confirm → %+v", res)
	}

	res := p.Execute(t.Context(), "chatty", nil, operators.Call{}) // nobody attached
	if !errors.Is(res.Err, operators.ErrNoUser) || !strings.Contains(res.Error, `no user to ask: chatty asked "Proceed?"`) {
		t.Errorf("no user → %q (%v)", res.Error, res.Err)
	}
}

func TestChooseRejectsAnswerOutsideOptions(t *testing.T) {
	rec := &operators.Recorder{Answer: func(operators.ElicitRequest) operators.ElicitResponse {
		return operators.ElicitResponse{Action: events.ElicitAccept, Content: json.RawMessage(`{"choice":"XML"}`)}
	}}
	call := operators.Call{Messenger: rec}
	if _, err := call.Choose(t.Context(), "Format?", []string{"JSON"}); err == nil {
		t.Error("Choose accepted an answer that is not an option")
	}
	rec.Answer = func(operators.ElicitRequest) operators.ElicitResponse {
		return operators.ElicitResponse{Action: events.ElicitCancel}
	}
	if _, err := call.Confirm(t.Context(), "Sure?"); !errors.Is(err, operators.ErrElicitationCanceled) {
		t.Errorf("cancel → %v", err)
	}
}
