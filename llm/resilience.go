package llm

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync/atomic"
	"time"

	"github.com/failsafe-go/failsafe-go"
	"github.com/failsafe-go/failsafe-go/circuitbreaker"
	"github.com/failsafe-go/failsafe-go/retrypolicy"
	"github.com/failsafe-go/failsafe-go/timeout"
	"github.com/tmc/langchaingo/llms"
)

// ResilienceConfig configures the policies around model calls. The zero
// value gives every default.
type ResilienceConfig struct {
	// MaxAttempts is the number of tries of one call, first included;
	// 0 means 3, 1 means no retry.
	MaxAttempts int
	// BaseBackoff is the delay before the first retry, doubling on each
	// retry; 0 means 2 s.
	BaseBackoff time.Duration
	// MaxBackoff caps the backoff; 0 means 60 s. A 429 whose Retry-After is
	// longer than MaxBackoff is not retried: the caller gets the
	// KindRateLimited error with its RetryAfter.
	MaxBackoff time.Duration
	// Jitter varies each backoff by ± this fraction; 0 means 0.2, negative
	// means none. A Retry-After is honoured exactly, never shortened.
	Jitter float64
	// BreakerFailures is the number of consecutive transient or rate-limited
	// failures that open the provider's circuit breaker; 0 means 3.
	BreakerFailures int
	// BreakerDelay is how long the breaker stays open before letting one
	// trial call through; 0 means 60 s.
	BreakerDelay time.Duration
	// Timeout bounds each attempt, streaming included; 0 means 120 s.
	Timeout time.Duration
	// Disabled makes Registry hand out models without resilience.
	Disabled bool
}

func (c ResilienceConfig) withDefaults() ResilienceConfig {
	if c.MaxAttempts <= 0 {
		c.MaxAttempts = 3
	}
	if c.BaseBackoff <= 0 {
		c.BaseBackoff = 2 * time.Second
	}
	if c.MaxBackoff <= 0 {
		c.MaxBackoff = 60 * time.Second
	}
	if c.Jitter == 0 {
		c.Jitter = 0.2
	}
	if c.BreakerFailures <= 0 {
		c.BreakerFailures = 3
	}
	if c.BreakerDelay <= 0 {
		c.BreakerDelay = 60 * time.Second
	}
	if c.Timeout <= 0 {
		c.Timeout = 120 * time.Second
	}
	return c
}

// Resilience holds the policies for one provider: retry and timeout per
// call, and one circuit breaker shared by every model it wraps. It is safe
// for concurrent use.
type Resilience struct {
	name     string
	cfg      ResilienceConfig
	breaker  circuitbreaker.CircuitBreaker[*llms.ContentResponse]
	executor failsafe.Executor[*llms.ContentResponse]
}

// NewResilience builds the policies of cfg (zero fields take their
// defaults) for the provider called name, which appears in errors.
func NewResilience(cfg ResilienceConfig, name string) *Resilience {
	cfg = cfg.withDefaults()
	r := &Resilience{name: name, cfg: cfg}
	retryable := func(_ *llms.ContentResponse, err error) bool {
		return err != nil && classify(err, nil).Retryable()
	}
	retry := retrypolicy.NewBuilder[*llms.ContentResponse]().
		WithMaxAttempts(cfg.MaxAttempts).
		HandleIf(retryable).
		AbortIf(func(_ *llms.ContentResponse, err error) bool {
			if err == nil {
				return false
			}
			var s *streamedError
			if errors.As(err, &s) || errors.Is(err, circuitbreaker.ErrOpen) {
				return true
			}
			e := classify(err, nil)
			return e.Kind == KindRateLimited && e.RetryAfter > cfg.MaxBackoff
		}).
		WithDelayFunc(r.delay).
		ReturnLastFailure().
		Build()
	r.breaker = circuitbreaker.NewBuilder[*llms.ContentResponse]().
		HandleIf(retryable).
		WithFailureThreshold(uint(cfg.BreakerFailures)).
		WithDelay(cfg.BreakerDelay).
		Build()
	r.executor = failsafe.With[*llms.ContentResponse](retry, r.breaker, timeout.New[*llms.ContentResponse](cfg.Timeout))
	return r
}

// delay is the wait before a retry: the provider's Retry-After when it sent
// one, else exponential backoff with jitter.
func (r *Resilience) delay(exec failsafe.ExecutionAttempt[*llms.ContentResponse]) time.Duration {
	if e := classify(exec.LastError(), nil); e.RetryAfter > 0 {
		return e.RetryAfter
	}
	d := r.cfg.BaseBackoff
	for i := 1; i < exec.Attempts() && d < r.cfg.MaxBackoff; i++ {
		d *= 2
	}
	if r.cfg.Jitter > 0 {
		d = time.Duration(float64(d) * (1 + r.cfg.Jitter*(2*rand.Float64()-1)))
	}
	return min(d, r.cfg.MaxBackoff)
}

// BreakerOpen reports whether the provider's circuit breaker is open (calls
// fail fast with ErrCircuitOpen).
func (r *Resilience) BreakerOpen() bool { return r.breaker.IsOpen() }

// Wrap returns m with r's policies around every call. The result implements
// llms.ReasoningModel when m does.
func (r *Resilience) Wrap(m llms.Model) llms.Model {
	rm := &resilientModel{inner: m, res: r}
	if _, ok := m.(llms.ReasoningModel); ok {
		return &resilientReasoningModel{rm}
	}
	return rm
}

// WithResilience wraps m in retry, a circuit breaker and a timeout
// configured by cfg (zero = defaults), naming the provider name in errors.
// The breaker belongs to this wrapper; to share one breaker among several
// models of a provider, use NewResilience and Wrap.
//
// Each attempt runs with the attempt's context (cancelled on timeout).
// Errors are classified (see Kind): transient ones (5xx, timeouts,
// connection errors) and 429s are retried with backoff, a 429 after its
// Retry-After; permanent ones (other 4xx, invalid requests, a cancelled
// caller context) are returned at once. A streaming call is never retried
// once a non-empty chunk has reached its streaming func. The returned error
// is an *Error.
func WithResilience(m llms.Model, cfg ResilienceConfig, name string) llms.Model {
	return NewResilience(cfg, name).Wrap(m)
}

type resilientModel struct {
	inner llms.Model
	res   *Resilience
}

type resilientReasoningModel struct{ *resilientModel }

var (
	_ llms.Model          = (*resilientModel)(nil)
	_ llms.ReasoningModel = (*resilientReasoningModel)(nil)
)

// SupportsReasoning forwards to the wrapped model.
func (m *resilientReasoningModel) SupportsReasoning() bool {
	return m.inner.(llms.ReasoningModel).SupportsReasoning()
}

// Unwrap returns the wrapped model.
func (m *resilientModel) Unwrap() llms.Model { return m.inner }

// Call generates from a single human prompt.
func (m *resilientModel) Call(ctx context.Context, prompt string, options ...llms.CallOption) (string, error) {
	return llms.GenerateFromSinglePrompt(ctx, m, prompt, options...)
}

// streamedError marks a failure that happened after output reached the
// caller's streaming func: it must not be retried.
type streamedError struct{ err error }

func (e *streamedError) Error() string { return e.err.Error() }
func (e *streamedError) Unwrap() error { return e.err }

// GenerateContent runs the call under the policies.
func (m *resilientModel) GenerateContent(ctx context.Context, msgs []llms.MessageContent, options ...llms.CallOption) (*llms.ContentResponse, error) {
	var delivered atomic.Bool
	opts := append(options[:len(options):len(options)], trackDelivery(&delivered))
	var attempts int
	resp, err := m.res.executor.WithContext(ctx).GetWithExecution(func(exec failsafe.Execution[*llms.ContentResponse]) (*llms.ContentResponse, error) {
		attempts = exec.Attempts()
		actx, rec := withHTTPRecord(exec.Context())
		resp, err := m.inner.GenerateContent(actx, msgs, opts...)
		if err == nil {
			return resp, nil
		}
		e := classify(err, rec)
		if ctx.Err() != nil { // the caller gave up: never retry that
			e = &Error{Kind: KindPermanent, Err: fmt.Errorf("%w (%w)", ctx.Err(), err)}
		}
		if delivered.Load() {
			return nil, &streamedError{err: e}
		}
		return nil, e
	})
	if err != nil {
		return nil, m.res.finalError(ctx, err, attempts)
	}
	return resp, nil
}

// finalError turns what the executor returned into the documented *Error.
func (r *Resilience) finalError(ctx context.Context, err error, attempts int) error {
	var s *streamedError
	if errors.As(err, &s) {
		err = s.err
	}
	var out Error
	switch {
	case errors.Is(err, circuitbreaker.ErrOpen):
		out = Error{Kind: KindTransient, Err: fmt.Errorf("%w: %w", ErrCircuitOpen, err)}
	case ctx.Err() != nil && !errors.As(err, new(*Error)):
		out = Error{Kind: KindPermanent, Err: err}
	default:
		out = *classify(err, nil)
	}
	out.Provider = r.name
	if attempts > 1 {
		out.Err = fmt.Errorf("after %d attempts: %w", attempts, out.Err)
	}
	return &out
}

// trackDelivery wraps the streaming funcs set by earlier options so that
// the first non-empty chunk sets *delivered.
func trackDelivery(delivered *atomic.Bool) llms.CallOption {
	return func(o *llms.CallOptions) {
		if fn := o.StreamingFunc; fn != nil {
			o.StreamingFunc = func(ctx context.Context, chunk []byte) error {
				if len(chunk) > 0 {
					delivered.Store(true)
				}
				return fn(ctx, chunk)
			}
		}
		if fn := o.StreamingReasoningFunc; fn != nil {
			o.StreamingReasoningFunc = func(ctx context.Context, reasoning, chunk []byte) error {
				if len(chunk) > 0 || len(reasoning) > 0 {
					delivered.Store(true)
				}
				return fn(ctx, reasoning, chunk)
			}
		}
	}
}
