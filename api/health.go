package api

import (
	"context"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/trellis-ai/trellis/api/jsonbody"
)

// health is what /healthz and /readyz know of the store: since when
// every check of it has failed (zero: it answers). Since when a process
// of a cluster has been without its session, the run service tells
// (runs.Service.SessionLostSince).
//
// /readyz answers "route traffic here": 503 at once while the store does
// not answer or the session is lost. /healthz answers "restart me": 503
// only once either has lasted longer than Config.UnhealthyAfter. A short
// outage is one the process recovers from by itself (the pool opens new
// connections, listen takes the session again and the runs go on), so a
// restart would only lose the runs' progress since their last
// checkpoints.
type health struct {
	mu        sync.Mutex
	storeDown time.Time
}

// checked records the outcome of a check of the store at now.
func (h *health) checked(now time.Time, err error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	switch {
	case err == nil:
		h.storeDown = time.Time{}
	case h.storeDown.IsZero():
		h.storeDown = now
	}
}

// healthState reports since when the store has failed and since when the
// session has been lost (zero: it answers; it is held, or there is
// none).
func (s *Server) healthState() (storeDown, sessionGone time.Time) {
	s.health.mu.Lock()
	storeDown = s.health.storeDown
	s.health.mu.Unlock()
	return storeDown, s.runs.SessionLostSince()
}

// pingTimeout bounds a probe's check of the store.
const pingTimeout = 2 * time.Second

// checkStore pings the store, within pingTimeout, and records the
// outcome, unless the probe's client left first.
func (s *Server) checkStore(ctx context.Context) error {
	pctx, cancel := context.WithTimeout(ctx, pingTimeout)
	defer cancel()
	err := s.store.Ping(pctx)
	if ctx.Err() == nil {
		s.health.checked(time.Now(), err)
	}
	return err
}

// handleHealthz answers 200 while the process can serve or is recovering
// by itself, and 503 once it has been without its database for longer
// than Config.UnhealthyAfter (see health): an orchestrator should then
// restart it.
func (s *Server) handleHealthz(w http.ResponseWriter, r *http.Request) {
	_ = s.checkStore(r.Context())
	if grace := s.cfg.UnhealthyAfter; grace > 0 {
		storeDown, sessionGone := s.healthState()
		now := time.Now()
		for _, down := range []struct {
			what  string
			since time.Time
		}{{"storage", storeDown}, {"session", sessionGone}} {
			if !down.since.IsZero() && now.Sub(down.since) > grace {
				s.log.LogAttrs(r.Context(), slog.LevelError, "unhealthy: without the database for too long; restart this process",
					slog.String("lost", down.what), slog.Duration("for", now.Sub(down.since)), slog.Duration("unhealthy_after", grace))
				s.writeError(w, r, errorf(http.StatusServiceUnavailable, "unhealthy",
					"the server has been without its database for longer than it waits to recover by itself; restart it"))
				return
			}
		}
	}
	jsonbody.Write(w, http.StatusOK, map[string]string{"status": "ok"})
}

// handleReadyz answers 200 once the store answers with its migrations
// applied (and Config.Ready agrees), 503 otherwise, while a process of a
// cluster is without its session, and while shutting down.
func (s *Server) handleReadyz(w http.ResponseWriter, r *http.Request) {
	err := s.checkStore(r.Context())
	if err == nil && s.cfg.Ready != nil {
		err = s.cfg.Ready()
	}
	if _, sessionGone := s.healthState(); err == nil && !sessionGone.IsZero() {
		err = errUnavailable
	}
	if err == nil && s.runs.Draining() {
		err = errShuttingDown
	}
	if err != nil {
		s.log.LogAttrs(r.Context(), slog.LevelWarn, "not ready", slog.Any("error", err))
		s.writeError(w, r, errorf(http.StatusServiceUnavailable, "not_ready", "the server is not ready: storage, migrations or a required dependency is unavailable"))
		return
	}
	jsonbody.Write(w, http.StatusOK, map[string]string{"status": "ready"})
}
