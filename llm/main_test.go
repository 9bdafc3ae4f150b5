package llm_test

import (
	"context"
	"sync"
	"testing"

	"github.com/tmc/langchaingo/llms"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// fakeModel answers each call with the next of its steps; the last step
// repeats. It records calls.
type fakeModel struct {
	mu    sync.Mutex
	steps []func(ctx context.Context, o *llms.CallOptions) (*llms.ContentResponse, error)
	calls int
}

func (f *fakeModel) GenerateContent(ctx context.Context, _ []llms.MessageContent, options ...llms.CallOption) (*llms.ContentResponse, error) {
	var o llms.CallOptions
	for _, opt := range options {
		opt(&o)
	}
	f.mu.Lock()
	i := min(f.calls, len(f.steps)-1)
	f.calls++
	step := f.steps[i]
	f.mu.Unlock()
	return step(ctx, &o)
}

func (f *fakeModel) Call(ctx context.Context, prompt string, options ...llms.CallOption) (string, error) {
	return llms.GenerateFromSinglePrompt(ctx, f, prompt, options...)
}

func (f *fakeModel) Calls() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls
}

func ok(text string) func(context.Context, *llms.CallOptions) (*llms.ContentResponse, error) {
	return func(context.Context, *llms.CallOptions) (*llms.ContentResponse, error) {
		return &llms.ContentResponse{Choices: []*llms.ContentChoice{{Content: text}}}, nil
	}
}

func fail(err error) func(context.Context, *llms.CallOptions) (*llms.ContentResponse, error) {
	return func(context.Context, *llms.CallOptions) (*llms.ContentResponse, error) { return nil, err }
}

func human(text string) llms.MessageContent {
	return llms.TextParts(llms.ChatMessageTypeHuman, text)
}
