package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/tmc/langchaingo/llms"

	"github.com/trellis-ai/trellis/internal/jobs"
	"github.com/trellis-ai/trellis/llm"
	"github.com/trellis-ai/trellis/runs"
	"github.com/trellis-ai/trellis/store"
)

// titleJob is a conversation to title after its first answer. Its
// arguments hold ids only, none of the user's words.
type titleJob struct {
	UserID         string `json:"user_id"`
	ConversationID string `json:"conversation_id"`
}

func (titleJob) Kind() string { return "conversation_title" }

// titler titles conversations with the fast model after their first
// answer, as durable jobs: off the answer's path, and not lost to a
// crash. A conversation has the title its first message gave it (see
// runs) until then, and keeps it if the model fails.
type titler struct {
	model llms.Model
	log   *slog.Logger
	queue *jobs.Queue   // set by wire
	runs  *runs.Service // set by wire
}

// titleAttempts bounds the attempts at one title: it is worth a few
// retries of a model that failed, not a day of them.
const titleAttempts = 5

// openTitler registers the title jobs with ws when the fast model can
// write titles, and says how conversations are titled. The offline model
// cannot; a scripted default's script drives the agent, not titles (a
// scripted model configured as "fast" of its own plays titles).
func openTitler(ctx context.Context, models *llm.Registry, ws *jobs.Workers, log *slog.Logger) (*titler, string, error) {
	mc, err := models.Resolve("fast")
	if err != nil {
		return nil, "", err
	}
	if mc.Provider == llm.ProviderOffline || mc.Provider == llm.ProviderScripted && mc.ID == models.Default().ID {
		return nil, "from the first message", nil
	}
	m, err := models.Model(ctx, "fast")
	if err != nil {
		return nil, "", fmt.Errorf("titles: the fast model: %w", err)
	}
	t := &titler{model: m, log: log}
	jobs.Handle(ws, t.work, jobs.HandleOptions{Timeout: time.Minute})
	return t, "by " + mc.ID, nil
}

// wire gives the titler the queue its jobs go to and the run service
// that titles.
func (t *titler) wire(queue *jobs.Queue, svc *runs.Service) { t.queue, t.runs = queue, svc }

// enqueue is runs.Config.Title: one job per conversation, enqueued under
// a context of its own, bounded, as the run that answered ends.
func (t *titler) enqueue(ctx context.Context, userID, conversationID string) {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	if _, err := t.queue.Enqueue(ctx, titleJob{UserID: userID, ConversationID: conversationID},
		jobs.EnqueueOptions{Unique: true, MaxAttempts: titleAttempts}); err != nil {
		t.log.LogAttrs(ctx, slog.LevelWarn, "titles: a title not enqueued; the conversation keeps the one its first message gave",
			slog.String("conversation_id", conversationID), slog.Any("error", err))
	}
}

// work is the title job. A conversation deleted, or being erased, needs
// no title; a reply that is no title keeps the first one.
func (t *titler) work(ctx context.Context, j jobs.Job[titleJob]) error {
	err := t.runs.TitleConversation(ctx, t.model, j.Args.UserID, j.Args.ConversationID)
	switch {
	case errors.Is(err, store.ErrNotFound), errors.Is(err, store.ErrErasing):
		return nil
	case errors.Is(err, runs.ErrUnusableTitle):
		return jobs.Permanent(err)
	}
	return err
}
