package nodes

import (
	"context"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/trellis-ai/trellis/events"
)

// stream closes the response: it emits response.done with the whole
// answer, the sources it cites and the run's usage, appends the assistant
// message to the conversation, and calls the hooks (persistence, then
// learning) before it says the answer.
func (a *Agent) stream(ctx context.Context, s ChatState) (ChatState, error) {
	ans, content := answerOf(s)
	if err := a.say(ctx, s, ans, content, func(done *events.ResponseDone) { _ = emit(ctx, done) }); err != nil {
		return ChatState{}, err
	}
	msg := ans.Message
	// Each set only when it changes: a field an update sets is written to
	// the turn's last checkpoint again, and write's answer and outcome
	// are in the one before it already (the answer in the message below
	// too).
	var upd ChatState
	if content != s.FinalResponse {
		upd.FinalResponse = content
	}
	if ans.Outcome != s.Outcome {
		upd.Outcome = ans.Outcome
	}
	if ask, ok := a.askSummary(ctx, &s, &msg); ok {
		upd.SummaryAsk = ask
	}
	if ans.Outcome != OutcomeClientTools {
		upd.Messages = []Message{msg}
	}
	if len(ans.Citations) > 0 { // an empty list would be stored as [] and read back non-nil
		upd.Citations = ans.Citations
	}
	return upd, nil
}

// answerOf is the answer that stream gives for the state s, and the text
// response.done shows. Given the state stream left (a turn's end), it is
// the same answer again: stream's update keeps what it was made from.
func answerOf(s ChatState) (Answer, string) {
	content, outcome := s.FinalResponse, s.Outcome
	if s.Reflection.Assessment == AssessDirectResponse && outcome == "" {
		outcome = OutcomeDirect
		content = directText(s.DirectResponses)
	}
	if outcome == "" {
		outcome = OutcomeAnswered
	}
	msg := Message{Role: RoleAssistant, Content: content, Turn: s.Turn}
	if outcome == OutcomeClientTools && len(s.Messages) > 0 {
		// The supervisor's message with the calls is the answer, and is
		// in the conversation already.
		msg = s.Messages[len(s.Messages)-1]
	}
	return Answer{
		ConversationID: s.Input.ConversationID, UserID: s.Input.UserID, RequestID: s.Input.RequestID, Query: s.Input.Message,
		Message: msg, Outcome: outcome, Citations: cited(content, s.DataChunks), Usage: s.TurnUsage, ToolResults: s.ToolResults, NoMemory: s.Input.NoMemory,
	}, content
}

// say calls the hooks with the answer, then says it: done sends its
// response.done, unless s is a sub-agent's (whose answer is its task
// call's result, in subagent.end).
func (a *Agent) say(ctx context.Context, s ChatState, ans Answer, content string, done func(*events.ResponseDone)) error {
	// The hook hears the answer before response.done says it, so that it
	// is stored no later than the event: a client that reads the event
	// finds the message, and an answer that cannot be stored fails the
	// step (a run whose database went away goes on from its last
	// checkpoint once it is back) rather than being shown and lost.
	if h := a.opts.Hooks.OnAnswer; h != nil {
		if err := h(ctx, ans); err != nil {
			return fmt.Errorf("nodes: store the answer of conversation %s: %w", s.Input.ConversationID, err)
		}
	}
	// Learning is asked for before the answer is said, so that an answer
	// a client has seen is one memory will learn from, crash or not.
	if h := a.opts.Hooks.Learn; h != nil && ans.Outcome != OutcomeClarify && ans.Outcome != OutcomeClientTools && !s.Input.NoMemory {
		h(ctx, ans)
	}
	if s.Input.Namespace == "" {
		done(&events.ResponseDone{Content: content, Citations: ans.Citations, Usage: sub(s.TurnUsage, s.UsageBase), Budget: budgetFrom(ctx).usage()})
	}
	return nil
}

// directText is what operators showed the user, as the message to keep.
func directText(ds []DirectResponse) string {
	parts := make([]string, 0, len(ds))
	for _, d := range ds {
		switch d.ContentType {
		case "image":
			parts = append(parts, "[image]")
		case "widget":
			parts = append(parts, "[widget: "+d.WidgetType+"]")
		default:
			parts = append(parts, d.Content)
		}
	}
	return strings.Join(parts, "\n\n")
}

var citeRef = regexp.MustCompile(`\[(\d+)\]`)

// cited returns the chunks the text cites as [n], in number order; never
// nil, so response.done always has a list.
func cited(text string, chunks []DataChunk) []events.Citation {
	out := []events.Citation{}
	if len(chunks) == 0 || !strings.Contains(text, "[") {
		return out
	}
	seen := map[int]bool{}
	for _, m := range citeRef.FindAllStringSubmatch(text, -1) {
		if n, err := strconv.Atoi(m[1]); err == nil {
			seen[n] = true
		}
	}
	for _, c := range chunks {
		if seen[c.Number] {
			ci := events.Citation{Number: c.Number, Source: c.Source, Title: c.Title, Text: clip(c.Text, 500)}
			if d := c.Document; d != nil {
				// A passage is cited whole, so its offsets describe its text.
				ci = events.Citation{Number: c.Number, Text: c.Text, DocumentID: d.DocumentID, Filename: d.Filename,
					Chunk: d.Chunk, Start: d.Start, End: d.End}
			}
			out = append(out, ci)
		}
	}
	return out
}

// sub is a - b, field by field.
func sub(a, b events.Usage) events.Usage {
	return events.Usage{
		InputTokens:      a.InputTokens - b.InputTokens,
		OutputTokens:     a.OutputTokens - b.OutputTokens,
		ThinkingTokens:   a.ThinkingTokens - b.ThinkingTokens,
		CacheReadTokens:  a.CacheReadTokens - b.CacheReadTokens,
		CacheWriteTokens: a.CacheWriteTokens - b.CacheWriteTokens,
		TotalTokens:      a.TotalTokens - b.TotalTokens,
	}
}
