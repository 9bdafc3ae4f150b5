// Package oidctest runs a real OpenID Connect provider
// (github.com/oauth2-proxy/mockoidc) on a loopback port for tests: its
// signing key can be rotated, it signs tokens a test shapes, and a test
// may change the ID tokens its token endpoint hands out.
package oidctest

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/oauth2-proxy/mockoidc"
)

// Provider is a running provider. Its authorize endpoint approves at
// once, signing in the user queued with QueueUser (or mockoidc's default
// user).
type Provider struct {
	*mockoidc.MockOIDC
	key     atomic.Pointer[mockoidc.Keypair]
	rewrite atomic.Pointer[func(jwt.MapClaims)]
}

// Start starts a provider, stopped when t ends.
func Start(t testing.TB) *Provider {
	t.Helper()
	m, err := mockoidc.NewServer(nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.Keypair.KeyID(); err != nil { // computed once, before the provider's handlers read it
		t.Fatal(err)
	}
	p := &Provider{MockOIDC: m}
	p.key.Store(m.Keypair)
	if err := m.AddMiddleware(p.intercept); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Start(ln, nil); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Shutdown() })
	return p
}

// intercept serves the JWKS of the current key, and passes the token
// endpoint's ID tokens through the rewrite a test set.
func (p *Provider) intercept(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case mockoidc.JWKSEndpoint:
			jwks, err := p.key.Load().JWKS()
			if err != nil {
				http.Error(w, err.Error(), http.StatusInternalServerError)
				return
			}
			w.Header().Set("Content-Type", "application/json")
			w.Write(jwks)
		case mockoidc.TokenEndpoint:
			fn := p.rewrite.Load()
			if fn == nil {
				next.ServeHTTP(w, r)
				return
			}
			rec := httptest.NewRecorder()
			next.ServeHTTP(rec, r)
			body := rec.Body.Bytes()
			var resp map[string]any
			if rec.Code == http.StatusOK && json.Unmarshal(body, &resp) == nil {
				if raw, ok := resp["id_token"].(string); ok {
					resp["id_token"] = p.resign(raw, *fn)
					body, _ = json.Marshal(resp)
				}
			}
			for k, v := range rec.Header() {
				if k != "Content-Length" {
					w.Header()[k] = v
				}
			}
			w.WriteHeader(rec.Code)
			w.Write(body)
		default:
			next.ServeHTTP(w, r)
		}
	})
}

// resign is the token raw with its claims changed by fn, signed again
// with the current key.
func (p *Provider) resign(raw string, fn func(jwt.MapClaims)) string {
	parts := strings.Split(raw, ".")
	if len(parts) != 3 {
		return raw
	}
	b, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		return raw
	}
	claims := jwt.MapClaims{}
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	if d.Decode(&claims) != nil {
		return raw
	}
	fn(claims)
	tok, err := p.key.Load().SignJWT(claims)
	if err != nil {
		return raw
	}
	return tok
}

// RewriteIDTokens makes the token endpoint hand out ID tokens whose
// claims fn changed (signed with the provider's key); nil stops it.
func (p *Provider) RewriteIDTokens(fn func(jwt.MapClaims)) {
	if fn == nil {
		p.rewrite.Store(nil)
		return
	}
	p.rewrite.Store(&fn)
}

// Rotate makes a new signing key the provider's only one.
func (p *Provider) Rotate(t testing.TB) {
	t.Helper()
	k, err := mockoidc.RandomKeypair(2048)
	if err != nil {
		t.Fatal(err)
	}
	p.key.Store(k)
}

// Token is a token of the provider for its client, for user, valid for a
// minute, with claims changed or added by extra.
func (p *Provider) Token(t testing.TB, user string, extra jwt.MapClaims) string {
	t.Helper()
	now := time.Now()
	claims := jwt.MapClaims{"iss": p.Issuer(), "aud": p.ClientID, "sub": user, "email": user + "@example.com",
		"iat": now.Unix(), "exp": now.Add(time.Minute).Unix()}
	for k, v := range extra {
		claims[k] = v
	}
	tok, err := p.key.Load().SignJWT(claims)
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// User is a user to queue for the next sign-in, named sub, with an
// email of sub@example.com.
func User(sub string) *mockoidc.MockUser {
	return &mockoidc.MockUser{Subject: sub, Email: sub + "@example.com", EmailVerified: true, PreferredUsername: sub}
}
