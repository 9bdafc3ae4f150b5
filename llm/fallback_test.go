package llm_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tmc/langchaingo/llms"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/trellis-ai/trellis/events"
	"github.com/trellis-ai/trellis/llm"
	"github.com/trellis-ai/trellis/llm/llmtest"
)

// fallbackRecorder collects the fallbacks a context's listener hears.
type fallbackRecorder struct {
	mu  sync.Mutex
	got []events.ModelFallback
}

func (f *fallbackRecorder) ctx(ctx context.Context) context.Context {
	return llm.WithFallbackListener(ctx, func(_ context.Context, e *events.ModelFallback) {
		f.mu.Lock()
		f.got = append(f.got, *e)
		f.mu.Unlock()
	})
}

func (f *fallbackRecorder) events() []events.ModelFallback {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]events.ModelFallback(nil), f.got...)
}

func withUsage(text string, in, out int) func(context.Context, *llms.CallOptions) (*llms.ContentResponse, error) {
	return func(ctx context.Context, o *llms.CallOptions) (*llms.ContentResponse, error) {
		if o.StreamingFunc != nil {
			if err := o.StreamingFunc(ctx, []byte(text)); err != nil {
				return nil, err
			}
		}
		return &llms.ContentResponse{Choices: []*llms.ContentChoice{{Content: text,
			GenerationInfo: map[string]any{"PromptTokens": in, "CompletionTokens": out}}}}, nil
	}
}

// fallbackRegistry builds a registry of fake models a → b → c (each
// falling back to the next) under fast resilience.
func fallbackRegistry(t *testing.T, a, b, c *fakeModel, res llm.ResilienceConfig) *llm.Registry {
	t.Helper()
	r, err := llm.NewRegistry(llm.Config{
		Models: []llm.ModelConfig{
			{ID: "primary", Provider: "fake", Instance: a, Fallbacks: []string{"second"}},
			{ID: "backup", Provider: "fake", Instance: b, Aliases: []string{"second"}, Fallbacks: []string{"last"}},
			{ID: "last", Provider: "fake", Instance: c},
		},
		Resilience: res,
	})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

var fastRes = llm.ResilienceConfig{MaxAttempts: 2, BackoffBase: time.Millisecond, BackoffMax: 5 * time.Millisecond, JitterFactor: -1, FailureThreshold: 2}

func TestFallbackAfterRetriesUsesTheAnsweringModelsUsage(t *testing.T) {
	a := &fakeModel{steps: stepsOf(fail(llm.RateLimited(errors.New("429 slow down"), 0)))}
	b := &fakeModel{steps: stepsOf(withUsage("from backup", 11, 4))}
	c := &fakeModel{steps: stepsOf(ok("unused"))}
	r := fallbackRegistry(t, a, b, c, fastRes)
	m, err := r.Model(t.Context(), "primary")
	if err != nil {
		t.Fatal(err)
	}
	var rec fallbackRecorder
	var streamed strings.Builder
	resp, err := m.GenerateContent(rec.ctx(t.Context()), []llms.MessageContent{human("hi")},
		llms.WithStreamingFunc(func(_ context.Context, c []byte) error { streamed.Write(c); return nil }))
	if err != nil {
		t.Fatal(err)
	}
	if llm.TextFrom(resp) != "from backup" || streamed.String() != "from backup" {
		t.Errorf("answer %q, streamed %q", llm.TextFrom(resp), streamed.String())
	}
	if a.Calls() != 2 || b.Calls() != 1 || c.Calls() != 0 {
		t.Errorf("calls: primary %d (want its 2 attempts first), backup %d, last %d", a.Calls(), b.Calls(), c.Calls())
	}
	want := []events.ModelFallback{{From: "primary", To: "backup", Reason: events.FallbackRateLimited}}
	if got := rec.events(); len(got) != 1 || got[0] != want[0] {
		t.Errorf("fallbacks = %+v, want %+v", got, want)
	}
	if u := llm.UsageFrom(resp); u != (events.Usage{InputTokens: 11, OutputTokens: 4, TotalTokens: 15}) {
		t.Errorf("usage = %+v, want the backup's", u)
	}
}

func stepsOf(s ...func(context.Context, *llms.CallOptions) (*llms.ContentResponse, error)) []func(context.Context, *llms.CallOptions) (*llms.ContentResponse, error) {
	return s
}

func TestFallbackFollowsTheChainAndTheOpenBreaker(t *testing.T) {
	a := &fakeModel{steps: stepsOf(fail(llm.Transient(errors.New("503 overloaded"))))}
	b := &fakeModel{steps: stepsOf(fail(llm.Transient(errors.New("502 bad gateway"))))}
	c := &fakeModel{steps: stepsOf(ok("last one standing"))}
	r := fallbackRegistry(t, a, b, c, fastRes)
	m, err := r.Model(t.Context(), "primary")
	if err != nil {
		t.Fatal(err)
	}
	var rec fallbackRecorder
	ctx := rec.ctx(t.Context())
	for range 2 {
		got, err := m.Call(ctx, "hi")
		if err != nil || got != "last one standing" {
			t.Fatalf("answer %q, %v", got, err)
		}
	}
	// Two failures each opened the primary's and the backup's breakers
	// (threshold 2): the second call failed fast on both, with no attempt.
	if a.Calls() != 2 || b.Calls() != 2 || c.Calls() != 2 {
		t.Errorf("calls: %d, %d, %d; want 2 each (the second call finds both breakers open)", a.Calls(), b.Calls(), c.Calls())
	}
	got := rec.events()
	want := []events.ModelFallback{
		{From: "primary", To: "backup", Reason: "unavailable"}, {From: "backup", To: "last", Reason: "unavailable"},
		{From: "primary", To: "backup", Reason: "unavailable"}, {From: "backup", To: "last", Reason: "unavailable"},
	}
	if len(got) != len(want) {
		t.Fatalf("fallbacks = %+v, want %+v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("fallback %d = %+v, want %+v", i, got[i], want[i])
		}
	}
}

func TestFallbackOnTimeout(t *testing.T) {
	hang := func(ctx context.Context, _ *llms.CallOptions) (*llms.ContentResponse, error) {
		<-ctx.Done()
		return nil, ctx.Err()
	}
	a := &fakeModel{steps: stepsOf(hang)}
	b := &fakeModel{steps: stepsOf(ok("quick"))}
	res := fastRes
	res.MaxAttempts, res.AttemptTimeout = 1, 20*time.Millisecond
	r := fallbackRegistry(t, a, b, &fakeModel{steps: stepsOf(ok("unused"))}, res)
	m, _ := r.Model(t.Context(), "primary")
	var rec fallbackRecorder
	got, err := m.Call(rec.ctx(t.Context()), "hi")
	if err != nil || got != "quick" {
		t.Fatalf("answer %q, %v", got, err)
	}
	if ev := rec.events(); len(ev) != 1 || ev[0].Reason != events.FallbackTimeout {
		t.Errorf("fallbacks = %+v, want one for timeout", ev)
	}
}

func TestNoFallbackOnPermanentErrorOrCancel(t *testing.T) {
	a := &fakeModel{steps: stepsOf(fail(llm.Permanent(errors.New("400 prompt is too long"))))}
	b := &fakeModel{steps: stepsOf(ok("unused"))}
	r := fallbackRegistry(t, a, b, &fakeModel{steps: stepsOf(ok("unused"))}, fastRes)
	m, _ := r.Model(t.Context(), "primary")
	var rec fallbackRecorder
	if _, err := m.Call(rec.ctx(t.Context()), "hi"); err == nil || !strings.Contains(err.Error(), "too long") {
		t.Fatalf("err = %v, want the primary's", err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := m.Call(rec.ctx(ctx), "hi"); llm.KindOf(err) != llm.KindCanceled && !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled call: err = %v", err)
	}
	if b.Calls() != 0 || len(rec.events()) != 0 {
		t.Errorf("backup called %d times, fallbacks %+v; want none", b.Calls(), rec.events())
	}
}

// A stream that fails after text reached the caller does not move on: the
// fallback would say it all again. The caller keeps what it was sent and
// gets the error. A stream that fails before sending anything falls back.
func TestFallbackNeverRepeatsStreamedOutput(t *testing.T) {
	midway := func(ctx context.Context, o *llms.CallOptions) (*llms.ContentResponse, error) {
		if err := o.StreamingFunc(ctx, []byte("The answer is")); err != nil {
			return nil, err
		}
		return nil, llm.Transient(errors.New("error reading streaming response: unexpected EOF"))
	}
	a := &fakeModel{steps: stepsOf(midway, fail(llm.Transient(errors.New("503 before any byte"))))}
	b := &fakeModel{steps: stepsOf(withUsage("Backup answer.", 3, 2))}
	r := fallbackRegistry(t, a, b, &fakeModel{steps: stepsOf(ok("unused"))}, llm.ResilienceConfig{MaxAttempts: 1})
	m, _ := r.Model(t.Context(), "primary")
	var rec fallbackRecorder
	var streamed strings.Builder
	stream := llms.WithStreamingFunc(func(_ context.Context, c []byte) error { streamed.Write(c); return nil })

	_, err := m.GenerateContent(rec.ctx(t.Context()), []llms.MessageContent{human("hi")}, stream)
	if err == nil || streamed.String() != "The answer is" || b.Calls() != 0 || len(rec.events()) != 0 {
		t.Fatalf("midway: err %v, streamed %q, backup calls %d, fallbacks %+v; want the error, no fallback",
			err, streamed.String(), b.Calls(), rec.events())
	}

	streamed.Reset()
	resp, err := m.GenerateContent(rec.ctx(t.Context()), []llms.MessageContent{human("hi")}, stream)
	if err != nil || llm.TextFrom(resp) != "Backup answer." || streamed.String() != "Backup answer." {
		t.Fatalf("before any byte: %v, streamed %q", err, streamed.String())
	}
	if ev := rec.events(); len(ev) != 1 || ev[0].From != "primary" || ev[0].To != "backup" {
		t.Errorf("fallbacks = %+v", ev)
	}
}

func TestFallbackConfigErrors(t *testing.T) {
	inst := &fakeModel{steps: stepsOf(ok("x"))}
	for name, tc := range map[string]struct {
		models  []llm.ModelConfig
		def     string
		want    error
		message string
	}{
		"unknown": {models: []llm.ModelConfig{{ID: "a", Provider: "fake", Instance: inst, Fallbacks: []string{"nope"}}},
			want: llm.ErrUnknownModel, message: `model "a": fallback "nope"`},
		"itself": {models: []llm.ModelConfig{{ID: "a", Provider: "fake", Instance: inst, Aliases: []string{"alpha"}, Fallbacks: []string{"ALPHA"}}},
			want: llm.ErrInvalidFallback, message: `fallback "ALPHA" is the model itself`},
		"itself through a role alias": {models: []llm.ModelConfig{{ID: "a", Provider: "fake", Instance: inst, Fallbacks: []string{"fast"}}},
			want: llm.ErrInvalidFallback, message: "is the model itself"},
		"cycle": {models: []llm.ModelConfig{
			{ID: "a", Provider: "fake", Instance: inst, Fallbacks: []string{"b"}},
			{ID: "b", Provider: "fake", Instance: inst, Fallbacks: []string{"c"}},
			{ID: "c", Provider: "fake", Instance: inst, Fallbacks: []string{"a"}},
		}, want: llm.ErrInvalidFallback, message: "cycle: a → b → c → a"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := llm.NewRegistry(llm.Config{Models: tc.models, Default: tc.def})
			if !errors.Is(err, tc.want) || !strings.Contains(err.Error(), tc.message) {
				t.Errorf("err = %v; want %v saying %q", err, tc.want, tc.message)
			}
		})
	}
	// A diamond is no cycle: each model is tried once.
	_, err := llm.NewRegistry(llm.Config{Models: []llm.ModelConfig{
		{ID: "a", Provider: "fake", Instance: inst, Fallbacks: []string{"b", "c"}},
		{ID: "b", Provider: "fake", Instance: inst, Fallbacks: []string{"c"}},
		{ID: "c", Provider: "fake", Instance: inst},
	}})
	if err != nil {
		t.Errorf("diamond refused: %v", err)
	}
}

func TestFallbacksFromEnvAndFile(t *testing.T) {
	r := registryFromEnv(t, map[string]string{"ANTHROPIC_API_KEY": "k", "OPENAI_API_KEY": "k", "TRELLIS_MODEL_FALLBACKS": "gpt, offline"})
	if got := r.Default().Fallbacks; strings.Join(got, ",") != "gpt,offline" {
		t.Errorf("default's fallbacks = %v", got)
	}
	cfg, err := llm.ConfigFromEnv(envMap(map[string]string{"ANTHROPIC_API_KEY": "k", "TRELLIS_MODEL_FALLBACKS": "gpt"}))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := llm.NewRegistry(cfg); !errors.Is(err, llm.ErrUnknownModel) || !strings.Contains(err.Error(), `fallback "gpt"`) {
		t.Errorf("unknown fallback from env: err = %v", err)
	}
	if _, err := llm.ConfigFromEnv(envMap(map[string]string{"TRELLIS_MODEL_FALLBACKS": "offline"})); err == nil {
		t.Error("fallbacks for a default that is not configured should be refused")
	}

	dir := t.TempDir()
	file := filepath.Join(dir, "models.json")
	write := func(s string) {
		if err := os.WriteFile(file, []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(`{"models": [{"id": "a", "provider": "openai", "base_url": "http://127.0.0.1:1/v1", "fallbacks": ["offline"]}]}`)
	r = registryFromEnv(t, map[string]string{"TRELLIS_MODELS_FILE": file})
	if got := r.Default().Fallbacks; len(got) != 1 || got[0] != "offline" {
		t.Errorf("fallbacks from file = %v", got)
	}
	write(`{"models": [{"id": "a", "provider": "openai", "base_url": "http://127.0.0.1:1/v1", "fallback": ["offline"]}]}`)
	if _, err := llm.ConfigFromEnv(envMap(map[string]string{"TRELLIS_MODELS_FILE": file})); err == nil || !strings.Contains(err.Error(), `unknown field "fallback"`) {
		t.Errorf("misspelt field: err = %v, want it refused", err)
	}
}

// Against a real endpoint that is down, the primary falls back to the
// offline model, which answers.
func TestFallbackFromAnUnreachableProviderToOffline(t *testing.T) {
	r, err := llm.NewRegistry(llm.Config{
		Models:     []llm.ModelConfig{{ID: "down", Provider: llm.ProviderOpenAI, BaseURL: "http://127.0.0.1:1/v1", Fallbacks: []string{"offline"}}},
		Resilience: llm.ResilienceConfig{MaxAttempts: 1},
		Getenv:     envMap(nil),
	})
	if err != nil {
		t.Fatal(err)
	}
	m, err := r.Model(t.Context(), "")
	if err != nil {
		t.Fatal(err)
	}
	var rec fallbackRecorder
	got, err := m.Call(rec.ctx(t.Context()), "hello")
	if err != nil || got != llm.OfflineNotice {
		t.Fatalf("answer %q, %v", got, err)
	}
	if ev := rec.events(); len(ev) != 1 || ev[0] != (events.ModelFallback{From: "down", To: llm.OfflineID, Reason: events.FallbackUnavailable}) {
		t.Errorf("fallbacks = %+v", ev)
	}
}

// Thinking is asked for the first model; a fallback gets thinking fitted
// to itself (Anthropic's temperature and max_tokens rules), or none.
func TestFallbackRedoesThinkingForTheFallback(t *testing.T) {
	type seen struct {
		thinking    *llms.ThinkingConfig
		temperature float64
		maxTokens   int
	}
	var got []seen
	record := func(ctx context.Context, o *llms.CallOptions) (*llms.ContentResponse, error) {
		th, _ := o.Metadata["thinking_config"].(*llms.ThinkingConfig)
		got = append(got, seen{th, o.Temperature, o.MaxTokens})
		return nil, llm.Transient(errors.New("503"))
	}
	a := &fakeModel{steps: stepsOf(record)}
	b := &fakeModel{steps: stepsOf(record)}
	c := &fakeModel{steps: stepsOf(func(ctx context.Context, o *llms.CallOptions) (*llms.ContentResponse, error) {
		th, _ := o.Metadata["thinking_config"].(*llms.ThinkingConfig)
		got = append(got, seen{th, o.Temperature, o.MaxTokens})
		return ok("done")(ctx, o)
	})}
	primary := llm.ModelConfig{ID: "o4-mini", Provider: llm.ProviderOpenAI, Instance: a, Thinking: true, Fallbacks: []string{"claude"}}
	r, err := llm.NewRegistry(llm.Config{
		Models: []llm.ModelConfig{
			primary,
			{ID: "claude", Provider: llm.ProviderAnthropic, Instance: b, Thinking: true, MaxTokens: 1024, Fallbacks: []string{"plain"}},
			{ID: "plain", Provider: llm.ProviderOpenAI, Instance: c},
		},
		Resilience: llm.ResilienceConfig{MaxAttempts: 1},
	})
	if err != nil {
		t.Fatal(err)
	}
	m, _ := r.Model(t.Context(), "o4-mini")
	if _, err := m.GenerateContent(t.Context(), []llms.MessageContent{human("hi")}, llm.ThinkingOptions(primary, 2000)...); err != nil {
		t.Fatal(err)
	}
	if len(got) != 3 || got[0].thinking == nil || got[0].thinking.BudgetTokens != 2000 {
		t.Fatalf("calls = %+v", got)
	}
	if th := got[1].thinking; th == nil || th.BudgetTokens != 2000 || got[1].temperature != 1 || got[1].maxTokens <= 2000 {
		t.Errorf("Anthropic fallback got thinking %+v, temperature %v, max tokens %d; want the budget, 1 and room above it", th, got[1].temperature, got[1].maxTokens)
	}
	if got[2].thinking != nil {
		t.Errorf("a fallback that cannot think got thinking %+v", got[2].thinking)
	}
}

// Usage is counted on the model that answered: its span carries the
// tokens; the failed model's span carries the error and none.
func TestFallbackUsageIsTheAnsweringModelsSpan(t *testing.T) {
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	a := &fakeModel{steps: stepsOf(fail(llm.RateLimited(errors.New("429"), 0)))}
	b := &fakeModel{steps: stepsOf(withUsage("hi", 30, 7))}
	r, err := llm.NewRegistry(llm.Config{
		Models: []llm.ModelConfig{
			{ID: "primary", Provider: "fake", Instance: a, Fallbacks: []string{"backup"}},
			{ID: "backup", Provider: "fake", Instance: b},
		},
		Resilience: llm.ResilienceConfig{MaxAttempts: 1},
		Tracer:     tp.Tracer("test"),
	})
	if err != nil {
		t.Fatal(err)
	}
	m, _ := r.Model(t.Context(), "primary")
	if _, err := m.Call(t.Context(), "hi"); err != nil {
		t.Fatal(err)
	}
	usage := map[string]string{}
	for _, s := range exp.GetSpans() {
		var in, out int64 = -1, -1
		for _, kv := range s.Attributes {
			switch kv.Key {
			case "gen_ai.usage.input_tokens":
				in = kv.Value.AsInt64()
			case "gen_ai.usage.output_tokens":
				out = kv.Value.AsInt64()
			}
		}
		usage[s.Name] = fmt.Sprintf("%s in=%d out=%d", s.Status.Code, in, out)
	}
	if usage["chat primary"] != "Error in=-1 out=-1" || usage["chat backup"] != "Unset in=30 out=7" || len(usage) != 2 {
		t.Errorf("spans = %v", usage)
	}
}

// Two models of one endpoint: the big one rate-limited past its retries
// falls back to the small one, whose calls its failures did not close
// off (rate limits are per model; so are breakers).
func TestFallbackWithinOneEndpoint(t *testing.T) {
	srv := llmtest.NewOpenAIServerFunc(t, func(req llmtest.Request, _ int) llmtest.Response {
		if req.Model == "big" {
			return llmtest.Response{Status: 429, ErrorMessage: "Rate limit reached for big"}
		}
		return llmtest.Response{Text: "small answers"}
	})
	r, err := llm.NewRegistry(llm.Config{
		Models: []llm.ModelConfig{
			{ID: "big", Provider: llm.ProviderOpenAI, BaseURL: srv.BaseURL(), Fallbacks: []string{"small"}},
			{ID: "small", Provider: llm.ProviderOpenAI, BaseURL: srv.BaseURL()},
		},
		HTTPClient: srv.Client(),
		Resilience: llm.ResilienceConfig{BackoffBase: time.Millisecond, JitterFactor: -1},
		Getenv:     envMap(nil),
	})
	if err != nil {
		t.Fatal(err)
	}
	m, _ := r.Model(t.Context(), "big")
	var rec fallbackRecorder
	for i := range 2 {
		got, err := m.Call(rec.ctx(t.Context()), "hi")
		if err != nil || got != "small answers" {
			t.Fatalf("call %d: %q, %v", i, got, err)
		}
	}
	if ev := rec.events(); len(ev) != 2 || ev[0].Reason != events.FallbackRateLimited {
		t.Errorf("fallbacks = %+v", ev)
	}
}
