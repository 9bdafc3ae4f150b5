package llm

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"

	"github.com/failsafe-go/failsafe-go/circuitbreaker"
	"github.com/tmc/langchaingo/llms"
)

// Resilience holds the policies of a provider's models: retry and
// timeout per call, and one circuit breaker shared by every model it
// wraps (a Registry gives each model of an endpoint its own). It is a [Guard] whose calls are model calls. Safe for concurrent
// use.
type Resilience struct {
	guard *Guard[*llms.ContentResponse]
}

// NewResilience builds the policies of cfg (zero fields take
// [ModelDefaults]) for the provider called name, which appears in errors.
func NewResilience(cfg ResilienceConfig, name string) *Resilience {
	return &Resilience{guard: NewGuard[*llms.ContentResponse](name, cfg, nil)}
}

// BreakerOpen reports whether the provider's circuit breaker is open (calls
// fail fast with ErrCircuitOpen).
func (r *Resilience) BreakerOpen() bool { return r.guard.State() == BreakerOpen }

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
// configured by cfg (zero fields take [ModelDefaults]), naming the
// provider name in errors.
// The breaker belongs to this wrapper; to share one breaker among several
// models of a provider, use NewResilience and Wrap.
//
// Each attempt runs with the attempt's context (cancelled on timeout).
// Errors are classified (see [KindOf]): transient ones (5xx, timeouts,
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

// GenerateContent runs the call under the policies.
func (m *resilientModel) GenerateContent(ctx context.Context, msgs []llms.MessageContent, options ...llms.CallOption) (*llms.ContentResponse, error) {
	var delivered atomic.Bool
	opts := append(options[:len(options):len(options)], trackDelivery(&delivered))
	c := m.res.guard.run(ctx, true, func(actx context.Context) (*llms.ContentResponse, error) {
		actx, rec := withHTTPRecord(actx)
		resp, err := m.inner.GenerateContent(actx, msgs, opts...)
		if err == nil {
			return resp, nil
		}
		e := providerError(err, rec)
		if ctx.Err() != nil { // the caller gave up: never retry that
			e = &Error{Kind: KindPermanent, Err: fmt.Errorf("%w (%w)", ctx.Err(), err)}
		}
		if delivered.Load() { // output reached the caller: a retry would repeat it
			return nil, &final{err: e}
		}
		return nil, e
	})
	if c.err != nil {
		return nil, m.res.finalError(ctx, c.err, c.attempts)
	}
	return c.res, nil
}

// finalError turns what the guard returned into the documented *Error.
func (r *Resilience) finalError(ctx context.Context, err error, attempts int) error {
	var out Error
	switch {
	case errors.Is(err, circuitbreaker.ErrOpen):
		out = Error{Kind: KindTransient, Err: fmt.Errorf("%w: %w", ErrCircuitOpen, err)}
	case ctx.Err() != nil && !errors.As(err, new(*Error)):
		out = Error{Kind: KindPermanent, Err: err}
	default:
		out = *providerError(err, nil)
	}
	out.Provider = r.guard.name
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
