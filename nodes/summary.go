package nodes

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"time"

	"github.com/tmc/langchaingo/llms"

	"github.com/trellis-ai/trellis/graph"
	"github.com/trellis-ai/trellis/internal/ids"
	"github.com/trellis-ai/trellis/llm"
)

// Model summaries of older turns (see Window.AskSummary). A turn's end
// asks for one once the turns not yet summarised by a model, older than
// the newest half window, outgrow Window.SummarizeAt; the service runs
// Agent.Summarize for the ask later, off the answer path (a durable
// job), and Summarize stores the summary in the conversation's own
// thread, in a namespace of its own. The next turn to start adopts it
// into the state, where a resumed or recovered turn finds it in its
// checkpoint without reading anything more, and a cold turn reads it in
// the same checkpointer as the conversation. Until then, and when the
// model fails, the extractive summary bounds the window as before.

// SummaryAsk is one request for a model's summary of a conversation's
// turns up to Turn, on top of the model summary the state holds. ID
// names it: a summary is adopted only by the branch of the conversation
// that asked for it (an edit makes another), and only for its latest ask.
type SummaryAsk struct {
	ID   string `json:"id"`
	Turn int    `json:"turn"`
}

// storedSummary is a model summary as the checkpointer keeps it.
type storedSummary struct {
	Ask  string `json:"ask"`
	Turn int    `json:"turn"`
	Text string `json:"text"`
	// Fallback marks the extractive summary written once the model had
	// failed every attempt.
	Fallback bool `json:"fallback,omitempty"`
}

// summaryNamespace is where a conversation's thread keeps its stored
// summary: beside the agent graph's checkpoints (namespace ""), deleted
// with them, and apart from any subgraph's ("node:task" paths).
const (
	summaryNamespace = "summary"
	summaryField     = "summary"
)

// loadSummary reads the conversation's stored summary; ok false when it
// has none.
func loadSummary(ctx context.Context, saver graph.Checkpointer, conversationID string) (sum storedSummary, ok bool, err error) {
	saved, err := saver.Get(ctx, graph.Ref{ThreadID: conversationID, Namespace: summaryNamespace})
	if errors.Is(err, graph.ErrCheckpointNotFound) {
		return storedSummary{}, false, nil
	}
	if err != nil {
		return storedSummary{}, false, fmt.Errorf("nodes: load the summary of %s: %w", conversationID, err)
	}
	for _, b := range saved.Blobs {
		if b.Field == summaryField && b.Version == saved.Checkpoint.Versions[summaryField] {
			if err := json.Unmarshal(b.Data, &sum); err != nil {
				return storedSummary{}, false, fmt.Errorf("nodes: decode the summary of %s: %w", conversationID, err)
			}
			return sum, true, nil
		}
	}
	return storedSummary{}, false, fmt.Errorf("nodes: the summary of %s has no text", conversationID)
}

// saveSummary stores sum as the conversation's summary.
func saveSummary(ctx context.Context, saver graph.Checkpointer, conversationID string, sum storedSummary) error {
	data, err := json.Marshal(sum)
	if err != nil {
		return fmt.Errorf("nodes: encode the summary of %s: %w", conversationID, err)
	}
	now := time.Now()
	id := ids.Sortable(now)
	cp := graph.Checkpoint{ThreadID: conversationID, Namespace: summaryNamespace, ID: id, Step: sum.Turn,
		Source: graph.SourceUpdate, CreatedAt: now, Versions: map[string]string{summaryField: id}}
	if err := saver.Put(ctx, cp, []graph.Blob{{Field: summaryField, Version: id, Data: data}}); err != nil {
		return fmt.Errorf("nodes: store the summary of %s: %w", conversationID, err)
	}
	return nil
}

// askSummary asks for a model summary at the end of a turn whose
// earlier turns, beyond what a model summarised or was asked to and
// older than the newest half window, outgrew Window.SummarizeAt; it
// returns the ask to record, or ok false. msg is the turn's answer, not
// yet in s. A failed ask is logged: the extractive summary goes on
// bounding the window, and a later turn asks again.
func (a *Agent) askSummary(ctx context.Context, s *ChatState, msg *Message) (SummaryAsk, bool) {
	w := &a.opts.Window
	if w.AskSummary == nil || s.Input.Namespace != "" {
		return SummaryAsk{}, false
	}
	covered := max(s.ModelSummaryTurn, s.SummaryAsk.Turn)
	from := turnStart(s.Messages, covered)
	if summarized(s.Messages[from:], msg, s.Turn) <= w.summarizeAt() {
		return SummaryAsk{}, false
	}
	// Keep out about the newest half of the window, whole turns, as fold
	// does: the model summarises what the window is about to lose.
	keep, kept, upTo := w.messages()/2, 0, s.Turn
	if earlierText(msg) && keep > 0 {
		kept, keep = messageTokens(msg), keep-1
	}
	for i := len(s.Messages) - 1; i >= from && upTo > covered; i-- {
		m := &s.Messages[i]
		if !earlierText(m) {
			continue
		}
		if keep == 0 || kept+messageTokens(m) > w.tokens()/2 {
			break
		}
		kept += messageTokens(m)
		keep--
		upTo = m.Turn - 1
	}
	// What the summary would fold in must itself reach SummarizeAt:
	// when the kept half is about as large, counting it would ask again
	// at every turn, each ask a model call that folds in a turn or two.
	if upTo <= covered || summarized(s.Messages[from:], msg, upTo) < w.summarizeAt() {
		return SummaryAsk{}, false
	}
	ask := SummaryAsk{ID: ids.New(), Turn: upTo}
	if err := w.AskSummary(ctx, s.Input.ConversationID, ask); err != nil {
		a.log.LogAttrs(ctx, slog.LevelWarn, "window: no summary asked for; the extractive one goes on",
			slog.String("conversation_id", s.Input.ConversationID), slog.Any("error", err))
		return SummaryAsk{}, false
	}
	return ask, true
}

// summarized is the estimated tokens of the earlier text among msgs and
// the turn's answer msg that belongs to turns up to upTo.
func summarized(msgs []Message, msg *Message, upTo int) int {
	n := 0
	for i := range msgs {
		if msgs[i].Turn <= upTo && earlierText(&msgs[i]) {
			n += messageTokens(&msgs[i])
		}
	}
	if msg.Turn <= upTo && earlierText(msg) {
		n += messageTokens(msg)
	}
	return n
}

// turnStart returns the index of the first message after turn, which is
// len(msgs) when there is none. Messages are in turn order.
func turnStart(msgs []Message, turn int) int {
	lo, hi := 0, len(msgs)
	for lo < hi {
		mid := int(uint(lo+hi) >> 1)
		if msgs[mid].Turn <= turn {
			lo = mid + 1
		} else {
			hi = mid
		}
	}
	return lo
}

// errEmptySummary: the summary model answered with no text.
var errEmptySummary = errors.New("the summary model wrote nothing")

// ErrSummaryModel wraps the summary model's failure in Summarize, for a
// caller that retries: its last attempt passes fallback.
var ErrSummaryModel = errors.New("nodes: the summary model failed")

// ErrSummaryAskUnseen is Summarize's error for an ask the conversation's
// stored state does not show yet: the turn asks before the step that
// names the ask is stored, so a job quick to start reads the state
// before it. Trying again shortly finds it.
var ErrSummaryAskUnseen = errors.New("nodes: the turn that asked for the summary has not stored its ask yet")

// Summarize writes the model summary ask asked for (see
// Window.AskSummary): the state's model summary with the turns after it
// up to the ask's, by Window.SummaryModel, stored with the conversation
// for its next turn. It is idempotent, and does nothing for an ask the
// conversation no longer waits for (a later ask replaced it, an edit
// left it on another branch, the conversation was deleted). When the
// model fails it returns an error matching ErrSummaryModel, unless
// fallback is set: then it stores the extractive summary instead, so
// the ask is answered. An ask for a later turn than the state's latest
// is one the state does not show yet: that is ErrSummaryAskUnseen,
// unless fallback is set (a last try gives up on it).
func (a *Agent) Summarize(ctx context.Context, conversationID string, ask SummaryAsk, fallback bool) error {
	snap, err := a.State(ctx, conversationID)
	if errors.Is(err, ErrNoConversation) {
		return nil
	}
	if err != nil {
		return err
	}
	s := &snap.State
	if s.SummaryAsk.ID != ask.ID {
		if s.SummaryAsk.Turn < ask.Turn && !fallback {
			return fmt.Errorf("%w: turn %d, the state's latest ask is of turn %d", ErrSummaryAskUnseen, ask.Turn, s.SummaryAsk.Turn)
		}
		return nil
	}
	if have, ok, err := loadSummary(ctx, a.saver, conversationID); err != nil {
		return err
	} else if ok && have.Ask == ask.ID {
		return nil
	}
	w := &a.opts.Window
	var older []Message
	from, to := turnStart(s.Messages, s.ModelSummaryTurn), turnStart(s.Messages, s.SummaryAsk.Turn)
	for i := from; i < to; i++ {
		if earlierText(&s.Messages[i]) {
			older = append(older, s.Messages[i])
		}
	}
	sum := storedSummary{Ask: ask.ID, Turn: s.SummaryAsk.Turn}
	text, err := a.modelSummary(ctx, s.ModelSummary, older)
	switch {
	case err == nil:
		sum.Text = text
	case fallback:
		a.log.LogAttrs(ctx, slog.LevelWarn, "window: the summary model failed; the summary is extractive",
			slog.String("conversation_id", conversationID), slog.Any("error", err))
		sum.Text, sum.Fallback = extractive(s.ModelSummary, older, w.summaryTokens()), true
	default:
		return fmt.Errorf("%w: %w", ErrSummaryModel, err)
	}
	if err := saveSummary(ctx, a.saver, conversationID, sum); err != nil {
		return err
	}
	// A conversation deleted (or its user erased) while the model wrote
	// must not get its words back: the summary stored after the delete
	// goes too.
	if _, err := a.State(ctx, conversationID); errors.Is(err, ErrNoConversation) {
		return a.Delete(ctx, conversationID)
	}
	return nil
}

// modelSummary has the summary model fold older into previous, a part
// of at most Window.Tokens at a time.
func (a *Agent) modelSummary(ctx context.Context, previous string, older []Message) (string, error) {
	w := &a.opts.Window
	model, err := a.models.Model(ctx, w.summaryModel())
	if err != nil {
		return "", err
	}
	ctx = llm.WithNode(ctx, NodeSummarize)
	system := conversationSummaryPrompt(w.summaryTokens())
	summary := previous
	for len(older) > 0 {
		n, used := 0, 0
		for n < len(older) && (n == 0 || used+messageTokens(&older[n]) <= w.tokens()) {
			used += messageTokens(&older[n])
			n++
		}
		var b strings.Builder
		if summary != "" {
			b.WriteString(llm.SummarySoFarLabel + "\n" + summary + "\n\n")
		}
		b.WriteString(llm.TranscriptLabel + "\n")
		writeTranscript(&b, older[:n], 0)
		resp, err := model.GenerateContent(ctx, []llms.MessageContent{
			llms.TextParts(llms.ChatMessageTypeSystem, system),
			llms.TextParts(llms.ChatMessageTypeHuman, b.String()),
		})
		if err != nil {
			return "", err
		}
		text := strings.TrimSpace(llm.TextFrom(resp))
		if text == "" {
			return "", errEmptySummary
		}
		// A summary far over its budget is cut rather than kept whole: it
		// is in every later prompt.
		summary = clip(text, 8*w.summaryTokens())
		older = older[n:]
	}
	return summary, nil
}

// NodeSummarize names the model calls that write summaries (llm.WithNode).
const NodeSummarize = "summarize"

// conversationSummaryPrompt asks for a summary of at most tokens.
func conversationSummaryPrompt(tokens int) string {
	return llm.ConversationSummaryHeading + "\n" +
		"Fold the turns below into the summary so far, for an assistant that will no longer see them. " +
		"Keep every fact a later turn may need: names, numbers, dates, decisions, preferences and open questions, " +
		"with who said them. Drop greetings and chatter. Write short bullet lines, at most " +
		strconv.Itoa(3*tokens/4) + " words in all, and reply with the summary only."
}

// writeTranscript writes msgs as "- User: …" and "- Assistant: …" lines,
// each clipped to limit bytes when limit is positive.
func writeTranscript(b *strings.Builder, msgs []Message, limit int) {
	for i := range msgs {
		m := &msgs[i]
		who := "User"
		if m.Role == RoleAssistant {
			who = "Assistant"
		}
		text := strings.Join(strings.Fields(m.Content), " ")
		if limit > 0 {
			text = clip(text, limit)
		}
		b.WriteString("- " + who + ": " + text + "\n")
	}
}
