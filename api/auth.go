package api

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"net/http"
	"slices"
	"strings"
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
// configured key, or gets 401 with WWW-Authenticate: Bearer.
func (s *Server) authenticate(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		user := LocalUser
		if !s.auth.local() {
			creds := r.Header.Get("Authorization")
			scheme, key, ok := strings.Cut(creds, " ")
			if ok && strings.EqualFold(scheme, "Bearer") {
				user = s.auth.user(strings.TrimSpace(key))
			} else {
				user = ""
			}
			if user == "" {
				if creds == "" {
					s.metrics.authFailed(authMissing)
				} else {
					s.metrics.authFailed(authInvalid)
				}
				s.writeError(w, r, errorf(http.StatusUnauthorized, "unauthorized", "send a valid API key as Authorization: Bearer <key>"))
				return
			}
		}
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), userKey, user)))
	})
}

// userOf returns the authenticated user of the request.
func userOf(r *http.Request) string { return UserFrom(r.Context()) }

// UserFrom returns the user the server authenticated for the request
// whose context ctx is, or derives from ("" outside one). Handlers
// mounted through Config (MCP) use it to scope their work.
func UserFrom(ctx context.Context) string {
	u, _ := ctx.Value(userKey).(string)
	return u
}
