package api

import "time"

// SetAuthClock makes the server's failed-authentication limiter read the
// time from now, so that tests move time instead of waiting. Call it
// before the server takes requests.
func (s *Server) SetAuthClock(now func() time.Time) { s.authLimiter.Now = now }
