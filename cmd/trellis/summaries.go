package main

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/trellis-ai/trellis/graph"
	"github.com/trellis-ai/trellis/internal/jobs"
	"github.com/trellis-ai/trellis/llm"
	"github.com/trellis-ai/trellis/nodes"
)

// summaryArgs is the job that writes a conversation's model summary of
// its older turns (see nodes.Window.AskSummary). It carries the ask
// only: the turns are read from the conversation's checkpoints when it
// runs. A job enqueued before Turn was kept has 0, and is never taken
// for unseen.
type summaryArgs struct {
	ConversationID string `json:"conversation_id"`
	Ask            string `json:"ask"`
	Turn           int    `json:"turn,omitempty"`
}

func (summaryArgs) Kind() string { return "conversation_summary" }

// summaryAttempts is how often the fast model is tried for one summary;
// the last attempt stores the extractive summary when the model fails.
const summaryAttempts = 3

// summaries has the fast model summarise long conversations' older turns
// as durable jobs, off the answer path: a job enqueued as a turn ends
// survives the process, and the next process works it.
type summaries struct {
	queue *jobs.Queue
	log   *slog.Logger
}

// openSummaries registers the summary job with ws, worked by an agent of
// its own over the conversations' checkpointer (only its Summarize is
// used); Attach the queue before asking.
func openSummaries(models *llm.Registry, saver graph.Checkpointer, window nodes.Window, ws *jobs.Workers, log *slog.Logger) (*summaries, error) {
	a, err := nodes.New(models, nil, saver, nodes.Options{Window: window, Logger: log})
	if err != nil {
		return nil, fmt.Errorf("summaries: %w", err)
	}
	jobs.Handle(ws, func(ctx context.Context, j jobs.Job[summaryArgs]) error {
		return a.Summarize(ctx, j.Args.ConversationID, nodes.SummaryAsk{ID: j.Args.Ask, Turn: j.Args.Turn}, j.Attempt >= j.MaxAttempts)
	}, jobs.HandleOptions{})
	return &summaries{log: log}, nil
}

// Attach gives the summaries the queue their jobs go to.
func (s *summaries) Attach(q *jobs.Queue) { s.queue = q }

// ask is the agent's Window.AskSummary: the ask as a job, enqueued under
// a context of its own (the run's may end as the answer is sent) and
// bounded, so the stream node never waits long for it.
func (s *summaries) ask(ctx context.Context, conversationID string, ask nodes.SummaryAsk) error {
	if s.queue == nil {
		return fmt.Errorf("summaries: no queue attached")
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
	defer cancel()
	_, err := s.queue.Enqueue(ctx, summaryArgs{ConversationID: conversationID, Ask: ask.ID, Turn: ask.Turn},
		jobs.EnqueueOptions{Unique: true, MaxAttempts: summaryAttempts})
	return err
}
