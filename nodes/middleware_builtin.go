package nodes

import (
	"context"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/trellis-ai/trellis/graph"
	"github.com/trellis-ai/trellis/internal/growstack"
	"github.com/trellis-ai/trellis/llm"
)

// The built-in middleware: what the agent's nodes used to do by name.

// windowMiddleware is the context window and the rolling summaries: at
// a turn's start it adopts a model summary stored for the turn's ask
// (see Window.AskSummary; the read bounded by Options.ContextTimeout)
// and folds earlier turns that outgrew the window into the extractive
// summary, it puts the summaries in every system prompt, and it narrows
// every model call's messages to the window (see Window).
type windowMiddleware struct {
	w       *Window
	saver   graph.Checkpointer
	timeout time.Duration
	log     *slog.Logger
}

func (windowMiddleware) Name() string { return "window" }

func (m windowMiddleware) StartTurn(ctx context.Context, s *ChatState) (func(*ChatState), error) {
	// The view's upTo is an index in s.Messages, the state's an index in
	// the whole conversation.
	from := s.MessagesFrom
	v := summaryView{model: s.ModelSummary, modelTurn: s.ModelSummaryTurn, summary: s.Summary, upTo: max(0, s.SummaryUpTo-from)}
	changed := false
	if ask := s.SummaryAsk; ask.ID != "" && ask.Turn > s.ModelSummaryTurn && m.saver != nil {
		conv := s.Input.ConversationID
		sum, err := bounded(ctx, m.timeout, func(ctx context.Context) (storedSummary, error) {
			sum, _, err := loadSummary(ctx, m.saver, conv)
			return sum, err
		})
		switch {
		case err != nil:
			// The extractive summary bounds the window meanwhile; the next
			// turn reads again.
			m.log.LogAttrs(ctx, slog.LevelWarn, "window: the stored summary could not be read",
				slog.String("conversation_id", conv), slog.Any("error", err))
		case sum.Ask == ask.ID:
			v, changed = m.w.adopt(s.Messages, v, sum), true
		}
	}
	if f, folded := m.w.fold(s.Messages, v); folded {
		v, changed = f, true
	}
	cut, page := m.pageOut(ctx, s, v)
	if !changed && cut == 0 {
		return nil, nil
	}
	return func(st *ChatState) {
		st.ModelSummary, st.ModelSummaryTurn, st.Summary, st.SummaryUpTo = v.model, v.modelTurn, v.summary, from+v.upTo
		if cut > 0 {
			// A copy, so the paged messages' memory goes too.
			st.Messages = slices.Clone(st.Messages[cut:])
			st.MessagesFrom, st.HistoryPage = from+cut, page
		}
	}, nil
}

// pageOut moves the oldest messages of the root agent's state that the
// summaries in v cover into a page of history (see history.go); it
// returns how many it moved and the page. A page that cannot be stored
// is logged and the messages stay, for a later turn to move.
func (m windowMiddleware) pageOut(ctx context.Context, s *ChatState, v summaryView) (int, string) {
	if m.saver == nil || s.Input.Namespace != "" {
		return 0, ""
	}
	cut := pageOut(s.Messages, v.upTo, m.w.AskSummary != nil, v.modelTurn, s.SummaryAsk.Turn)
	if cut == 0 {
		return 0, ""
	}
	conv := s.Input.ConversationID
	page, err := savePage(ctx, m.saver, conv, s.HistoryPage, s.Messages[:cut])
	if err != nil {
		m.log.LogAttrs(ctx, slog.LevelWarn, "window: a page of history could not be stored; the messages stay in the state",
			slog.String("conversation_id", conv), slog.Any("error", err))
		return 0, ""
	}
	return cut, page
}

// summaryHeading introduces the summaries in the system prompt.
const summaryHeading = "\n\n## Earlier in this conversation (summary)\n"

func (windowMiddleware) Prompt(b *strings.Builder, s *ChatState, _ string) {
	if s.ModelSummary == "" && s.Summary == "" {
		return
	}
	b.WriteString(summaryHeading)
	b.WriteString(s.ModelSummary)
	if s.ModelSummary != "" && s.Summary != "" {
		b.WriteByte('\n')
	}
	b.WriteString(s.Summary)
}

func (m windowMiddleware) BeforeModel(_ context.Context, c *ModelCall) error {
	c.Messages = m.w.view(c.State)
	return nil
}

// documentsMiddleware is the documents integration: at a turn's start it
// loads summaries of the conversation's documents (bounded by
// Options.ContextTimeout), and it lists them in the supervisor's prompt
// so it reads them with the document tools before other sources.
type documentsMiddleware struct {
	src     DocumentSource
	timeout time.Duration
}

func (documentsMiddleware) Name() string { return "documents" }

func (m documentsMiddleware) StartTurn(ctx context.Context, s *ChatState) (func(*ChatState), error) {
	if s.Input.NoDocuments {
		return nil, nil
	}
	user, conv, ids := s.Input.UserID, s.Input.ConversationID, s.Input.DocumentIDs
	docs, err := bounded(ctx, m.timeout, func(ctx context.Context) ([]DataSummary, error) {
		return m.src.DocumentSummaries(ctx, user, conv, ids)
	})
	if len(docs) == 0 {
		return nil, err
	}
	return func(st *ChatState) { st.DataSummaries = docs }, err
}

// documentsIntro tells the supervisor what the document list is for.
const documentsIntro = "The user uploaded these documents (id, file name, status: summary). " +
	"When the question may be answered by them, check them first — search_documents for passages, " +
	"load_document to read one — before other tools or your own knowledge.\n"

func (documentsMiddleware) Prompt(b *strings.Builder, s *ChatState, node string) {
	if node != NodeSupervisor || len(s.DataSummaries) == 0 {
		return
	}
	b.WriteString("\n\n" + llm.DocumentsHeading + "\n")
	b.WriteString(documentsIntro)
	for _, d := range s.DataSummaries {
		b.WriteString("- " + d.DocumentID)
		if d.Title != "" {
			b.WriteString(" (" + d.Title + ")")
		}
		if d.Status != "" {
			b.WriteString(" [" + d.Status + "]")
		}
		b.WriteString(": ")
		b.WriteString(d.Summary)
		b.WriteByte('\n')
	}
}

// cognitionMiddleware is the user's cognitive context: loaded at a turn's
// start through Options.Cognition (bounded by Options.ContextTimeout) and
// shown to the supervisor, and to the writer, which fits length and
// register to the user. A turn with Input.NoMemory loads nothing.
type cognitionMiddleware struct {
	load    func(ctx context.Context, userID, query string) (string, error)
	timeout time.Duration
}

func (cognitionMiddleware) Name() string { return "cognition" }

func (m cognitionMiddleware) StartTurn(ctx context.Context, s *ChatState) (func(*ChatState), error) {
	if s.Input.NoMemory {
		return nil, nil
	}
	user, query := s.Input.UserID, s.Input.Message
	c, err := bounded(ctx, m.timeout, func(ctx context.Context) (string, error) { return m.load(ctx, user, query) })
	if c == "" {
		return nil, err
	}
	return func(st *ChatState) { st.Cognitive = c }, err
}

func (cognitionMiddleware) Prompt(b *strings.Builder, s *ChatState, node string) {
	if (node != NodeSupervisor && node != NodeWrite) || s.Cognitive == "" {
		return
	}
	b.WriteString("\n\n## About the user\n")
	b.WriteString(s.Cognitive)
	b.WriteByte('\n')
}

// bounded runs load and waits for it at most timeout; a load that ignores
// its context is abandoned (its result, when it comes, is dropped).
func bounded[T any](nodeCtx context.Context, timeout time.Duration, load func(ctx context.Context) (T, error)) (T, error) {
	// The load runs under a context of its own, cancelled with the
	// node's: one that overstays is abandoned, and must then hold nothing
	// of the node's context, which the engine reuses once the node
	// returns (even a deadline's timer reads its parent after waking us).
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	stop := context.AfterFunc(nodeCtx, cancel)
	defer stop()
	type result struct {
		v   T
		err error
	}
	ch := make(chan result, 1)
	go func() {
		growstack.ForRead()
		var r result
		defer func() { ch <- r }()
		defer caught(&r.err)
		r.v, r.err = load(ctx)
	}()
	select {
	case r := <-ch:
		return r.v, r.err
	case <-ctx.Done():
		var zero T
		return zero, ctx.Err()
	}
}
