package middleware

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"net/http"
	"time"

	"github.com/trellis-ai/trellis/api/httperr"
)

// SessionCookie names the cookie of a session of the web page's sign-in:
// its value is the session's secret, of which the record keeps only the
// SHA-256 hash (see SessionHash).
const SessionCookie = "trellis_session"

// CSRFHeader carries a cookie-authenticated write's CSRF token (see
// CSRFToken). A page of another site can make the browser send the
// cookie, but cannot read the token to send it along.
const CSRFHeader = "X-CSRF-Token"

// SessionHash is what the record keeps of a session's secret.
func SessionHash(secret string) [sha256.Size]byte { return sha256.Sum256([]byte(secret)) }

// CSRFToken is the CSRF token of the session whose secret is secret: an
// HMAC of it, which names the session without revealing its secret, and
// which needs nothing stored.
func CSRFToken(secret string) string {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write([]byte("trellis csrf token"))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// ValidCSRF reports whether token is the CSRF token of secret, in
// constant time.
func ValidCSRF(token, secret string) bool {
	return hmac.Equal([]byte(token), []byte(CSRFToken(secret)))
}

// needsCSRF: a request of this method may change something.
func needsCSRF(method string) bool {
	return method != http.MethodGet && method != http.MethodHead && method != http.MethodOptions
}

// ErrCSRF answers a cookie-authenticated write without its session's
// CSRF token.
var ErrCSRF = httperr.New(http.StatusForbidden, "csrf_failed",
	"a write signed in by the session cookie must send the session's CSRF token (GET /auth/session) as "+CSRFHeader)

// CheckFailures reports whether r's client address may present
// credentials now, as Authenticate counts them; when it may not, it
// returns how long until it may. A nil Limiter allows everything.
func (l *Limiter) CheckFailures(r *http.Request) (ok bool, wait time.Duration) {
	return l.check(clientAddress(r))
}

// SpendFailure counts an invalid credential (a session cookie, a
// sign-in callback) of r's client address, as Authenticate does.
func (l *Limiter) SpendFailure(r *http.Request) { l.spend(clientAddress(r)) }

// RateLimited is the answer to a client address that sent too many
// invalid credentials, to retry after wait.
func RateLimited(wait time.Duration) *httperr.Problem {
	e := httperr.New(http.StatusTooManyRequests, "rate_limited",
		"too many invalid credentials from this address; retry after the time Retry-After gives")
	e.RetryAfter = retryAfter(wait)
	return e
}
