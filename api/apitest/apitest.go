// Package apitest builds Trellis' HTTP service for tests the way
// cmd/trellis wires it: the run service first, over what the test gives
// it, then the API server over that service. Tests of api, its
// adapters and api/e2e build their servers with it, so the wiring a
// test needs is written once. Stores opens the record and checkpointer
// such a server runs on, on either backend.
package apitest

import (
	"context"
	"fmt"
	"time"

	"github.com/trellis-ai/trellis/api"
	"github.com/trellis-ai/trellis/api/metrics"
	"github.com/trellis-ai/trellis/internal/ids"
	"github.com/trellis-ai/trellis/llm"
	"github.com/trellis-ai/trellis/runs"
)

// Config is what a test server is built from.
//
// Runs configures the run service, with trellis serve's defaults where
// the run service has none: its Store is API.Store; nil Models is a
// registry holding only the offline model; "" Owner is a fresh name; 0
// InterruptAfter is 60 s; nil Logger and Metrics are API's. Its MaxRunsPerUser is always
// API.Limits.MaxConcurrentRunsPerUser (0: api.DefaultMaxConcurrentRuns),
// the one cap both read.
//
// API configures the server over it: its Runs is the service New
// builds, and nil Tools and Metrics are the run service's tools and a
// new collector.
type Config struct {
	Runs runs.Config
	API  api.Config
}

// New builds the run service and the server over it. The server's
// Shutdown ends the run service.
func New(cfg Config) (*api.Server, error) {
	rc, ac := cfg.Runs, cfg.API
	rc.Store = ac.Store
	if rc.Models == nil {
		m, err := llm.NewRegistry(llm.Config{})
		if err != nil {
			return nil, fmt.Errorf("apitest: %w", err)
		}
		rc.Models = m
	}
	if rc.Logger == nil {
		rc.Logger = ac.Logger
	}
	if rc.Owner == "" {
		rc.Owner = Owner()
	}
	if rc.InterruptAfter == 0 {
		rc.InterruptAfter = time.Minute
	}
	rc.MaxRunsPerUser = ac.Limits.MaxConcurrentRunsPerUser
	if rc.MaxRunsPerUser == 0 {
		rc.MaxRunsPerUser = api.DefaultMaxConcurrentRuns
	}
	if ac.Metrics == nil {
		ac.Metrics = metrics.New()
	}
	if rc.Metrics == nil {
		rc.Metrics = ac.Metrics
	}
	if ac.Tools == nil {
		ac.Tools = rc.Tools
	}
	svc, err := runs.New(rc)
	if err != nil {
		return nil, fmt.Errorf("apitest: %w", err)
	}
	ac.Runs = svc
	srv, err := api.New(ac)
	if err != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = svc.Shutdown(ctx)
		return nil, fmt.Errorf("apitest: %w", err)
	}
	return srv, nil
}

// Owner returns a fresh owner name for a test's run service, unique per
// call as a process's is per start.
func Owner() string { return "test:" + ids.Random("", 4) }
