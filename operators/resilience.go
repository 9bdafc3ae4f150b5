package operators

import (
	"context"
	"errors"
	"math/rand/v2"
	"time"

	"github.com/failsafe-go/failsafe-go"
	"github.com/failsafe-go/failsafe-go/bulkhead"
	"github.com/failsafe-go/failsafe-go/circuitbreaker"
	"github.com/failsafe-go/failsafe-go/fallback"
	"github.com/failsafe-go/failsafe-go/retrypolicy"
	"github.com/failsafe-go/failsafe-go/timeout"
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
	// Timeout bounds each attempt; the attempt's context is cancelled when
	// it expires. Default 60 s (LLM: 120 s); negative disables.
	Timeout time.Duration
	// MaxConcurrent bounds concurrent attempts (the bulkhead). Default 10.
	MaxConcurrent int
	// MaxWait is how long a call waits for a bulkhead slot; 0 (the
	// default) rejects at once.
	MaxWait time.Duration
}

// RemoteToolDefaults are the defaults for remote tool sources: 3 attempts,
// 1 s base and 30 s max backoff, breaker opens after 5 failures and
// half-opens after 30 s, 60 s per attempt, 10 concurrent calls.
func RemoteToolDefaults() ResilienceConfig {
	return ResilienceConfig{
		MaxAttempts: 3, BackoffBase: time.Second, BackoffMax: 30 * time.Second, JitterFactor: 0.2,
		FailureThreshold: 5, BreakerDelay: 30 * time.Second, SuccessThreshold: 1,
		Timeout: 60 * time.Second, MaxConcurrent: 10,
	}
}

// LLMDefaults are the defaults for model calls: 3 attempts, 2 s base and
// 60 s max backoff, breaker opens after 3 failures and half-opens after
// 60 s, 120 s per attempt, 10 concurrent calls.
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
// Retry(CircuitBreaker(Bulkhead(Timeout(call)))): the breaker and bulkhead
// are shared by every call through the guard; retry and timeout apply per
// call. Safe for concurrent use.
//
// Retry handles only [ClassTransient] and [ClassRateLimited] errors, waits
// base·2ⁿ ± jitter (capped at BackoffMax) or the error's Retry-After, and
// gives up at once on a Retry-After longer than BackoffMax. The breaker
// counts the same errors; permanent errors, caller cancellation and
// bulkhead rejections do not trip it. An open breaker fails fast with an
// error matching both circuitbreaker.ErrOpen and [ErrUnavailable].
type Guard[R any] struct {
	name     string
	cfg      ResilienceConfig
	breaker  circuitbreaker.CircuitBreaker[R]
	policies []failsafe.Policy[R]
	exec     failsafe.Executor[R]
}

// NewGuard builds a guard named name (the source name reported to
// listener, which may be nil). Zero fields of cfg take
// [RemoteToolDefaults].
func NewGuard[R any](name string, cfg ResilienceConfig, listener BreakerListener) *Guard[R] {
	return newGuard[R](name, cfg.withDefaults(RemoteToolDefaults()), listener)
}

func newGuard[R any](name string, cfg ResilienceConfig, listener BreakerListener) *Guard[R] {
	g := &Guard[R]{name: name, cfg: cfg}
	countsAsFailure := func(_ R, err error) bool {
		if err == nil || isRejection(err) {
			return false
		}
		c := Classify(err)
		return c == ClassTransient || c == ClassRateLimited
	}
	rp := retrypolicy.NewBuilder[R]().
		HandleIf(countsAsFailure).
		AbortIf(func(_ R, err error) bool { return retryAfter(err) > cfg.BackoffMax }).
		WithMaxAttempts(max(cfg.MaxAttempts, 1)).
		WithDelayFunc(g.delay).
		Build()
	cb := circuitbreaker.NewBuilder[R]().
		HandleIf(countsAsFailure).
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
	g.policies = []failsafe.Policy[R]{rp, cb, bh}
	if cfg.Timeout > 0 {
		g.policies = append(g.policies, timeout.New[R](cfg.Timeout))
	}
	g.exec = failsafe.With(g.policies...)
	return g
}

// delay is the retry delay: Retry-After when the error carries one, else
// exponential backoff with jitter.
func (g *Guard[R]) delay(exec failsafe.ExecutionAttempt[R]) time.Duration {
	if ra := retryAfter(exec.LastError()); ra > 0 {
		return ra
	}
	n := max(exec.Attempts()-1, 0) // retries so far, before this one
	d := g.cfg.BackoffBase
	for i := 0; i < n && d < g.cfg.BackoffMax; i++ {
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

// Do runs fn under the guard. fn must use the context it is given: that
// context ends when the attempt times out or ctx ends. An error from Do is
// fn's last error (wrapped in a retrypolicy.ExceededError when every
// attempt failed), ctx's error, or a rejection matching [ErrUnavailable].
func (g *Guard[R]) Do(ctx context.Context, fn func(ctx context.Context) (R, error)) (R, error) {
	r, err := g.exec.WithContext(ctx).GetWithExecution(func(exec failsafe.Execution[R]) (R, error) {
		return fn(exec.Context())
	})
	return r, g.explain(err)
}

// explain turns a failsafe rejection into an *unavailableError.
func (g *Guard[R]) explain(err error) error {
	if err != nil && isRejection(err) {
		return &unavailableError{source: g.name, err: err, retryIn: g.RemainingDelay()}
	}
	return err
}

// withFallback makes fn the outermost policy: every failure of the guarded
// call becomes fn's result, so Do returns no error.
func (g *Guard[R]) withFallback(fn func(err error) R) {
	fb := fallback.NewWithFunc(func(exec failsafe.Execution[R]) (R, error) {
		return fn(g.explain(exec.LastError())), nil
	})
	g.exec = failsafe.With(append([]failsafe.Policy[R]{fb}, g.policies...)...)
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
