package mcp_test

import (
	"context"

	"github.com/trellis-ai/trellis/events"
	"github.com/trellis-ai/trellis/operators"
)

// user is the person a test's tools ask: each question goes to answer,
// on the asking goroutine, and what it returns is the user's answer.
// The service's own waiting for a human (package runs) is not mcp's:
// here the answer comes straight from the test.
type user struct {
	operators.NopMessenger
	answer func(ctx context.Context, r operators.ElicitRequest) operators.ElicitResponse
}

func (u user) Elicit(ctx context.Context, r operators.ElicitRequest) (operators.ElicitResponse, error) {
	resp := u.answer(ctx, r)
	resp.ElicitationID = r.ElicitationID
	if resp.Action != events.ElicitAccept {
		resp.Content = nil
	}
	return resp, nil
}
