package api

import (
	"crypto/sha256"
	"crypto/subtle"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"slices"
	"strings"

	"github.com/go-chi/chi/v5/middleware"
	"github.com/trellis-ai/trellis/runs"
)

// authenticator checks bearer keys. It keeps only the keys' SHA-256
// hashes and compares the presented key's hash with every one of them in
// constant time, without stopping at a match, so neither the time taken
// nor an early exit tells anything about the keys.
type authenticator struct {
	keys []hashedKey // sorted by user, so the work per request is fixed
}

type hashedKey struct {
	sum  [sha256.Size]byte
	user string
}

func newAuthenticator(keys map[APIKey]string) *authenticator {
	a := &authenticator{}
	for k, u := range keys {
		a.keys = append(a.keys, hashedKey{sum: sha256.Sum256([]byte(k)), user: u})
	}
	slices.SortFunc(a.keys, func(x, y hashedKey) int { return strings.Compare(x.user, y.user) })
	return a
}

func (a *authenticator) local() bool { return len(a.keys) == 0 }

// user returns the user of key, or "" for none.
func (a *authenticator) user(key string) string {
	sum := sha256.Sum256([]byte(key))
	found := -1
	for i := range a.keys {
		if subtle.ConstantTimeCompare(sum[:], a.keys[i].sum[:]) == 1 {
			found = i
		}
	}
	if found < 0 {
		return ""
	}
	return a.keys[found].user
}

// authenticate is the middleware: in local mode every request is user
// "local"; otherwise a request needs Authorization: Bearer <key> naming a
// configured key, or gets 401 with WWW-Authenticate: Bearer. The key may
// come as X-Api-Key: <key> instead, as the LangGraph SDK sends it; with
// both, Authorization is the one read.
//
// Guessing keys is slowed per client address (see clientAddress): each
// request presenting credentials that name no key spends a token of the
// address's bucket (Limits.AuthFailuresPerMinute, AuthFailureBurst), and
// while the bucket is empty every request from the address that presents
// credentials gets 429 with Retry-After before its key is even looked
// at — a valid key too, for were it checked, the answer would tell a
// right guess from a wrong one and guessing would go on at full speed.
// A valid key spends nothing, and other addresses are unaffected.
// Requests without credentials are answered 401 and spend nothing: they
// guess nothing, and refusing them would only lock out clients that
// have not yet sent their key.
func (s *Server) authenticate(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		user := LocalUser
		if !s.auth.local() {
			creds := r.Header.Get("Authorization")
			apiKey := r.Header.Get("X-Api-Key")
			if creds == "" && apiKey == "" {
				s.metrics.authFailed(authMissing)
				s.writeError(w, r, errUnauthorized)
				return
			}
			addr := clientAddress(r)
			if ok, wait := s.authLimiter.check(addr); !ok {
				s.metrics.authFailed(authRateLimited)
				e := errorf(http.StatusTooManyRequests, "rate_limited",
					"too many invalid API keys from this address; retry after the time Retry-After gives")
				e.RetryAfter = retryAfter(wait)
				s.writeError(w, r, e)
				return
			}
			switch scheme, key, ok := strings.Cut(creds, " "); {
			case creds == "":
				user = s.auth.user(strings.TrimSpace(apiKey))
			case ok && strings.EqualFold(scheme, "Bearer"):
				user = s.auth.user(strings.TrimSpace(key))
			default:
				user = ""
			}
			if user == "" {
				s.authLimiter.spend(addr)
				s.metrics.authFailed(authInvalid)
				s.writeError(w, r, errUnauthorized)
				return
			}
		}
		next.ServeHTTP(w, r.WithContext(runs.WithUser(r.Context(), user)))
	})
}

// clientAddress is the address failed authentication is counted against:
// the client IP that clientIP found (from X-Forwarded-For only behind
// Config.TrustedProxies), else the host of RemoteAddr. An IPv6 client
// counts as its /64, the block one host or one household is given, so
// that an attacker cannot take a fresh bucket from each address of it.
func clientAddress(r *http.Request) string {
	ip := middleware.GetClientIPAddr(r.Context())
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

// clientIP returns the middleware that finds the client IP clientAddress
// reads: the TCP peer, or, for a peer within trusted (CIDR prefixes), the
// nearest untrusted hop of X-Forwarded-For.
func clientIP(trusted []netip.Prefix) func(http.Handler) http.Handler {
	if len(trusted) == 0 {
		return middleware.ClientIPFromRemoteAddr
	}
	cidrs := make([]string, len(trusted))
	for i, p := range trusted {
		cidrs[i] = p.String()
	}
	return middleware.ClientIPFromXFF(cidrs...)
}

// parseTrustedProxies reads Config.TrustedProxies: CIDR prefixes, or bare
// addresses meaning just themselves.
func parseTrustedProxies(list []string) ([]netip.Prefix, error) {
	var out []netip.Prefix
	for _, v := range list {
		v = strings.TrimSpace(v)
		if v == "" {
			continue
		}
		if !strings.Contains(v, "/") {
			a, err := netip.ParseAddr(v)
			if err != nil {
				return nil, fmt.Errorf("api: trusted proxy %q is neither an address nor a CIDR prefix", v)
			}
			out = append(out, netip.PrefixFrom(a.Unmap(), a.Unmap().BitLen()))
			continue
		}
		p, err := netip.ParsePrefix(v)
		if err != nil {
			return nil, fmt.Errorf("api: trusted proxy %q is neither an address nor a CIDR prefix", v)
		}
		out = append(out, p.Masked())
	}
	return out, nil
}

// userOf returns the authenticated user of the request.
func userOf(r *http.Request) string { return runs.UserFrom(r.Context()) }
