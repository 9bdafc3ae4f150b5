package main

import (
	"strings"
	"testing"
)

// a2aTask is a task as api/a2a/testdata/client.mjs prints it.
type a2aTask struct {
	ID, ContextID, State, StatusText, Answer string
}

// a2aStream is a stream as client.mjs prints it.
type a2aStream struct {
	Kinds, States  []string
	Answer, TaskID string
	Error          *a2aFailure
}

// a2aFailure is an error the A2A client threw.
type a2aFailure struct {
	Code    int
	Message string
}

// a2aReport is what client.mjs prints.
type a2aReport struct {
	Card struct {
		Interfaces []struct{ URL, Binding, Version string }
		Skills     []string
		Schemes    []string
	}
	Send, Get, Asked, Approved, Cancelled   a2aTask
	Stream, StreamedAsk, Rejected           a2aStream
	CancelAgain, Unknown, Finished, Unclear struct{ Error *a2aFailure }
}

// TestA2AClient drives trellis serve's A2A server with the real
// @a2a-js/sdk client, made from the agent card: a task sent and waited
// for, one streamed through a tool call, GetTask, the calculator's
// approval answered approve (waited for) and reject (streamed) as the
// task's next message, a waiting task cancelled, and the client's
// mistakes as the errors of their codes.
func TestA2AClient(t *testing.T) {
	t.Parallel()
	dir := clientDir(t, "../../api/a2a/testdata", "@a2a-js/sdk")
	c := serveProtocols(t)
	var r a2aReport
	runClient(t, "node", dir, "client.mjs", &r, c.url, "", "what time is it?", "what is 2+2?")
	if len(r.Card.Interfaces) != 1 || r.Card.Interfaces[0].URL != c.url+"/a2a" || r.Card.Interfaces[0].Version != "1.0" ||
		len(r.Card.Schemes) != 0 || !strings.Contains(strings.Join(r.Card.Skills, ","), "calculator") {
		t.Errorf("card = %+v", r.Card)
	}
	if r.Send.State != "TASK_STATE_COMPLETED" || r.Send.Answer != "Done: all good." || r.Get.ID != r.Send.ID || r.Get.Answer != r.Send.Answer {
		t.Errorf("send = %+v, get = %+v", r.Send, r.Get)
	}
	if st := r.Stream; st.Error != nil || st.Answer != "Done: all good." || len(st.States) < 2 ||
		st.States[0] != "TASK_STATE_WORKING" || st.States[len(st.States)-1] != "TASK_STATE_COMPLETED" {
		t.Errorf("stream = %+v", st)
	}
	if r.Asked.State != "TASK_STATE_INPUT_REQUIRED" || !strings.Contains(r.Asked.StatusText, "calculator") {
		t.Errorf("asked = %+v", r.Asked)
	}
	if r.Approved.ID != r.Asked.ID || r.Approved.State != "TASK_STATE_COMPLETED" || r.Approved.Answer != "Done: all good." {
		t.Errorf("approved = %+v", r.Approved)
	}
	if a, rj := r.StreamedAsk, r.Rejected; a.Error != nil || rj.Error != nil || rj.TaskID != a.TaskID ||
		a.States[len(a.States)-1] != "TASK_STATE_INPUT_REQUIRED" || rj.States[len(rj.States)-1] != "TASK_STATE_COMPLETED" {
		t.Errorf("streamed ask = %+v, rejected = %+v", a, rj)
	}
	if r.Cancelled.State != "TASK_STATE_CANCELED" {
		t.Errorf("cancelled = %+v", r.Cancelled)
	}
	for _, e := range []struct {
		name string
		got  *a2aFailure
		code int
	}{{"cancel again", r.CancelAgain.Error, -32002}, {"unknown task", r.Unknown.Error, -32001},
		{"message to a finished task", r.Finished.Error, -32004}, {"unclear answer", r.Unclear.Error, -32602}} {
		if e.got == nil || e.got.Code != e.code {
			t.Errorf("%s: %+v, want code %d", e.name, e.got, e.code)
		}
	}
}
