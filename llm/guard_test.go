package llm_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/trellis-ai/trellis/llm"
)

// TestGuardDisabledCallsOnce: a disabled guard makes the call once, bare:
// no retry, no breaker, no timeout.
func TestGuardDisabledCallsOnce(t *testing.T) {
	g := llm.NewGuard[int]("dep", llm.ResilienceConfig{Disabled: true, FailureThreshold: 1}, nil)
	calls := 0
	for range 3 {
		_, err := g.Do(t.Context(), func(context.Context) (int, error) {
			calls++
			return 0, llm.Transient(errBoom)
		})
		if !errors.Is(err, errBoom) || errors.Is(err, llm.ErrUnavailable) {
			t.Fatalf("err = %v, want the call's own error", err)
		}
	}
	if calls != 3 || g.State() != llm.BreakerClosed {
		t.Errorf("calls = %d, breaker %s; want 3 bare calls and a closed breaker", calls, g.State())
	}
}

// TestGuardModelDefaultsHaveNoBulkhead: model calls are not bounded in
// number (sub-agents call in parallel); a bulkhead is the tool sources'.
func TestGuardModelDefaultsHaveNoBulkhead(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := llm.NewGuard[int]("model", llm.ModelDefaults(), nil)
		const n = 50
		release := make(chan struct{})
		var wg sync.WaitGroup
		errs := make(chan error, n)
		for range n {
			wg.Go(func() {
				_, err := g.Do(t.Context(), func(context.Context) (int, error) {
					<-release
					return 1, nil
				})
				errs <- err
			})
		}
		synctest.Wait() // all n calls are inside the guard at once
		close(release)
		wg.Wait()
		close(errs)
		for err := range errs {
			if err != nil {
				t.Fatalf("a concurrent model call was refused: %v", err)
			}
		}
	})
}

// TestGuardAttemptTimeoutRetries: a timeout per attempt fails that attempt
// as transient, and the next attempt may succeed.
func TestGuardAttemptTimeoutRetries(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := llm.NewGuard[int]("dep", llm.ResilienceConfig{AttemptTimeout: time.Second, BackoffBase: time.Second, JitterFactor: -1}, nil)
		n := 0
		start := time.Now()
		got, err := g.Do(t.Context(), func(ctx context.Context) (int, error) {
			n++
			if n == 1 {
				<-ctx.Done()
				return 0, ctx.Err()
			}
			return 7, nil
		})
		if err != nil || got != 7 || n != 2 {
			t.Fatalf("got %d, %v after %d attempts; want 7 after 2", got, err, n)
		}
		if d := time.Since(start); d != 2*time.Second { // 1 s attempt + 1 s backoff
			t.Errorf("took %s, want 2s", d)
		}
	})
}
