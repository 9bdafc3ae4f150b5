package main

import (
	"context"
	"errors"
	"log/slog"

	"github.com/trellis-ai/trellis/internal/jobs"
	"github.com/trellis-ai/trellis/store"
	"github.com/trellis-ai/trellis/webhooks"
)

// openWebhooks makes the webhooks service over the record and registers
// its jobs with ws. It is made without endpoints too: starting it then
// clears the routes a previous configuration left.
func openWebhooks(cfg serveConfig, st store.Store, ws *jobs.Workers, log *slog.Logger) (*webhooks.Service, error) {
	rec, ok := st.(store.Webhooks)
	if !ok {
		return nil, errors.New("webhooks: the store keeps no deliveries")
	}
	return webhooks.New(webhooks.Config{Store: rec, Settings: cfg.webhooks, Logger: log}, ws)
}

// startWebhooks records the routes and hands deliveries to the queue
// until serve's cleanup, which stops that before the queue stops.
func startWebhooks(ctx context.Context, hooks *webhooks.Service, queue *jobs.Queue, cleanup *closers) error {
	hctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	cleanup.add(func() {
		cancel()
		hooks.Wait()
	})
	return hooks.Start(hctx, queue)
}
