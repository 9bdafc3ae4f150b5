package testcheck

import (
	"errors"
	"testing"
)

// Must takes a call's two results and returns a function that fails the
// test on the error and otherwise returns the value:
// Must(s.GetRun(ctx, user, id))(t).
func Must[T any](v T, err error) func(t *testing.T) T {
	return func(t *testing.T) T {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
}

// WantErr fails the test unless err matches want (errors.Is); what
// names the call in the message.
func WantErr(t *testing.T, what string, err, want error) {
	t.Helper()
	if !errors.Is(err, want) {
		t.Errorf("%s: error = %v, want %v", what, err, want)
	}
}
