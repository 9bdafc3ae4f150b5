package signin

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"path"
	"strings"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"
	"golang.org/x/oauth2"

	"github.com/trellis-ai/trellis/internal/ids"
	"github.com/trellis-ai/trellis/store"
)

// Config configures the web page's sign-in through an OpenID Connect
// provider: the authorization-code flow with PKCE (S256).
type Config struct {
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
	// from the request, whose Host a client chooses. Its path may put
	// /auth/callback under a prefix (see Prefix).
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

// SignIn is the web page's sign-in (see New).
type SignIn struct {
	cfg      Config
	oauth    oauth2.Config
	verifier *oidc.IDTokenVerifier
	// flowKey signs the flow cookie. Derived from the client secret, it
	// is the same on every process, so a callback may reach another
	// process than its login did; a public client's is random per
	// process (see Config.ClientSecret).
	flowKey []byte
	secure  bool // the redirect URL is https: cookies are Secure
	// prefix is the redirect URL's path prefix (see Prefix): the
	// cookies' paths and the page's URL, as the browser sees them.
	prefix string
}

// CallbackPath is the server's path of the callback the provider sends
// the browser back to.
const CallbackPath = "/auth/callback"

// ErrRedirectPath: a redirect URL whose path is not CallbackPath, under
// a clean prefix or none.
var ErrRedirectPath = errors.New("signin: the redirect URL's path must be " + CallbackPath + ", or a prefix and " + CallbackPath)

// Prefix returns the path prefix a redirect URL puts the service under:
// its path before CallbackPath, "" for none. A reverse proxy that serves
// the service at https://host/prefix/ strips the prefix from what it
// forwards, so the server's routes stay where they are, /auth/callback
// among them; what the browser is told carries it: the cookies' paths
// (prefix/ and prefix/auth/, so that they go to this service and not to
// the host's others) and the page it is sent to after signing in
// (prefix/). The prefix is a clean absolute path ("/trellis", not
// "/trellis/" or "/a/../b").
func Prefix(redirectURL string) (string, error) {
	u, err := url.Parse(redirectURL)
	if err != nil {
		return "", fmt.Errorf("signin: redirect URL: %w", err)
	}
	prefix, ok := strings.CutSuffix(u.EscapedPath(), CallbackPath)
	if !ok || (prefix != "" && (!strings.HasPrefix(prefix, "/") || prefix != path.Clean(prefix) || strings.HasSuffix(prefix, "/") ||
		strings.ContainsRune(prefix, ';'))) {
		return "", ErrRedirectPath
	}
	return prefix, nil
}

// New discovers the provider and returns the sign-in.
func New(ctx context.Context, cfg Config) (*SignIn, error) {
	if cfg.Issuer == "" || cfg.ClientID == "" || cfg.RedirectURL == "" || cfg.Sessions == nil {
		return nil, errors.New("signin: an issuer, a client id, a redirect URL and a session store are required")
	}
	u, err := url.Parse(cfg.RedirectURL)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		return nil, fmt.Errorf("signin: redirect URL %q: want an absolute http(s) URL", cfg.RedirectURL)
	}
	prefix, err := Prefix(cfg.RedirectURL)
	if err != nil {
		return nil, err
	}
	if cfg.UserClaim == "" {
		cfg.UserClaim = "sub"
	}
	if cfg.SessionTTL <= 0 {
		cfg.SessionTTL = DefaultSessionTTL
	}
	p, err := oidc.NewProvider(context.WithoutCancel(ctx), cfg.Issuer)
	if err != nil {
		return nil, fmt.Errorf("signin: discover %s: %w", cfg.Issuer, err)
	}
	s := &SignIn{cfg: cfg, secure: u.Scheme == "https", prefix: prefix,
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

// SessionUser names the user of a session from its secret's hash, ""
// for none (unknown, expired, signed out): what
// middleware.AuthConfig.Sessions asks.
func (si *SignIn) SessionUser(ctx context.Context, hash [sha256.Size]byte) (string, error) {
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

// cookie is a cookie of path under the prefix.
func (si *SignIn) cookie(r *http.Request, name, value, path string, expires time.Time) *http.Cookie {
	c := &http.Cookie{Name: name, Value: value, Path: si.prefix + path, HttpOnly: true, SameSite: http.SameSiteLaxMode,
		Secure: si.secure || r.TLS != nil}
	if value == "" {
		c.MaxAge = -1
	} else {
		c.Expires, c.MaxAge = expires, int(time.Until(expires).Seconds())
	}
	return c
}
