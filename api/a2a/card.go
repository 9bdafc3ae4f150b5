package a2a

import (
	"net/http"
	"strings"
)

// The agent card: what GET /.well-known/agent-card.json tells an A2A
// client of the agent, its one JSON-RPC interface and how to
// authenticate to it.

type agentCard struct {
	Name                 string                    `json:"name"`
	Description          string                    `json:"description"`
	SupportedInterfaces  []agentInterface          `json:"supportedInterfaces"`
	Version              string                    `json:"version"`
	Capabilities         capabilities              `json:"capabilities"`
	SecuritySchemes      map[string]securityScheme `json:"securitySchemes,omitempty"`
	SecurityRequirements []securityRequirement     `json:"securityRequirements,omitempty"`
	DefaultInputModes    []string                  `json:"defaultInputModes"`
	DefaultOutputModes   []string                  `json:"defaultOutputModes"`
	Skills               []skill                   `json:"skills"`
}

type agentInterface struct {
	URL             string `json:"url"`
	ProtocolBinding string `json:"protocolBinding"`
	ProtocolVersion string `json:"protocolVersion"`
}

type capabilities struct {
	Streaming         bool `json:"streaming"`
	PushNotifications bool `json:"pushNotifications"`
}

type skill struct {
	ID          string   `json:"id"`
	Name        string   `json:"name"`
	Description string   `json:"description"`
	Tags        []string `json:"tags"`
}

// securityScheme is the oneof of A2A's schemes Trellis names.
type securityScheme struct {
	APIKey *apiKeyScheme `json:"apiKeySecurityScheme,omitempty"`
	HTTP   *httpScheme   `json:"httpAuthSecurityScheme,omitempty"`
	OIDC   *oidcScheme   `json:"openIdConnectSecurityScheme,omitempty"`
}

type apiKeyScheme struct {
	Description string `json:"description,omitempty"`
	Location    string `json:"location"`
	Name        string `json:"name"`
}

type httpScheme struct {
	Description  string `json:"description,omitempty"`
	Scheme       string `json:"scheme"`
	BearerFormat string `json:"bearerFormat,omitempty"`
}

type oidcScheme struct {
	Description      string `json:"description,omitempty"`
	OpenIDConnectURL string `json:"openIdConnectUrl"`
}

// securityRequirement names one scheme that suffices; its scopes are
// none.
type securityRequirement struct {
	Schemes map[string]struct{} `json:"schemes"`
}

// Path is where the JSON-RPC interface is served, and CardPath the
// agent card.
const (
	Path     = "/a2a"
	CardPath = "/.well-known/agent-card.json"
)

// Card serves the agent card. It is public, as discovery needs: it
// names the tools and the ways to authenticate, never a user's data.
func (h *Handler) Card(w http.ResponseWriter, r *http.Request) {
	c := agentCard{
		Name:        "Trellis",
		Description: "Trellis' agent: it plans, calls its tools (some after a person approves), and answers.",
		SupportedInterfaces: []agentInterface{{URL: baseURL(r) + Path, ProtocolBinding: "JSONRPC",
			ProtocolVersion: protocolVersion}},
		Version:            h.cfg.Version,
		Capabilities:       capabilities{Streaming: true},
		DefaultInputModes:  []string{"text/plain", "application/json"},
		DefaultOutputModes: []string{"text/plain"},
		Skills:             []skill{},
	}
	if c.Version == "" {
		c.Version = "dev"
	}
	if h.cfg.Tools != nil {
		for _, t := range h.cfg.Tools.Tools() {
			tags := []string{string(t.Source)}
			if t.RequiresApproval {
				tags = append(tags, "requires-approval")
			}
			c.Skills = append(c.Skills, skill{ID: t.Name, Name: t.Name, Description: t.Description, Tags: tags})
		}
	}
	sec := h.cfg.Security
	if sec.Keys {
		c.SecuritySchemes = map[string]securityScheme{
			"bearer": {HTTP: &httpScheme{Scheme: "Bearer", Description: "a Trellis API key as Authorization: Bearer <key>"}},
			"apiKey": {APIKey: &apiKeyScheme{Location: "header", Name: "X-Api-Key", Description: "a Trellis API key"}},
		}
		c.SecurityRequirements = []securityRequirement{{Schemes: map[string]struct{}{"bearer": {}}},
			{Schemes: map[string]struct{}{"apiKey": {}}}}
	}
	if sec.OIDCIssuer != "" {
		if c.SecuritySchemes == nil {
			c.SecuritySchemes = map[string]securityScheme{}
		}
		c.SecuritySchemes["oidc"] = securityScheme{OIDC: &oidcScheme{
			OpenIDConnectURL: strings.TrimSuffix(sec.OIDCIssuer, "/") + "/.well-known/openid-configuration",
			Description:      "a token of the issuer as Authorization: Bearer <token>"}}
		c.SecurityRequirements = append(c.SecurityRequirements, securityRequirement{Schemes: map[string]struct{}{"oidc": {}}})
	}
	writeJSON(w, http.StatusOK, c)
}

// baseURL is the server's URL as the client reached it: the scheme of
// the connection (or of X-Forwarded-Proto, which a proxy that ends TLS
// sets) and the Host header.
func baseURL(r *http.Request) string {
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	if p := r.Header.Get("X-Forwarded-Proto"); p == "https" || p == "http" {
		scheme = p
	}
	return scheme + "://" + r.Host
}
