package api

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"
	"github.com/go-chi/chi/v5"
	"golang.org/x/oauth2"

	"github.com/trellis-ai/trellis/api/jsonbody"
	"github.com/trellis-ai/trellis/api/middleware"
	"github.com/trellis-ai/trellis/internal/ids"
	"github.com/trellis-ai/trellis/store"
)

// SignInConfig configures the web page's sign-in through an OpenID
// Connect provider: the authorization-code flow with PKCE (S256).
type SignInConfig struct {
	// Issuer is the provider's issuer URL (found by discovery).
	Issuer string
	// ClientID is the client id the provider knows this service by: the
	// ID token's audience.
	ClientID string
	// ClientSecret is the client's secret; "" for a public client, which
	// PKCE alone protects.
	ClientSecret string
	// RedirectURL is this service's public URL of GET /auth/callback, as
	// registered at the provider. It is configured rather than taken
	// from the request, whose Host a client chooses.
	RedirectURL string
	// UserClaim names the ID token's claim that holds the user id; ""
	// means "sub".
	UserClaim string
	// Algorithms are the ID token signing algorithms accepted; empty
	// means those the issuer's discovery lists.
	Algorithms []string
	// SessionTTL is how long a session lasts from sign-in; 0 means
	// DefaultSessionTTL.
	SessionTTL time.Duration
	// Sessions is the record of sessions. Required.
	Sessions store.Sessions
}

// DefaultSessionTTL is how long a session lasts unless configured.
const DefaultSessionTTL = 7 * 24 * time.Hour

// signInFlowTTL bounds the time from GET /auth/login to its callback.
const signInFlowTTL = 10 * time.Minute

// flowCookie carries a sign-in's state, nonce and PKCE verifier from
// GET /auth/login to GET /auth/callback. It is signed, so that nothing
// but this service can set it, and HttpOnly; it names no one, and lives
// for signInFlowTTL at most.
const flowCookie = "trellis_signin"

// SignIn is the web page's sign-in (see NewSignIn).
type SignIn struct {
	cfg      SignInConfig
	oauth    oauth2.Config
	verifier *oidc.IDTokenVerifier
	// flowKey signs the flow cookie. Derived from the client secret, it
	// is the same on every process, so a callback may reach another
	// process than its login did; a public client's is random per
	// process (see SignInConfig.ClientSecret).
	flowKey []byte
	secure  bool // the redirect URL is https: cookies are Secure
}

// NewSignIn discovers the provider and returns the sign-in.
func NewSignIn(ctx context.Context, cfg SignInConfig) (*SignIn, error) {
	if cfg.Issuer == "" || cfg.ClientID == "" || cfg.RedirectURL == "" || cfg.Sessions == nil {
		return nil, errors.New("api: sign-in: an issuer, a client id, a redirect URL and a session store are required")
	}
	u, err := url.Parse(cfg.RedirectURL)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		return nil, fmt.Errorf("api: sign-in: redirect URL %q: want an absolute http(s) URL", cfg.RedirectURL)
	}
	if cfg.UserClaim == "" {
		cfg.UserClaim = "sub"
	}
	if cfg.SessionTTL <= 0 {
		cfg.SessionTTL = DefaultSessionTTL
	}
	p, err := oidc.NewProvider(context.WithoutCancel(ctx), cfg.Issuer)
	if err != nil {
		return nil, fmt.Errorf("api: sign-in: discover %s: %w", cfg.Issuer, err)
	}
	s := &SignIn{cfg: cfg, secure: u.Scheme == "https",
		oauth: oauth2.Config{ClientID: cfg.ClientID, ClientSecret: cfg.ClientSecret, Endpoint: p.Endpoint(),
			RedirectURL: cfg.RedirectURL, Scopes: []string{oidc.ScopeOpenID, "profile", "email"}},
		verifier: p.Verifier(&oidc.Config{ClientID: cfg.ClientID, SupportedSigningAlgs: cfg.Algorithms}),
	}
	if cfg.ClientSecret != "" {
		k := sha256.Sum256([]byte("trellis sign-in flow\x00" + cfg.ClientSecret))
		s.flowKey = k[:]
	} else {
		s.flowKey = []byte(ids.Random("", 32))
	}
	return s, nil
}

// sessionUser names the user of a session from its secret's hash, ""
// for none: what middleware.AuthConfig.Sessions asks.
func (si *SignIn) sessionUser(ctx context.Context, hash [sha256.Size]byte) (string, error) {
	sess, err := si.cfg.Sessions.SessionByHash(ctx, hash)
	if errors.Is(err, store.ErrNotFound) {
		return "", nil
	}
	return sess.UserID, err
}

// flow is what the flow cookie carries.
type flow struct {
	State    string    `json:"state"`
	Nonce    string    `json:"nonce"`
	Verifier string    `json:"verifier"`
	Expires  time.Time `json:"expires"`
}

func (si *SignIn) sign(b []byte) []byte {
	m := hmac.New(sha256.New, si.flowKey)
	m.Write(b)
	return m.Sum(nil)
}

func (si *SignIn) encodeFlow(f flow) string {
	b, _ := json.Marshal(f)
	return base64.RawURLEncoding.EncodeToString(b) + "." + base64.RawURLEncoding.EncodeToString(si.sign(b))
}

func (si *SignIn) decodeFlow(v string) (flow, error) {
	var f flow
	body, sig, ok := strings.Cut(v, ".")
	b, err1 := base64.RawURLEncoding.DecodeString(body)
	mac, err2 := base64.RawURLEncoding.DecodeString(sig)
	if !ok || err1 != nil || err2 != nil || !hmac.Equal(mac, si.sign(b)) {
		return f, errors.New("the sign-in cookie is not this service's")
	}
	if err := json.Unmarshal(b, &f); err != nil {
		return f, fmt.Errorf("the sign-in cookie: %w", err)
	}
	if time.Now().After(f.Expires) {
		return f, errors.New("the sign-in took too long")
	}
	return f, nil
}

func (si *SignIn) cookie(r *http.Request, name, value, path string, expires time.Time) *http.Cookie {
	c := &http.Cookie{Name: name, Value: value, Path: path, HttpOnly: true, SameSite: http.SameSiteLaxMode,
		Secure: si.secure || r.TLS != nil}
	if value == "" {
		c.MaxAge = -1
	} else {
		c.Expires, c.MaxAge = expires, int(time.Until(expires).Seconds())
	}
	return c
}

func (s *Server) signInRoutes(r chi.Router) {
	r.Get("/login", s.handleLogin)
	r.Get("/callback", s.handleCallback)
	r.Get("/session", s.handleSession)
	r.Post("/logout", s.handleLogout)
}

// handleLogin sends the browser to the provider.
func (s *Server) handleLogin(w http.ResponseWriter, r *http.Request) {
	si := s.cfg.SignIn
	f := flow{State: ids.Random("", 16), Nonce: ids.Random("", 16), Verifier: oauth2.GenerateVerifier(), Expires: time.Now().Add(signInFlowTTL)}
	http.SetCookie(w, si.cookie(r, flowCookie, si.encodeFlow(f), "/auth/", f.Expires))
	w.Header().Set("Cache-Control", "no-store")
	http.Redirect(w, r, si.oauth.AuthCodeURL(f.State, oidc.Nonce(f.Nonce), oauth2.S256ChallengeOption(f.Verifier)), http.StatusFound)
}

var errSignInFailed = errorf(http.StatusBadRequest, "signin_failed", "the sign-in failed; start again at /auth/login")

// handleCallback finishes a sign-in: it checks the state against the
// flow cookie, exchanges the code with the PKCE verifier, verifies the
// ID token (signature, issuer, audience, expiry, nonce), starts a
// session and sends the browser to the page. A failure counts against
// the client address as an invalid credential does.
func (s *Server) handleCallback(w http.ResponseWriter, r *http.Request) {
	si := s.cfg.SignIn
	if ok, wait := s.authLimiter.CheckFailures(r); !ok {
		s.metrics.AuthFailed(middleware.AuthRateLimited)
		s.writeError(w, r, middleware.RateLimited(wait))
		return
	}
	http.SetCookie(w, si.cookie(r, flowCookie, "", "/auth/", time.Time{})) // one use
	user, err := s.finishSignIn(r)
	if err != nil {
		s.authLimiter.SpendFailure(r)
		s.metrics.AuthFailed(middleware.AuthInvalid)
		s.log.LogAttrs(r.Context(), slog.LevelInfo, "a sign-in failed", slog.Any("error", err))
		s.writeError(w, r, errSignInFailed)
		return
	}
	// Sweeping expired sessions at each sign-in keeps the table as
	// small as the people signed in, with no job of its own.
	if _, err := si.cfg.Sessions.DeleteExpiredSessions(r.Context()); err != nil {
		s.log.LogAttrs(r.Context(), slog.LevelWarn, "deleting expired sessions", slog.Any("error", err))
	}
	secret := ids.Random("trs_", 32)
	sess, err := si.cfg.Sessions.CreateSession(r.Context(), store.NewSession{
		UserID: user, Hash: middleware.SessionHash(secret), ExpiresAt: time.Now().Add(si.cfg.SessionTTL)})
	if err != nil {
		s.writeError(w, r, fmt.Errorf("api: sign-in: %w", err))
		return
	}
	http.SetCookie(w, si.cookie(r, middleware.SessionCookie, secret, "/", sess.ExpiresAt))
	w.Header().Set("Cache-Control", "no-store")
	http.Redirect(w, r, "/", http.StatusSeeOther)
}

// finishSignIn returns the user the callback signs in.
func (s *Server) finishSignIn(r *http.Request) (string, error) {
	si := s.cfg.SignIn
	q := r.URL.Query()
	if e := q.Get("error"); e != "" {
		return "", fmt.Errorf("the provider refused: %s", e)
	}
	c, err := r.Cookie(flowCookie)
	if err != nil {
		return "", errors.New("no sign-in cookie")
	}
	f, err := si.decodeFlow(c.Value)
	if err != nil {
		return "", err
	}
	if !hmac.Equal([]byte(q.Get("state")), []byte(f.State)) {
		return "", errors.New("the state is not the sign-in's")
	}
	tok, err := si.oauth.Exchange(r.Context(), q.Get("code"), oauth2.VerifierOption(f.Verifier))
	if err != nil {
		return "", fmt.Errorf("exchange the code: %w", err)
	}
	raw, _ := tok.Extra("id_token").(string)
	if raw == "" {
		return "", errors.New("the provider sent no ID token")
	}
	idt, err := si.verifier.Verify(r.Context(), raw)
	if err != nil {
		return "", fmt.Errorf("the ID token: %w", err)
	}
	if !hmac.Equal([]byte(idt.Nonce), []byte(f.Nonce)) {
		return "", errors.New("the ID token's nonce is not the sign-in's")
	}
	var claims map[string]any
	if err := idt.Claims(&claims); err != nil {
		return "", fmt.Errorf("the ID token's claims: %w", err)
	}
	return middleware.ClaimUser(claims, si.cfg.UserClaim)
}

// sessionOf returns the secret and the session of the request's session
// cookie; ok is false when it sends none. A cookie that names no live
// session counts against the client address as an invalid credential.
func (s *Server) sessionOf(w http.ResponseWriter, r *http.Request) (secret string, sess store.Session, ok bool) {
	c, err := r.Cookie(middleware.SessionCookie)
	if err != nil || c.Value == "" {
		s.metrics.AuthFailed(middleware.AuthMissing)
		s.writeError(w, r, errNotSignedIn)
		return "", sess, false
	}
	if ok, wait := s.authLimiter.CheckFailures(r); !ok {
		s.metrics.AuthFailed(middleware.AuthRateLimited)
		s.writeError(w, r, middleware.RateLimited(wait))
		return "", sess, false
	}
	sess, err = s.cfg.SignIn.cfg.Sessions.SessionByHash(r.Context(), middleware.SessionHash(c.Value))
	if errors.Is(err, store.ErrNotFound) {
		s.authLimiter.SpendFailure(r)
		s.metrics.AuthFailed(middleware.AuthInvalid)
		http.SetCookie(w, s.cfg.SignIn.cookie(r, middleware.SessionCookie, "", "/", time.Time{}))
		s.writeError(w, r, errNotSignedIn)
		return "", sess, false
	}
	if err != nil {
		s.writeError(w, r, fmt.Errorf("api: session: %w", err))
		return "", sess, false
	}
	return c.Value, sess, true
}

var errNotSignedIn = errorf(http.StatusUnauthorized, "unauthorized", "not signed in; sign in at /auth/login")

// sessionResponse is GET /auth/session's answer.
type sessionResponse struct {
	User      string    `json:"user"`
	ExpiresAt time.Time `json:"expires_at"`
	CSRFToken string    `json:"csrf_token"`
}

// handleSession says who the session cookie signs in, with the token
// its writes must send.
func (s *Server) handleSession(w http.ResponseWriter, r *http.Request) {
	secret, sess, ok := s.sessionOf(w, r)
	if !ok {
		return
	}
	w.Header().Set("Cache-Control", "no-store")
	jsonbody.Write(w, http.StatusOK, sessionResponse{User: sess.UserID, ExpiresAt: sess.ExpiresAt, CSRFToken: middleware.CSRFToken(secret)})
}

// handleLogout ends the session of the cookie, on every process, and
// clears the cookie. It is a write: it needs the CSRF token, so that no
// other site can sign the user out.
func (s *Server) handleLogout(w http.ResponseWriter, r *http.Request) {
	secret, _, ok := s.sessionOf(w, r)
	if !ok {
		return
	}
	if !middleware.ValidCSRF(r.Header.Get(middleware.CSRFHeader), secret) {
		s.writeError(w, r, middleware.ErrCSRF)
		return
	}
	if err := s.cfg.SignIn.cfg.Sessions.DeleteSession(r.Context(), middleware.SessionHash(secret)); err != nil {
		s.writeError(w, r, fmt.Errorf("api: sign out: %w", err))
		return
	}
	http.SetCookie(w, s.cfg.SignIn.cookie(r, middleware.SessionCookie, "", "/", time.Time{}))
	w.WriteHeader(http.StatusNoContent)
}
