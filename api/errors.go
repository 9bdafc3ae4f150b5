package api

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"

	"github.com/trellis-ai/trellis/api/httperr"
	"github.com/trellis-ai/trellis/api/middleware"
)

// Error is an answer the API gives on purpose: API.md's
// {"error": {"code", "message"}} with its HTTP status. It is httperr's
// Problem, so the run service's and the record's errors and the API's own
// are answered one way.
type Error = httperr.Problem

var errorf = httperr.New

// Errors the service itself answers with.
var (
	errShuttingDown = httperr.ShuttingDown
	// errUnavailable answers a request to start a run while the process
	// has lost its database session, and any request that failed
	// because the database went away (with a Cluster, which tells; see
	// Cluster.Lost).
	errUnavailable = httperr.Unavailable
)

// writeError answers err: an *Error as it is, the run service's, store's,
// agent's and elicitation manager's sentinels with their API.md statuses, anything
// else as a 500 whose message tells nothing but the request id (the error
// itself is logged).
func (s *Server) writeError(w http.ResponseWriter, r *http.Request, err error) {
	e := s.classify(r, err)
	if e == nil {
		return // the client is gone
	}
	httperr.Write(w, e)
}

func (s *Server) classify(r *http.Request, err error) *Error {
	e := httperr.Of(err)
	switch {
	case e == httperr.TooManyRuns:
		many := *e
		many.Message = fmt.Sprintf("you have %d runs going, the most allowed at once; wait for one to end", s.cfg.Limits.MaxConcurrentRunsPerUser)
		return &many
	case e != nil:
		return e
	case r.Context().Err() != nil && errors.Is(err, context.Canceled):
		return nil
	case s.runs.Lost(err):
		return errUnavailable
	}
	s.log.LogAttrs(r.Context(), slog.LevelError, "request failed",
		slog.String("request_id", middleware.RequestIDFrom(r.Context())), slog.String("path", r.URL.Path), slog.Any("error", err))
	return httperr.Internal(" under request id " + middleware.RequestIDFrom(r.Context()))
}
