package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"time"

	"github.com/trellis-ai/trellis/api/metrics"
	"github.com/trellis-ai/trellis/cognition"
	"github.com/trellis-ai/trellis/internal/jobs"
	"github.com/trellis-ai/trellis/llm"
	"github.com/trellis-ai/trellis/nodes"
	"github.com/trellis-ai/trellis/store"
)

// cognitionConfig is what serve reads about memory.
type cognitionConfig struct {
	off         bool
	budget      time.Duration
	maxMemories int
	ttl         time.Duration
	// learnAfter is cognition.Config.LearnAfter: negative learns at once.
	learnAfter time.Duration
	learnEvery int
}

// cognitionFlags are the memory flags as given.
type cognitionFlags struct {
	on, budget, maxMemories, ttl, learnAfter, learnEvery string
}

// parseCognition reads the memory settings.
func parseCognition(c *cognitionConfig, f cognitionFlags) []error {
	var errs []error
	switch f.on {
	case "off", "false", "0":
		c.off = true
	case "on", "true", "1":
	default:
		errs = append(errs, fmt.Errorf("cognition: %q is not on or off", f.on))
	}
	var err error
	if c.budget, err = time.ParseDuration(f.budget); err != nil || c.budget <= 0 {
		errs = append(errs, fmt.Errorf("cognition-budget: %q is not a positive duration", f.budget))
	}
	if c.maxMemories, err = strconv.Atoi(f.maxMemories); err != nil || c.maxMemories <= 0 {
		errs = append(errs, fmt.Errorf("max-memories: %q is not a positive number", f.maxMemories))
	}
	if c.ttl, err = time.ParseDuration(f.ttl); err != nil || c.ttl <= 0 {
		errs = append(errs, fmt.Errorf("memory-ttl: %q is not a positive duration", f.ttl))
	}
	switch c.learnAfter, err = time.ParseDuration(f.learnAfter); {
	case err != nil || c.learnAfter < 0:
		errs = append(errs, fmt.Errorf("learn-after: %q is not a duration of 0 or more", f.learnAfter))
	case c.learnAfter == 0:
		c.learnAfter = -1
	}
	if c.learnEvery, err = strconv.Atoi(f.learnEvery); err != nil || c.learnEvery < 0 {
		errs = append(errs, fmt.Errorf("learn-every: %q is not a number of 0 or more", f.learnEvery))
	}
	return errs
}

// openCognition builds the cognition service and registers its jobs with
// ws; nil, and what the start line says, when it is off. With a real
// fast model, a model extracts what to remember (through the registry's
// resilience policy); with the offline or a scripted model, the rules do.
func openCognition(ctx context.Context, cfg serveConfig, st store.Store, models *llm.Registry, metrics *metrics.Collector,
	ws *jobs.Workers, log *slog.Logger, cleanup *closers) (*cognition.Service, string, error) {
	if cfg.cognition.off {
		return nil, "off", nil
	}
	rec, ok := st.(cognition.Store)
	if !ok {
		return nil, "", errors.New("cognition: the store keeps no memories")
	}
	// --job-timeout bounds learning too: a learning job a dead process left
	// running is taken again no sooner than its timeout, and until then a
	// user's erasure waits for it.
	ccfg := cognition.Config{Store: rec, Budget: cfg.cognition.budget, MaxMemories: cfg.cognition.maxMemories,
		TTL: cfg.cognition.ttl, LearnAfter: cfg.cognition.learnAfter, LearnEvery: cfg.cognition.learnEvery, LearnTimeout: min(cfg.jobTimeout, cognition.DefaultLearnTimeout),
		OnContextFailure: metrics.CognitionFailed, Logger: log}
	desc := "on, learnt by rules"
	mc, err := models.Resolve("fast")
	if err != nil {
		return nil, "", err
	}
	if mc.Provider != llm.ProviderOffline && mc.Provider != llm.ProviderScripted {
		m, err := models.Model(ctx, "fast")
		if err != nil {
			return nil, "", fmt.Errorf("cognition: the extraction model: %w", err)
		}
		ccfg.Extractor = cognition.ModelExtractor{Model: m}
		desc = "on, learnt by " + mc.ID
	}
	svc, err := cognition.New(ccfg)
	if err != nil {
		return nil, "", err
	}
	cleanup.add(svc.Close)
	svc.Register(ws)
	return svc, desc, nil
}

// learnHook is the agent's Hooks.Learn over the cognition service: it
// asks for the conversation's learning job (see Service.LearnLater),
// under a context of its own (the run's may end as the answer is sent)
// and bounded, so the stream node never waits long for it. A turn whose
// job could not be asked for is learned by the conversation's next.
func learnHook(svc *cognition.Service, log *slog.Logger) func(ctx context.Context, a nodes.Answer) {
	return func(ctx context.Context, a nodes.Answer) {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
		defer cancel()
		if err := svc.LearnLater(ctx, a.UserID, a.ConversationID, a.Message.Turn); err != nil {
			log.LogAttrs(ctx, slog.LevelWarn, "cognition: learning not asked for", slog.String("conversation_id", a.ConversationID),
				slog.Any("error", err))
		}
	}
}
