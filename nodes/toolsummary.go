package nodes

import (
	"context"
	"log/slog"
	"strconv"
	"strings"
	"sync"

	"github.com/tmc/langchaingo/llms"

	"github.com/trellis-ai/trellis/events"
	"github.com/trellis-ai/trellis/internal/textcut"
	"github.com/trellis-ai/trellis/llm"
)

// toolSummaryInput bounds what of one result the summary model reads:
// about 64k tokens, within every fast model's context.
const toolSummaryInput = 256 << 10

// shownResults returns what the models read of each result in its tool
// message when some result is over Window.ToolResultTokens: the result
// itself, or, for a successful one over it, a summary for the
// supervisor (see summarizeResult), several made at once; nil when every
// result is shown whole. usage is the summary model's.
func (a *Agent) shownResults(ctx context.Context, query string, results []ToolResult) (shown []string, usage events.Usage) {
	limit := a.opts.Window.toolResultTokens()
	var big []int
	for i := range results {
		if limit > 0 && results[i].Status == ToolSuccess && estimateTokens(results[i].Content) > limit {
			big = append(big, i)
		}
	}
	if len(big) == 0 {
		return nil, usage
	}
	return a.summarizeResults(ctx, query, results, big, limit)
}

// summarizeResults is shownResults once results[i] of each i of big is
// over limit: a function of its own, as what its goroutines share
// escapes to the heap, which the common path must not pay for.
func (a *Agent) summarizeResults(ctx context.Context, query string, results []ToolResult, big []int, limit int) (shown []string, usage events.Usage) {
	shown = make([]string, len(results))
	for i := range results {
		shown[i] = results[i].Content
	}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, i := range big {
		wg.Go(func() {
			text, u := a.summarizeResult(ctx, query, &results[i], limit)
			shown[i] = text
			mu.Lock()
			usage = usage.Add(u)
			mu.Unlock()
		})
	}
	wg.Wait()
	return shown, usage
}

// summarizeResult is r as the models read it when it is too long to show
// whole: a note saying so, and the summary model's summary of it, or, when
// the model fails, an extract of its start and end within limit tokens.
func (a *Agent) summarizeResult(ctx context.Context, query string, r *ToolResult, limit int) (string, events.Usage) {
	note := "[" + r.Tool + " returned " + strconv.Itoa(len(r.Content)) + " bytes, too long to show whole. "
	text, usage, err := a.resultSummary(ctx, query, r, limit)
	if err == nil {
		return note + "A summary follows; its sources are cited as usual.]\n" + text, usage
	}
	a.log.LogAttrs(ctx, slog.LevelWarn, "execute_tool: the tool result could not be summarised; an extract is shown",
		slog.String("tool", r.Tool), slog.String("tool_call_id", r.ToolCallID), slog.Any("error", err))
	return note + "Its start and end follow.]\n" + extract(r.Content, 4*limit), usage
}

// resultSummary asks the summary model for a summary of r of at most
// about limit tokens.
func (a *Agent) resultSummary(ctx context.Context, query string, r *ToolResult, limit int) (_ string, _ events.Usage, err error) {
	defer caught(&err) // on a goroutine of summarizeResults'
	model, err := a.models.Model(ctx, a.opts.Window.summaryModel())
	if err != nil {
		return "", events.Usage{}, err
	}
	system := llm.ToolResultSummaryHeading + "\n" +
		"The tool " + r.Tool + " returned the result below, too long for the assistant to read whole. " +
		"Summarise it for deciding how to answer the user's request: " + strconv.Quote(clip(query, 500)) + ". " +
		"Keep the facts that bear on it — names, numbers, dates, identifiers — and say what else the result holds. " +
		"Write at most " + strconv.Itoa(3*limit/4) + " words, and reply with the summary only."
	input := r.Content
	if len(input) > toolSummaryInput {
		input = clip(input, toolSummaryInput) + "\n(" + strconv.Itoa(len(r.Content)-toolSummaryInput) + " more bytes not shown)"
	}
	resp, err := model.GenerateContent(llm.WithNode(ctx, NodeSummarize), []llms.MessageContent{
		llms.TextParts(llms.ChatMessageTypeSystem, system),
		llms.TextParts(llms.ChatMessageTypeHuman, llm.TranscriptLabel+"\n"+input),
	})
	if resp != nil {
		if b := budgetFrom(ctx); b != nil {
			b.spend(llm.UsageFrom(resp))
		}
	}
	if err != nil {
		return "", events.Usage{}, err
	}
	usage := llm.UsageFrom(resp)
	text := strings.TrimSpace(llm.TextFrom(resp))
	if text == "" {
		return "", usage, errEmptySummary
	}
	return clip(text, 8*limit), usage, nil
}

// extract is s's start and end within about n bytes, cut on rune
// boundaries, with a line saying how much was left out between them.
func extract(s string, n int) string {
	if len(s) <= n {
		return s
	}
	head := clip(s, 3*n/4)
	tail := textcut.Tail(s, n/4)
	return head + "\n[… " + strconv.Itoa(len(s)-len(head)-len(tail)) + " bytes left out …]\n" + tail
}
