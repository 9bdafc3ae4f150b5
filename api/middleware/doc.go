// Package middleware holds the API's HTTP middleware that needs nothing
// of the server: each is a plain func(http.Handler) http.Handler (or
// returns one), one per file, as chi's are. Package api installs them.
//
// Every request gets an id (RequestID), is logged once answered with a
// handler's panic recovered (LogRequests), and answers browsers of the
// allowed origins (CORS). Every authenticated route then finds the
// client's address (ClientIP, X-Forwarded-For only from trusted
// proxies), names the request's user from its API key (configured, or
// issued in the service: NewKey), its OpenID Connect token (NewOIDC),
// the page's session cookie (SessionCookie, whose writes need the
// CSRF token: CSRFToken) or
// local mode, slowing credential guessing per address (Authenticate),
// and caps each user's request rate (LimitRate); the two limits are
// token buckets per key (Limiter). The user reaches handlers as runs.UserFrom. The routes
// that show what spans every user let through only the operators
// (Operators).
//
// Its writer wrapper implements Unwrap, so http.ResponseController
// reaches Flush and SetWriteDeadline underneath for the SSE streams.
package middleware
