package llm_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/tmc/langchaingo/llms"

	"github.com/trellis-ai/trellis/llm"
)

func transient(msg string) error { return &llm.Error{Kind: llm.KindTransient, Err: errors.New(msg)} }

func TestResilienceRetriesTransientWithBackoff(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := &fakeModel{steps: []func(context.Context, *llms.CallOptions) (*llms.ContentResponse, error){
			fail(transient("503")), fail(transient("503")), ok("hello"),
		}}
		m := llm.WithResilience(f, llm.ResilienceConfig{}, "fake")
		start := time.Now()
		got, err := m.Call(t.Context(), "hi")
		if err != nil {
			t.Fatalf("Call: %v", err)
		}
		if got != "hello" || f.Calls() != 3 {
			t.Fatalf("got %q after %d calls, want hello after 3", got, f.Calls())
		}
		// Default backoff: 2 s then 4 s, each ±20 %.
		if d := time.Since(start); d < 4800*time.Millisecond || d > 7200*time.Millisecond {
			t.Errorf("waited %s, want 2s+4s ±20%%", d)
		}
	})
}

func TestResilienceGivesUpAfterMaxAttempts(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := &fakeModel{steps: []func(context.Context, *llms.CallOptions) (*llms.ContentResponse, error){fail(transient("boom"))}}
		m := llm.WithResilience(f, llm.ResilienceConfig{MaxAttempts: 2, BackoffBase: time.Second, JitterFactor: -1}, "fake")
		_, err := m.Call(t.Context(), "hi")
		var e *llm.Error
		if !errors.As(err, &e) || e.Kind != llm.KindTransient || e.Provider != "fake" {
			t.Fatalf("err = %v, want a transient *llm.Error from provider fake", err)
		}
		if f.Calls() != 2 || !strings.Contains(err.Error(), "after 2 attempts") {
			t.Errorf("calls = %d, err = %v; want 2 attempts reported", f.Calls(), err)
		}
	})
}

func TestResilienceHonoursRetryAfter(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := &fakeModel{steps: []func(context.Context, *llms.CallOptions) (*llms.ContentResponse, error){
			fail(&llm.Error{Kind: llm.KindRateLimited, RetryAfter: 7 * time.Second, Err: errors.New("429")}), ok("done"),
		}}
		m := llm.WithResilience(f, llm.ResilienceConfig{}, "fake")
		start := time.Now()
		if _, err := m.Call(t.Context(), "hi"); err != nil {
			t.Fatal(err)
		}
		if d := time.Since(start); d != 7*time.Second {
			t.Errorf("waited %s, want exactly the Retry-After of 7s", d)
		}
	})
}

func TestResilienceRetryAfterBeyondMaxBackoffIsNotRetried(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := &fakeModel{steps: []func(context.Context, *llms.CallOptions) (*llms.ContentResponse, error){
			fail(&llm.Error{Kind: llm.KindRateLimited, RetryAfter: time.Hour, Err: errors.New("429")}), ok("done"),
		}}
		m := llm.WithResilience(f, llm.ResilienceConfig{}, "fake")
		_, err := m.Call(t.Context(), "hi")
		var e *llm.Error
		if !errors.As(err, &e) || e.Kind != llm.KindRateLimited || e.RetryAfter != time.Hour || f.Calls() != 1 {
			t.Fatalf("err = %v after %d calls; want the rate-limit error with its Retry-After, 1 call", err, f.Calls())
		}
	})
}

func TestResilienceDoesNotRetryPermanentErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		err  error
	}{
		{"typed", &llm.Error{Kind: llm.KindPermanent, Err: errors.New("bad request")}},
		{"status 400 in message", errors.New("API returned unexpected status code: 400: invalid model")},
		{"unknown", errors.New("something odd")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				f := &fakeModel{steps: []func(context.Context, *llms.CallOptions) (*llms.ContentResponse, error){fail(tc.err), ok("x")}}
				_, err := llm.WithResilience(f, llm.ResilienceConfig{}, "fake").Call(t.Context(), "hi")
				if err == nil || f.Calls() != 1 || llm.KindOf(err) != llm.KindPermanent {
					t.Fatalf("err = %v (kind %s) after %d calls; want permanent after 1", err, llm.KindOf(err), f.Calls())
				}
			})
		})
	}
}

func TestResilienceNeverRetriesAfterAChunkWasStreamed(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := &fakeModel{steps: []func(context.Context, *llms.CallOptions) (*llms.ContentResponse, error){
			func(ctx context.Context, o *llms.CallOptions) (*llms.ContentResponse, error) {
				_ = o.StreamingFunc(ctx, []byte("Hel"))
				return nil, transient("connection reset")
			},
			ok("Hello"),
		}}
		var got strings.Builder
		m := llm.WithResilience(f, llm.ResilienceConfig{}, "fake")
		_, err := m.GenerateContent(t.Context(), []llms.MessageContent{human("hi")},
			llms.WithStreamingFunc(func(_ context.Context, c []byte) error { got.Write(c); return nil }))
		if err == nil || f.Calls() != 1 {
			t.Fatalf("err = %v after %d calls; want the error and no retry once text reached the user", err, f.Calls())
		}
		if llm.KindOf(err) != llm.KindTransient || got.String() != "Hel" {
			t.Errorf("kind %s, streamed %q", llm.KindOf(err), got.String())
		}
	})
}

func TestResilienceRetriesStreamWhenOnlyEmptyChunksWereSent(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := &fakeModel{steps: []func(context.Context, *llms.CallOptions) (*llms.ContentResponse, error){
			func(ctx context.Context, o *llms.CallOptions) (*llms.ContentResponse, error) {
				_ = o.StreamingFunc(ctx, nil)
				return nil, transient("reset")
			},
			ok("Hello"),
		}}
		_, err := llm.WithResilience(f, llm.ResilienceConfig{}, "fake").GenerateContent(t.Context(),
			[]llms.MessageContent{human("hi")}, llms.WithStreamingFunc(func(context.Context, []byte) error { return nil }))
		if err != nil || f.Calls() != 2 {
			t.Fatalf("err = %v after %d calls; want success on the retry", err, f.Calls())
		}
	})
}

func TestResilienceCircuitBreakerOpensAndRecovers(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := &fakeModel{steps: []func(context.Context, *llms.CallOptions) (*llms.ContentResponse, error){
			fail(transient("1")), fail(transient("2")), fail(transient("3")), ok("back"),
		}}
		res := llm.NewResilience(llm.ResilienceConfig{MaxAttempts: 1}, "fake")
		m := res.Wrap(f)
		for range 3 {
			if _, err := m.Call(t.Context(), "hi"); err == nil {
				t.Fatal("want failures")
			}
		}
		if !res.BreakerOpen() {
			t.Fatal("breaker should be open after 3 transient failures")
		}
		_, err := m.Call(t.Context(), "hi")
		if !errors.Is(err, llm.ErrCircuitOpen) || f.Calls() != 3 {
			t.Fatalf("err = %v after %d calls; want ErrCircuitOpen without calling the model", err, f.Calls())
		}
		time.Sleep(60 * time.Second) // the default breaker delay
		got, err := m.Call(t.Context(), "hi")
		if err != nil || got != "back" {
			t.Fatalf("after the delay: %q, %v; want the trial call to go through", got, err)
		}
		if res.BreakerOpen() {
			t.Error("breaker should close after a successful trial")
		}
	})
}

func TestResilienceBreakerIgnoresPermanentErrors(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := &fakeModel{steps: []func(context.Context, *llms.CallOptions) (*llms.ContentResponse, error){
			fail(&llm.Error{Kind: llm.KindPermanent, Err: errors.New("400")}),
		}}
		res := llm.NewResilience(llm.ResilienceConfig{}, "fake")
		m := res.Wrap(f)
		for range 5 {
			_, _ = m.Call(t.Context(), "hi")
		}
		if res.BreakerOpen() || f.Calls() != 5 {
			t.Fatalf("open=%v calls=%d; invalid requests must not open the breaker", res.BreakerOpen(), f.Calls())
		}
	})
}

func TestResilienceTimeoutCancelsTheAttempt(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var sawCancel atomic.Bool
		f := &fakeModel{steps: []func(context.Context, *llms.CallOptions) (*llms.ContentResponse, error){
			func(ctx context.Context, _ *llms.CallOptions) (*llms.ContentResponse, error) {
				<-ctx.Done()
				sawCancel.Store(true)
				return nil, ctx.Err()
			},
		}}
		m := llm.WithResilience(f, llm.ResilienceConfig{MaxAttempts: 1, AttemptTimeout: 5 * time.Second}, "fake")
		start := time.Now()
		_, err := m.Call(t.Context(), "hi")
		if err == nil || !sawCancel.Load() {
			t.Fatalf("err = %v, model saw cancel = %v", err, sawCancel.Load())
		}
		if d := time.Since(start); d != 5*time.Second {
			t.Errorf("returned after %s, want the 5s timeout", d)
		}
		if llm.KindOf(err) != llm.KindTransient {
			t.Errorf("a timeout should be transient, got %s", llm.KindOf(err))
		}
	})
}

func TestResilienceCallerCancelIsNotRetried(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithCancel(t.Context())
		f := &fakeModel{steps: []func(context.Context, *llms.CallOptions) (*llms.ContentResponse, error){
			func(context.Context, *llms.CallOptions) (*llms.ContentResponse, error) {
				cancel()
				return nil, transient("cut")
			},
		}}
		_, err := llm.WithResilience(f, llm.ResilienceConfig{}, "fake").Call(ctx, "hi")
		if !errors.Is(err, context.Canceled) || f.Calls() != 1 || llm.KindOf(err) != llm.KindPermanent {
			t.Fatalf("err = %v (kind %s) after %d calls; want context.Canceled, permanent, 1 call", err, llm.KindOf(err), f.Calls())
		}
	})
}

func TestResilienceKeepsReasoningInterface(t *testing.T) {
	script, err := llm.ParseScript([]byte(`{"steps":[{"reply":{"text":"x"}}]}`))
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := llm.WithResilience(llm.NewScripted(script), llm.ResilienceConfig{}, "s").(llms.ReasoningModel); !ok {
		t.Error("wrapping a reasoning model should keep llms.ReasoningModel")
	}
	if _, ok := llm.WithResilience(&fakeModel{}, llm.ResilienceConfig{}, "f").(llms.ReasoningModel); ok {
		t.Error("wrapping a plain model should not claim reasoning")
	}
}

// roundTripFunc serves HTTP in memory, so synctest can fake the clock.
type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

func jsonResponse(status int, body string, header http.Header) *http.Response {
	if header == nil {
		header = http.Header{}
	}
	header.Set("Content-Type", "application/json")
	return &http.Response{StatusCode: status, Header: header, Body: io.NopCloser(strings.NewReader(body))}
}

const okCompletion = `{"id":"c","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"fine"},"finish_reason":"stop"}],"usage":{"prompt_tokens":3,"completion_tokens":1,"total_tokens":4}}`

// TestResilienceClassifiesHTTPStatusFromTheTransport drives the real
// langchaingo OpenAI client over an in-memory transport: the status and
// Retry-After header reach the classifier although langchaingo reports
// HTTP failures as plain strings.
func TestResilienceClassifiesHTTPStatusFromTheTransport(t *testing.T) {
	for _, tc := range []struct {
		name      string
		first     *http.Response
		wantCalls int
		wantWait  time.Duration
		wantKind  llm.Kind
		wantErr   bool
	}{
		{"429 with Retry-After seconds", jsonResponse(429, `{"error":{"message":"slow down"}}`, http.Header{"Retry-After": {"7"}}), 2, 7 * time.Second, 0, false},
		{"503 retried with backoff", jsonResponse(503, `{"error":{"message":"overloaded"}}`, nil), 2, time.Second, 0, false},
		{"400 not retried", jsonResponse(400, `{"error":{"message":"bad"}}`, nil), 1, 0, llm.KindPermanent, true},
		{"401 not retried", jsonResponse(401, `{"error":{"message":"no key"}}`, nil), 1, 0, llm.KindPermanent, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var calls atomic.Int32
				client := &http.Client{Transport: roundTripFunc(func(r *http.Request) (*http.Response, error) {
					if calls.Add(1) == 1 {
						return tc.first, nil
					}
					return jsonResponse(200, okCompletion, nil), nil
				})}
				p, err := llm.NewProvider(llm.ModelConfig{ID: "m", Provider: llm.ProviderOpenAI, BaseURL: "http://fake/v1"},
					llm.ProviderOptions{HTTPClient: client})
				if err != nil {
					t.Fatal(err)
				}
				m := llm.WithResilience(p, llm.ResilienceConfig{BackoffBase: time.Second, JitterFactor: -1}, "openai")
				start := time.Now()
				got, err := m.Call(t.Context(), "hi")
				if int(calls.Load()) != tc.wantCalls {
					t.Errorf("HTTP calls = %d, want %d", calls.Load(), tc.wantCalls)
				}
				if tc.wantErr {
					var e *llm.Error
					if !errors.As(err, &e) || e.Kind != tc.wantKind || e.StatusCode != tc.first.StatusCode {
						t.Fatalf("err = %#v, want kind %s with status %d", err, tc.wantKind, tc.first.StatusCode)
					}
					return
				}
				if err != nil || got != "fine" {
					t.Fatalf("got %q, %v", got, err)
				}
				if d := time.Since(start); d != tc.wantWait {
					t.Errorf("waited %s, want %s", d, tc.wantWait)
				}
			})
		})
	}
}
