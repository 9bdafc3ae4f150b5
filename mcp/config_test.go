package mcp_test

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/trellis-ai/trellis/events"
	"github.com/trellis-ai/trellis/mcp"
	"github.com/trellis-ai/trellis/operators"
)

// An approval's deadline is set per server: approvalTimeout, as
// callTimeout is written, and approvalExpiry, reject by default; an
// outcome without a timeout, an unknown outcome or a negative timeout is
// refused.
func TestParseConfigApprovalExpiry(t *testing.T) {
	cfg, err := mcp.ParseConfig([]byte(`{"mcpServers": {
	  "a": {"command": "x", "requireApproval": true, "approvalTimeout": "2h", "approvalExpiry": "cancel"},
	  "b": {"command": "x", "requireApproval": ["w"], "approvalTimeout": 90},
	  "c": {"command": "x"}}}`))
	if err != nil {
		t.Fatal(err)
	}
	want := []operators.Expiry{{Timeout: 2 * time.Hour, Outcome: events.ExpiryCancel}, {Timeout: 90 * time.Second, Outcome: events.ExpiryReject}, {}}
	for i, s := range cfg.Servers {
		if s.ApprovalExpiry != want[i] {
			t.Errorf("server %s: expiry %+v, want %+v", s.Name, s.ApprovalExpiry, want[i])
		}
	}
	for _, bad := range []string{
		`{"approvalExpiry": "approve"}`, `{"approvalTimeout": "1h", "approvalExpiry": "ignore"}`, `{"approvalTimeout": "-1s"}`,
	} {
		data := `{"mcpServers": {"a": ` + strings.Replace(bad, "{", `{"command": "x", `, 1) + `}}`
		if _, err := mcp.ParseConfig([]byte(data)); !errors.Is(err, mcp.ErrConfig) {
			t.Errorf("%s: err %v, want ErrConfig", bad, err)
		}
	}
}

// A question's deadline is set per server as an approval's is:
// elicitationTimeout and elicitationExpiry, decline by default; an
// approval's outcome, an outcome without a timeout or a bad timeout is
// refused.
func TestParseConfigElicitationExpiry(t *testing.T) {
	cfg, err := mcp.ParseConfig([]byte(`{"mcpServers": {
	  "a": {"command": "x", "elicitationTimeout": "10m", "elicitationExpiry": "cancel"},
	  "b": {"command": "x", "elicitationTimeout": 90},
	  "c": {"command": "x"}}}`))
	if err != nil {
		t.Fatal(err)
	}
	want := []operators.Expiry{{Timeout: 10 * time.Minute, Outcome: events.ExpiryCancel}, {Timeout: 90 * time.Second, Outcome: events.ExpiryDecline}, {}}
	for i, s := range cfg.Servers {
		if s.ElicitationExpiry != want[i] {
			t.Errorf("server %s: expiry %+v, want %+v", s.Name, s.ElicitationExpiry, want[i])
		}
	}
	for _, bad := range []string{
		`{"elicitationExpiry": "decline"}`, `{"elicitationTimeout": "1h", "elicitationExpiry": "approve"}`,
		`{"elicitationTimeout": "1h", "elicitationExpiry": "ignore"}`, `{"elicitationTimeout": "-1s"}`, `{"elicitationTimeout": "soon"}`,
	} {
		data := `{"mcpServers": {"a": ` + strings.Replace(bad, "{", `{"command": "x", `, 1) + `}}`
		if _, err := mcp.ParseConfig([]byte(data)); !errors.Is(err, mcp.ErrConfig) {
			t.Errorf("%s: err %v, want ErrConfig", bad, err)
		}
	}
}

func TestParseConfigClaudeDesktop(t *testing.T) {
	// A whole claude_desktop_config.json, other settings included.
	data := `{
	  "globalShortcut": "Ctrl+Space",
	  "mcpServers": {
	    "filesystem": {
	      "command": "npx",
	      "args": ["-y", "@modelcontextprotocol/server-filesystem", "/tmp"]
	    },
	    "brave search": {
	      "command": "npx",
	      "args": ["-y", "@modelcontextprotocol/server-brave-search"],
	      "env": {"BRAVE_API_KEY": "k"}
	    },
	    "remote": {"url": "https://example.com/mcp", "headers": {"Authorization": "Bearer x"}},
	    "old": {"url": "https://example.com/sse"}
	  }
	}`
	cfg, err := mcp.ParseConfig([]byte(data))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, s := range cfg.Servers {
		names = append(names, s.Name)
	}
	if want := []string{"brave_search", "filesystem", "old", "remote"}; !reflect.DeepEqual(names, want) {
		t.Fatalf("names = %v, want %v", names, want)
	}
	fs := cfg.Servers[1]
	if fs.Transport != mcp.TransportStdio || fs.Command != "npx" || len(fs.Args) != 3 {
		t.Errorf("filesystem = %+v", fs)
	}
	if b := cfg.Servers[0]; b.Env["BRAVE_API_KEY"] != "k" {
		t.Errorf("brave env = %v", b.Env)
	}
	if o := cfg.Servers[2]; o.Transport != mcp.TransportSSE {
		t.Errorf("old transport = %s, want sse", o.Transport)
	}
	if r := cfg.Servers[3]; r.Transport != mcp.TransportHTTP || r.Headers["Authorization"] != "Bearer x" {
		t.Errorf("remote = %+v", r)
	}
	if len(cfg.Warnings) != 1 || !strings.Contains(cfg.Warnings[0], "brave_search") {
		t.Errorf("warnings = %q", cfg.Warnings)
	}
}

func TestParseConfigTrellisKeys(t *testing.T) {
	data := `{"servers": {"docs": {
		"type": "streamable-http", "url": "http://127.0.0.1:9/mcp",
		"callTimeout": "90s", "requireApproval": ["delete_page"], "allowedTools": ["search", "delete_page"],
		"idempotentTools": ["search"],
		"required": true, "protocolVersion": "2025-06-18", "export": true, "color": "blue"
	}, "local": {"command": "srv", "cwd": "/srv", "timeout": 5, "requireApproval": true, "idempotentTools": true, "disabled": true}}}`
	cfg, err := mcp.ParseConfig([]byte(data))
	if err != nil {
		t.Fatal(err)
	}
	docs, local := cfg.Servers[0], cfg.Servers[1]
	if docs.CallTimeout != 90*time.Second || !docs.Required || !docs.Export || docs.ProtocolVersion != "2025-06-18" ||
		!reflect.DeepEqual(docs.RequireApproval, []string{"delete_page"}) || len(docs.AllowedTools) != 2 ||
		!reflect.DeepEqual(docs.IdempotentTools, []string{"search"}) || docs.IdempotentAll {
		t.Errorf("docs = %+v", docs)
	}
	if local.CallTimeout != 5*time.Second || !local.ApproveAll || !local.IdempotentAll || !local.Disabled || local.Dir != "/srv" {
		t.Errorf("local = %+v", local)
	}
	if len(cfg.Warnings) != 1 || !strings.Contains(cfg.Warnings[0], `"color"`) {
		t.Errorf("warnings = %q", cfg.Warnings)
	}
}

func TestParseConfigErrors(t *testing.T) {
	for _, tc := range []struct{ name, data, want string }{
		{"not json", `{`, "unexpected end"},
		{"array", `[]`, "cannot unmarshal"},
		{"servers not object", `{"mcpServers": []}`, "must be an object"},
		{"nothing to run", `{"mcpServers": {"a": {}}}`, "needs a command"},
		{"both", `{"mcpServers": {"a": {"command": "x", "url": "http://h"}}}`, "both command and url"},
		{"bad type", `{"mcpServers": {"a": {"type": "ws", "url": "http://h"}}}`, "unknown type"},
		{"http without url", `{"mcpServers": {"a": {"type": "http", "command": "x"}}}`, "needs a url"},
		{"bad url", `{"mcpServers": {"a": {"url": "ftp://h/x"}}}`, "http://"},
		{"bad timeout", `{"mcpServers": {"a": {"command": "x", "timeout": "soon"}}}`, "timeout"},
		{"negative timeout", `{"mcpServers": {"a": {"command": "x", "timeout": -1}}}`, "negative"},
		{"bad approval", `{"mcpServers": {"a": {"command": "x", "requireApproval": 3}}}`, "requireApproval"},
		{"bad idempotent", `{"mcpServers": {"a": {"command": "x", "idempotentTools": "all"}}}`, "idempotentTools"},
		{"bad version", `{"mcpServers": {"a": {"command": "x", "protocolVersion": "1999-01-01"}}}`, "protocolVersion"},
		{"collision", `{"mcpServers": {"a b": {"command": "x"}, "a_b": {"command": "y"}}}`, "both become"},
		{"twice", `{"mcpServers": {"a": {"command": "x"}}, "servers": {"a": {"command": "y"}}}`, "both mcpServers and servers"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := mcp.ParseConfig([]byte(tc.data))
			if !errors.Is(err, mcp.ErrConfig) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want ErrConfig mentioning %q", err, tc.want)
			}
		})
	}
}

func TestExpandEnv(t *testing.T) {
	data := `{"mcpServers": {
		"a": {"command": "${BIN}", "args": ["--token=${env:TOKEN}", "$PLAIN"], "env": {"X": "${MISSING:-dflt}"}},
		"b": {"url": "https://${HOST}/mcp", "headers": {"Authorization": "Bearer ${TOKEN}"}}
	}}`
	cfg, err := mcp.ParseConfig([]byte(data))
	if err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"BIN": "/bin/srv", "TOKEN": "s3cret", "HOST": "example.com"}
	lookup := func(k string) (string, bool) { v, ok := env[k]; return v, ok }
	if err := cfg.ExpandEnv(lookup); err != nil {
		t.Fatal(err)
	}
	a, b := cfg.Servers[0], cfg.Servers[1]
	if a.Command != "/bin/srv" || a.Args[0] != "--token=s3cret" || a.Args[1] != "$PLAIN" || a.Env["X"] != "dflt" {
		t.Errorf("a = %+v", a)
	}
	if b.URL != "https://example.com/mcp" || b.Headers["Authorization"] != "Bearer s3cret" {
		t.Errorf("b = %+v", b)
	}

	cfg, _ = mcp.ParseConfig([]byte(`{"mcpServers": {"a": {"command": "${NOPE}"}}}`))
	if err := cfg.ExpandEnv(lookup); !errors.Is(err, mcp.ErrConfig) || !strings.Contains(err.Error(), "NOPE is not set") {
		t.Fatalf("err = %v", err)
	}
}

func TestLoadConfig(t *testing.T) {
	p := filepath.Join(t.TempDir(), "mcp.json")
	if err := os.WriteFile(p, []byte(`{"mcpServers": {"a": {"command": "x"}}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := mcp.LoadConfig(p)
	if err != nil || len(cfg.Servers) != 1 {
		t.Fatalf("cfg = %+v, err = %v", cfg, err)
	}
	if _, err := mcp.LoadConfig(filepath.Join(t.TempDir(), "none.json")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("err = %v", err)
	}
}

// FuzzParseConfig checks that ParseConfig never panics and that what it
// accepts is usable: names are safe and unique, every server can be reached.
func FuzzParseConfig(f *testing.F) {
	f.Add([]byte(`{"mcpServers": {"a": {"command": "x", "args": ["1"]}}}`))
	f.Add([]byte(`{"servers": {"b": {"type": "sse", "url": "http://h/sse", "timeout": 1.5}}}`))
	f.Add([]byte(`{"mcpServers": {"c": {"command": "x", "approvalTimeout": "2h", "approvalExpiry": "cancel"}}}`))
	f.Add([]byte(`{"mcpServers": {"d": {"command": "x", "elicitationTimeout": "5m", "elicitationExpiry": "decline"}}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		cfg, err := mcp.ParseConfig(data)
		if err != nil {
			if !errors.Is(err, mcp.ErrConfig) {
				t.Fatalf("error does not match ErrConfig: %v", err)
			}
			return
		}
		seen := map[string]bool{}
		for _, s := range cfg.Servers {
			if s.Name == "" || len(s.Name) > 64 || strings.Trim(s.Name, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-") != "" {
				t.Fatalf("unsafe name %q", s.Name)
			}
			if seen[s.Name] {
				t.Fatalf("duplicate name %q", s.Name)
			}
			seen[s.Name] = true
			switch s.Transport {
			case mcp.TransportStdio:
				if s.Command == "" {
					t.Fatalf("stdio server %q without command", s.Name)
				}
			case mcp.TransportHTTP, mcp.TransportSSE:
				if s.URL == "" {
					t.Fatalf("%s server %q without url", s.Transport, s.Name)
				}
			default:
				t.Fatalf("server %q: transport %q", s.Name, s.Transport)
			}
			if s.CallTimeout < 0 {
				t.Fatalf("negative timeout")
			}
			switch e := s.ApprovalExpiry; {
			case e.Timeout < 0:
				t.Fatalf("server %q: negative approval timeout", s.Name)
			case e.Timeout == 0 && e.Outcome != "":
				t.Fatalf("server %q: an outcome at expiry %q without a timeout", s.Name, e.Outcome)
			case e.Timeout > 0 && e.Outcome != events.ExpiryReject && e.Outcome != events.ExpiryApprove && e.Outcome != events.ExpiryCancel:
				t.Fatalf("server %q: outcome at expiry %q", s.Name, e.Outcome)
			}
			switch e := s.ElicitationExpiry; {
			case e.Timeout < 0:
				t.Fatalf("server %q: negative elicitation timeout", s.Name)
			case e.Timeout == 0 && e.Outcome != "":
				t.Fatalf("server %q: a question's outcome at expiry %q without a timeout", s.Name, e.Outcome)
			case e.Timeout > 0 && e.Outcome != events.ExpiryDecline && e.Outcome != events.ExpiryCancel:
				t.Fatalf("server %q: a question's outcome at expiry %q", s.Name, e.Outcome)
			}
		}
		_ = cfg.ExpandEnv(func(string) (string, bool) { return "", false })
	})
}
