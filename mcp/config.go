package mcp

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/url"
	"os"
	"path"
	"slices"
	"strconv"
	"strings"
	"time"

	mcpgo "github.com/mark3labs/mcp-go/mcp"

	"github.com/trellis-ai/trellis/events"
	"github.com/trellis-ai/trellis/operators"
)

// Transport names how Trellis reaches an MCP server.
type Transport string

const (
	// TransportStdio runs the server as a child process and talks JSON-RPC
	// over its stdin and stdout.
	TransportStdio Transport = "stdio"
	// TransportHTTP is streamable HTTP (MCP 2025-03-26 and later).
	TransportHTTP Transport = "http"
	// TransportSSE is the legacy HTTP+SSE transport (MCP 2024-11-05).
	TransportSSE Transport = "sse"
)

// ErrConfig marks every error ParseConfig, LoadConfig and ExpandEnv return
// for a file that cannot be used; match it with errors.Is.
var ErrConfig = errors.New("mcp: invalid config")

// Config is a parsed MCP servers file.
type Config struct {
	// Servers are the configured servers, sorted by name. Disabled servers
	// are kept (with Disabled set) so that they can be listed.
	Servers []ServerConfig
	// Warnings name what was accepted but ignored or rewritten (unknown
	// keys, a server name made safe); log them at start.
	Warnings []string
}

// ServerConfig is one MCP server.
type ServerConfig struct {
	// Name identifies the server: its tools are qualified as name.tool and
	// it is the tool source's name. Letters, digits, '_' and '-'; other
	// characters in the file's key are replaced by '_' (with a warning).
	Name      string
	Transport Transport

	// Command, Args, Env and Dir start a stdio server. Env is added to the
	// service's own environment; Dir empty means the service's directory.
	Command string
	Args    []string
	Env     map[string]string
	Dir     string

	// URL and Headers reach an http or sse server.
	URL     string
	Headers map[string]string

	// CallTimeout bounds one tool call — every attempt and the waits
	// between them — not counting time spent waiting for the user to answer
	// an elicitation. Zero means the provider's default (60 s); see
	// [Config.SourceResilience].
	CallTimeout time.Duration
	// IdempotentAll and IdempotentTools (by their MCP names) mark tools as
	// safe to repeat whatever their annotations say, so that a call that
	// failed after it may have reached the server is retried. Tools the
	// server marks read-only or idempotent are retried anyway; any other
	// call is retried only when it certainly never reached the server.
	IdempotentAll   bool
	IdempotentTools []string
	// ApproveAll asks for a human's yes before every call to this server.
	ApproveAll bool
	// RequireApproval lists the tools (by their MCP names) that need a
	// human's yes before each call.
	RequireApproval []string
	// ApprovalExpiry is how long an approval of this server's tools
	// waits, and what happens then; zero is the server-wide default
	// (--approval-timeout). A tool the service's own rules name keeps
	// theirs.
	ApprovalExpiry operators.Expiry
	// ElicitationExpiry is how long a question of this server's tools
	// (an elicitation) waits for the user, and what happens then; zero
	// is the server-wide default (--question-timeout).
	ElicitationExpiry operators.Expiry
	// AllowedTools, when non-nil, is the only tools offered to the agent
	// (by their MCP names); the server's other tools are hidden.
	AllowedTools []string
	// Required servers must be connected for the service to be ready
	// ([Manager.Ready]); others may be missing.
	Required bool
	// Disabled servers are never started.
	Disabled bool
	// ProtocolVersion pins the MCP revision: "2025-11-25", "2025-06-18",
	// "2025-03-26", "2024-11-05" (session revisions, initialize handshake)
	// or "2026-07-28" (stateless). Empty means detect: probe with
	// server/discover and fall back to initialize.
	ProtocolVersion string
	// Export re-exports this server's tools through Trellis' own MCP server
	// (trellis mcp, /mcp). Off by default.
	Export bool

	// inferred is set when the file gave no type and the transport was
	// guessed from the fields; an inferred http server that turns out to be
	// a legacy SSE server is retried over SSE.
	inferred bool
}

// needsApproval reports whether the configuration asks for approval of
// calls to tool (by its MCP name): ApproveAll, or RequireApproval names it.
func (c ServerConfig) needsApproval(tool string) bool {
	return c.ApproveAll || slices.Contains(c.RequireApproval, tool)
}

// fileServer is one entry of mcpServers as it appears in the file. Field
// names follow Claude Desktop and Cursor (command, args, env, url,
// headers), Claude Code and VS Code (type, cwd), Windsurf (serverUrl) and
// Gemini CLI (httpUrl, includeTools); the rest are Trellis' own.
type fileServer struct {
	Type            string            `json:"type"`
	Transport       string            `json:"transport"`
	Command         string            `json:"command"`
	Args            []string          `json:"args"`
	Env             map[string]string `json:"env"`
	Cwd             string            `json:"cwd"`
	WorkingDir      string            `json:"workingDir"`
	URL             string            `json:"url"`
	ServerURL       string            `json:"serverUrl"`
	HTTPURL         string            `json:"httpUrl"`
	Headers         map[string]string `json:"headers"`
	Timeout         json.RawMessage   `json:"timeout"`
	CallTimeout     json.RawMessage   `json:"callTimeout"`
	RequireApproval json.RawMessage   `json:"requireApproval"`
	ApprovalTimeout json.RawMessage   `json:"approvalTimeout"`
	ApprovalExpiry  string            `json:"approvalExpiry"`
	ElicitTimeout   json.RawMessage   `json:"elicitationTimeout"`
	ElicitExpiry    string            `json:"elicitationExpiry"`
	IdempotentTools json.RawMessage   `json:"idempotentTools"`
	AllowedTools    []string          `json:"allowedTools"`
	IncludeTools    []string          `json:"includeTools"`
	Required        bool              `json:"required"`
	Disabled        bool              `json:"disabled"`
	ProtocolVersion string            `json:"protocolVersion"`
	Export          bool              `json:"export"`
}

var knownServerKeys = []string{
	"type", "transport", "command", "args", "env", "cwd", "workingDir", "url", "serverUrl", "httpUrl",
	"headers", "timeout", "callTimeout", "requireApproval", "approvalTimeout", "approvalExpiry",
	"elicitationTimeout", "elicitationExpiry", "idempotentTools", "allowedTools", "includeTools",
	"required", "disabled", "protocolVersion", "export",
}

// ParseConfig parses an MCP servers file: a JSON object whose mcpServers
// (Claude Desktop, Cursor, Claude Code) or servers (VS Code) object maps
// server names to servers. Other top-level keys are ignored, so a whole
// claude_desktop_config.json works as it is.
//
// A server is stdio when it has a command, http when it has a url, unless
// type (or transport) says "stdio", "http" ("streamable-http"), or "sse";
// a typeless url whose path ends in /sse is sse. Trellis' own keys are
// callTimeout (also timeout: a duration string such as "90s", or a number
// of seconds), requireApproval (true, or a list of tool names),
// approvalTimeout (how long an approval of the server's tools waits, as
// callTimeout is written) with approvalExpiry (what happens then:
// "reject", the default, "approve" or "cancel"), elicitationTimeout
// (how long a question of the server's tools waits for the user) with
// elicitationExpiry ("decline", the default, or "cancel"),
// idempotentTools (true, or a list of tool names safe to retry),
// allowedTools (also includeTools), required, disabled, protocolVersion
// and export.
//
// ParseConfig does not expand environment variables; see
// [Config.ExpandEnv] and [LoadConfig]. Errors match [ErrConfig].
func ParseConfig(data []byte) (*Config, error) {
	var top map[string]json.RawMessage
	if err := json.Unmarshal(data, &top); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrConfig, err)
	}
	if top == nil {
		return nil, fmt.Errorf("%w: want a JSON object with an mcpServers object", ErrConfig)
	}
	cfg := &Config{}
	entries := map[string]json.RawMessage{}
	for _, key := range []string{"mcpServers", "servers"} {
		raw, ok := top[key]
		if !ok || isNull(raw) {
			continue
		}
		var m map[string]json.RawMessage
		if err := json.Unmarshal(raw, &m); err != nil {
			return nil, fmt.Errorf("%w: %s must be an object of servers: %v", ErrConfig, key, err)
		}
		for name, v := range m {
			if _, dup := entries[name]; dup {
				return nil, fmt.Errorf("%w: server %q is in both mcpServers and servers", ErrConfig, name)
			}
			entries[name] = v
		}
	}
	byName := map[string]string{} // safe name → name in the file
	for _, key := range slices.Sorted(maps.Keys(entries)) {
		sc, warnings, err := parseServer(key, entries[key])
		if err != nil {
			return nil, err
		}
		if prev, dup := byName[sc.Name]; dup {
			return nil, fmt.Errorf("%w: servers %q and %q both become %q", ErrConfig, prev, key, sc.Name)
		}
		byName[sc.Name] = key
		cfg.Warnings = append(cfg.Warnings, warnings...)
		cfg.Servers = append(cfg.Servers, sc)
	}
	slices.SortFunc(cfg.Servers, func(a, b ServerConfig) int { return strings.Compare(a.Name, b.Name) })
	return cfg, nil
}

func isNull(raw json.RawMessage) bool { return string(bytes.TrimSpace(raw)) == "null" }

func parseServer(key string, raw json.RawMessage) (ServerConfig, []string, error) {
	fail := func(format string, args ...any) (ServerConfig, []string, error) {
		return ServerConfig{}, nil, fmt.Errorf("%w: server %q: %s", ErrConfig, key, fmt.Sprintf(format, args...))
	}
	var keys map[string]json.RawMessage
	if err := json.Unmarshal(raw, &keys); err != nil || keys == nil {
		return fail("want an object")
	}
	var fs fileServer
	if err := json.Unmarshal(raw, &fs); err != nil {
		return fail("%v", err)
	}
	var warnings []string
	for _, k := range slices.Sorted(maps.Keys(keys)) {
		if !slices.Contains(knownServerKeys, k) {
			warnings = append(warnings, fmt.Sprintf("server %q: ignoring unknown key %q", key, k))
		}
	}
	sc := ServerConfig{
		Name: safeName(key), Command: fs.Command, Args: fs.Args, Env: fs.Env,
		Headers: fs.Headers, Required: fs.Required, Disabled: fs.Disabled,
		ProtocolVersion: fs.ProtocolVersion, Export: fs.Export,
	}
	if sc.Name != key {
		warnings = append(warnings, fmt.Sprintf("server %q is known as %q (names may hold only letters, digits, '_' and '-')", key, sc.Name))
	}
	sc.Dir = cmp.Or(fs.Cwd, fs.WorkingDir)
	sc.URL = cmp.Or(fs.URL, fs.ServerURL, fs.HTTPURL)
	sc.AllowedTools = fs.AllowedTools
	if sc.AllowedTools == nil {
		sc.AllowedTools = fs.IncludeTools
	}

	typ := strings.ToLower(cmp.Or(fs.Type, fs.Transport))
	switch typ {
	case "stdio":
		sc.Transport = TransportStdio
	case "http", "streamable-http", "streamable_http", "streamablehttp":
		sc.Transport = TransportHTTP
	case "sse":
		sc.Transport = TransportSSE
	case "":
		switch {
		case sc.Command != "" && sc.URL != "":
			return fail("has both command and url; set type to \"stdio\" or \"http\"")
		case sc.Command != "":
			sc.Transport = TransportStdio
		case fs.HTTPURL != "":
			sc.Transport = TransportHTTP
		case sc.URL != "":
			sc.Transport, sc.inferred = TransportHTTP, true
			if u, err := url.Parse(sc.URL); err == nil && path.Base(u.Path) == "sse" {
				sc.Transport = TransportSSE
			}
		default:
			return fail("needs a command (stdio) or a url (http, sse)")
		}
	default:
		return fail("unknown type %q (want stdio, http or sse)", typ)
	}
	switch sc.Transport {
	case TransportStdio:
		if sc.Command == "" {
			return fail("a stdio server needs a command")
		}
	default:
		if sc.URL == "" {
			return fail("an %s server needs a url", sc.Transport)
		}
		if !strings.Contains(sc.URL, "${") { // checked again after ExpandEnv
			if err := checkURL(sc.URL); err != nil {
				return fail("%v", err)
			}
		}
	}

	to := fs.CallTimeout
	if to == nil {
		to = fs.Timeout
	}
	d, err := parseDuration(to)
	if err != nil {
		return fail("timeout: %v", err)
	}
	sc.CallTimeout = d
	if sc.ApproveAll, sc.RequireApproval, err = parseToolList(fs.RequireApproval); err != nil {
		return fail("requireApproval: %v", err)
	}
	if sc.ApprovalExpiry, err = parseExpiry(events.PendingApproval, fs.ApprovalTimeout, fs.ApprovalExpiry, "approval"); err != nil {
		return fail("%v", err)
	}
	if sc.ElicitationExpiry, err = parseExpiry(events.PendingElicitation, fs.ElicitTimeout, fs.ElicitExpiry, "elicitation"); err != nil {
		return fail("%v", err)
	}
	if sc.IdempotentAll, sc.IdempotentTools, err = parseToolList(fs.IdempotentTools); err != nil {
		return fail("idempotentTools: %v", err)
	}
	switch v := sc.ProtocolVersion; {
	case v == "" || v == "auto":
		sc.ProtocolVersion = ""
	case !mcpgo.IsValidProtocolVersion(v):
		return fail("unknown protocolVersion %q (want one of %s, or auto)", v, strings.Join(mcpgo.ValidProtocolVersions, ", "))
	}
	return sc, warnings, nil
}

func checkURL(s string) error {
	u, err := url.Parse(s)
	if err != nil {
		return fmt.Errorf("url: %w", err)
	}
	if u.Scheme != "http" && u.Scheme != "https" || u.Host == "" {
		return fmt.Errorf("url %q: want an http:// or https:// URL", s)
	}
	return nil
}

// parseDuration reads a duration string ("90s", "2m") or a number of
// seconds. Absent or null is zero; negative values are refused.
func parseDuration(raw json.RawMessage) (time.Duration, error) {
	if raw == nil || isNull(raw) {
		return 0, nil
	}
	var d time.Duration
	var s string
	var n float64
	switch {
	case json.Unmarshal(raw, &s) == nil:
		var err error
		if d, err = time.ParseDuration(s); err != nil {
			return 0, err
		}
	case json.Unmarshal(raw, &n) == nil:
		if n > float64(365*24*time.Hour/time.Second) {
			return 0, fmt.Errorf("%v seconds is too long", n)
		}
		d = time.Duration(n * float64(time.Second))
	default:
		return 0, fmt.Errorf("want a duration such as \"90s\" or a number of seconds, got %s", raw)
	}
	if d < 0 {
		return 0, fmt.Errorf("%s is negative", d)
	}
	return d, nil
}

// parseToolList reads requireApproval or idempotentTools: true (every
// tool), false, or a list of tool names.
func parseToolList(raw json.RawMessage) (all bool, tools []string, err error) {
	if raw == nil || isNull(raw) {
		return false, nil, nil
	}
	if json.Unmarshal(raw, &all) == nil {
		return all, nil, nil
	}
	if err := json.Unmarshal(raw, &tools); err != nil {
		return false, nil, fmt.Errorf("want true, false or a list of tool names, got %s", raw)
	}
	return false, tools, nil
}

// safeName maps s onto the names a tool source may have: 1-64 letters,
// digits, '_' and '-'; anything else becomes '_'.
func safeName(s string) string {
	var b strings.Builder
	for _, c := range s {
		if b.Len() >= 64 {
			break
		}
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '_', c == '-':
			b.WriteRune(c)
		default:
			b.WriteByte('_')
		}
	}
	if b.Len() == 0 {
		return "_"
	}
	return b.String()
}

// LoadConfig reads and parses the file at path, then expands environment
// variables in it from the process environment.
func LoadConfig(path string) (*Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("mcp: load config: %w", err)
	}
	cfg, err := ParseConfig(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if err := cfg.ExpandEnv(os.LookupEnv); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return cfg, nil
}

// ExpandEnv replaces ${NAME}, ${NAME:-default} and ${env:NAME} in every
// server's command, args, env values, dir, url and headers with values from
// lookup. A variable that is unset and has no default is an error
// (matching [ErrConfig]), so a missing secret is found at start. Text
// without "${" is left alone.
func (c *Config) ExpandEnv(lookup func(string) (string, bool)) error {
	for i := range c.Servers {
		s := &c.Servers[i]
		var errs []error
		exp := func(v string) string {
			out, err := expand(v, lookup)
			if err != nil {
				errs = append(errs, err)
			}
			return out
		}
		s.Command, s.Dir, s.URL = exp(s.Command), exp(s.Dir), exp(s.URL)
		if s.Args != nil {
			s.Args = slices.Clone(s.Args)
			for j := range s.Args {
				s.Args[j] = exp(s.Args[j])
			}
		}
		s.Env = expandMap(s.Env, exp)
		s.Headers = expandMap(s.Headers, exp)
		if s.Transport != TransportStdio && len(errs) == 0 {
			if err := checkURL(s.URL); err != nil {
				errs = append(errs, err)
			}
		}
		if err := errors.Join(errs...); err != nil {
			return fmt.Errorf("%w: server %q: %w", ErrConfig, s.Name, err)
		}
	}
	return nil
}

func expandMap(m map[string]string, exp func(string) string) map[string]string {
	if m == nil {
		return nil
	}
	out := make(map[string]string, len(m))
	for _, k := range slices.Sorted(maps.Keys(m)) {
		out[k] = exp(m[k])
	}
	return out
}

// expand replaces ${...} references in s.
func expand(s string, lookup func(string) (string, bool)) (string, error) {
	if !strings.Contains(s, "${") {
		return s, nil
	}
	var b strings.Builder
	for {
		i := strings.Index(s, "${")
		if i < 0 {
			b.WriteString(s)
			return b.String(), nil
		}
		b.WriteString(s[:i])
		j := strings.IndexByte(s[i:], '}')
		if j < 0 {
			return "", fmt.Errorf("unterminated ${ in %s", strconv.Quote(s))
		}
		ref := s[i+2 : i+j]
		s = s[i+j+1:]
		name, def, hasDef := strings.Cut(ref, ":-")
		name = strings.TrimPrefix(name, "env:")
		if name == "" {
			return "", fmt.Errorf("empty variable name in ${%s}", ref)
		}
		v, ok := lookup(name)
		switch {
		case ok && v != "":
			b.WriteString(v)
		case hasDef:
			b.WriteString(def)
		case ok:
		default:
			return "", fmt.Errorf("environment variable %s is not set", name)
		}
	}
}

// parseExpiry reads a deadline of requests of kind as a server's keys
// name+"Timeout" and name+"Expiry" write it; an outcome without a
// timeout is refused, since nothing would apply it.
func parseExpiry(kind events.PendingKind, timeout json.RawMessage, outcome, name string) (operators.Expiry, error) {
	var (
		e   operators.Expiry
		err error
	)
	if e.Timeout, err = parseDuration(timeout); err != nil {
		return e, fmt.Errorf("%sTimeout: %w", name, err)
	}
	if e.Outcome, err = events.ParseExpiryOutcome(kind, outcome); err != nil {
		return e, fmt.Errorf("%sExpiry: %w", name, err)
	}
	if e.Timeout == 0 && outcome != "" {
		return e, fmt.Errorf("%sExpiry %q needs an %sTimeout", name, outcome, name)
	}
	if e.Timeout == 0 {
		e.Outcome = ""
	}
	return e, nil
}
