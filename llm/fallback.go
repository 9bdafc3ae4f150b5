package llm

import (
	"context"
	"errors"
	"slices"
	"sync/atomic"

	"github.com/failsafe-go/failsafe-go/timeout"
	"github.com/tmc/langchaingo/llms"

	"github.com/trellis-ai/trellis/events"
)

// FallbackListener hears a model call move to the next of its model's
// fallbacks. ctx is the model call's; the listener runs on the caller's
// goroutine, before the fallback is called.
type FallbackListener func(ctx context.Context, f *events.ModelFallback)

type fallbackKey struct{}

func (fallbackKey) String() string { return "llm fallback listener" }

// WithFallbackListener returns ctx carrying fn, which hears every
// fallback of the model calls made with ctx or a context derived from it
// (a run sets it once; its nodes' calls inherit it).
func WithFallbackListener(ctx context.Context, fn FallbackListener) context.Context {
	return context.WithValue(ctx, fallbackKey{}, fn)
}

// fallbackReason says why err moves a call to the next fallback, or ""
// when it must not: only a failure a different model may not share — a
// provider unavailable (5xx, overloaded, connection lost, breaker open),
// rate-limited or timed out — falls back. A permanent error (a request
// the provider refuses, a context too long) or the caller giving up does
// not. It reads the one classification, [KindOf].
func fallbackReason(err error) string {
	switch KindOf(err) {
	case KindRateLimited:
		return events.FallbackRateLimited
	case KindTransient:
		if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, timeout.ErrExceeded) {
			return events.FallbackTimeout
		}
		return events.FallbackUnavailable
	}
	return ""
}

// fallbackLink is one model of a chain: its config and the model as the
// registry hands it out alone (resilient, traced).
type fallbackLink struct {
	cfg ModelConfig
	m   llms.Model
}

// fallbackModel calls the first model of its chain and, when that call
// fails in a way fallbackReason accepts, the next, and so on. Each link
// is a whole resilient model, so a fallback comes only after the link's
// own retries are spent, or at once when its breaker is open.
//
// Streamed output is never repeated: once a link has sent a non-empty
// chunk (text or reasoning) to the caller's streaming funcs, its failure
// is the call's, with no fallback, exactly as its own retries stop then.
// The caller keeps what it was sent and gets the error.
type fallbackModel struct {
	chain []fallbackLink
}

type fallbackReasoningModel struct{ *fallbackModel }

var (
	_ llms.Model          = (*fallbackModel)(nil)
	_ llms.ReasoningModel = (*fallbackReasoningModel)(nil)
)

func newFallbackModel(chain []fallbackLink) llms.Model {
	fm := &fallbackModel{chain: chain}
	if _, ok := chain[0].m.(llms.ReasoningModel); ok {
		return &fallbackReasoningModel{fm}
	}
	return fm
}

// SupportsReasoning reports the first model's.
func (m *fallbackReasoningModel) SupportsReasoning() bool {
	return m.chain[0].m.(llms.ReasoningModel).SupportsReasoning()
}

// Unwrap returns the first model of the chain.
func (m *fallbackModel) Unwrap() llms.Model { return m.chain[0].m }

// Call generates from a single human prompt.
func (m *fallbackModel) Call(ctx context.Context, prompt string, options ...llms.CallOption) (string, error) {
	return llms.GenerateFromSinglePrompt(ctx, m, prompt, options...)
}

// GenerateContent calls the chain's models in turn until one answers.
// The response is that model's, with its usage; the error is the last
// model's tried. A fallback gets the caller's options, but thinking is
// redone for it: options asking for thinking (see [ThinkingOptions]) were
// made for the first model, and a fallback gets its own for the same
// budget, or none when it cannot think.
func (m *fallbackModel) GenerateContent(ctx context.Context, msgs []llms.MessageContent, options ...llms.CallOption) (*llms.ContentResponse, error) {
	var delivered atomic.Bool
	opts := append(slices.Clip(options), trackDelivery(&delivered))
	listener, _ := ctx.Value(fallbackKey{}).(FallbackListener)
	for i := 0; ; i++ {
		link := m.chain[i]
		linkOpts := opts
		if i > 0 {
			linkOpts = thinkingFor(link.cfg, opts)
		}
		resp, err := link.m.GenerateContent(ctx, msgs, linkOpts...)
		if err == nil {
			return resp, nil
		}
		if i == len(m.chain)-1 || delivered.Load() || ctx.Err() != nil {
			return nil, err
		}
		reason := fallbackReason(err)
		if reason == "" {
			return nil, err
		}
		if listener != nil {
			listener(ctx, &events.ModelFallback{From: link.cfg.ID, To: m.chain[i+1].cfg.ID, Reason: reason})
		}
	}
}

// thinkingFor returns opts with thinking fitted to cfg's model, when opts
// ask for thinking at all.
func thinkingFor(cfg ModelConfig, opts []llms.CallOption) []llms.CallOption {
	var o llms.CallOptions
	for _, opt := range opts {
		opt(&o)
	}
	th, ok := o.Metadata[thinkingConfigKey].(*llms.ThinkingConfig)
	if !ok {
		return opts
	}
	return append(append(slices.Clip(opts), withoutThinking), ThinkingOptions(cfg, th.BudgetTokens)...)
}
