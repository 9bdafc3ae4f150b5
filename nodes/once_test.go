package nodes_test

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/trellis-ai/trellis/events"
	"github.com/trellis-ai/trellis/nodes"
)

// callLog is a nodes.CallLog in memory. Calls of the tools in crashed
// are found started, as if a crash had cut them off, until a retry lets
// them run again.
type callLog struct {
	mu      sync.Mutex
	crashed map[string]bool
	begun   []string // tool:key:again of each Begin
	ended   map[string]json.RawMessage
}

func (l *callLog) Begin(_ context.Context, key, tool, again string) (nodes.CallRecord, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.begun = append(l.begun, tool+":"+key+":"+again)
	if l.crashed[tool] && again == "" {
		return nodes.CallRecord{Started: true}, nil
	}
	return nodes.CallRecord{}, nil
}

func (l *callLog) Asking(context.Context, string) error { return nil }

func (l *callLog) End(_ context.Context, key string, outcome json.RawMessage) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.ended == nil {
		l.ended = map[string]json.RawMessage{}
	}
	l.ended[key] = outcome
	return nil
}

const onceScript = `{"steps": [
	{"match": {"node": "supervisor", "tool_result": false}, "reply": {"json": {"action": "CALL_TOOL", "reasoning": "both",
		"tool_calls": [{"tool": "search", "args": {"q": "go"}}, {"tool": "flaky", "args": {"q": "charge"}}]}}, "repeat": true},
	{"match": {"node": "reflect"}, "reply": {"json": {"assessment": "satisfied", "reasoning": "done"}}, "repeat": true},
	{"match": {"node": "write"}, "reply": {"text": "Done."}, "repeat": true}
]}`

// A read-only tool's call writes nothing to the log; a call of a tool
// that is not annotated is begun and ended under one key.
func TestCallLogRecordsOnlyWhatMustRunOnce(t *testing.T) {
	log := &callLog{}
	h := newHarness(t, onceScript, nodes.Options{Calls: log})
	r := h.run(t, "c1", "search and charge")
	if r.err != nil {
		t.Fatal(r.err)
	}
	if len(log.begun) != 1 || !strings.HasPrefix(log.begun[0], "flaky:call_") || !strings.HasSuffix(log.begun[0], ":") {
		t.Fatalf("begun %q, want flaky's call only, under a key", log.begun)
	}
	key := strings.Split(log.begun[0], ":")[1]
	var kept struct {
		Result nodes.ToolResult `json:"result"`
	}
	if err := json.Unmarshal(log.ended[key], &kept); err != nil || len(log.ended) != 1 || kept.Result.Content != "found charge" {
		t.Errorf("ended %s (%v), want flaky's outcome under %s", log.ended, err, key)
	}
}

// A call found started and not ended parks the run on a person's
// decision, announced by tool.uncertain; skip and fail do not run it and
// tell the model, retry runs it with the same key, once.
func TestUncertainCallDecisions(t *testing.T) {
	for _, tc := range []struct {
		decision events.CallDecision
		want     string // the trace of the call after the decision
	}{
		{events.CallSkip, "tool.error:flaky"},
		{events.CallFail, "tool.error:flaky"},
		{events.CallRetry, "tool.start:flaky tool.complete:flaky"},
	} {
		t.Run(string(tc.decision), func(t *testing.T) {
			log := &callLog{crashed: map[string]bool{"flaky": true}}
			h := newHarness(t, onceScript, nodes.Options{Calls: log})
			r := h.run(t, "c1", "search and charge")
			ri := last[*events.RunInterrupted](r)
			tu := last[*events.ToolUncertain](r)
			if r.err != nil || ri == nil || ri.Reason != "uncertain_call" || tu == nil || tu.Tool != "flaky" ||
				!slices.Equal(ri.UncertainCallIDs, []string{tu.UncertainCallID}) || string(tu.Args) != `{"q":"charge"}` {
				t.Fatalf("run: %v, interrupted %+v, announced %+v", r.err, ri, tu)
			}
			if !strings.Contains(r.trace(), "tool.complete:search") {
				t.Errorf("the read-only call beside it did not run: %s", r.trace())
			}
			key := strings.Split(log.begun[0], ":")[1]
			if tu.UncertainCallID != key {
				t.Errorf("uncertain call id %s, want the call's key %s", tu.UncertainCallID, key)
			}

			r = collect(h.agent.AnswerUncertainCall(t.Context(), "c1", tu.UncertainCallID, tc.decision, false))
			if r.err != nil || last[*events.RunCompleted](r) == nil {
				t.Fatalf("after %s: %v\n%s", tc.decision, r.err, r.trace())
			}
			if !strings.Contains(r.trace(), tc.want) || strings.Contains(r.trace(), "tool.start:search") {
				t.Errorf("after %s: %s\nwant %s, and the finished call not run again", tc.decision, r.trace(), tc.want)
			}
			res := h.state(t, "c1").ToolResults
			var got nodes.ToolResult
			for _, x := range res {
				if x.Tool == "flaky" {
					got = x
				}
			}
			switch tc.decision {
			case events.CallSkip:
				if got.Status != nodes.ToolSkipped || !strings.Contains(got.Content, "skip") {
					t.Errorf("the model reads %+v, want it skipped", got)
				}
			case events.CallFail:
				if got.Status != nodes.ToolError || !strings.HasPrefix(got.Content, "Failed:") {
					t.Errorf("the model reads %+v, want it failed", got)
				}
			case events.CallRetry:
				if len(log.begun) != 2 || log.begun[1] != "flaky:"+key+":"+key {
					t.Errorf("begun %q, want the retry under the same key, let run by its decision", log.begun)
				}
				if got.Status != nodes.ToolSuccess {
					t.Errorf("the model reads %+v, want the call's result", got)
				}
			}
			if tc.decision != events.CallRetry && len(log.begun) != 1 {
				t.Errorf("begun %q: a call the person did not let run again was begun", log.begun)
			}
			if r := collect(h.agent.AnswerUncertainCall(t.Context(), "c1", tu.UncertainCallID, "maybe", false)); !errors.Is(r.err, nodes.ErrInvalidInput) {
				t.Errorf("an unknown decision: %v, want ErrInvalidInput", r.err)
			}
		})
	}
}

// askingLog is a callLog whose record of a call that asks takes a while
// to be stored, and says once it is.
type askingLog struct {
	callLog
	stored atomic.Bool
}

func (l *askingLog) Asking(context.Context, string) error {
	time.Sleep(100 * time.Millisecond)
	l.stored.Store(true)
	return nil
}

// A call that asks a question it will be issued again with is recorded
// as asking before the question is shown: a client told of it may see
// the process die at once, and the run that takes it up must find the
// call waiting for its answer, not a call that may have run.
func TestACallIsRecordedAskingBeforeItsQuestionIsShown(t *testing.T) {
	log := &askingLog{}
	reg, _ := scriptedModels(t, questionScript)
	a, err := nodes.New(reg, (&questionTools{}).provider(t), nil, nodes.Options{Elicitor: &parkingElicitor{}, Calls: log,
		Hooks: nodes.Hooks{OnAnswer: func(context.Context, nodes.Answer) error { return nil }}})
	if err != nil {
		t.Fatal(err)
	}
	asked := false
	for ev, err := range a.Run(t.Context(), "c1", nodes.Input{Message: "delete a.txt", RequestID: "req1"}) {
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := ev.Data.(*events.ElicitationRequest); ok {
			asked = true
			if !log.stored.Load() {
				t.Error("elicitation.request came before the call was recorded as asking")
			}
		}
	}
	if !asked {
		t.Fatal("no question was asked")
	}
}
