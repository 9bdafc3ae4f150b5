package llm

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync"

	"github.com/tmc/langchaingo/llms"
	"go.opentelemetry.io/otel/trace"
)

// Provider names the API a model is reached through.
type Provider string

// Providers this package can build.
const (
	// ProviderOpenAI is OpenAI's chat-completions API, and any server that
	// speaks it (vLLM, llama.cpp server, Ollama's /v1, LM Studio) when
	// ModelConfig.BaseURL is set.
	ProviderOpenAI Provider = "openai"
	// ProviderAnthropic is Anthropic's messages API.
	ProviderAnthropic Provider = "anthropic"
	// ProviderOllama is Ollama's native API. langchaingo's native Ollama
	// client cannot call tools; for tools use ProviderOpenAI with
	// BaseURL "http://host:11434/v1" (ConfigFromEnv does).
	ProviderOllama Provider = "ollama"
	// ProviderOffline is the embedded offline model (NewOffline).
	ProviderOffline Provider = "offline"
	// ProviderScripted replays ModelConfig.ScriptPath (NewScripted).
	ProviderScripted Provider = "scripted"
)

// ModelConfig describes one model the registry can hand out.
type ModelConfig struct {
	// ID is the model's name in Trellis, unique in a registry; requests may
	// name it. Required.
	ID string `json:"id"`
	// Provider is the API to reach it through. Required.
	Provider Provider `json:"provider"`
	// Model is the provider's model name; "" means ID.
	Model string `json:"model,omitempty"`
	// BaseURL overrides the provider's endpoint. For OpenAI-compatible servers
	// it must include /v1 ("http://localhost:8000/v1").
	BaseURL string `json:"base_url,omitempty"`
	// APIKeyEnv names the env var holding the API key; "" means the
	// provider's usual one (OPENAI_API_KEY, ANTHROPIC_API_KEY). An
	// OpenAI-compatible BaseURL needs no key (a placeholder is sent).
	APIKeyEnv string `json:"api_key_env,omitempty"`
	// Aliases are other names the model answers to ("sonnet", "fast",
	// "thinking"), matched case-insensitively. When two models share an
	// alias, the first in Config.Models wins.
	Aliases []string `json:"aliases,omitempty"`
	// ToolCalling reports that the model can call tools (llms.WithTools).
	ToolCalling bool `json:"tool_calling"`
	// Thinking reports that the model supports extended thinking; see
	// ThinkingOptions.
	Thinking bool `json:"thinking"`
	// ContextWindow is the model's context size in tokens; 0 = unknown.
	ContextWindow int `json:"context_window,omitempty"`
	// ThinkingBudget is the default thinking budget in tokens; 0 = 10000.
	ThinkingBudget int `json:"thinking_budget,omitempty"`
	// MaxTokens caps each reply; 0 = the provider's default. Callers may
	// override it per call with llms.WithMaxTokens.
	MaxTokens int `json:"max_tokens,omitempty"`
	// Temperature is sent with every call unless the caller sets one; nil
	// means 0.7, or 1 for an OpenAI model with Thinking (reasoning models
	// accept no other). (langchaingo sends 0 when none is set, not the
	// provider's default, so a value is always sent.)
	Temperature *float64 `json:"temperature,omitempty"`
	// LegacyMaxTokens sends max_tokens instead of max_completion_tokens to
	// OpenAI-compatible servers that ignore the newer field (Ollama's /v1,
	// older llama.cpp servers).
	LegacyMaxTokens bool `json:"legacy_max_tokens,omitempty"`
	// Fallbacks name the models (by id or alias) a call moves to, in
	// order, when this model is unavailable (5xx, overloaded, connection
	// lost, breaker open), rate-limited or timed out after its own
	// retries. A fallback's own fallbacks follow it in turn. A call that
	// fails otherwise (a request the provider refuses, a context too
	// long), or whose streamed output already reached the caller, does
	// not fall back. NewRegistry refuses an unknown name, a model falling
	// back to itself and a cycle.
	Fallbacks []string `json:"fallbacks,omitempty"`
	// ScriptPath is the script file of a ProviderScripted model.
	ScriptPath string `json:"script_path,omitempty"`
	// Instance, when set, is used as the model instead of building one from
	// Provider (tests inject a scripted model here). It is still wrapped in
	// the registry's resilience.
	Instance llms.Model `json:"-"`
}

// DefaultThinkingBudget is the thinking budget when ModelConfig.ThinkingBudget is 0.
const DefaultThinkingBudget = 10000

// DefaultTemperature is sent when ModelConfig.Temperature is nil.
const DefaultTemperature = 0.7

// providerModel is the provider's model name.
func (c ModelConfig) providerModel() string {
	if c.Model != "" {
		return c.Model
	}
	return c.ID
}

func (c ModelConfig) thinkingBudget() int {
	if c.ThinkingBudget > 0 {
		return c.ThinkingBudget
	}
	return DefaultThinkingBudget
}

// temperature is the one sent when a call sets none: the configured one,
// else DefaultTemperature, but 1 for an OpenAI reasoning model (Thinking),
// which refuses any other (langchaingo v0.1.14 leaves the field out only
// for o1-, o3 and gpt-5 names, not o4-mini).
func (c ModelConfig) temperature() float64 {
	switch {
	case c.Temperature != nil:
		return *c.Temperature
	case c.Provider == ProviderOpenAI && c.Thinking:
		return 1
	}
	return DefaultTemperature
}

// Config builds a Registry. The zero value is a registry holding only the
// offline model.
type Config struct {
	// Models, in precedence order for shared aliases. The offline model is
	// added at the end when no model has ID "offline".
	Models []ModelConfig `json:"models"`
	// Default is the id or alias of the default model; "" means the first
	// model of Models (the offline model when Models is empty).
	Default string `json:"default,omitempty"`
	// Resilience configures retry, breaker and timeout around every model but
	// the offline one. The zero value means the documented defaults.
	Resilience ResilienceConfig `json:"-"`
	// HTTPClient is the base client for provider HTTP calls; nil means a
	// client with http.DefaultTransport and no timeout (calls are bounded by
	// their context and the resilience timeout).
	HTTPClient *http.Client `json:"-"`
	// Getenv reads API keys; nil means os.Getenv.
	Getenv func(string) string `json:"-"`
	// Tracer, when set, puts every model call in an OpenTelemetry span
	// (GenAI conventions); nil: no spans, and no wrapper.
	Tracer trace.Tracer `json:"-"`
}

// roleAliases resolve to the default model when no configured model claims
// them, so nodes asking for "thinking" or "fast" still work offline.
var roleAliases = []string{"default", "fast", "smart", "thinking"}

// Registry resolves model names and aliases and builds each model once, on
// first use. It is safe for concurrent use.
type Registry struct {
	models []ModelConfig
	byName map[string]int // lower-cased id or alias → index in models
	def    int
	getenv func(string) string
	http   *http.Client
	resCfg ResilienceConfig
	mu     sync.Mutex
	built  map[string]llms.Model // by model ID, each alone
	chains map[string]llms.Model // by model ID, a model with fallbacks
	// fallbacks are each model's fallbacks, resolved to indexes in models.
	fallbacks [][]int
	breaker   map[string]*Resilience // by provider endpoint and model
	scripts   map[string]*Scripted   // by script path, so models sharing a script share its steps
	tracer    trace.Tracer
}

// NewRegistry validates cfg and returns a registry. It builds no provider:
// that happens on the first Model call for each model.
func NewRegistry(cfg Config) (*Registry, error) {
	r := &Registry{
		tracer:  cfg.Tracer,
		byName:  map[string]int{},
		getenv:  cfg.Getenv,
		http:    cfg.HTTPClient,
		resCfg:  cfg.Resilience,
		built:   map[string]llms.Model{},
		chains:  map[string]llms.Model{},
		breaker: map[string]*Resilience{},
		scripts: map[string]*Scripted{},
	}
	if r.getenv == nil {
		r.getenv = os.Getenv
	}
	if r.http == nil {
		r.http = newHTTPClient()
	}
	models := slices.Clone(cfg.Models)
	if !slices.ContainsFunc(models, func(m ModelConfig) bool { return strings.EqualFold(m.ID, OfflineID) }) {
		models = append(models, OfflineConfig())
	}
	for i, m := range models {
		if m.ID == "" {
			return nil, fmt.Errorf("llm: model %d: empty id", i)
		}
		switch m.Provider {
		case ProviderOpenAI, ProviderAnthropic, ProviderOllama, ProviderOffline:
		case ProviderScripted:
			if m.ScriptPath == "" && m.Instance == nil {
				return nil, fmt.Errorf("llm: model %q: scripted model needs script_path", m.ID)
			}
		default:
			if m.Instance == nil {
				return nil, fmt.Errorf("llm: model %q: %w %q", m.ID, ErrUnknownProvider, m.Provider)
			}
		}
		id := strings.ToLower(m.ID)
		if j, dup := r.byName[id]; dup && strings.EqualFold(models[j].ID, m.ID) {
			return nil, fmt.Errorf("llm: duplicate model id %q", m.ID)
		}
		r.byName[id] = i // an id beats an earlier alias
		for _, a := range m.Aliases {
			a = strings.ToLower(strings.TrimSpace(a))
			if _, taken := r.byName[a]; a != "" && !taken {
				r.byName[a] = i
			}
		}
	}
	r.models = models
	if cfg.Default != "" {
		i, ok := r.byName[strings.ToLower(cfg.Default)]
		if !ok {
			return nil, fmt.Errorf("llm: default model %q: %w", cfg.Default, ErrUnknownModel)
		}
		r.def = i
	}
	for _, a := range roleAliases {
		if _, taken := r.byName[a]; !taken {
			r.byName[a] = r.def
		}
	}
	if err := r.resolveFallbacks(); err != nil {
		return nil, err
	}
	return r, nil
}

// resolveFallbacks resolves every model's fallbacks, refusing an unknown
// name, a model falling back to itself and a cycle.
func (r *Registry) resolveFallbacks() error {
	r.fallbacks = make([][]int, len(r.models))
	for i, m := range r.models {
		for _, name := range m.Fallbacks {
			j, ok := r.byName[strings.ToLower(strings.TrimSpace(name))]
			switch {
			case !ok:
				return fmt.Errorf("llm: model %q: fallback %q: %w", m.ID, name, ErrUnknownModel)
			case j == i:
				return fmt.Errorf("llm: model %q: %w: fallback %q is the model itself", m.ID, ErrInvalidFallback, name)
			}
			r.fallbacks[i] = append(r.fallbacks[i], j)
		}
	}
	const (
		unseen = iota
		visiting
		done
	)
	state := make([]int, len(r.models))
	var path []int
	var visit func(i int) error
	visit = func(i int) error {
		switch state[i] {
		case done:
			return nil
		case visiting:
			ids := []string{}
			for _, k := range path[slices.Index(path, i):] {
				ids = append(ids, r.models[k].ID)
			}
			return fmt.Errorf("llm: %w: fallbacks form a cycle: %s → %s", ErrInvalidFallback, strings.Join(ids, " → "), r.models[i].ID)
		}
		state[i] = visiting
		path = append(path, i)
		for _, j := range r.fallbacks[i] {
			if err := visit(j); err != nil {
				return err
			}
		}
		path = path[:len(path)-1]
		state[i] = done
		return nil
	}
	for i := range r.models {
		if err := visit(i); err != nil {
			return err
		}
	}
	return nil
}

// chainOf is the order a call to model i tries models in: i, then each
// of its fallbacks followed by that one's own chain, each model once.
func (r *Registry) chainOf(i int) []int {
	chain := []int{}
	var walk func(i int)
	walk = func(i int) {
		if slices.Contains(chain, i) {
			return
		}
		chain = append(chain, i)
		for _, j := range r.fallbacks[i] {
			walk(j)
		}
	}
	walk(i)
	return chain
}

// FallsBack reports whether some model names fallbacks: without any, no
// call ever falls back, and nothing need listen for it.
func (r *Registry) FallsBack() bool {
	return slices.ContainsFunc(r.fallbacks, func(f []int) bool { return len(f) > 0 })
}

// Resolve returns the config of the model with that id or alias
// (case-insensitive); "" means the default model. It returns an error
// matching ErrUnknownModel when nothing has that name. The role aliases
// "default", "fast", "smart" and "thinking" always resolve: to the model
// that claims them, else to the default model.
func (r *Registry) Resolve(name string) (ModelConfig, error) {
	if strings.TrimSpace(name) == "" {
		return r.models[r.def], nil
	}
	i, ok := r.byName[strings.ToLower(strings.TrimSpace(name))]
	if !ok {
		return ModelConfig{}, fmt.Errorf("llm: resolve %q: %w", name, ErrUnknownModel)
	}
	return r.models[i], nil
}

// Default returns the default model's config.
func (r *Registry) Default() ModelConfig { return r.models[r.def] }

// Models returns every configured model, in precedence order.
func (r *Registry) Models() []ModelConfig { return slices.Clone(r.models) }

// Model returns the model with that id or alias ("" = default), building
// its provider on first use and caching it. Every model but the offline one
// comes wrapped in resilience (retry, circuit breaker per model of a
// provider endpoint, timeout). A model with fallbacks (ModelConfig.Fallbacks) comes with them:
// its fallbacks are built with it, and a call moves along them as
// ModelConfig.Fallbacks says, telling the context's [FallbackListener].
// Errors: ErrUnknownModel, ErrMissingAPIKey, ErrUnknownProvider,
// ErrInvalidScript, or the provider constructor's error.
func (r *Registry) Model(ctx context.Context, name string) (llms.Model, error) {
	cfg, err := r.Resolve(name)
	if err != nil {
		return nil, err
	}
	i := r.byName[strings.ToLower(cfg.ID)]
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.fallbacks[i]) == 0 {
		return r.single(ctx, cfg)
	}
	if m, ok := r.chains[cfg.ID]; ok {
		return m, nil
	}
	var chain []fallbackLink
	for _, j := range r.chainOf(i) {
		m, err := r.single(ctx, r.models[j])
		if err != nil {
			if j != i {
				err = fmt.Errorf("llm: fallback of %q: %w", cfg.ID, err)
			}
			return nil, err
		}
		chain = append(chain, fallbackLink{cfg: r.models[j], m: m})
	}
	m := newFallbackModel(chain)
	r.chains[cfg.ID] = m
	return m, nil
}

// single returns cfg's model alone, building it on first use. r.mu is
// held.
func (r *Registry) single(ctx context.Context, cfg ModelConfig) (llms.Model, error) {
	if m, ok := r.built[cfg.ID]; ok {
		return m, nil
	}
	m, err := r.build(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("llm: build model %q: %w", cfg.ID, err)
	}
	if r.tracer != nil {
		m = traced(m, r.tracer, cfg)
	}
	r.built[cfg.ID] = m
	return m, nil
}

// build makes the model for cfg. r.mu is held.
func (r *Registry) build(ctx context.Context, cfg ModelConfig) (llms.Model, error) {
	var m llms.Model
	switch {
	case cfg.Instance != nil:
		m = cfg.Instance
	case cfg.Provider == ProviderOffline:
		return NewOffline(), nil
	case cfg.Provider == ProviderScripted:
		s, ok := r.scripts[cfg.ScriptPath]
		if !ok {
			script, err := LoadScript(cfg.ScriptPath)
			if err != nil {
				return nil, err
			}
			s = NewScripted(script)
			r.scripts[cfg.ScriptPath] = s
		}
		m = s
	default:
		p, err := NewProvider(cfg, ProviderOptions{HTTPClient: r.http, Getenv: r.getenv})
		if err != nil {
			return nil, err
		}
		m = p
	}
	if r.resCfg.Disabled {
		return m, nil
	}
	// One breaker per model of an endpoint, not per endpoint: providers
	// limit rates per model, and a model's failures must not close off
	// the others of its endpoint, its fallbacks among them.
	key := string(cfg.Provider) + " " + cfg.BaseURL + " " + cfg.providerModel()
	if cfg.Instance != nil || cfg.Provider == ProviderScripted {
		key = string(cfg.Provider) + " " + cfg.ID
	}
	res, ok := r.breaker[key]
	if !ok {
		name := string(cfg.Provider)
		if cfg.BaseURL != "" {
			name += " " + cfg.BaseURL
		}
		res = NewResilience(r.resCfg, name)
		r.breaker[key] = res
	}
	return res.Wrap(m), nil
}

// CloseIdleConnections closes idle HTTP connections of the registry's
// client, for a clean shutdown.
func (r *Registry) CloseIdleConnections() { r.http.CloseIdleConnections() }
