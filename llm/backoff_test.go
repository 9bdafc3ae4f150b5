package llm_test

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/trellis-ai/trellis/llm"
)

func TestBackoffWaitsLongerUntilSuccess(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var waits []time.Duration
		b := llm.Backoff{Base: time.Second, Max: 4 * time.Second, Retrying: func(err error, attempts int, wait time.Duration) {
			if !errors.Is(err, errDown) || attempts != len(waits)+1 {
				t.Errorf("Retrying(%v, %d): want errDown and attempt %d", err, attempts, len(waits)+1)
			}
			waits = append(waits, wait)
		}}
		calls := 0
		start := time.Now()
		err := b.Run(t.Context(), func(context.Context) error {
			if calls++; calls < 5 {
				return errDown
			}
			return nil
		})
		if err != nil || calls != 5 {
			t.Fatalf("Run = %v after %d calls, want nil after 5", err, calls)
		}
		want := []time.Duration{time.Second, 2 * time.Second, 4 * time.Second, 4 * time.Second}
		if len(waits) != len(want) {
			t.Fatalf("waits = %v, want about %v", waits, want)
		}
		var total time.Duration
		for i, w := range waits {
			if lo, hi := want[i]*8/10, want[i]*12/10; w < lo || w > hi {
				t.Errorf("wait %d = %v, want %v ± 20%%", i+1, w, want[i])
			}
			total += w
		}
		if got := time.Since(start); got != total {
			t.Errorf("Run took %v, want the sum of its waits %v", got, total)
		}
	})
}

func TestBackoffEndsWithItsContext(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
		defer cancel()
		calls := 0
		err := llm.Backoff{Base: time.Second, Max: 10 * time.Second}.Run(ctx, func(context.Context) error {
			calls++
			return errDown
		})
		if !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, errDown) {
			t.Fatalf("Run = %v, want the deadline or the last error", err)
		}
		if calls < 5 || calls > 10 {
			t.Errorf("%d calls in a minute of waits from 1 s to 10 s", calls)
		}
	})
}

var errDown = errors.New("down")
