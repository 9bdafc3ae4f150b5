package llm_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/trellis-ai/trellis/llm"
)

var errBoom = errors.New("boom")

func TestKindOf(t *testing.T) {
	tests := []struct {
		err  error
		want llm.Kind
	}{
		{llm.Transient(errBoom), llm.KindTransient},
		{llm.Permanent(errBoom), llm.KindPermanent},
		{llm.RateLimited(errBoom, time.Second), llm.KindRateLimited},
		{llm.NotSent(errBoom), llm.KindTransient},
		{context.DeadlineExceeded, llm.KindTransient},
		{context.Canceled, llm.KindCanceled},
		{fmt.Errorf("srv: %w", llm.Permanent(errBoom)), llm.KindPermanent},
		{&llm.Error{Kind: llm.KindRateLimited, Err: errBoom}, llm.KindRateLimited},
		// A model call whose caller gave up is a permanent *Error, not a
		// bare cancellation.
		{&llm.Error{Kind: llm.KindPermanent, Err: context.Canceled}, llm.KindPermanent},
		{errBoom, llm.KindTransient},
		{nil, llm.KindPermanent},
	}
	for _, tc := range tests {
		if got := llm.KindOf(tc.err); got != tc.want {
			t.Errorf("KindOf(%v) = %v, want %v", tc.err, got, tc.want)
		}
	}
}

func TestSafeToRetry(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want bool
	}{
		{llm.NotSent(errBoom), true},
		{fmt.Errorf("srv: %w", llm.Transient(llm.NotSent(errBoom))), true},
		{llm.Transient(errBoom), false},
		{context.DeadlineExceeded, false},
		{errBoom, false},
		{nil, false},
	} {
		if got := llm.SafeToRetry(tc.err); got != tc.want {
			t.Errorf("SafeToRetry(%v) = %v, want %v", tc.err, got, tc.want)
		}
	}
}
