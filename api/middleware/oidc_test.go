package middleware_test

import (
	"encoding/base64"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/oauth2-proxy/mockoidc"

	"github.com/trellis-ai/trellis/api/middleware"
	"github.com/trellis-ai/trellis/internal/oidctest"
	"github.com/trellis-ai/trellis/runs"
	"github.com/trellis-ai/trellis/store"
)

// serveTokens is a handler behind Authenticate that takes the provider's
// tokens, answering each request with its user.
func serveTokens(t *testing.T, p *oidctest.Provider, cfg middleware.OIDCConfig) *httptest.Server {
	t.Helper()
	cfg.Issuer, cfg.Audience = p.Issuer(), p.ClientID
	tokens, err := middleware.NewOIDC(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	h := middleware.Authenticate(middleware.AuthConfig{Tokens: tokens})(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte(runs.UserFrom(r.Context())))
	}))
	ts := httptest.NewServer(h)
	t.Cleanup(ts.Close)
	return ts
}

func get(t *testing.T, ts *httptest.Server, token string) (int, string) {
	t.Helper()
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodGet, ts.URL, nil)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := ts.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var b strings.Builder
	buf := make([]byte, 512)
	n, _ := resp.Body.Read(buf)
	b.Write(buf[:n])
	return resp.StatusCode, b.String()
}

// A token of the issuer names its user; one expired, for another
// audience or issuer, not yet valid, signed with a key the issuer does
// not have, tampered with, or unsigned is refused.
func TestOIDCTokens(t *testing.T) {
	p := oidctest.Start(t)
	ts := serveTokens(t, p, middleware.OIDCConfig{})
	if code, user := get(t, ts, p.Token(t, "ada", nil)); code != http.StatusOK || user != "ada" {
		t.Fatalf("a valid token: %d %q", code, user)
	}
	good := p.Token(t, "ada", nil)
	parts := strings.Split(good, ".")
	sig, _ := base64.RawURLEncoding.DecodeString(parts[2])
	sig[0] ^= 0xff
	tampered := parts[0] + "." + parts[1] + "." + base64.RawURLEncoding.EncodeToString(sig)
	claims, _ := base64.RawURLEncoding.DecodeString(parts[1])
	forged := parts[0] + "." + base64.RawURLEncoding.EncodeToString([]byte(strings.Replace(string(claims), `"ada"`, `"eve"`, 1))) + "." + parts[2]
	unsigned := base64.RawURLEncoding.EncodeToString([]byte(`{"alg":"none","typ":"JWT"}`)) + "." + parts[1] + "."
	stranger, err := mockoidc.RandomKeypair(2048)
	if err != nil {
		t.Fatal(err)
	}
	foreign, err := stranger.SignJWT(jwt.MapClaims{"iss": p.Issuer(), "aud": p.ClientID, "sub": "ada", "exp": time.Now().Add(time.Minute).Unix()})
	if err != nil {
		t.Fatal(err)
	}
	for name, tok := range map[string]string{
		"expired":        p.Token(t, "ada", jwt.MapClaims{"exp": time.Now().Add(-time.Second).Unix()}),
		"other audience": p.Token(t, "ada", jwt.MapClaims{"aud": "another-service"}),
		"other issuer":   p.Token(t, "ada", jwt.MapClaims{"iss": "https://elsewhere.example"}),
		"not yet valid":  p.Token(t, "ada", jwt.MapClaims{"nbf": time.Now().Add(10 * time.Minute).Unix()}),
		"no user":        p.Token(t, "", nil),
		"long user":      p.Token(t, strings.Repeat("u", store.MaxIDBytes+1), nil),
		"tampered":       tampered,
		"forged claims":  forged,
		"unsigned":       unsigned,
		"unknown key":    foreign,
	} {
		if code, user := get(t, ts, tok); code != http.StatusUnauthorized {
			t.Errorf("%s: %d %q", name, code, user)
		}
	}
}

// A rotated key needs no restart: a token signed with the new key is
// taken (the key set is fetched again for a key it lacks), and one
// signed with the old key no longer is, once that fetch is cached:
// go-oidc answers the request that fetched before it replaces its cache,
// so a request right after may still find the old key there.
func TestOIDCKeyRotation(t *testing.T) {
	p := oidctest.Start(t)
	ts := serveTokens(t, p, middleware.OIDCConfig{})
	old := p.Token(t, "ada", nil)
	if code, _ := get(t, ts, old); code != http.StatusOK {
		t.Fatalf("before the rotation: %d", code)
	}
	p.Rotate(t)
	if code, user := get(t, ts, p.Token(t, "ada", nil)); code != http.StatusOK || user != "ada" {
		t.Fatalf("a token of the new key: %d %q", code, user)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		code, _ := get(t, ts, old)
		if code == http.StatusUnauthorized {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("a token of the retired key, 5 s after the rotation: %d", code)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// The user may come from another claim; algorithms not allowed are
// refused even with a valid signature.
func TestOIDCClaimAndAlgorithms(t *testing.T) {
	p := oidctest.Start(t)
	if code, user := get(t, serveTokens(t, p, middleware.OIDCConfig{UserClaim: "email"}), p.Token(t, "ada", nil)); code != http.StatusOK || user != "ada@example.com" {
		t.Fatalf("user from email: %d %q", code, user)
	}
	if code, _ := get(t, serveTokens(t, p, middleware.OIDCConfig{Algorithms: []string{"ES256"}}), p.Token(t, "ada", nil)); code != http.StatusUnauthorized {
		t.Fatalf("an RS256 token where only ES256 is allowed: %d", code)
	}
	if _, err := middleware.NewOIDC(t.Context(), middleware.OIDCConfig{Issuer: p.Issuer()}); err == nil {
		t.Error("no audience: no error")
	}
	if _, err := middleware.NewOIDC(t.Context(), middleware.OIDCConfig{Issuer: "http://127.0.0.1:1/nothing", Audience: "x"}); err == nil {
		t.Error("an issuer that does not answer: no error")
	}
}
