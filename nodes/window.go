package nodes

import (
	"context"
	"strings"

	"github.com/tmc/langchaingo/llms"

	"github.com/trellis-ai/trellis/internal/textcut"
)

// Window bounds what a model sees of the conversation: the system prompt,
// a rolling summary of older turns, and the newest messages within a
// token budget. The conversation is kept whole (the oldest messages in
// pages of history); only the view shrinks.
//
// Earlier turns appear as their user and assistant text (their tool calls
// and results are left out); the current turn appears whole — tool calls,
// results and clarifications — trimmed from the front, the user's message
// kept, when it alone exceeds the budget.
type Window struct {
	// Messages caps the earlier turns' messages shown; 0 means 20.
	Messages int
	// Tokens caps the estimated tokens of the messages shown (about four
	// bytes a token); 0 means 8000.
	Tokens int
	// SummaryTokens caps the rolling summary, and asks the summary model
	// for at most about as much; 0 means 1000.
	SummaryTokens int
	// AskSummary, when set, has a model summarise older turns off the
	// answer path. Once the earlier turns that no model summary covers,
	// older than the newest half window, pass SummarizeAt tokens, a turn's
	// end asks (with the conversation's id) for a summary of them, and
	// records the ask in the state; the service then runs Agent.Summarize
	// for it, as a durable job. The first turn to start after the summary
	// is stored puts it in its state and in every prompt, ahead of the
	// extractive summary of what came after it. AskSummary must not block
	// for long; an error is logged, and a later turn asks again. nil keeps
	// the extractive summary alone, which also bounds the window while a
	// summary is being written and when the model fails.
	AskSummary func(ctx context.Context, conversationID string, ask SummaryAsk) error
	// SummarizeAt is the estimated tokens of earlier turns, beyond what a
	// model summarised or was asked to and older than the newest half
	// window, at which AskSummary is called: each summary folds in at
	// least that much, however long the messages. 0 means 4000.
	SummarizeAt int
	// SummaryModel names the model (id or alias) that writes summaries:
	// of older turns (Agent.Summarize) and of tool results over
	// ToolResultTokens; "" means "fast".
	SummaryModel string
	// ToolResultTokens is the estimated size above which a tool result
	// is shown to the models as a summary by SummaryModel, or, when that
	// fails, as a bounded extract; the whole result stays in the state's
	// ToolResults, in tool.complete and in the data chunks cited. 0 means
	// 4000; negative shows every result whole.
	ToolResultTokens int
}

func (w *Window) messages() int      { return positive(w.Messages, 20) }
func (w *Window) tokens() int        { return positive(w.Tokens, 8000) }
func (w *Window) summaryTokens() int { return positive(w.SummaryTokens, 1000) }
func (w *Window) summarizeAt() int   { return positive(w.SummarizeAt, 4000) }
func (w *Window) summaryModel() string {
	if w.SummaryModel != "" {
		return w.SummaryModel
	}
	return "fast"
}

// toolResultTokens is ToolResultTokens' size; 0 shows every result whole.
func (w *Window) toolResultTokens() int {
	if w.ToolResultTokens < 0 {
		return 0
	}
	return positive(w.ToolResultTokens, 4000)
}

// estimateTokens is a provider-neutral estimate: about four bytes a token.
func estimateTokens(s string) int { return len(s)/4 + 1 }

func messageTokens(m *Message) int {
	n := 4 + estimateTokens(m.Content)
	for _, c := range m.ToolCalls {
		n += estimateTokens(c.Tool) + estimateTokens(string(c.Args))
	}
	return n
}

// earlierText reports whether an earlier turn's message is shown: user
// and assistant messages with text.
func earlierText(m *Message) bool {
	return (m.Role == RoleUser || m.Role == RoleAssistant) && m.Content != ""
}

// view returns the messages a model sees for state s, oldest first.
func (w *Window) view(s *ChatState) []Message {
	msgs := s.Messages
	cur := len(msgs)
	for cur > 0 && msgs[cur-1].Turn == s.Turn {
		cur--
	}
	budget := w.tokens()
	// The current turn, whole when it fits: its user message, then the
	// newest messages that fit, never starting with a tool result whose
	// call was cut.
	current := msgs[cur:]
	used := 0
	for i := range current {
		used += messageTokens(&current[i])
	}
	if used > budget && len(current) > 1 {
		keep := messageTokens(&current[0])
		from := len(current)
		for from > 1 && keep+messageTokens(&current[from-1]) <= budget {
			from--
			keep += messageTokens(&current[from])
		}
		for from < len(current) && current[from].Role == RoleTool {
			keep -= messageTokens(&current[from])
			from++
		}
		trimmed := make([]Message, 0, 1+len(current)-from)
		trimmed = append(trimmed, current[0])
		current = append(trimmed, current[from:]...)
		used = keep
	}
	// Earlier turns' text, newest first, within what is left.
	limit := w.messages()
	start, shown := cur, 0
	for i := cur - 1; i >= s.SummaryUpTo-s.MessagesFrom && shown < limit; i-- {
		m := &msgs[i]
		if !earlierText(m) {
			continue
		}
		t := messageTokens(m)
		if used+t > budget {
			break
		}
		used += t
		shown++
		start = i
	}
	out := make([]Message, 0, shown+len(current))
	for i := start; i < cur; i++ {
		if earlierText(&msgs[i]) {
			out = append(out, Message{Role: msgs[i].Role, Content: msgs[i].Content, Turn: msgs[i].Turn})
		}
	}
	return append(out, current...)
}

// summaryView is the summaries a turn starts with: the model's, of the
// turns up to modelTurn, and the extractive one after it, of the
// messages before upTo.
type summaryView struct {
	model     string
	modelTurn int
	summary   string
	upTo      int
}

// adopt takes the stored model summary sum into v. When the extractive
// summary had gone further, its part after the model's is written again.
func (w *Window) adopt(msgs []Message, v summaryView, sum storedSummary) summaryView {
	from := turnStart(msgs, sum.Turn)
	v.model, v.modelTurn = sum.Text, sum.Turn
	if from >= v.upTo {
		v.summary, v.upTo = "", from
		return v
	}
	var older []Message
	for i := from; i < v.upTo; i++ {
		if earlierText(&msgs[i]) {
			older = append(older, msgs[i])
		}
	}
	v.summary = extractive("", older, w.summaryTokens())
	return v
}

// fold moves earlier turns out of the window into the extractive
// summary once they outgrow it, keeping about the newest half (whole
// turns). It runs before the new turn's message is added. It returns
// the view with the new summary and the index it covers up to, or ok
// false when nothing moves.
func (w *Window) fold(msgs []Message, v summaryView) (summaryView, bool) {
	var idx []int
	tokens := 0
	for i := v.upTo; i < len(msgs); i++ {
		if earlierText(&msgs[i]) {
			idx = append(idx, i)
			tokens += messageTokens(&msgs[i])
		}
	}
	if len(idx) <= w.messages() && tokens <= w.tokens()/2 {
		return v, false
	}
	// Few messages over the token budget keep fewer than half the
	// message cap: there are not that many to keep.
	keep := min(w.messages()/2, len(idx))
	for keep > 0 && tokensFrom(msgs, idx[len(idx)-keep:]) > w.tokens()/2 {
		keep--
	}
	cut := len(msgs)
	if keep > 0 {
		// Keep whole turns: the window starts at a turn's first message.
		cut = idx[len(idx)-keep]
		for cut > v.upTo && msgs[cut-1].Turn == msgs[cut].Turn {
			cut--
		}
	}
	var older []Message
	for _, i := range idx {
		if i < cut {
			older = append(older, msgs[i])
		}
	}
	if len(older) == 0 {
		return v, false
	}
	v.summary, v.upTo = extractive(v.summary, older, w.summaryTokens()), cut
	return v, true
}

func tokensFrom(msgs []Message, idx []int) int {
	n := 0
	for _, i := range idx {
		n += messageTokens(&msgs[i])
	}
	return n
}

// extractive appends a line per message to the previous summary and keeps
// the newest lines within budget tokens.
func extractive(previous string, older []Message, budget int) string {
	var lines []string
	if previous != "" {
		lines = strings.Split(previous, "\n")
	}
	for _, m := range older {
		who := "User"
		if m.Role == RoleAssistant {
			who = "Assistant"
		}
		lines = append(lines, "- "+who+": "+clip(strings.Join(strings.Fields(m.Content), " "), 200))
	}
	total := 0
	from := len(lines)
	for from > 0 && total+estimateTokens(lines[from-1]) <= budget {
		from--
		total += estimateTokens(lines[from])
	}
	return strings.Join(lines[from:], "\n")
}

// clip shortens s to at most n bytes, on a rune boundary, marking the cut.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return textcut.Head(s, n) + "…"
}

// toLLM converts messages to langchaingo's form, after a system message.
func toLLM(system string, msgs []Message) []llms.MessageContent {
	out := make([]llms.MessageContent, 0, len(msgs)+1)
	// The messages of one part, nearly all, share one array of parts
	// rather than make one each at every model call; each part is capped
	// at its own, so an append to one message's parts copies them.
	parts := make([]llms.ContentPart, 0, len(msgs)+1)
	one := func(role llms.ChatMessageType, p llms.ContentPart) {
		parts = append(parts, p)
		n := len(parts)
		out = append(out, llms.MessageContent{Role: role, Parts: parts[n-1 : n : n]})
	}
	if system != "" {
		one(llms.ChatMessageTypeSystem, llms.TextContent{Text: system})
	}
	for i := range msgs {
		m := &msgs[i]
		switch m.Role {
		case RoleUser:
			one(llms.ChatMessageTypeHuman, llms.TextContent{Text: m.Content})
		case RoleAssistant:
			if len(m.ToolCalls) == 0 {
				if m.Content != "" {
					one(llms.ChatMessageTypeAI, llms.TextContent{Text: m.Content})
				}
				continue
			}
			mc := llms.MessageContent{Role: llms.ChatMessageTypeAI}
			if m.Content != "" {
				mc.Parts = append(mc.Parts, llms.TextContent{Text: m.Content})
			}
			for _, c := range m.ToolCalls {
				mc.Parts = append(mc.Parts, llms.ToolCall{ID: c.ID, Type: "function",
					FunctionCall: &llms.FunctionCall{Name: c.Tool, Arguments: string(argsOrEmpty(c.Args))}})
			}
			out = append(out, mc)
		case RoleTool:
			one(llms.ChatMessageTypeTool, llms.ToolCallResponse{ToolCallID: m.ToolCallID, Name: m.Name, Content: m.Content})
		}
	}
	return out
}

// hasToolMessages reports whether msgs hold tool calls or results, which
// some providers accept only alongside tool definitions.
func hasToolMessages(msgs []Message) bool {
	for i := range msgs {
		if msgs[i].Role == RoleTool || len(msgs[i].ToolCalls) > 0 {
			return true
		}
	}
	return false
}
