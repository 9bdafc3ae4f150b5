package llm

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strings"
)

// ConfigFromEnv builds a Config from environment variables, read with
// getenv (nil means os.Getenv). Models are listed in this order, which is
// also alias precedence:
//
//   - TRELLIS_MODELS_FILE: a JSON file, {"models": [ModelConfig…],
//     "default": "…"}; when set, only its models (and the offline model) are
//     used and the variables below are ignored.
//   - ANTHROPIC_API_KEY: claude-sonnet-4-5 ("sonnet", "claude-sonnet",
//     "smart", "thinking"), claude-haiku-4-5 ("haiku", "fast"),
//     claude-opus-4-1 ("opus"). ANTHROPIC_BASE_URL overrides the endpoint.
//   - OPENAI_BASE_URL (or OPENAI_API_BASE): an OpenAI-compatible server
//     (vLLM, llama.cpp, LM Studio…) serving OPENAI_MODEL (required with
//     it), alias "local"; OPENAI_API_KEY is sent when set.
//   - OPENAI_API_KEY without a base URL: gpt-4.1 ("gpt", "smart"),
//     gpt-4.1-mini ("fast", "mini"), o4-mini ("reasoning", "thinking").
//   - OLLAMA_HOST: OLLAMA_MODEL (default llama3.1) through Ollama's
//     OpenAI-compatible /v1 endpoint (tool calling works there, not on the
//     native API), id "ollama/<model>", aliases "ollama", "local".
//   - always: the offline model, "offline".
//
// TRELLIS_MODEL names the default (id or alias); unset, the first model
// listed is the default, which is the offline model when nothing is
// configured. TRELLIS_MODEL=scripted:<path> adds a scripted model replaying
// that script file (id "scripted") and makes it the default.
//
// TRELLIS_MODEL_FALLBACKS, comma-separated ids or aliases, are added to the
// default model's fallbacks (ModelConfig.Fallbacks; in a models file each
// model may list its own under "fallbacks"). It is refused when no
// configured model is the default, and NewRegistry refuses names it does
// not know. The models file is decoded strictly: an unknown field is an
// error, not a setting silently ignored.
func ConfigFromEnv(getenv func(string) string) (Config, error) {
	if getenv == nil {
		getenv = os.Getenv
	}
	env := func(k string) string { return strings.TrimSpace(getenv(k)) }
	cfg := Config{Getenv: getenv}

	if path := env("TRELLIS_MODELS_FILE"); path != "" {
		b, err := os.ReadFile(path)
		if err != nil {
			return Config{}, fmt.Errorf("llm: TRELLIS_MODELS_FILE: %w", err)
		}
		var file struct {
			Models  []ModelConfig `json:"models"`
			Default string        `json:"default"`
		}
		dec := json.NewDecoder(bytes.NewReader(b))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&file); err != nil {
			return Config{}, fmt.Errorf("llm: TRELLIS_MODELS_FILE %s: %w", path, err)
		}
		cfg.Models, cfg.Default = file.Models, file.Default
	} else {
		cfg.Models = envModels(env)
	}

	if def := env("TRELLIS_MODEL"); def != "" {
		if path, ok := strings.CutPrefix(def, "scripted:"); ok {
			cfg.Models = append([]ModelConfig{{ID: "scripted", Provider: ProviderScripted, ScriptPath: path, ToolCalling: true, Thinking: true}}, cfg.Models...)
			def = "scripted"
		}
		cfg.Default = def
	}
	if list := env("TRELLIS_MODEL_FALLBACKS"); list != "" {
		i := defaultIndex(cfg)
		if i < 0 {
			return Config{}, fmt.Errorf("llm: TRELLIS_MODEL_FALLBACKS: the default model %q is not a configured model", cmp.Or(cfg.Default, OfflineID))
		}
		m := &cfg.Models[i]
		m.Fallbacks = slices.Clone(m.Fallbacks)
		for name := range strings.SplitSeq(list, ",") {
			if name = strings.TrimSpace(name); name != "" {
				m.Fallbacks = append(m.Fallbacks, name)
			}
		}
	}
	return cfg, nil
}

// defaultIndex is the index in cfg.Models of the model cfg.Default names
// (an id first, else the first model with that alias, as a Registry
// resolves it), the first model when it is "", or -1.
func defaultIndex(cfg Config) int {
	if cfg.Default == "" {
		if len(cfg.Models) == 0 {
			return -1
		}
		return 0
	}
	if i := slices.IndexFunc(cfg.Models, func(m ModelConfig) bool { return strings.EqualFold(m.ID, cfg.Default) }); i >= 0 {
		return i
	}
	return slices.IndexFunc(cfg.Models, func(m ModelConfig) bool {
		return slices.ContainsFunc(m.Aliases, func(a string) bool { return strings.EqualFold(strings.TrimSpace(a), cfg.Default) })
	})
}

func envModels(env func(string) string) []ModelConfig {
	var models []ModelConfig
	if env("ANTHROPIC_API_KEY") != "" {
		base := env("ANTHROPIC_BASE_URL")
		models = append(models,
			ModelConfig{ID: "claude-sonnet-4-5", Provider: ProviderAnthropic, BaseURL: base,
				Aliases: []string{"sonnet", "claude-sonnet", "smart", "thinking"}, ToolCalling: true, Thinking: true,
				ContextWindow: 200000, ThinkingBudget: DefaultThinkingBudget, MaxTokens: 8192},
			ModelConfig{ID: "claude-haiku-4-5", Provider: ProviderAnthropic, BaseURL: base,
				// langchaingo v0.1.14 does not send thinking for haiku model names.
				Aliases: []string{"haiku", "claude-haiku", "fast"}, ToolCalling: true,
				ContextWindow: 200000, MaxTokens: 8192},
			ModelConfig{ID: "claude-opus-4-1", Provider: ProviderAnthropic, BaseURL: base,
				Aliases: []string{"opus", "claude-opus"}, ToolCalling: true, Thinking: true,
				ContextWindow: 200000, ThinkingBudget: DefaultThinkingBudget, MaxTokens: 8192},
		)
	}
	base := env("OPENAI_BASE_URL")
	if base == "" {
		base = env("OPENAI_API_BASE")
	}
	switch {
	case base != "":
		model := env("OPENAI_MODEL")
		if model == "" {
			model = "default"
		}
		models = append(models, ModelConfig{ID: model, Provider: ProviderOpenAI, BaseURL: base,
			Aliases: []string{"local", "openai-compatible"}, ToolCalling: true, LegacyMaxTokens: true})
	case env("OPENAI_API_KEY") != "":
		models = append(models,
			ModelConfig{ID: "gpt-4.1", Provider: ProviderOpenAI, Aliases: []string{"gpt", "smart"},
				ToolCalling: true, ContextWindow: 1047576},
			ModelConfig{ID: "gpt-4.1-mini", Provider: ProviderOpenAI, Aliases: []string{"mini", "fast"},
				ToolCalling: true, ContextWindow: 1047576},
			ModelConfig{ID: "o4-mini", Provider: ProviderOpenAI, Aliases: []string{"reasoning", "thinking"},
				ToolCalling: true, Thinking: true, ContextWindow: 200000, ThinkingBudget: DefaultThinkingBudget},
		)
	}
	if host := env("OLLAMA_HOST"); host != "" {
		if !strings.Contains(host, "://") {
			host = "http://" + host
		}
		model := env("OLLAMA_MODEL")
		if model == "" {
			model = "llama3.1"
		}
		models = append(models, ModelConfig{ID: "ollama/" + model, Model: model, Provider: ProviderOpenAI,
			BaseURL: strings.TrimSuffix(host, "/") + "/v1", Aliases: []string{"ollama", "local"},
			ToolCalling: true, LegacyMaxTokens: true})
	}
	return models
}
