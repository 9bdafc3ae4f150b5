package llm

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tmc/langchaingo/llms"
	"github.com/tmc/langchaingo/llms/anthropic"
	"github.com/tmc/langchaingo/llms/ollama"
	"github.com/tmc/langchaingo/llms/openai"
)

// ProviderOptions are what NewProvider needs besides the model's config.
type ProviderOptions struct {
	// HTTPClient is the base HTTP client; nil means a new client on a clone of
	// http.DefaultTransport with no timeout (calls are bounded by their
	// context). Its transport is wrapped to record HTTP status and
	// Retry-After for error classification.
	HTTPClient *http.Client
	// Getenv reads the API key; nil means os.Getenv.
	Getenv func(string) string
}

// placeholderKey is sent to OpenAI-compatible servers that need no key:
// langchaingo's openai client refuses an empty token.
const placeholderKey = "not-needed"

// NewProvider builds the langchaingo client for an OpenAI, Anthropic or
// Ollama model config. It does no I/O. The returned model:
//   - sends the configured model name, temperature (DefaultTemperature when
//     unset) and max tokens on every call, unless the call overrides them;
//   - sets Type "function" on every returned tool call;
//   - for Anthropic, splits multi-part AI and tool messages so that no part
//     is lost (langchaingo v0.1.14 sends only Parts[0], tmc/langchaingo#1468);
//   - implements llms.ReasoningModel, reporting cfg.Thinking;
//   - for Anthropic with thinking on, sends a call continuing a tool loop
//     (the last message a tool result) without thinking: langchaingo
//     v0.1.14 drops the thinking block's signature and never sends the
//     block back, and Anthropic refuses a tool loop whose last assistant
//     turn lacks it unless thinking is off;
//   - for OpenAI-compatible servers, fails a stream that ends with no
//     finish_reason (an error sent in the stream, which langchaingo
//     ignores) as transient instead of returning the cut answer.
//
// It is not wrapped in resilience; Registry.Model does that.
func NewProvider(cfg ModelConfig, opts ProviderOptions) (llms.Model, error) {
	getenv := opts.Getenv
	if getenv == nil {
		getenv = os.Getenv
	}
	client := recordingClient(opts.HTTPClient)
	var (
		inner llms.Model
		err   error
	)
	switch cfg.Provider {
	case ProviderOpenAI:
		key := getenv(envOr(cfg.APIKeyEnv, "OPENAI_API_KEY"))
		if key == "" {
			if cfg.BaseURL == "" {
				return nil, fmt.Errorf("llm: openai model %q: %w (set %s)", cfg.ID, ErrMissingAPIKey, envOr(cfg.APIKeyEnv, "OPENAI_API_KEY"))
			}
			key = placeholderKey
		}
		o := []openai.Option{openai.WithToken(key), openai.WithModel(cfg.providerModel()), openai.WithHTTPClient(client)}
		if cfg.BaseURL != "" {
			o = append(o, openai.WithBaseURL(cfg.BaseURL))
		}
		inner, err = openai.New(o...)
	case ProviderAnthropic:
		env := envOr(cfg.APIKeyEnv, "ANTHROPIC_API_KEY")
		key := getenv(env)
		if key == "" {
			return nil, fmt.Errorf("llm: anthropic model %q: %w (set %s)", cfg.ID, ErrMissingAPIKey, env)
		}
		o := []anthropic.Option{anthropic.WithToken(key), anthropic.WithModel(cfg.providerModel()), anthropic.WithHTTPClient(client)}
		if cfg.BaseURL != "" {
			o = append(o, anthropic.WithBaseURL(cfg.BaseURL))
		}
		inner, err = anthropic.New(o...)
	case ProviderOllama:
		o := []ollama.Option{ollama.WithModel(cfg.providerModel()), ollama.WithHTTPClient(client)}
		if cfg.BaseURL != "" {
			o = append(o, ollama.WithServerURL(cfg.BaseURL))
		}
		inner, err = ollama.New(o...)
	default:
		return nil, fmt.Errorf("llm: model %q: %w %q", cfg.ID, ErrUnknownProvider, cfg.Provider)
	}
	if err != nil {
		return nil, fmt.Errorf("llm: %s model %q: %w", cfg.Provider, cfg.ID, err)
	}
	defaults := []llms.CallOption{llms.WithModel(cfg.providerModel()), llms.WithTemperature(cfg.temperature())}
	if cfg.MaxTokens > 0 {
		defaults = append(defaults, llms.WithMaxTokens(cfg.MaxTokens))
	}
	if cfg.Provider == ProviderOpenAI && cfg.LegacyMaxTokens {
		defaults = append(defaults, openai.WithLegacyMaxTokensField())
	}
	return &providerModel{inner: inner, cfg: cfg, defaults: defaults}, nil
}

func envOr(v, def string) string {
	if v != "" {
		return v
	}
	return def
}

// providerModel adds a config's defaults and fixes to a langchaingo client.
type providerModel struct {
	inner    llms.Model
	cfg      ModelConfig
	defaults []llms.CallOption
}

var (
	_ llms.Model          = (*providerModel)(nil)
	_ llms.ReasoningModel = (*providerModel)(nil)
)

// GenerateContent calls the provider with the config's defaults first, so
// the caller's options win, and works around what langchaingo v0.1.14
// gets wrong on the wire (see the wire tests):
//   - Anthropic: it never sends a thinking block back, and with thinking
//     on Anthropic refuses a tool loop's continuation whose last assistant
//     turn does not start with its signed thinking block; so a call
//     continuing a tool loop goes without thinking, which Anthropic
//     allows. It also parses a stream only when a text streaming func is
//     set, so a call streaming only reasoning gets a no-op one.
//   - OpenAI-compatible: it ignores an error object sent in the stream
//     and returns what came before it as the answer; a stream that ends
//     with no finish_reason is an error here (transient: the answer was
//     cut off).
func (p *providerModel) GenerateContent(ctx context.Context, msgs []llms.MessageContent, options ...llms.CallOption) (*llms.ContentResponse, error) {
	all := append(slices.Clip(p.defaults), options...)
	var o llms.CallOptions
	for _, opt := range all {
		opt(&o)
	}
	streaming := o.StreamingFunc != nil || o.StreamingReasoningFunc != nil
	if p.cfg.Provider == ProviderAnthropic {
		if _, thinking := o.Metadata[thinkingConfigKey]; thinking && inToolLoop(msgs) {
			all = append(all, withoutThinking)
		}
		if o.StreamingFunc == nil && o.StreamingReasoningFunc != nil {
			all = append(all, llms.WithStreamingFunc(func(context.Context, []byte) error { return nil }))
		}
		msgs = splitForAnthropic(msgs)
	}
	resp, err := p.inner.GenerateContent(ctx, msgs, all...)
	if err == nil && streaming && p.cfg.Provider == ProviderOpenAI && !finished(resp) {
		err = Transient(errStreamCut)
	}
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", p.cfg.Provider, p.cfg.providerModel(), err)
	}
	normalizeToolCalls(resp)
	return resp, nil
}

// thinkingConfigKey is where llms.WithThinking puts its config in the
// call's metadata.
const thinkingConfigKey = "thinking_config"

// errStreamCut: a streamed answer ended without saying it was finished.
var errStreamCut = errors.New("stream ended before the model finished its answer (no finish_reason)")

// withoutThinking drops the thinking config of a call, on a copy of its
// metadata (the caller's map is not touched).
func withoutThinking(o *llms.CallOptions) {
	m := maps.Clone(o.Metadata)
	delete(m, thinkingConfigKey)
	o.Metadata = m
}

// inToolLoop reports whether msgs continue a tool loop: the last
// assistant message makes tool calls (answered by the tool results after
// it, whatever follows them), which is what Anthropic checks.
func inToolLoop(msgs []llms.MessageContent) bool {
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Role == llms.ChatMessageTypeAI {
			return slices.ContainsFunc(msgs[i].Parts, func(p llms.ContentPart) bool {
				_, call := p.(llms.ToolCall)
				return call
			})
		}
	}
	return false
}

// finished reports whether some choice of resp carries a finish reason.
func finished(resp *llms.ContentResponse) bool {
	return resp != nil && slices.ContainsFunc(resp.Choices, func(c *llms.ContentChoice) bool { return c != nil && c.StopReason != "" })
}

// Call generates from a single human prompt.
func (p *providerModel) Call(ctx context.Context, prompt string, options ...llms.CallOption) (string, error) {
	return llms.GenerateFromSinglePrompt(ctx, p, prompt, options...)
}

// SupportsReasoning reports ModelConfig.Thinking.
func (p *providerModel) SupportsReasoning() bool { return p.cfg.Thinking }

// splitForAnthropic works around langchaingo v0.1.14's Anthropic adapter,
// which sends only the first part of an AI or tool message: every AI message
// with several parts becomes one message per part, each tool call directly
// followed by its result, and every multi-part tool message one message per
// result. Anthropic merges consecutive same-role turns.
func splitForAnthropic(msgs []llms.MessageContent) []llms.MessageContent {
	needs := slices.ContainsFunc(msgs, func(m llms.MessageContent) bool {
		return (m.Role == llms.ChatMessageTypeAI || m.Role == llms.ChatMessageTypeTool) && len(m.Parts) > 1
	})
	if !needs {
		return msgs
	}
	type partRef struct{ msg, part int }
	emitted := map[partRef]bool{}
	out := make([]llms.MessageContent, 0, len(msgs)+4)
	for i, m := range msgs {
		switch m.Role {
		case llms.ChatMessageTypeAI:
			if len(m.Parts) <= 1 {
				out = append(out, m)
				continue
			}
			for _, part := range m.Parts {
				out = append(out, llms.MessageContent{Role: llms.ChatMessageTypeAI, Parts: []llms.ContentPart{part}})
				tc, ok := part.(llms.ToolCall)
				if !ok {
					continue
				}
			results:
				for j := i + 1; j < len(msgs) && msgs[j].Role == llms.ChatMessageTypeTool; j++ {
					for k, rp := range msgs[j].Parts {
						if r, ok := rp.(llms.ToolCallResponse); ok && r.ToolCallID == tc.ID && !emitted[partRef{j, k}] {
							emitted[partRef{j, k}] = true
							out = append(out, llms.MessageContent{Role: llms.ChatMessageTypeTool, Parts: []llms.ContentPart{rp}})
							break results
						}
					}
				}
			}
		case llms.ChatMessageTypeTool:
			for k, part := range m.Parts {
				if !emitted[partRef{i, k}] {
					out = append(out, llms.MessageContent{Role: llms.ChatMessageTypeTool, Parts: []llms.ContentPart{part}})
				}
			}
		default:
			out = append(out, m)
		}
	}
	return out
}

// newHTTPClient is the client used when none is configured: its own
// transport (so CloseIdleConnections affects only it) and no timeout.
func newHTTPClient() *http.Client {
	return &http.Client{Transport: http.DefaultTransport.(*http.Transport).Clone()}
}

// recordingClient returns a copy of base whose transport records, in the
// request's context, the status and Retry-After of failed responses.
func recordingClient(base *http.Client) *http.Client {
	if base == nil {
		base = newHTTPClient()
	}
	c := *base
	rt := base.Transport
	if rt == nil {
		rt = http.DefaultTransport
	}
	c.Transport = recordingTransport{base: rt}
	return &c
}

type recordingTransport struct{ base http.RoundTripper }

func (t recordingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.base.RoundTrip(req)
	if err != nil {
		return resp, err
	}
	if resp.StatusCode >= 400 {
		if rec := recordFrom(req.Context()); rec != nil {
			rec.set(resp.StatusCode, retryAfterFrom(resp.Header))
		}
	}
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		resp.Body = &streamBody{ReadCloser: resp.Body}
	}
	return resp, err
}

// streamBody ends reads cleanly (io.EOF) once closed. langchaingo
// v0.1.14's Anthropic client stops reading a stream at an error event and
// closes the body while its reading goroutine goes on; that goroutine,
// seeing a read error, blocks forever sending it to a channel nobody
// reads, but at EOF it ends.
type streamBody struct {
	io.ReadCloser
	closed atomic.Bool
}

func (b *streamBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if err != nil && b.closed.Load() {
		err = io.EOF
	}
	return n, err
}

func (b *streamBody) Close() error {
	b.closed.Store(true)
	return b.ReadCloser.Close()
}

// CloseIdleConnections forwards to the wrapped transport.
func (t recordingTransport) CloseIdleConnections() {
	if c, ok := t.base.(interface{ CloseIdleConnections() }); ok {
		c.CloseIdleConnections()
	}
}

func retryAfterFrom(h http.Header) time.Duration {
	if ms := h.Get("Retry-After-Ms"); ms != "" { // OpenAI sends it next to Retry-After
		if v := parseRetryAfter(ms, time.Now()); v > 0 {
			return v / 1000
		}
	}
	return parseRetryAfter(h.Get("Retry-After"), time.Now())
}

// httpRecord is what the recording transport saw during one call attempt.
type httpRecord struct {
	mu         sync.Mutex
	status     int
	retryAfter time.Duration
}

func (r *httpRecord) set(status int, retryAfter time.Duration) {
	r.mu.Lock()
	r.status, r.retryAfter = status, retryAfter
	r.mu.Unlock()
}

func (r *httpRecord) get() (int, time.Duration) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.status, r.retryAfter
}

type recordKey struct{}

func (recordKey) String() string { return "llm http record" }

func withHTTPRecord(ctx context.Context) (context.Context, *httpRecord) {
	rec := &httpRecord{}
	return context.WithValue(ctx, recordKey{}, rec), rec
}

func recordFrom(ctx context.Context) *httpRecord {
	rec, _ := ctx.Value(recordKey{}).(*httpRecord)
	return rec
}
