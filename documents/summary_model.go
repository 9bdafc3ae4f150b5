package documents

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/tmc/langchaingo/llms"
)

// ModelSummarizer summarises with a language model: the service gives it
// the configured fast model, which llm.Registry hands out wrapped in the
// one resilience policy (retry, circuit breaker, timeout). What it cannot
// summarise is an error the processing job retries with backoff.
type ModelSummarizer struct {
	Model llms.Model
	// MaxTokens caps one summary. Default 300.
	MaxTokens int
}

var _ Summarizer = ModelSummarizer{}

// maxPromptChars bounds the text one prompt carries (a chunk is 4,000
// characters; a document summary is made from its chunks' summaries).
const maxPromptChars = 24000

const chunkPrompt = `Summarize the passage below, taken from a document a user uploaded, in at most three sentences.
Keep names, numbers and defined terms exactly as written. Answer with the summary only.

<passage>
%s
</passage>`

const documentPrompt = `Below are summaries of consecutive parts of the document %q, in order.
Write a summary of the whole document in at most five sentences: what it is, what it covers, and the facts a reader would look it up for.
Answer with the summary only.

<part-summaries>
%s
</part-summaries>`

func (m ModelSummarizer) generate(ctx context.Context, prompt string) (string, error) {
	n := m.MaxTokens
	if n <= 0 {
		n = 300
	}
	out, err := llms.GenerateFromSinglePrompt(ctx, m.Model, prompt, llms.WithTemperature(0), llms.WithMaxTokens(n))
	if err != nil {
		return "", fmt.Errorf("documents: summarise: %w", err)
	}
	out = strings.TrimSpace(out)
	if out == "" {
		return "", errors.New("documents: summarise: the model answered nothing")
	}
	return out, nil
}

// SummarizeChunk implements Summarizer.
func (m ModelSummarizer) SummarizeChunk(ctx context.Context, text string) (string, error) {
	return m.generate(ctx, fmt.Sprintf(chunkPrompt, clip(text, maxPromptChars)))
}

// SummarizeDocument implements Summarizer from the chunks' summaries; a
// document without them (one chunk, say) is summarised from its text.
func (m ModelSummarizer) SummarizeDocument(ctx context.Context, filename, text string, chunkSummaries []string) (string, error) {
	parts := strings.Join(chunkSummaries, "\n\n")
	if len(chunkSummaries) <= 1 {
		parts = text
	}
	return m.generate(ctx, fmt.Sprintf(documentPrompt, filename, clip(parts, maxPromptChars)))
}
