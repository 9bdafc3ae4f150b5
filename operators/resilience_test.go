package operators_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/trellis-ai/trellis/events"
	"github.com/trellis-ai/trellis/llm"
	"github.com/trellis-ai/trellis/operators"
)

var errBoom = errors.New("boom")

// states records breaker changes in order.
type states struct {
	mu  sync.Mutex
	got []string
}

func (s *states) listen(source string, st llm.BreakerState) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.got = append(s.got, source+":"+string(st))
}

func (s *states) list() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.got...)
}

// flaky builds a provider with one remote source "srv" offering "search",
// which is read-only (safe to retry), and "send", which says nothing about
// itself (so it may not be safe to repeat).
func flaky(t *testing.T, cfg llm.ResilienceConfig, call func(ctx context.Context, n int) (operators.Result, error)) (*operators.Provider, *fakeSource, *states) {
	t.Helper()
	search := querySpec("search")
	search.Annotations.ReadOnly = true
	src := &fakeSource{name: "srv", specs: []operators.Spec{search, querySpec("send")},
		call: func(ctx context.Context, n int, _ string, _ json.RawMessage) (operators.Result, error) {
			return call(ctx, n)
		}}
	st := &states{}
	p := operators.NewProvider(operators.ProviderConfig{Resilience: cfg, OnBreakerChange: st.listen})
	if err := p.AddSource(t.Context(), src); err != nil {
		t.Fatal(err)
	}
	return p, src, st
}

var args = json.RawMessage(`{"query":"go"}`)

func noJitter() llm.ResilienceConfig {
	return llm.ResilienceConfig{JitterFactor: -1}
}

func TestRetryTransientWithExponentialBackoff(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p, src, _ := flaky(t, noJitter(), func(_ context.Context, n int) (operators.Result, error) {
			if n < 3 {
				return operators.Result{}, llm.Transient(errBoom)
			}
			return operators.TextResult("found"), nil
		})
		start := time.Now()
		res := p.Execute(t.Context(), "search", args, operators.Call{})
		if res.IsError() || res.Text() != "found" {
			t.Fatalf("result = %+v, want found", res)
		}
		if got := src.calls.Load(); got != 3 {
			t.Errorf("attempts = %d, want 3", got)
		}
		// 1 s after the first failure, 2 s after the second (default base 1 s).
		if got := time.Since(start); got != 3*time.Second {
			t.Errorf("waited %v, want 3s", got)
		}
	})
}

func TestJitterKeepsDelaysNearBackoff(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p, _, _ := flaky(t, llm.ResilienceConfig{}, func(_ context.Context, n int) (operators.Result, error) {
			if n < 2 {
				return operators.Result{}, llm.Transient(errBoom)
			}
			return operators.TextResult("found"), nil
		})
		start := time.Now()
		p.Execute(t.Context(), "search", args, operators.Call{})
		if got := time.Since(start); got < 800*time.Millisecond || got > 1200*time.Millisecond {
			t.Errorf("waited %v, want 1s ± 20%%", got)
		}
	})
}

func TestRetriesExhaustedBecomeErrorResult(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p, src, _ := flaky(t, noJitter(), func(context.Context, int) (operators.Result, error) {
			return operators.Result{}, errBoom // unclassified: assumed transient
		})
		res := p.Execute(t.Context(), "search", args, operators.Call{})
		if got := src.calls.Load(); got != 3 {
			t.Errorf("attempts = %d, want 3", got)
		}
		if !res.IsError() || res.Error != "srv: gave up after 3 attempts: boom" {
			t.Errorf("result error = %q", res.Error)
		}
		if !errors.Is(res.Err, errBoom) {
			t.Errorf("Err = %v, want errBoom in chain", res.Err)
		}
	})
}

func TestPermanentErrorIsNotRetried(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cfg := noJitter()
		cfg.FailureThreshold = 1
		p, src, st := flaky(t, cfg, func(context.Context, int) (operators.Result, error) {
			return operators.Result{}, llm.Permanent(errors.New("401 unauthorized"))
		})
		res := p.Execute(t.Context(), "search", args, operators.Call{})
		if got := src.calls.Load(); got != 1 {
			t.Errorf("attempts = %d, want 1", got)
		}
		if res.Error != "srv: 401 unauthorized" {
			t.Errorf("error = %q", res.Error)
		}
		if got := st.list(); len(got) != 0 {
			t.Errorf("breaker changed on a permanent error: %v", got)
		}
	})
}

func TestRetryAfterIsHonoured(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p, src, _ := flaky(t, llm.ResilienceConfig{}, func(_ context.Context, n int) (operators.Result, error) {
			if n == 1 {
				return operators.Result{}, llm.RateLimited(errors.New("429"), 7*time.Second)
			}
			return operators.TextResult("ok"), nil
		})
		start := time.Now()
		res := p.Execute(t.Context(), "search", args, operators.Call{})
		if res.IsError() || src.calls.Load() != 2 {
			t.Fatalf("result %+v after %d calls", res, src.calls.Load())
		}
		if got := time.Since(start); got != 7*time.Second {
			t.Errorf("waited %v, want exactly the Retry-After 7s (no jitter)", got)
		}
	})
}

func TestRetryAfterBeyondMaxBackoffGivesUp(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p, src, _ := flaky(t, llm.ResilienceConfig{}, func(context.Context, int) (operators.Result, error) {
			return operators.Result{}, llm.RateLimited(errors.New("429 too many requests"), 10*time.Minute)
		})
		res := p.Execute(t.Context(), "search", args, operators.Call{})
		if src.calls.Load() != 1 {
			t.Errorf("attempts = %d, want 1", src.calls.Load())
		}
		if !strings.Contains(res.Error, "retry after 10m0s") {
			t.Errorf("error = %q, want the Retry-After in it", res.Error)
		}
	})
}

func TestBreakerOpensHalfOpensAndCloses(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var failing sync.Mutex // held: fail; free: succeed
		fail := true
		cfg := llm.ResilienceConfig{MaxAttempts: 1, FailureThreshold: 3}
		p, src, st := flaky(t, cfg, func(context.Context, int) (operators.Result, error) {
			failing.Lock()
			defer failing.Unlock()
			if fail {
				return operators.Result{}, llm.Transient(errBoom)
			}
			return operators.TextResult("ok"), nil
		})
		ctx := t.Context()
		for range 3 {
			p.Execute(ctx, "search", args, operators.Call{})
		}
		if got := st.list(); len(got) != 1 || got[0] != "srv:open" {
			t.Fatalf("states = %v, want [srv:open]", got)
		}
		if tools := p.Tools(); tools[0].Available {
			t.Error("tool listed available with its breaker open")
		}
		if strings.Contains(p.Summaries(), "search") {
			t.Error("supervisor summary offers a tool whose breaker is open")
		}

		time.Sleep(10 * time.Second)
		res := p.Execute(ctx, "search", args, operators.Call{})
		if src.calls.Load() != 3 {
			t.Errorf("open breaker let a call through (%d calls)", src.calls.Load())
		}
		if !errors.Is(res.Err, llm.ErrUnavailable) ||
			res.Error != "srv: service srv unavailable (circuit breaker open), retry after 20s" {
			t.Errorf("fallback result = %q (%v)", res.Error, res.Err)
		}

		// After the 30 s default delay a trial call goes through; it fails, so
		// the breaker opens again.
		time.Sleep(20 * time.Second)
		p.Execute(ctx, "search", args, operators.Call{})
		if src.calls.Load() != 4 {
			t.Fatalf("half-open breaker did not let a trial call through")
		}
		time.Sleep(30 * time.Second)
		failing.Lock()
		fail = false
		failing.Unlock()
		if res := p.Execute(ctx, "search", args, operators.Call{}); res.IsError() {
			t.Fatalf("trial call failed: %s", res.Error)
		}
		want := []string{"srv:open", "srv:half-open", "srv:open", "srv:half-open", "srv:closed"}
		if got := st.list(); strings.Join(got, " ") != strings.Join(want, " ") {
			t.Errorf("states = %v, want %v", got, want)
		}
		if !p.Tools()[0].Available {
			t.Error("tool still unavailable after the breaker closed")
		}
	})
}

func TestTimeoutCancelsTheCallContext(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var sawCancel error
		cfg := llm.ResilienceConfig{MaxAttempts: 1, Timeout: 2 * time.Second}
		p, _, _ := flaky(t, cfg, func(ctx context.Context, _ int) (operators.Result, error) {
			<-ctx.Done() // a hung server that honours cancellation
			sawCancel = ctx.Err()
			return operators.Result{}, ctx.Err()
		})
		start := time.Now()
		res := p.Execute(t.Context(), "search", args, operators.Call{})
		if sawCancel == nil {
			t.Fatal("the call's context was not cancelled")
		}
		if got := time.Since(start); got != 2*time.Second {
			t.Errorf("call took %v, want the 2s timeout", got)
		}
		if !res.IsError() || res.Error != "srv: no answer within 2s" || !errors.Is(res.Err, llm.ErrTimeout) {
			t.Errorf("result error = %q (%v)", res.Error, res.Err)
		}
	})
}

// TestRetryOnlyWhatCannotRepeatASideEffect: a failure that may have reached
// the source is retried for a read-only tool but not for one that says
// nothing about itself; a failure that certainly did not (NotSent) is
// retried for any tool.
func TestRetryOnlyWhatCannotRepeatASideEffect(t *testing.T) {
	for _, tc := range []struct {
		tool      string
		err       error
		wantCalls int32
	}{
		{"search", llm.Transient(errBoom), 3},
		{"send", llm.Transient(errBoom), 1},
		{"send", errBoom, 1}, // unclassified: transient, but may have been sent
		{"send", llm.NotSent(errBoom), 3},
		{"search", llm.NotSent(errBoom), 3},
	} {
		t.Run(tc.tool+"/"+tc.err.Error(), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				p, src, _ := flaky(t, noJitter(), func(context.Context, int) (operators.Result, error) {
					return operators.Result{}, tc.err
				})
				res := p.Execute(t.Context(), tc.tool, args, operators.Call{})
				if got := src.calls.Load(); got != tc.wantCalls {
					t.Errorf("calls = %d, want %d", got, tc.wantCalls)
				}
				if !res.IsError() || !errors.Is(res.Err, errBoom) {
					t.Errorf("result = %q (%v)", res.Error, res.Err)
				}
			})
		})
	}
}

// TestNotSentThenSuccess: a tool that is not safe to repeat succeeds once
// its source is reachable again.
func TestNotSentThenSuccess(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p, src, _ := flaky(t, noJitter(), func(_ context.Context, n int) (operators.Result, error) {
			if n == 1 {
				return operators.Result{}, llm.NotSent(errors.New("not connected"))
			}
			return operators.TextResult("sent"), nil
		})
		if res := p.Execute(t.Context(), "send", args, operators.Call{}); res.IsError() || res.Text() != "sent" || src.calls.Load() != 2 {
			t.Fatalf("result %+v after %d calls", res, src.calls.Load())
		}
	})
}

// TestTimeoutBoundsTheWholeCall: attempts that hang use the call's one
// timeout between them; the call ends when it runs out, after one attempt,
// even for a tool that may be retried.
func TestTimeoutBoundsTheWholeCall(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p, src, _ := flaky(t, llm.ResilienceConfig{Timeout: 3 * time.Second}, func(ctx context.Context, _ int) (operators.Result, error) {
			<-ctx.Done()
			return operators.Result{}, llm.Transient(ctx.Err())
		})
		start := time.Now()
		res := p.Execute(t.Context(), "search", args, operators.Call{})
		if got := time.Since(start); got != 3*time.Second {
			t.Errorf("call took %v, want the 3s timeout", got)
		}
		if src.calls.Load() != 1 || !errors.Is(res.Err, llm.ErrTimeout) || !errors.Is(res.Err, context.DeadlineExceeded) {
			t.Errorf("%d calls, result %q (%v)", src.calls.Load(), res.Error, res.Err)
		}
	})
}

// TestNoTimeoutPerAttempt: a tool source's timeout bounds the whole call
// only; a long attempt within it is not cut short (model calls have a
// timeout per attempt, tool calls do not).
func TestNoTimeoutPerAttempt(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p, src, _ := flaky(t, llm.ResilienceConfig{Timeout: 10 * time.Minute}, func(ctx context.Context, _ int) (operators.Result, error) {
			select {
			case <-time.After(5 * time.Minute):
				return operators.TextResult("slow but done"), nil
			case <-ctx.Done():
				return operators.Result{}, llm.Transient(ctx.Err())
			}
		})
		res := p.Execute(t.Context(), "search", args, operators.Call{})
		if res.IsError() || src.calls.Load() != 1 {
			t.Errorf("%d calls, result %q; want one call that finishes", src.calls.Load(), res.Error)
		}
	})
}

// TestNoRetryThatTheTimeoutCannotFit: the call gives up as soon as the
// next wait would end past its timeout, with the last attempt's error.
func TestNoRetryThatTheTimeoutCannotFit(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cfg := noJitter()
		cfg.Timeout = 2500 * time.Millisecond
		p, src, _ := flaky(t, cfg, func(context.Context, int) (operators.Result, error) {
			return operators.Result{}, llm.Transient(errBoom)
		})
		start := time.Now()
		res := p.Execute(t.Context(), "search", args, operators.Call{})
		// Attempt 1 at 0 s, attempt 2 after 1 s; the next wait (2 s) does
		// not fit the 1.5 s left.
		if got := time.Since(start); got != time.Second || src.calls.Load() != 2 {
			t.Errorf("%d calls in %v, want 2 in 1s", src.calls.Load(), got)
		}
		want := "srv: gave up after 2 attempts, no time left for another within the 2.5s timeout: boom"
		if res.Error != want || !errors.Is(res.Err, errBoom) {
			t.Errorf("result = %q, want %q", res.Error, want)
		}
	})
}

// TestTimeoutPausesWhileTheUserAnswers: time a tool waits for the user's
// answer does not count against its timeout.
func TestTimeoutPausesWhileTheUserAnswers(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rec := &operators.Recorder{Answer: func(operators.ElicitRequest) operators.ElicitResponse {
			time.Sleep(time.Minute) // the user thinks
			return operators.ElicitResponse{Action: events.ElicitAccept, Content: json.RawMessage(`{"confirm":true}`)}
		}}
		src := &fakeSource{name: "asker", specs: []operators.Spec{querySpec("ask")},
			withCall: func(ctx context.Context, call operators.Call) (operators.Result, error) {
				time.Sleep(time.Second)
				ok, err := call.Confirm(ctx, "go on?")
				if err != nil || !ok {
					return operators.Result{}, fmt.Errorf("confirm = %v, %w", ok, err)
				}
				time.Sleep(900 * time.Millisecond)
				return operators.TextResult("done"), ctx.Err()
			}}
		p := operators.NewProvider(operators.ProviderConfig{Resilience: llm.ResilienceConfig{MaxAttempts: 1, Timeout: 2 * time.Second}})
		if err := p.AddSource(t.Context(), src); err != nil {
			t.Fatal(err)
		}
		res := p.Execute(t.Context(), "ask", args, operators.Call{Messenger: rec})
		if res.IsError() || res.Text() != "done" {
			t.Fatalf("result = %q (%v)", res.Error, res.Err)
		}
	})
}

func TestBulkheadRejectsBeyondItsLimit(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		release := make(chan struct{})
		cfg := llm.ResilienceConfig{MaxConcurrent: 2}
		p, src, _ := flaky(t, cfg, func(context.Context, int) (operators.Result, error) {
			<-release
			return operators.TextResult("ok"), nil
		})
		var wg sync.WaitGroup
		for range 2 {
			wg.Go(func() { p.Execute(t.Context(), "search", args, operators.Call{}) })
		}
		synctest.Wait() // both calls hold a slot
		res := p.Execute(t.Context(), "search", args, operators.Call{})
		if !errors.Is(res.Err, llm.ErrUnavailable) || !strings.Contains(res.Error, "too many concurrent calls") {
			t.Errorf("third call = %q (%v), want a bulkhead rejection", res.Error, res.Err)
		}
		if src.calls.Load() != 2 {
			t.Errorf("calls = %d, want 2", src.calls.Load())
		}
		close(release)
		wg.Wait()
		if res := p.Execute(t.Context(), "search", args, operators.Call{}); res.IsError() {
			t.Errorf("call after release failed: %s", res.Error)
		}
	})
}

func TestCallerCancellationIsNotRetried(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithCancel(t.Context())
		p, src, st := flaky(t, llm.ResilienceConfig{FailureThreshold: 1}, func(ctx context.Context, _ int) (operators.Result, error) {
			cancel()
			return operators.Result{}, ctx.Err()
		})
		res := p.Execute(ctx, "search", args, operators.Call{})
		if src.calls.Load() != 1 || !errors.Is(res.Err, context.Canceled) {
			t.Errorf("calls = %d, err = %v; want 1 call ending in context.Canceled", src.calls.Load(), res.Err)
		}
		if got := st.list(); len(got) != 0 {
			t.Errorf("caller cancellation tripped the breaker: %v", got)
		}
	})
}

func TestPanickingSourceReleasesItsBulkheadSlot(t *testing.T) {
	p, src, _ := flaky(t, llm.ResilienceConfig{MaxConcurrent: 1}, func(context.Context, int) (operators.Result, error) {
		panic("nil map")
	})
	for range 2 {
		res := p.Execute(t.Context(), "search", args, operators.Call{})
		if !errors.Is(res.Err, operators.ErrToolPanic) {
			t.Fatalf("result = %q (%v), want ErrToolPanic", res.Error, res.Err)
		}
	}
	if src.calls.Load() != 2 {
		t.Errorf("calls = %d, want 2 (a leaked slot would reject the second)", src.calls.Load())
	}
}

// TestOneAttemptSaysNothingOfRetries: with retries off, a failure within
// the timeout is reported as it is.
func TestOneAttemptSaysNothingOfRetries(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p, _, _ := flaky(t, llm.ResilienceConfig{MaxAttempts: 1, Timeout: 100 * time.Millisecond}, func(context.Context, int) (operators.Result, error) {
			return operators.Result{}, llm.Transient(errBoom)
		})
		if res := p.Execute(t.Context(), "search", args, operators.Call{}); res.Error != "srv: boom" {
			t.Errorf("result = %q", res.Error)
		}
	})
}
