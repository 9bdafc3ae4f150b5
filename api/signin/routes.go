package signin

import (
	"crypto/hmac"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"
	"github.com/go-chi/chi/v5"
	"golang.org/x/oauth2"

	"github.com/trellis-ai/trellis/api/httperr"
	"github.com/trellis-ai/trellis/api/jsonbody"
	"github.com/trellis-ai/trellis/api/middleware"
	"github.com/trellis-ai/trellis/internal/ids"
	"github.com/trellis-ai/trellis/store"
)

// Server is what the sign-in's endpoints take of the server that mounts
// them, so that a failed sign-in or a bad cookie is limited, counted and
// answered as the server's own refusals of credentials are.
type Server struct {
	// Failures counts invalid credentials per client address, the same
	// limiter the server's authentication spends; nil limits nothing.
	Failures *middleware.Limiter
	// Refused is told why each refused request was refused
	// (middleware.AuthMissing, AuthInvalid, AuthRateLimited). Required.
	Refused func(reason string)
	// Error answers an error as the native API answers it. Required.
	Error func(http.ResponseWriter, *http.Request, error)
	// Logger receives why a sign-in failed, which its answer does not
	// tell. Required.
	Logger *slog.Logger
}

// handler serves the sign-in's endpoints.
type handler struct {
	si  *SignIn
	srv Server
	// errFailed and errNotSignedIn name the login's URL as the browser
	// sees it, under the prefix.
	errFailed, errNotSignedIn *httperr.Problem
}

// Routes adds GET /login, GET /callback, GET /session and POST /logout
// to r, the router of /auth.
func (si *SignIn) Routes(r chi.Router, srv Server) {
	login := si.prefix + "/auth/login"
	h := &handler{si: si, srv: srv,
		errFailed:      httperr.New(http.StatusBadRequest, "signin_failed", "the sign-in failed; start again at "+login),
		errNotSignedIn: httperr.New(http.StatusUnauthorized, "unauthorized", "not signed in; sign in at "+login)}
	r.Get("/login", h.handleLogin)
	r.Get("/callback", h.handleCallback)
	r.Get("/session", h.handleSession)
	r.Post("/logout", h.handleLogout)
}

// handleLogin sends the browser to the provider.
func (h *handler) handleLogin(w http.ResponseWriter, r *http.Request) {
	si := h.si
	f := flow{State: ids.Random("", 16), Nonce: ids.Random("", 16), Verifier: oauth2.GenerateVerifier(), Expires: time.Now().Add(signInFlowTTL)}
	http.SetCookie(w, si.cookie(r, flowCookie, si.encodeFlow(f), "/auth/", f.Expires))
	w.Header().Set("Cache-Control", "no-store")
	http.Redirect(w, r, si.oauth.AuthCodeURL(f.State, oidc.Nonce(f.Nonce), oauth2.S256ChallengeOption(f.Verifier)), http.StatusFound)
}

// handleCallback finishes a sign-in: it checks the state against the
// flow cookie, exchanges the code with the PKCE verifier, verifies the
// ID token (signature, issuer, audience, expiry, nonce), starts a
// session and sends the browser to the page. A failure counts against
// the client address as an invalid credential does.
func (h *handler) handleCallback(w http.ResponseWriter, r *http.Request) {
	si := h.si
	if ok, wait := h.srv.Failures.CheckFailures(r); !ok {
		h.srv.Refused(middleware.AuthRateLimited)
		h.srv.Error(w, r, middleware.RateLimited(wait))
		return
	}
	http.SetCookie(w, si.cookie(r, flowCookie, "", "/auth/", time.Time{})) // one use
	user, err := si.finish(r)
	if err != nil {
		h.srv.Failures.SpendFailure(r)
		h.srv.Refused(middleware.AuthInvalid)
		h.srv.Logger.LogAttrs(r.Context(), slog.LevelInfo, "a sign-in failed", slog.Any("error", err))
		h.srv.Error(w, r, h.errFailed)
		return
	}
	// Sweeping expired sessions at each sign-in keeps the table as
	// small as the people signed in, with no job of its own.
	if _, err := si.cfg.Sessions.DeleteExpiredSessions(r.Context()); err != nil {
		h.srv.Logger.LogAttrs(r.Context(), slog.LevelWarn, "deleting expired sessions", slog.Any("error", err))
	}
	secret := ids.Random("trs_", 32)
	sess, err := si.cfg.Sessions.CreateSession(r.Context(), store.NewSession{
		UserID: user, Hash: middleware.SessionHash(secret), ExpiresAt: time.Now().Add(si.cfg.SessionTTL)})
	if err != nil {
		h.srv.Error(w, r, fmt.Errorf("signin: %w", err))
		return
	}
	http.SetCookie(w, si.cookie(r, middleware.SessionCookie, secret, "/", sess.ExpiresAt))
	w.Header().Set("Cache-Control", "no-store")
	http.Redirect(w, r, h.si.prefix+"/", http.StatusSeeOther)
}

// finish returns the user the callback r signs in.
func (si *SignIn) finish(r *http.Request) (string, error) {
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
func (h *handler) sessionOf(w http.ResponseWriter, r *http.Request) (secret string, sess store.Session, ok bool) {
	c, err := r.Cookie(middleware.SessionCookie)
	if err != nil || c.Value == "" {
		h.srv.Refused(middleware.AuthMissing)
		h.srv.Error(w, r, h.errNotSignedIn)
		return "", sess, false
	}
	if ok, wait := h.srv.Failures.CheckFailures(r); !ok {
		h.srv.Refused(middleware.AuthRateLimited)
		h.srv.Error(w, r, middleware.RateLimited(wait))
		return "", sess, false
	}
	sess, err = h.si.cfg.Sessions.SessionByHash(r.Context(), middleware.SessionHash(c.Value))
	if errors.Is(err, store.ErrNotFound) {
		h.srv.Failures.SpendFailure(r)
		h.srv.Refused(middleware.AuthInvalid)
		http.SetCookie(w, h.si.cookie(r, middleware.SessionCookie, "", "/", time.Time{}))
		h.srv.Error(w, r, h.errNotSignedIn)
		return "", sess, false
	}
	if err != nil {
		h.srv.Error(w, r, fmt.Errorf("signin: session: %w", err))
		return "", sess, false
	}
	return c.Value, sess, true
}

// sessionResponse is GET /auth/session's answer.
type sessionResponse struct {
	User      string    `json:"user"`
	ExpiresAt time.Time `json:"expires_at"`
	CSRFToken string    `json:"csrf_token"`
}

// handleSession says who the session cookie signs in, with the token
// its writes must send.
func (h *handler) handleSession(w http.ResponseWriter, r *http.Request) {
	secret, sess, ok := h.sessionOf(w, r)
	if !ok {
		return
	}
	w.Header().Set("Cache-Control", "no-store")
	jsonbody.Write(w, http.StatusOK, sessionResponse{User: sess.UserID, ExpiresAt: sess.ExpiresAt, CSRFToken: middleware.CSRFToken(secret)})
}

// handleLogout ends the session of the cookie, on every process, and
// clears the cookie. It is a write: it needs the CSRF token, so that no
// other site can sign the user out.
func (h *handler) handleLogout(w http.ResponseWriter, r *http.Request) {
	secret, _, ok := h.sessionOf(w, r)
	if !ok {
		return
	}
	if !middleware.ValidCSRF(r.Header.Get(middleware.CSRFHeader), secret) {
		h.srv.Error(w, r, middleware.ErrCSRF)
		return
	}
	if err := h.si.cfg.Sessions.DeleteSession(r.Context(), middleware.SessionHash(secret)); err != nil {
		h.srv.Error(w, r, fmt.Errorf("signin: sign out: %w", err))
		return
	}
	http.SetCookie(w, h.si.cookie(r, middleware.SessionCookie, "", "/", time.Time{}))
	w.WriteHeader(http.StatusNoContent)
}
