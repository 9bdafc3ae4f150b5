package middleware

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"slices"
	"strings"
	"time"

	chimw "github.com/go-chi/chi/v5/middleware"

	"github.com/trellis-ai/trellis/api/httperr"
	"github.com/trellis-ai/trellis/runs"
	"github.com/trellis-ai/trellis/store"
)

// APIKey is a secret that authenticates a user. It never prints: its
// String and LogValue redact it.
type APIKey string

// String redacts the key.
func (k APIKey) String() string { return "[redacted]" }

// LogValue redacts the key.
func (k APIKey) LogValue() slog.Value { return slog.StringValue("[redacted]") }

// ParseKeys reads TRELLIS_API_KEYS' format: comma-separated key:user
// pairs ("k1:alice,k2:bob"). An empty string is no keys (local mode). A
// user is an id the record keeps, as for a key issued in the service: text
// of 1 to store.MaxIDBytes bytes.
func ParseKeys(s string) (map[APIKey]string, error) {
	keys := map[APIKey]string{}
	for pair := range strings.SplitSeq(s, ",") {
		pair = strings.TrimSpace(pair)
		if pair == "" {
			continue
		}
		k, u, ok := strings.Cut(pair, ":")
		k, u = strings.TrimSpace(k), strings.TrimSpace(u)
		if !ok || k == "" || u == "" {
			return nil, fmt.Errorf("api: API keys: each entry must be key:user (entry %d is not)", len(keys)+1)
		}
		if len(u) > store.MaxIDBytes || !store.ValidText(u) {
			return nil, fmt.Errorf("api: API keys: entry %d's user is not text of at most %d bytes", len(keys)+1, store.MaxIDBytes)
		}
		if _, dup := keys[APIKey(k)]; dup {
			return nil, fmt.Errorf("api: API keys: a key is listed twice (user %s)", u)
		}
		keys[APIKey(k)] = u
	}
	return keys, nil
}

// LocalUser is the one user of local mode.
const LocalUser = "local"

// Reasons Authenticate refuses a request for, as it reports them to
// AuthConfig.Refused.
const (
	AuthMissing     = "missing"      // no credentials: 401
	AuthInvalid     = "invalid"      // credentials that name no key: 401
	AuthRateLimited = "rate_limited" // refused unchecked, too many invalid ones: 429
)

// AuthConfig configures Authenticate.
type AuthConfig struct {
	// Keys maps API keys to user ids. Empty means local mode: no
	// authentication, every request is LocalUser.
	Keys map[APIKey]string
	// Failures counts invalid credentials per client address (see
	// ClientIP); nil limits nothing.
	Failures *Limiter
	// Refused, when set, is told why each refused request was refused
	// (AuthMissing, AuthInvalid, AuthRateLimited).
	Refused func(reason string)
	// Stored, when set, names the user of a key issued in the service
	// (see NewKey) from its SHA-256 hash, "" for none: a key of Keys is
	// looked up first. Setting it turns authentication on even with no
	// Keys. What it answers is kept for StoredKeyTTL, so a revocation
	// takes effect on every process within that time.
	Stored func(ctx context.Context, hash [sha256.Size]byte) (string, error)
	// Tokens, when set, names the user of a bearer credential shaped as
	// a JWT (see NewOIDC); setting it turns authentication on too.
	Tokens TokenUser
	// Sessions, when set, names the user of a session cookie
	// (SessionCookie) from the SHA-256 hash of its value, "" for none
	// (unknown, expired, signed out). A request authenticated by the
	// cookie that may change something (not GET, HEAD or OPTIONS) must
	// send the session's CSRF token as CSRFHeader, or gets 403
	// csrf_failed. Credentials in headers are read before the cookie.
	Sessions func(ctx context.Context, hash [sha256.Size]byte) (string, error)
}

// StoredKeyTTL is how long Authenticate trusts what AuthConfig.Stored
// said of a key: a revoked key works for at most this long on a process
// that saw it just before.
const StoredKeyTTL = 5 * time.Second

var errUnauthorized = httperr.New(http.StatusUnauthorized, "unauthorized", "send a valid API key as Authorization: Bearer <key>")

// Authenticate names each request's user for runs.UserFrom. In local
// mode every request is user LocalUser; otherwise a request needs
// Authorization: Bearer <key> naming a configured key, or gets 401 with
// WWW-Authenticate: Bearer. The key may come as X-Api-Key: <key>
// instead, as the LangGraph SDK sends it; with both, Authorization is
// the one read.
//
// Guessing keys is slowed per client address (see clientAddress): each
// request presenting credentials that name no key spends a token of the
// address's bucket in Failures, and while the bucket is empty every
// request from the address that presents credentials gets 429 with
// Retry-After before its key is even looked at — a valid key too, for
// were it checked, the answer would tell a right guess from a wrong one
// and guessing would go on at full speed. A valid key spends nothing,
// and other addresses are unaffected. Requests without credentials are
// answered 401 and spend nothing: they guess nothing, and refusing them
// would only lock out clients that have not yet sent their key.
func Authenticate(cfg AuthConfig) func(http.Handler) http.Handler {
	a := newAuthenticator(cfg)
	return func(next http.Handler) http.Handler { return a.wrap(next) }
}

// authenticator checks bearer keys. It keeps only the keys' SHA-256
// hashes and compares the presented key's hash with every one of them in
// constant time, without stopping at a match, so neither the time taken
// nor an early exit tells anything about the keys.
type authenticator struct {
	keys     []hashedKey                                                       // sorted by user, so the work per request is fixed
	stored   *storedKeys                                                       // nil when no key is issued in the service
	tokens   TokenUser                                                         // nil when no issuer's tokens are taken
	sessions func(ctx context.Context, hash [sha256.Size]byte) (string, error) // nil without sign-in
	failures *Limiter
	refused  func(reason string)
}

type hashedKey struct {
	sum  [sha256.Size]byte
	user string
}

func newAuthenticator(cfg AuthConfig) *authenticator {
	a := &authenticator{failures: cfg.Failures, refused: cfg.Refused, tokens: cfg.Tokens, sessions: cfg.Sessions}
	if cfg.Stored != nil {
		a.stored = &storedKeys{lookup: cfg.Stored, users: map[[sha256.Size]byte]storedUser{}}
	}
	if a.refused == nil {
		a.refused = func(string) {}
	}
	for k, u := range cfg.Keys {
		a.keys = append(a.keys, hashedKey{sum: sha256.Sum256([]byte(k)), user: u})
	}
	slices.SortFunc(a.keys, func(x, y hashedKey) int { return strings.Compare(x.user, y.user) })
	return a
}

// user returns the user of key, or "" for none.
func (a *authenticator) user(ctx context.Context, key string) (string, error) {
	sum := sha256.Sum256([]byte(key))
	found := -1
	for i := range a.keys {
		if subtle.ConstantTimeCompare(sum[:], a.keys[i].sum[:]) == 1 {
			found = i
		}
	}
	if found >= 0 {
		return a.keys[found].user, nil
	}
	if a.stored == nil || key == "" {
		return "", nil
	}
	return a.stored.user(ctx, sum)
}

func (a *authenticator) wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		user := LocalUser
		if len(a.keys) > 0 || a.stored != nil || a.tokens != nil || a.sessions != nil {
			creds := r.Header.Get("Authorization")
			apiKey := r.Header.Get("X-Api-Key")
			var cookie string
			if c, err := r.Cookie(SessionCookie); err == nil && a.sessions != nil && creds == "" && apiKey == "" {
				cookie = c.Value
			}
			if creds == "" && apiKey == "" && cookie == "" {
				a.refused(AuthMissing)
				unauthorized(w)
				return
			}
			addr := clientAddress(r)
			if ok, wait := a.failures.check(addr); !ok {
				a.refused(AuthRateLimited)
				httperr.Write(w, RateLimited(wait))
				return
			}
			var err error
			switch key := strings.TrimSpace(apiKey); {
			case cookie != "":
				user, err = a.sessions(r.Context(), SessionHash(cookie))
			case creds != "":
				key = ""
				if scheme, k, ok := strings.Cut(creds, " "); ok && strings.EqualFold(scheme, "Bearer") {
					key = strings.TrimSpace(k)
				}
				fallthrough
			default:
				if a.tokens != nil && looksLikeJWT(key) {
					if user, err = a.tokens(r.Context(), key); err != nil {
						slog.DebugContext(r.Context(), "a bearer token refused", slog.Any("error", err))
						user, err = "", nil
					}
				} else {
					user, err = a.user(r.Context(), key)
				}
			}
			if err != nil {
				slog.ErrorContext(r.Context(), "looking up credentials", slog.Any("error", err))
				httperr.Write(w, httperr.Unavailable)
				return
			}
			if user == "" {
				a.failures.spend(addr)
				a.refused(AuthInvalid)
				unauthorized(w)
				return
			}
			// A browser sends the cookie with requests that other sites'
			// pages make, so a write needs the token only the page can read.
			if cookie != "" && needsCSRF(r.Method) && !ValidCSRF(r.Header.Get(CSRFHeader), cookie) {
				httperr.Write(w, ErrCSRF)
				return
			}
		}
		next.ServeHTTP(w, r.WithContext(runs.WithUser(r.Context(), user)))
	})
}

// unauthorized answers 401 with the challenge RFC 9110 asks for.
func unauthorized(w http.ResponseWriter) {
	w.Header().Set("WWW-Authenticate", `Bearer realm="trellis"`)
	httperr.Write(w, errUnauthorized)
}

// clientAddress is the address failed authentication is counted against:
// the client IP that ClientIP found (from X-Forwarded-For only behind
// trusted proxies), else the host of RemoteAddr. An IPv6 client counts
// as its /64, the block one host or one household is given, so that an
// attacker cannot take a fresh bucket from each address of it.
func clientAddress(r *http.Request) string {
	ip := chimw.GetClientIPAddr(r.Context())
	if !ip.IsValid() {
		host, _, err := net.SplitHostPort(r.RemoteAddr)
		if err != nil {
			host = r.RemoteAddr
		}
		if ip, err = netip.ParseAddr(host); err != nil {
			return host
		}
	}
	ip = ip.Unmap().WithZone("")
	if ip.Is6() {
		return netip.PrefixFrom(ip, 64).Masked().String()
	}
	return ip.String()
}
