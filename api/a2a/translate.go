package a2a

import (
	"encoding/json"
	"strings"
	"time"

	"github.com/trellis-ai/trellis/events"
	"github.com/trellis-ai/trellis/runs"
)

// answerArtifact is the id of the one artifact of a task: the run's
// answer.
const answerArtifact = "answer"

// builder follows one run's events as one task: its answer text, and
// its status; with emit set, it streams them as they come.
type builder struct {
	runID, contextID string
	// through is the seq up to which terminal events (the ends of the
	// segments of a run parked and resumed) are passed over.
	through int64
	text    strings.Builder
	status  taskStatus
	// end is the seq of the event that ended the task's segment, 0
	// before it.
	end  int64
	emit func(streamResponse) error
}

func newBuilder(runID, contextID string, emit func(streamResponse) error) *builder {
	return &builder{runID: runID, contextID: contextID, emit: emit, status: taskStatus{State: stateWorking}}
}

// begin opens a stream with the task as it stands.
func (b *builder) begin() error {
	t := b.task(nil)
	return b.send(streamResponse{Task: &t})
}

func (b *builder) send(s streamResponse) error {
	if b.emit == nil {
		return nil
	}
	return b.emit(s)
}

// event takes one run event; the one that ends the segment sets end.
func (b *builder) event(e *runs.Event) error {
	if events.Terminal(e.Type) && e.Seq <= b.through {
		return nil
	}
	p, err := e.Typed()
	if err != nil {
		return err
	}
	switch d := p.(type) {
	case *events.ResponseChunk:
		return b.answer(d.Content)
	case *events.ResponseDone:
		if b.text.Len() == 0 {
			return b.answer(d.Content)
		}
	case *events.DirectResponse:
		return b.answer(d.Content)
	case *events.ToolStart:
		return b.update(taskStatus{State: stateWorking, Message: b.agentMessage(e,
			textPart("Calling "+d.Tool+"."), dataPart(toolCall{ID: d.ToolCallID, Tool: d.Tool, Args: jsonValue(d.Args)}))})
	case *events.RunInterrupted:
		return b.finish(e, b.interrupted(e, d))
	case *events.RunCompleted:
		return b.finish(e, taskStatus{State: stateCompleted})
	case *events.RunCancelled:
		return b.finish(e, taskStatus{State: stateCanceled})
	case *events.RunFailed:
		return b.finish(e, taskStatus{State: stateFailed, Message: b.agentMessage(e, textPart(d.Error.Message))})
	}
	return nil
}

// toolCall is a working status's data part: the call Trellis makes.
type toolCall struct {
	ID   string          `json:"toolCallId"`
	Tool string          `json:"tool"`
	Args json.RawMessage `json:"args"`
}

// answer adds text to the answer artifact.
func (b *builder) answer(s string) error {
	if s == "" {
		return nil
	}
	more := b.text.Len() > 0
	b.text.WriteString(s)
	return b.send(streamResponse{ArtifactUpdate: &artifactUpdate{TaskID: b.runID, ContextID: b.contextID,
		Artifact: artifact{ArtifactID: answerArtifact, Name: "answer", Parts: []part{textPart(s)}}, Append: more}})
}

func (b *builder) update(s taskStatus) error {
	s.Timestamp = timestamp(time.Now())
	return b.send(streamResponse{StatusUpdate: &statusUpdate{TaskID: b.runID, ContextID: b.contextID, Status: s}})
}

func (b *builder) finish(e *runs.Event, s taskStatus) error {
	b.end = e.Seq
	b.status = s
	at := e.CreatedAt
	if at.IsZero() {
		at = time.Now()
	}
	b.status.Timestamp = timestamp(at)
	return b.send(streamResponse{StatusUpdate: &statusUpdate{TaskID: b.runID, ContextID: b.contextID, Status: b.status}})
}

// interrupted is the status of a run parked for a person: input
// required, with what is asked as the status message's text and
// Trellis' pending list as its data part. A run stopped by the
// server's shutdown goes on when it restarts: it is still working.
func (b *builder) interrupted(e *runs.Event, d *events.RunInterrupted) taskStatus {
	var ask []string
	for _, p := range d.Pending {
		switch p.Kind {
		case events.PendingApproval:
			ask = append(ask, "The call of "+p.Tool+" "+string(jsonValue(p.Args))+
				" waits for approval: reply \"approve\", or \"reject\" and a reason.")
		case events.PendingUncertainCall:
			ask = append(ask, "The call of "+p.Tool+" "+string(jsonValue(p.Args))+
				" was running when the server stopped and may have run: reply \"approve\" to run it again, or \"reject\" to skip it.")
		case events.PendingElicitation:
			ask = append(ask, p.Message+" (reply with a data part holding the answer, or \"decline\")")
		case events.PendingClarification:
			ask = append(ask, p.Question)
		}
	}
	if len(ask) == 0 && d.Question != "" {
		ask = append(ask, d.Question)
	}
	if len(ask) == 0 {
		return taskStatus{State: stateWorking, Message: b.agentMessage(e,
			textPart("The server stopped; the task goes on when it restarts."))}
	}
	return taskStatus{State: stateInputRequired, Message: b.agentMessage(e, textPart(strings.Join(ask, "\n")),
		dataPart(map[string]any{"pending": d.Pending}))}
}

func (b *builder) agentMessage(e *runs.Event, parts ...part) *message {
	return &message{MessageID: e.Key(), ContextID: b.contextID, TaskID: b.runID,
		Role: roleAgent, Parts: parts}
}

// task is the task as the builder has it, with history when not nil.
func (b *builder) task(history []message) task {
	t := task{ID: b.runID, ContextID: b.contextID, Status: b.status, History: history}
	if b.text.Len() > 0 {
		t.Artifacts = []artifact{{ArtifactID: answerArtifact, Name: "answer", Parts: []part{textPart(b.text.String())}}}
	}
	return t
}

// jsonValue is args as JSON: {} when there are none or they do not
// parse.
func jsonValue(args []byte) json.RawMessage {
	if !json.Valid(args) {
		return json.RawMessage("{}")
	}
	return args
}
