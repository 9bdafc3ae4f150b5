package middleware

import (
	"context"
	"crypto/sha256"
	"errors"
	"maps"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"testing"

	"github.com/trellis-ai/trellis/runs"
	"github.com/trellis-ai/trellis/store"
)

// FuzzParseKeys feeds TRELLIS_API_KEYS as an operator may write it: what
// parses holds keys and users as the format delimits them (trimmed, not
// empty, a key without ':' or ',', a user without ','), each user an id
// the record keeps, one entry per entry written; written back as
// key:user pairs it parses to the same keys.
func FuzzParseKeys(f *testing.F) {
	for _, seed := range []string{
		"k1:alice,k2:bob", " k1:alice , k2:bob,", "", ",,", "k1", "k1:", ":alice", "k1:alice,k1:bob",
		"k:a:b", "k1:alice,k2:alice", "k\t:\u00e9l\u00e8ve", "k:\xff", "k:a\x00b", "k:" + strings.Repeat("u", store.MaxIDBytes+1),
		"trk_abc:svc-1, sk-x:ops@example.com",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, s string) {
		keys, err := ParseKeys(s)
		if err != nil {
			if keys != nil {
				t.Fatalf("ParseKeys(%q) = %v and %v", s, keys, err)
			}
			return
		}
		entries := 0
		for e := range strings.SplitSeq(s, ",") {
			if strings.TrimSpace(e) != "" {
				entries++
			}
		}
		if len(keys) != entries {
			t.Fatalf("ParseKeys(%q) = %d keys of %d entries", s, len(keys), entries)
		}
		var pairs []string
		for k, u := range keys {
			switch {
			case k == "" || string(k) != strings.TrimSpace(string(k)) || strings.ContainsAny(string(k), ",:"):
				t.Fatalf("ParseKeys(%q) holds key %q", s, string(k))
			case u == "" || u != strings.TrimSpace(u) || strings.Contains(u, ","):
				t.Fatalf("ParseKeys(%q) holds user %q", s, u)
			case len(u) > store.MaxIDBytes || !store.ValidText(u):
				t.Fatalf("ParseKeys(%q) holds user %q, which the record cannot keep", s, u)
			}
			pairs = append(pairs, string(k)+":"+u)
		}
		again, err := ParseKeys(strings.Join(pairs, ","))
		if err != nil || !maps.Equal(again, keys) {
			t.Fatalf("ParseKeys(%q) = %v; written back, %v, %v", s, keys, again, err)
		}
	})
}

// FuzzParseTrustedProxies feeds TRELLIS_TRUSTED_PROXIES: what parses is
// one valid, masked prefix per entry, which ClientIP takes without
// panicking, and whose text parses to the same prefixes; a bare address
// is the prefix of itself alone.
func FuzzParseTrustedProxies(f *testing.F) {
	for _, seed := range []string{
		"10.0.0.0/8, 192.168.1.7", "2001:db8::/32,::1", "10.1.2.3/8", "::ffff:10.0.0.1", "::ffff:10.0.0.0/104",
		"fe80::1%eth0", "fe80::/10%eth0", "", " , ", "10.0.0.0/33", "10.0.0.0/-1", "host.example", "1.2.3.4/", "/8",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, s string) {
		list := strings.Split(s, ",")
		ps, err := ParseTrustedProxies(list)
		if err != nil {
			return
		}
		entries := 0
		for _, e := range list {
			if strings.TrimSpace(e) != "" {
				entries++
			}
		}
		if len(ps) != entries {
			t.Fatalf("ParseTrustedProxies(%q) = %d prefixes of %d entries", s, len(ps), entries)
		}
		text := make([]string, len(ps))
		for i, p := range ps {
			if !p.IsValid() || p != p.Masked() {
				t.Fatalf("ParseTrustedProxies(%q) holds %v, not a valid masked prefix", s, p)
			}
			text[i] = p.String()
		}
		again, err := ParseTrustedProxies(text)
		if err != nil || len(again) != len(ps) {
			t.Fatalf("ParseTrustedProxies(%q) = %v; written back, %v, %v", s, ps, again, err)
		}
		for i := range ps {
			if again[i] != ps[i] {
				t.Fatalf("ParseTrustedProxies(%q) = %v; written back, %v", s, ps, again)
			}
		}
		ClientIP(ps)(http.NotFoundHandler()) // chi panics on a prefix it cannot parse
	})
}

// The credentials FuzzAuthenticate's server knows.
const (
	fuzzKey     = "k1"                      // a configured key, of alice
	fuzzStored  = "trk_stored"              // a key issued in the service, of bob
	fuzzJWT     = "eyJhbGciOi.eyJzdWIi.sig" // a token the issuer signed, of carol
	fuzzSession = "trs_session"             // a session's secret, of dave
)

// FuzzAuthenticate feeds the request headers authentication reads
// (Authorization, X-Api-Key, the session cookie, X-CSRF-Token,
// X-Request-Id) and the peer address: a request passes only as the user
// of the one credential the headers present by the documented order
// (Authorization's bearer key, else X-Api-Key, else the cookie), a write
// signed in by the cookie only with the session's CSRF token; it is
// refused 401 with a challenge (missing only when it presents nothing)
// or 403 csrf_failed, nothing else; and its request id is the client's
// when that is plain, else a fresh plain one.
func FuzzAuthenticate(f *testing.F) {
	f.Add(uint8(0), "Bearer k1", "", "", "", "", "192.0.2.7:4711")
	f.Add(uint8(1), "bearer   k1  ", "", "", "", "req-1.a_B", "[2001:db8::1]:1")
	f.Add(uint8(1), "", " trk_stored ", "", "", "", "[::ffff:192.0.2.7]:4711")
	f.Add(uint8(2), "Bearer eyJhbGciOi.eyJzdWIi.sig", "k1", "", "", strings.Repeat("x", 65), "[fe80::1%eth0]:4711")
	f.Add(uint8(1), "", "", "trellis_session=trs_session", CSRFToken(fuzzSession), "", "not an address")
	f.Add(uint8(1), "", "", "trellis_session=trs_session", "", "", "")
	f.Add(uint8(0), "", "", "trellis_session=trs_session; other=1", "", "id with space", "192.0.2.7")
	f.Add(uint8(3), "Basic azE6", "", "", "", "", "192.0.2.7:4711")
	f.Add(uint8(0), "Bearer", "", "trellis_session=\"trs_session\"", "", "", "192.0.2.7:4711")
	f.Add(uint8(0), "", "", "", "", "", "192.0.2.7:4711")
	methods := []string{http.MethodGet, http.MethodPost, http.MethodDelete, http.MethodOptions, http.MethodHead, http.MethodPatch}
	lookup := func(secret, user string) func(context.Context, [sha256.Size]byte) (string, error) {
		return func(_ context.Context, hash [sha256.Size]byte) (string, error) {
			if hash == sha256.Sum256([]byte(secret)) {
				return user, nil
			}
			return "", nil
		}
	}
	var refused []string
	h := RequestID(Authenticate(AuthConfig{
		Keys:   map[APIKey]string{fuzzKey: "alice"},
		Stored: lookup(fuzzStored, "bob"),
		Tokens: func(_ context.Context, token string) (string, error) {
			if token == fuzzJWT {
				return "carol", nil
			}
			return "", errors.New("not signed")
		},
		Sessions: lookup(fuzzSession, "dave"),
		Refused:  func(reason string) { refused = append(refused, reason) },
	})(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-User", runs.UserFrom(r.Context()))
		w.Header().Set("X-Address", clientAddress(r))
	})))
	f.Fuzz(func(t *testing.T, method uint8, authz, apiKey, cookie, csrf, reqID, remote string) {
		refused = refused[:0]
		r := httptest.NewRequest(methods[int(method)%len(methods)], "/api/v1/conversations", nil)
		r.RemoteAddr = remote
		for name, v := range map[string]string{"Authorization": authz, "X-Api-Key": apiKey, "Cookie": cookie, CSRFHeader: csrf, RequestIDHeader: reqID} {
			if v != "" {
				r.Header.Set(name, v)
			}
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)

		// What the documentation says the request presents, and whose it is.
		var presented, want string
		fromCookie := false
		if c, err := r.Cookie(SessionCookie); err == nil && authz == "" && apiKey == "" && c.Value != "" {
			presented, fromCookie = c.Value, true
			if presented == fuzzSession {
				want = "dave"
			}
		} else if authz != "" {
			if scheme, k, ok := strings.Cut(authz, " "); ok && strings.EqualFold(scheme, "Bearer") {
				presented = strings.TrimSpace(k)
			}
		} else {
			presented = strings.TrimSpace(apiKey)
		}
		if !fromCookie {
			want = map[string]string{fuzzKey: "alice", fuzzStored: "bob", fuzzJWT: "carol"}[presented]
		}
		nothing := authz == "" && apiKey == "" && !fromCookie

		switch code := w.Code; {
		case want != "" && fromCookie && r.Method != http.MethodGet && r.Method != http.MethodHead && r.Method != http.MethodOptions &&
			csrf != CSRFToken(fuzzSession):
			if code != http.StatusForbidden || !strings.Contains(w.Body.String(), "csrf_failed") {
				t.Fatalf("a %s by cookie without its CSRF token got %d %s", r.Method, code, w.Body)
			}
		case want != "":
			if code != http.StatusOK || w.Header().Get("X-User") != want {
				t.Fatalf("credentials of %s (%q, %q, %q) got %d as %q", want, authz, apiKey, cookie, code, w.Header().Get("X-User"))
			}
			addr := w.Header().Get("X-Address")
			if ip, err := netip.ParseAddr(addr); err == nil && !ip.Is4() {
				t.Fatalf("peer %q counts as %q, an IPv6 address rather than its /64", remote, addr)
			} else if p, err := netip.ParsePrefix(addr); err == nil && (p.Bits() != 64 || p != p.Masked() || !p.Addr().Is6()) {
				t.Fatalf("peer %q counts as %q", remote, addr)
			}
		default:
			if code != http.StatusUnauthorized || !strings.HasPrefix(w.Header().Get("WWW-Authenticate"), "Bearer ") {
				t.Fatalf("credentials of no one (%q, %q, %q) got %d %s", authz, apiKey, cookie, code, w.Body)
			}
			wantReason := AuthInvalid
			if nothing {
				wantReason = AuthMissing
			}
			if len(refused) != 1 || refused[0] != wantReason {
				t.Fatalf("(%q, %q, %q) refused as %v, want %s", authz, apiKey, cookie, refused, wantReason)
			}
		}

		id := w.Header().Get(RequestIDHeader)
		if !plainID(id) || (plainID(reqID) && id != reqID) {
			t.Fatalf("X-Request-Id %q answered as %q", reqID, id)
		}
	})
}
