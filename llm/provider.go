package llm

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"slices"
	"sync"
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
//   - implements llms.ReasoningModel, reporting cfg.Thinking.
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
// the caller's options win.
func (p *providerModel) GenerateContent(ctx context.Context, msgs []llms.MessageContent, options ...llms.CallOption) (*llms.ContentResponse, error) {
	all := append(slices.Clip(p.defaults), options...)
	if p.cfg.Provider == ProviderAnthropic {
		msgs = splitForAnthropic(msgs)
	}
	resp, err := p.inner.GenerateContent(ctx, msgs, all...)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", p.cfg.Provider, p.cfg.providerModel(), err)
	}
	normalizeToolCalls(resp)
	return resp, nil
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
	if err == nil && resp.StatusCode >= 400 {
		if rec := recordFrom(req.Context()); rec != nil {
			rec.set(resp.StatusCode, retryAfterFrom(resp.Header))
		}
	}
	return resp, err
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
