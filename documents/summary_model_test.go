package documents_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/tmc/langchaingo/llms"

	"github.com/trellis-ai/trellis/documents"
)

// promptModel answers every prompt with answer (or err), and keeps the
// prompts it was given.
type promptModel struct {
	mu      sync.Mutex
	prompts []string
	answer  string
	err     error
}

func (m *promptModel) GenerateContent(_ context.Context, msgs []llms.MessageContent, _ ...llms.CallOption) (*llms.ContentResponse, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, msg := range msgs {
		for _, p := range msg.Parts {
			if t, ok := p.(llms.TextContent); ok {
				m.prompts = append(m.prompts, t.Text)
			}
		}
	}
	if m.err != nil {
		return nil, m.err
	}
	return &llms.ContentResponse{Choices: []*llms.ContentChoice{{Content: m.answer}}}, nil
}

func (m *promptModel) Call(ctx context.Context, prompt string, opts ...llms.CallOption) (string, error) {
	return llms.GenerateFromSinglePrompt(ctx, m, prompt, opts...)
}

func TestModelSummarizer(t *testing.T) {
	m := &promptModel{answer: "  A field guide to the office.  "}
	s := documents.ModelSummarizer{Model: m}
	got, err := s.SummarizeChunk(t.Context(), "The coffee machine is called Bertha.")
	if err != nil || got != "A field guide to the office." {
		t.Fatalf("SummarizeChunk = %q, %v", got, err)
	}
	if !strings.Contains(m.prompts[0], "<passage>\nThe coffee machine is called Bertha.\n</passage>") {
		t.Fatalf("prompt %q", m.prompts[0])
	}
	if _, err := s.SummarizeDocument(t.Context(), "guide.md", "text", []string{"part one", "part two"}); err != nil {
		t.Fatal(err)
	}
	if p := m.prompts[1]; !strings.Contains(p, `"guide.md"`) || !strings.Contains(p, "part one\n\npart two") {
		t.Fatalf("document prompt %q", p)
	}
	m.answer = "   "
	if _, err := s.SummarizeChunk(t.Context(), "x"); err == nil {
		t.Fatal("an empty answer passed as a summary")
	}
	m.err = errors.New("overloaded")
	if _, err := s.SummarizeChunk(t.Context(), "x"); err == nil || !strings.Contains(err.Error(), "overloaded") {
		t.Fatalf("a failed call: %v", err)
	}
}
