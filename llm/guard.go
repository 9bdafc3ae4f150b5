package llm

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
	"github.com/failsafe-go/failsafe-go/timeout"
)

// ResilienceConfig configures one [Guard]: the policies around calls to a
// remote dependency, a model provider's endpoint or a tool source. It is
// the one resilience policy: model calls take [ModelDefaults], tool
// sources their own defaults (operators.RemoteToolDefaults); fill zero
// fields with [ResilienceConfig.WithDefaults]. Negative values switch a
// feature off where noted.
type ResilienceConfig struct {
	// MaxAttempts is the number of tries, first included; 1 disables
	// retry.
	MaxAttempts int
	// BackoffBase is the first retry delay; each further delay doubles,
	// up to BackoffMax. A 429 whose Retry-After is longer than BackoffMax
	// is not retried: the caller gets the rate-limited error.
	BackoffBase time.Duration
	BackoffMax  time.Duration
	// JitterFactor randomises each delay by ±factor; negative disables
	// jitter. A Retry-After delay is honoured exactly, never shortened.
	JitterFactor float64
	// FailureThreshold consecutive transient or rate-limited failures open
	// the breaker.
	FailureThreshold int
	// BreakerDelay is how long the breaker stays open before letting a
	// trial call through (half-open).
	BreakerDelay time.Duration
	// SuccessThreshold trial successes close a half-open breaker.
	SuccessThreshold int
	// Timeout bounds the whole call: every attempt and the waits between
	// them, but not time the call spends waiting for a person
	// ([PauseTimeout]). When it runs out the attempt under way is
	// cancelled and the call fails with an error matching [ErrTimeout];
	// the call gives up at once rather than wait for a retry past it.
	// Negative disables.
	Timeout time.Duration
	// AttemptTimeout bounds each attempt alone, streaming included; a
	// timed-out attempt is a transient failure and may be retried. Zero
	// or negative: only Timeout bounds attempts.
	AttemptTimeout time.Duration
	// MaxConcurrent bounds concurrent attempts (the bulkhead); negative
	// means no bound.
	MaxConcurrent int
	// MaxWait is how long a call waits for a bulkhead slot; 0 rejects at
	// once.
	MaxWait time.Duration
	// Disabled runs calls once, with no policy at all (and makes the
	// Registry hand out models unwrapped).
	Disabled bool
}

// ModelDefaults are the defaults for model calls: 3 attempts, 2 s base and
// 60 s max backoff, ±20 % jitter, breaker opens after 3 failures and
// half-opens after 60 s, 120 s per attempt, no bound on the whole call
// (a 429's Retry-After may take most of a minute) and no bulkhead.
func ModelDefaults() ResilienceConfig {
	return ResilienceConfig{
		MaxAttempts: 3, BackoffBase: 2 * time.Second, BackoffMax: 60 * time.Second, JitterFactor: 0.2,
		FailureThreshold: 3, BreakerDelay: 60 * time.Second, SuccessThreshold: 1,
		Timeout: -1, AttemptTimeout: 120 * time.Second, MaxConcurrent: -1,
	}
}

// WithDefaults returns c with its zero fields filled from d.
func (c ResilienceConfig) WithDefaults(d ResilienceConfig) ResilienceConfig {
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
	setD(&c.AttemptTimeout, d.AttemptTimeout)
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
// do not call back into the guard from it.
type BreakerListener func(source string, state BreakerState)

// Guard runs calls to one remote dependency under
// Retry(CircuitBreaker(Bulkhead(AttemptTimeout(call)))), all within the
// call's Timeout: the breaker and bulkhead are shared by every call
// through the guard; retry and timeouts apply per call. Safe for
// concurrent use.
//
// Retry handles only [KindTransient] and [KindRateLimited] errors (see
// [KindOf]), and with [Guard.DoAtMostOnce] only those that certainly never
// reached the dependency ([SafeToRetry]). It waits base·2ⁿ ± jitter
// (capped at BackoffMax) or the error's Retry-After, and gives up at once
// on a Retry-After longer than BackoffMax or a wait the call's timeout
// cannot fit. The breaker counts transient and rate-limited errors;
// permanent errors, caller cancellation and rejections do not trip it.
// An open breaker fails fast with an error matching both
// circuitbreaker.ErrOpen and [ErrUnavailable].
type Guard[R any] struct {
	name     string
	cfg      ResilienceConfig
	breaker  circuitbreaker.CircuitBreaker[R]
	policies []failsafe.Policy[R] // breaker, bulkhead, attempt timeout
	// stateless holds the whole policy stack for calls with no timeout
	// of their own, which keeps no state per call and is built once:
	// [0] for work that must not repeat, [1] for work that may.
	stateless [2]failsafe.Executor[R]
}

// NewGuard builds a guard named name (the dependency's name, reported to
// listener, which may be nil). Zero fields of cfg take [ModelDefaults];
// callers with other defaults fill cfg first ([ResilienceConfig.WithDefaults])
// from defaults that leave no field zero.
func NewGuard[R any](name string, cfg ResilienceConfig, listener BreakerListener) *Guard[R] {
	cfg = cfg.WithDefaults(ModelDefaults())
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
	g.policies = []failsafe.Policy[R]{cb}
	if cfg.MaxConcurrent > 0 {
		g.policies = append(g.policies, bulkhead.NewBuilder[R](uint(cfg.MaxConcurrent)).WithMaxWaitTime(max(cfg.MaxWait, 0)).Build())
	}
	if cfg.AttemptTimeout > 0 {
		g.policies = append(g.policies, timeout.New[R](cfg.AttemptTimeout))
	}
	if cfg.Timeout <= 0 {
		g.stateless = [2]failsafe.Executor[R]{g.executor(false, nil), g.executor(true, nil)}
	}
	return g
}

// countsAsFailure is what retry and breaker handle: transient and
// rate-limited failures of the call itself, not the guard's refusals.
func countsAsFailure(err error) bool {
	if err == nil || isRejection(err) {
		return false
	}
	k := KindOf(err)
	return k == KindTransient || k == KindRateLimited
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

// Config is the guard's configuration, defaults filled in.
func (g *Guard[R]) Config() ResilienceConfig { return g.cfg }

// State is the breaker's current state.
func (g *Guard[R]) State() BreakerState { return breakerState(g.breaker.State()) }

// RemainingDelay is how long an open breaker stays open; 0 otherwise.
func (g *Guard[R]) RemainingDelay() time.Duration { return g.breaker.RemainingDelay() }

// Do runs fn under the guard, retrying every transient failure: use it for
// work that is safe to repeat (read-only or idempotent). fn must use the
// context it is given: it ends when a timeout runs out or ctx ends. An
// error from Do is fn's last error (saying how many attempts were made
// when there were several, matching [ErrTimeout] when the call's timeout
// ran out), ctx's error, or a rejection matching [ErrUnavailable].
func (g *Guard[R]) Do(ctx context.Context, fn func(ctx context.Context) (R, error)) (R, error) {
	return g.describe(g.run(ctx, true, fn))
}

// DoAtMostOnce is [Guard.Do] for work that must not be repeated: a failed
// attempt is retried only when it certainly never reached the dependency
// ([SafeToRetry]), so the dependency sees the request at most once.
func (g *Guard[R]) DoAtMostOnce(ctx context.Context, fn func(ctx context.Context) (R, error)) (R, error) {
	return g.describe(g.run(ctx, false, fn))
}

// guardedCall is one call's retry state and outcome. failsafe-go runs the
// attempts and the retry policy's predicates on the caller's goroutine,
// one at a time, so it needs no lock.
type guardedCall[R any] struct {
	clock     *callClock // nil without a timeout
	attempts  int
	res       R
	err       error         // the last attempt's, then the call's
	next      time.Duration // the wait before the next attempt
	outOfTime bool          // the timeout cannot fit the next wait
}

// final marks a failure after which the call must not be repeated,
// whatever its kind: a model call whose output already reached the caller.
// It still counts for the breaker as its cause does.
type final struct{ err error }

func (e *final) Error() string { return e.err.Error() }
func (e *final) Unwrap() error { return e.err }

// run makes the call and returns its outcome undescribed: err is the last
// attempt's error (matching [ErrTimeout] if the timeout ran out), ctx's,
// or failsafe-go's rejection.
func (g *Guard[R]) run(ctx context.Context, repeatable bool, fn func(ctx context.Context) (R, error)) *guardedCall[R] {
	c := &guardedCall[R]{}
	if g.cfg.Disabled {
		c.attempts = 1
		c.res, c.err = fn(ctx)
		return c
	}
	var ex failsafe.Executor[R]
	if g.cfg.Timeout > 0 {
		ctx, c.clock = startClock(ctx, g.cfg.Timeout)
		defer c.clock.stop()
		ex = g.executor(repeatable, c)
	} else if repeatable {
		ex = g.stateless[1]
	} else {
		ex = g.stateless[0]
	}
	r, err := ex.WithContext(ctx).
		GetWithExecution(func(exec failsafe.Execution[R]) (R, error) {
			c.attempts++
			r, err := fn(exec.Context())
			if err != nil && c.clock != nil && c.clock.ranOut() && errors.Is(err, context.Canceled) {
				err = &timeoutError{d: g.cfg.Timeout} // our deadline, not the caller giving up
			}
			c.res, c.err = r, err
			return r, err
		})
	if c.clock != nil && c.clock.ranOut() && c.attempts > 0 {
		// failsafe-go reports the cancelled context; the last attempt is
		// the truth (it may even have succeeded at the last moment).
		r, err = c.res, c.err
		if err != nil && !errors.Is(err, ErrTimeout) {
			err = fmt.Errorf("%w: %w", &timeoutError{d: g.cfg.Timeout}, err)
		}
	}
	if err != nil {
		if f := (*final)(nil); errors.As(err, &f) {
			err = f.err
		}
	}
	c.res, c.err = r, err
	return c
}

// executor is the policy stack of a call: retry around the guard's
// policies. c is the call's retry state when the call has a timeout its
// retries must fit in (a wait that would end past it is not made); nil
// for calls without one, whose stack keeps no state and is shared.
func (g *Guard[R]) executor(repeatable bool, c *guardedCall[R]) failsafe.Executor[R] {
	rp := retrypolicy.NewBuilder[R]().
		HandleIf(func(_ R, err error) bool { return countsAsFailure(err) && (repeatable || SafeToRetry(err)) }).
		AbortIf(func(_ R, err error) bool {
			if retryAfter(err) > g.cfg.BackoffMax || errors.As(err, new(*final)) {
				return true
			}
			if c == nil || c.attempts >= g.cfg.MaxAttempts { // no retry follows anyway
				return false
			}
			c.next = g.delay(err, c.attempts)
			if c.next >= c.clock.left() {
				c.outOfTime = true
				return true
			}
			return false
		}).
		WithMaxAttempts(max(g.cfg.MaxAttempts, 1)).
		WithDelayFunc(func(exec failsafe.ExecutionAttempt[R]) time.Duration {
			if c == nil {
				return g.delay(exec.LastError(), exec.Attempts())
			}
			return c.next
		}).
		ReturnLastFailure().
		Build()
	return failsafe.With(append([]failsafe.Policy[R]{rp}, g.policies...)...)
}

// describe is the outcome of a tool call as [Guard.Do] reports it.
func (g *Guard[R]) describe(c *guardedCall[R]) (R, error) {
	r, err := c.res, c.err
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
