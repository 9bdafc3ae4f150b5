package operators

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/failsafe-go/failsafe-go"
	"github.com/failsafe-go/failsafe-go/bulkhead"
	"github.com/failsafe-go/failsafe-go/circuitbreaker"
	"github.com/failsafe-go/failsafe-go/retrypolicy"
)

// ResilienceConfig configures one [Guard]. Every zero field takes its
// default: for remote tools [RemoteToolDefaults], for model calls
// [LLMDefaults]. Negative durations switch a feature off where noted.
type ResilienceConfig struct {
	// MaxAttempts is the number of tries, first included. Default 3;
	// 1 disables retry.
	MaxAttempts int
	// BackoffBase is the first retry delay; each further delay doubles,
	// up to BackoffMax. Defaults 1 s / 30 s (LLM: 2 s / 60 s).
	BackoffBase time.Duration
	BackoffMax  time.Duration
	// JitterFactor randomises each delay by ±factor. Default 0.2;
	// negative disables jitter. A Retry-After delay is never shortened.
	JitterFactor float64
	// FailureThreshold consecutive failures open the breaker. Default 5
	// (LLM: 3).
	FailureThreshold int
	// BreakerDelay is how long the breaker stays open before letting a
	// trial call through (half-open). Default 30 s (LLM: 60 s).
	BreakerDelay time.Duration
	// SuccessThreshold trial successes close a half-open breaker. Default 1.
	SuccessThreshold int
	// Timeout bounds the whole call: every attempt and the waits between
	// them, but not time the call spends waiting for a person
	// ([PauseTimeout]). When it runs out the attempt under way is
	// cancelled and the call fails with an error matching [ErrTimeout];
	// the call gives up at once rather than wait for a retry past it.
	// Default 60 s (LLM: 120 s); negative disables.
	Timeout time.Duration
	// MaxConcurrent bounds concurrent attempts (the bulkhead). Default 10.
	MaxConcurrent int
	// MaxWait is how long a call waits for a bulkhead slot; 0 (the
	// default) rejects at once.
	MaxWait time.Duration
}

// RemoteToolDefaults are the defaults for remote tool sources: 3 attempts,
// 1 s base and 30 s max backoff, breaker opens after 5 failures and
// half-opens after 30 s, 60 s per call, 10 concurrent calls.
func RemoteToolDefaults() ResilienceConfig {
	return ResilienceConfig{
		MaxAttempts: 3, BackoffBase: time.Second, BackoffMax: 30 * time.Second, JitterFactor: 0.2,
		FailureThreshold: 5, BreakerDelay: 30 * time.Second, SuccessThreshold: 1,
		Timeout: 60 * time.Second, MaxConcurrent: 10,
	}
}

// LLMDefaults are the defaults for model calls: 3 attempts, 2 s base and
// 60 s max backoff, breaker opens after 3 failures and half-opens after
// 60 s, 120 s per call, 10 concurrent calls.
func LLMDefaults() ResilienceConfig {
	return ResilienceConfig{
		MaxAttempts: 3, BackoffBase: 2 * time.Second, BackoffMax: 60 * time.Second, JitterFactor: 0.2,
		FailureThreshold: 3, BreakerDelay: 60 * time.Second, SuccessThreshold: 1,
		Timeout: 120 * time.Second, MaxConcurrent: 10,
	}
}

// withDefaults fills c's zero fields from d.
func (c ResilienceConfig) withDefaults(d ResilienceConfig) ResilienceConfig {
	set := func(v *int, dv int) {
		if *v == 0 {
			*v = dv
		}
	}
	setD := func(v *time.Duration, dv time.Duration) {
		if *v == 0 {
			*v = dv
		}
	}
	set(&c.MaxAttempts, d.MaxAttempts)
	set(&c.FailureThreshold, d.FailureThreshold)
	set(&c.SuccessThreshold, d.SuccessThreshold)
	set(&c.MaxConcurrent, d.MaxConcurrent)
	setD(&c.BackoffBase, d.BackoffBase)
	setD(&c.BackoffMax, d.BackoffMax)
	setD(&c.BreakerDelay, d.BreakerDelay)
	setD(&c.Timeout, d.Timeout)
	setD(&c.MaxWait, d.MaxWait)
	if c.JitterFactor == 0 {
		c.JitterFactor = d.JitterFactor
	}
	return c
}

// BreakerState is a circuit breaker's state.
type BreakerState string

const (
	BreakerClosed   BreakerState = "closed"
	BreakerOpen     BreakerState = "open"
	BreakerHalfOpen BreakerState = "half-open"
)

func breakerState(s circuitbreaker.State) BreakerState {
	switch s {
	case circuitbreaker.OpenState:
		return BreakerOpen
	case circuitbreaker.HalfOpenState:
		return BreakerHalfOpen
	default:
		return BreakerClosed
	}
}

// BreakerListener hears every breaker state change of a named guard. It is
// called synchronously while the breaker changes state: keep it quick and
// do not call back into the guard or provider from it.
type BreakerListener func(source string, state BreakerState)

// Guard runs calls to one remote dependency under
// Retry(CircuitBreaker(Bulkhead(call))), all within the call's timeout:
// the breaker and bulkhead are shared by every call through the guard;
// retry and timeout apply per call. Safe for concurrent use.
//
// Retry handles only [ClassTransient] and [ClassRateLimited] errors, and
// with [Guard.DoAtMostOnce] only those that certainly never reached the
// dependency ([SafeToRetry]). It waits base·2ⁿ ± jitter (capped at
// BackoffMax) or the error's Retry-After, and gives up at once on a
// Retry-After longer than BackoffMax or a wait the call's timeout cannot
// fit. The breaker counts transient and rate-limited errors; permanent
// errors, caller cancellation and rejections do not trip it. An open
// breaker fails fast with an error matching both circuitbreaker.ErrOpen
// and [ErrUnavailable].
type Guard[R any] struct {
	name     string
	cfg      ResilienceConfig
	breaker  circuitbreaker.CircuitBreaker[R]
	policies []failsafe.Policy[R] // breaker and bulkhead; retry is made per call
}

// NewGuard builds a guard named name (the source name reported to
// listener, which may be nil). Zero fields of cfg take
// [RemoteToolDefaults].
func NewGuard[R any](name string, cfg ResilienceConfig, listener BreakerListener) *Guard[R] {
	return newGuard[R](name, cfg.withDefaults(RemoteToolDefaults()), listener)
}

func newGuard[R any](name string, cfg ResilienceConfig, listener BreakerListener) *Guard[R] {
	g := &Guard[R]{name: name, cfg: cfg}
	cb := circuitbreaker.NewBuilder[R]().
		HandleIf(func(_ R, err error) bool { return countsAsFailure(err) }).
		WithFailureThreshold(uint(max(cfg.FailureThreshold, 1))).
		WithSuccessThreshold(uint(max(cfg.SuccessThreshold, 1))).
		WithDelay(cfg.BreakerDelay).
		OnStateChanged(func(e circuitbreaker.StateChangedEvent) {
			if listener != nil {
				listener(name, breakerState(e.NewState))
			}
		}).
		Build()
	g.breaker = cb
	bh := bulkhead.NewBuilder[R](uint(max(cfg.MaxConcurrent, 1))).WithMaxWaitTime(max(cfg.MaxWait, 0)).Build()
	g.policies = []failsafe.Policy[R]{cb, bh}
	return g
}

// countsAsFailure is what retry and breaker handle: transient and
// rate-limited failures of the call itself, not the guard's refusals.
func countsAsFailure(err error) bool {
	if err == nil || isRejection(err) {
		return false
	}
	c := Classify(err)
	return c == ClassTransient || c == ClassRateLimited
}

// delay is the wait before retry n (1 for the first): Retry-After when the
// last error carries one, else exponential backoff with jitter.
func (g *Guard[R]) delay(last error, n int) time.Duration {
	if ra := retryAfter(last); ra > 0 {
		return ra
	}
	d := g.cfg.BackoffBase
	for i := 1; i < n && d < g.cfg.BackoffMax; i++ {
		d *= 2
	}
	d = min(d, g.cfg.BackoffMax)
	if f := g.cfg.JitterFactor; f > 0 {
		d += time.Duration((rand.Float64()*2 - 1) * f * float64(d))
	}
	return max(d, 0)
}

// Name is the guarded dependency's name.
func (g *Guard[R]) Name() string { return g.name }

// State is the breaker's current state.
func (g *Guard[R]) State() BreakerState { return breakerState(g.breaker.State()) }

// RemainingDelay is how long an open breaker stays open; 0 otherwise.
func (g *Guard[R]) RemainingDelay() time.Duration { return g.breaker.RemainingDelay() }

// Do runs fn under the guard, retrying every transient failure: use it for
// work that is safe to repeat (read-only or idempotent). fn must use the
// context it is given: it ends when the call's timeout runs out or ctx
// ends. An error from Do is fn's last error (saying how many attempts
// were made when there were several, matching [ErrTimeout] when the
// timeout ran out), ctx's error, or a rejection matching [ErrUnavailable].
func (g *Guard[R]) Do(ctx context.Context, fn func(ctx context.Context) (R, error)) (R, error) {
	return g.do(ctx, true, fn)
}

// DoAtMostOnce is [Guard.Do] for work that must not be repeated: a failed
// attempt is retried only when it certainly never reached the dependency
// ([SafeToRetry]), so the dependency sees the request at most once.
func (g *Guard[R]) DoAtMostOnce(ctx context.Context, fn func(ctx context.Context) (R, error)) (R, error) {
	return g.do(ctx, false, fn)
}

// guardedCall is one call's retry state. failsafe-go runs the attempts and
// the retry policy's predicates on the caller's goroutine, one at a time,
// so it needs no lock.
type guardedCall[R any] struct {
	clock     *callClock // nil without a timeout
	attempts  int
	res       R
	err       error         // the last attempt's
	next      time.Duration // the wait before the next attempt
	outOfTime bool          // the timeout cannot fit the next wait
}

func (g *Guard[R]) do(ctx context.Context, repeatable bool, fn func(ctx context.Context) (R, error)) (R, error) {
	c := &guardedCall[R]{}
	if g.cfg.Timeout > 0 {
		ctx, c.clock = startClock(ctx, g.cfg.Timeout)
		defer c.clock.stop()
	}
	rp := retrypolicy.NewBuilder[R]().
		HandleIf(func(_ R, err error) bool { return countsAsFailure(err) && (repeatable || SafeToRetry(err)) }).
		AbortIf(func(_ R, err error) bool {
			if retryAfter(err) > g.cfg.BackoffMax {
				return true
			}
			if c.attempts >= g.cfg.MaxAttempts { // no retry follows anyway
				return false
			}
			c.next = g.delay(err, c.attempts)
			if c.clock != nil && c.next >= c.clock.left() {
				c.outOfTime = true
				return true
			}
			return false
		}).
		WithMaxAttempts(max(g.cfg.MaxAttempts, 1)).
		WithDelayFunc(func(failsafe.ExecutionAttempt[R]) time.Duration { return c.next }).
		ReturnLastFailure().
		Build()
	r, err := failsafe.With(append([]failsafe.Policy[R]{rp}, g.policies...)...).WithContext(ctx).
		GetWithExecution(func(exec failsafe.Execution[R]) (R, error) {
			c.attempts++
			r, err := fn(exec.Context())
			if err != nil && c.clock != nil && c.clock.ranOut() && Classify(err) == ClassCanceled {
				err = &timeoutError{d: g.cfg.Timeout} // our deadline, not the caller giving up
			}
			c.res, c.err = r, err
			return r, err
		})
	if c.clock != nil && c.clock.ranOut() && c.attempts > 0 {
		// failsafe-go reports the cancelled context; the last attempt is
		// the truth (it may even have succeeded at the last moment).
		r, err = c.res, c.err
		if err == nil {
			return r, nil
		}
		if !errors.Is(err, ErrTimeout) {
			err = fmt.Errorf("%w: %w", &timeoutError{d: g.cfg.Timeout}, err)
		}
	}
	switch {
	case err == nil:
		return r, nil
	case isRejection(err):
		return r, &unavailableError{source: g.name, err: err, retryIn: g.RemainingDelay()}
	case c.outOfTime:
		return r, fmt.Errorf("gave up after %s, no time left for another within the %s timeout: %w", attempts(c.attempts), g.cfg.Timeout, err)
	case c.attempts > 1:
		return r, fmt.Errorf("gave up after %s: %w", attempts(c.attempts), err)
	}
	return r, err
}

func attempts(n int) string {
	if n == 1 {
		return "1 attempt"
	}
	return fmt.Sprintf("%d attempts", n)
}

// unavailableError is a guard refusing a call. It matches ErrUnavailable
// and the failsafe rejection it wraps.
type unavailableError struct {
	source  string
	err     error
	retryIn time.Duration
}

func (e *unavailableError) Error() string {
	if errors.Is(e.err, bulkhead.ErrFull) {
		return "service " + e.source + " unavailable: too many concurrent calls, retry shortly"
	}
	if e.retryIn > 0 {
		return "service " + e.source + " unavailable (circuit breaker open), retry after " + e.retryIn.Round(time.Second).String()
	}
	return "service " + e.source + " unavailable (circuit breaker open), retry shortly"
}

func (e *unavailableError) Unwrap() []error { return []error{ErrUnavailable, e.err} }
func (e *unavailableError) Retryable() bool { return true }
