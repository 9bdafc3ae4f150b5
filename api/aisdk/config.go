package aisdk

import (
	"log/slog"
	"time"

	"github.com/trellis-ai/trellis/runs"
)

// Config configures a Handler: Runs is required, and each other field
// works at zero as its comment says.
type Config struct {
	Runs *runs.Service
	// ResumeGrace is how long the run of a client that went away waits
	// for a client to resume its stream before it is cancelled; 0
	// means runs.DefaultResumeGrace.
	ResumeGrace time.Duration
	// Heartbeat is the interval of ": ping" comments on an idle stream,
	// and WriteTimeout bounds each write to a stream: the server's, which
	// it passes in.
	Heartbeat    time.Duration
	WriteTimeout time.Duration
	// Logger receives what goes wrong on the server's side; nil
	// discards.
	Logger *slog.Logger
}
