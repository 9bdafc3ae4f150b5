package middleware

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/coreos/go-oidc/v3/oidc"

	"github.com/trellis-ai/trellis/store"
)

// OIDCConfig configures the bearer tokens of an OpenID Connect issuer:
// JWTs that the issuer signed, for this service, still valid.
type OIDCConfig struct {
	// Issuer is the issuer's URL, as its tokens' iss names it; its keys
	// are found by discovery (Issuer/.well-known/openid-configuration).
	Issuer string
	// Audience is what a token's aud must include: the client id the
	// issuer knows this service by.
	Audience string
	// UserClaim names the claim that holds the user id; "" means "sub".
	// It must be a non-empty string in every token.
	UserClaim string
	// Algorithms are the signing algorithms accepted; empty means those
	// the issuer's discovery document lists (RS256 when it lists none).
	Algorithms []string
}

// TokenUser names the user of a bearer token, or returns an error for a
// token that is not valid.
type TokenUser func(ctx context.Context, token string) (string, error)

// NewOIDC discovers the issuer and returns what names the user of each
// of its tokens. A token must be signed by one of the issuer's keys (its
// JWKS, fetched again when a token names a key it does not have, so a
// rotation needs no restart) with an accepted algorithm, name the issuer
// and the audience, and be unexpired (nbf may be up to 5 minutes ahead,
// for clocks that disagree). The user is UserClaim's value.
func NewOIDC(ctx context.Context, cfg OIDCConfig) (TokenUser, error) {
	if cfg.Issuer == "" || cfg.Audience == "" {
		return nil, errors.New("oidc: an issuer and an audience are required")
	}
	// The key set fetches keys under the context it was made with, for
	// as long as the server runs.
	p, err := oidc.NewProvider(context.WithoutCancel(ctx), cfg.Issuer)
	if err != nil {
		return nil, fmt.Errorf("oidc: discover %s: %w", cfg.Issuer, err)
	}
	claim := cfg.UserClaim
	if claim == "" {
		claim = "sub"
	}
	v := p.Verifier(&oidc.Config{ClientID: cfg.Audience, SupportedSigningAlgs: cfg.Algorithms})
	return func(ctx context.Context, token string) (string, error) {
		t, err := v.Verify(ctx, token)
		if err != nil {
			return "", err
		}
		var claims map[string]any
		if err := t.Claims(&claims); err != nil {
			return "", err
		}
		return ClaimUser(claims, claim)
	}, nil
}

// ClaimUser returns the user that a token's claim names: a non-empty
// string of text, no longer than an id the record keeps for a user
// (store.MaxIDBytes; OpenID Connect's sub is at most 255 characters).
func ClaimUser(claims map[string]any, claim string) (string, error) {
	user, _ := claims[claim].(string)
	if user == "" || len(user) > store.MaxIDBytes || !store.ValidText(user) {
		return "", fmt.Errorf("oidc: the token's %s claim names no user", claim)
	}
	return user, nil
}

// looksLikeJWT reports whether a bearer credential has a JWT's shape:
// three base64url parts, the first a JSON object ("ey…"). Issued keys
// (KeyPrefix) and configured keys are looked up as keys.
func looksLikeJWT(s string) bool {
	return strings.HasPrefix(s, "ey") && strings.Count(s, ".") == 2
}
