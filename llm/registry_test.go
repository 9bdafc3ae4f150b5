package llm_test

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/tmc/langchaingo/llms"

	"github.com/trellis-ai/trellis/llm"
)

func envMap(m map[string]string) func(string) string {
	return func(k string) string { return m[k] }
}

func registryFromEnv(t *testing.T, env map[string]string) *llm.Registry {
	t.Helper()
	cfg, err := llm.ConfigFromEnv(envMap(env))
	if err != nil {
		t.Fatal(err)
	}
	r, err := llm.NewRegistry(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestRegistryWithNothingConfiguredIsOffline(t *testing.T) {
	r := registryFromEnv(t, nil)
	if r.Default().ID != llm.OfflineID {
		t.Fatalf("default = %s, want offline", r.Default().ID)
	}
	for _, name := range []string{"", "offline", "fast", "thinking", "default", "OFFLINE"} {
		cfg, err := r.Resolve(name)
		if err != nil || cfg.ID != llm.OfflineID {
			t.Errorf("Resolve(%q) = %s, %v; want offline", name, cfg.ID, err)
		}
	}
	if _, err := r.Resolve("sonnet"); !errors.Is(err, llm.ErrUnknownModel) {
		t.Errorf("sonnet with no key: err = %v, want ErrUnknownModel", err)
	}
	m, err := r.Model(t.Context(), "")
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := m.Call(t.Context(), "hello"); got != llm.OfflineNotice {
		t.Errorf("default model said %q", got)
	}
}

func TestRegistryAliasesFromEnv(t *testing.T) {
	r := registryFromEnv(t, map[string]string{"ANTHROPIC_API_KEY": "k", "OPENAI_API_KEY": "k"})
	for name, want := range map[string]string{
		"":                  "claude-sonnet-4-5",
		"sonnet":            "claude-sonnet-4-5",
		"Sonnet":            "claude-sonnet-4-5",
		"thinking":          "claude-sonnet-4-5", // Anthropic comes first
		"fast":              "claude-haiku-4-5",
		"gpt":               "gpt-4.1",
		"mini":              "gpt-4.1-mini",
		"o4-mini":           "o4-mini",
		"claude-opus-4-1":   "claude-opus-4-1",
		"offline":           "offline",
		"claude-sonnet-4-5": "claude-sonnet-4-5",
	} {
		cfg, err := r.Resolve(name)
		if err != nil || cfg.ID != want {
			t.Errorf("Resolve(%q) = %q, %v; want %q", name, cfg.ID, err, want)
		}
	}
	if cfg, _ := r.Resolve("sonnet"); !cfg.Thinking || !cfg.ToolCalling || cfg.ContextWindow == 0 {
		t.Errorf("sonnet config = %+v", cfg)
	}
	r = registryFromEnv(t, map[string]string{"OPENAI_API_KEY": "k", "TRELLIS_MODEL": "mini"})
	if r.Default().ID != "gpt-4.1-mini" {
		t.Errorf("TRELLIS_MODEL=mini: default %s", r.Default().ID)
	}
}

func TestRegistryOpenAICompatibleAndOllamaFromEnv(t *testing.T) {
	r := registryFromEnv(t, map[string]string{"OPENAI_BASE_URL": "http://vllm:8000/v1", "OPENAI_MODEL": "qwen", "OLLAMA_HOST": "localhost:11434"})
	cfg, err := r.Resolve("local")
	if err != nil || cfg.ID != "qwen" || cfg.BaseURL != "http://vllm:8000/v1" || cfg.Provider != llm.ProviderOpenAI {
		t.Errorf("local = %+v, %v", cfg, err)
	}
	cfg, err = r.Resolve("ollama")
	if err != nil || cfg.BaseURL != "http://localhost:11434/v1" || cfg.Model != "llama3.1" || !cfg.ToolCalling {
		t.Errorf("ollama = %+v, %v", cfg, err)
	}
	// The OpenAI-compatible server needs no key.
	if _, err := r.Model(t.Context(), "qwen"); err != nil {
		t.Errorf("building a keyless compatible model: %v", err)
	}
}

func TestRegistryMissingKeyIsAnError(t *testing.T) {
	r, err := llm.NewRegistry(llm.Config{
		Models: []llm.ModelConfig{{ID: "claude", Provider: llm.ProviderAnthropic}},
		Getenv: envMap(nil),
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.Model(t.Context(), "claude"); !errors.Is(err, llm.ErrMissingAPIKey) {
		t.Errorf("err = %v, want ErrMissingAPIKey", err)
	}
}

func TestRegistryValidatesConfig(t *testing.T) {
	for name, cfg := range map[string]llm.Config{
		"empty id":         {Models: []llm.ModelConfig{{Provider: llm.ProviderOpenAI}}},
		"unknown provider": {Models: []llm.ModelConfig{{ID: "x", Provider: "gemini"}}},
		"duplicate id":     {Models: []llm.ModelConfig{{ID: "x", Provider: llm.ProviderOpenAI}, {ID: "X", Provider: llm.ProviderOpenAI}}},
		"unknown default":  {Default: "nope"},
		"script path":      {Models: []llm.ModelConfig{{ID: "s", Provider: llm.ProviderScripted}}},
	} {
		if _, err := llm.NewRegistry(cfg); err == nil {
			t.Errorf("%s: want an error", name)
		}
	}
}

func TestRegistryBuildsOnceAndWrapsInstances(t *testing.T) {
	s := scripted(t, `{"steps":[{"reply":{"text":"scripted!"},"repeat":true}]}`)
	r, err := llm.NewRegistry(llm.Config{Models: []llm.ModelConfig{
		{ID: "script", Provider: llm.ProviderScripted, Instance: s, Aliases: []string{"sonnet"}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	m1, err := r.Model(t.Context(), "sonnet")
	if err != nil {
		t.Fatal(err)
	}
	m2, _ := r.Model(t.Context(), "script")
	if m1 != m2 {
		t.Error("the same model should be returned for its id and alias")
	}
	if _, ok := m1.(llms.ReasoningModel); !ok {
		t.Error("resilience wrapper should keep the reasoning interface")
	}
	if got, err := m1.Call(t.Context(), "hi"); err != nil || got != "scripted!" {
		t.Errorf("got %q, %v", got, err)
	}
	if r.Default().ID != "script" {
		t.Errorf("default = %s", r.Default().ID)
	}
}

func TestRegistryScriptedFromEnv(t *testing.T) {
	path := filepath.Join(t.TempDir(), "s.json")
	if err := os.WriteFile(path, []byte(`{"steps":[{"reply":{"text":"from file"},"repeat":true}]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	r := registryFromEnv(t, map[string]string{"TRELLIS_MODEL": "scripted:" + path})
	m, err := r.Model(t.Context(), "")
	if err != nil {
		t.Fatal(err)
	}
	if got, err := m.Call(t.Context(), "x"); err != nil || got != "from file" {
		t.Errorf("got %q, %v", got, err)
	}
}

func TestThinkingOptions(t *testing.T) {
	if opts := llm.ThinkingOptions(llm.ModelConfig{ID: "x", Provider: llm.ProviderOpenAI}, 5000); opts != nil {
		t.Error("a model without thinking gets no options")
	}
	cfg := llm.ModelConfig{ID: "claude-sonnet-4-5", Provider: llm.ProviderAnthropic, Thinking: true, MaxTokens: 8192}
	var o llms.CallOptions
	for _, opt := range llm.ThinkingOptions(cfg, 0) {
		opt(&o)
	}
	tc := llms.GetThinkingConfig(&o)
	if tc == nil || tc.BudgetTokens != llm.DefaultThinkingBudget || !tc.ReturnThinking {
		t.Fatalf("thinking config = %+v", tc)
	}
	if o.Temperature != 1 || o.MaxTokens <= tc.BudgetTokens {
		t.Errorf("anthropic thinking needs temperature 1 and max_tokens > budget; got %v, %d", o.Temperature, o.MaxTokens)
	}
}
