package testcheck

import (
	"errors"
	"sync"
	"testing"
)

// Cases are the checks of a conformance suite, each by name, on a fixture
// S (a store, a saver, an environment).
type Cases[S any] = []struct {
	Name string
	Fn   func(t *testing.T, s S)
}

// RunCases runs each case as a parallel subtest, on a fixture of its own
// from newFixture.
func RunCases[S any](t *testing.T, newFixture func(t *testing.T) S, cases Cases[S]) {
	for _, tc := range cases {
		t.Run(tc.Name, func(t *testing.T) {
			t.Parallel()
			tc.Fn(t, newFixture(t))
		})
	}
}

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

// Race makes n calls of call at once and returns the numbers of those
// that succeeded, in order. A call may fail only with lost (errors.Is),
// the error of a call that lost the race; any other error fails the
// test; what names the call in the message.
func Race(t *testing.T, what string, n int, lost error, call func(i int) error) (won []int) {
	t.Helper()
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { errs[i] = call(i) })
	}
	wg.Wait()
	for i, err := range errs {
		switch {
		case err == nil:
			won = append(won, i)
		case !errors.Is(err, lost):
			t.Errorf("%s %d of %d at once: %v, want success or %v", what, i, n, err, lost)
		}
	}
	return won
}
