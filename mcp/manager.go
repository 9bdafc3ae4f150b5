package mcp

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	mcpgo "github.com/mark3labs/mcp-go/mcp"

	"github.com/trellis-ai/trellis/llm"
	"github.com/trellis-ai/trellis/operators"
)

// ManagerConfig configures a [Manager]. Every zero field takes the default
// it names.
type ManagerConfig struct {
	// Servers to keep connected. Disabled ones are listed by Status but
	// never started.
	Servers []ServerConfig
	// Provider gets every enabled server as a tool source. Required. Give
	// the provider [Config.SourceResilience] in its SourceResilience, so
	// that each server's call timeout bounds its calls.
	Provider *operators.Provider
	// Logger hears connections, losses, retries and servers' stderr (at
	// debug); nil discards.
	Logger *slog.Logger
	// ClientInfo is how Trellis introduces itself to servers. Default
	// {Name: "trellis", Version: "dev"}.
	ClientInfo mcpgo.Implementation
	// ConnectTimeout bounds one connection attempt: starting the process,
	// the handshake and the first tool listing. Default 30 s.
	ConnectTimeout time.Duration
	// DiscoverTimeout bounds the server/discover probe sent to servers with
	// no pinned protocol version before falling back to initialize.
	// Default 5 s (mcp-go's).
	DiscoverTimeout time.Duration
	// MinBackoff and MaxBackoff bound the wait between reconnection
	// attempts, which doubles after each failure (±20% jitter). Defaults
	// 1 s and 1 min.
	MinBackoff time.Duration
	MaxBackoff time.Duration
	// MaxMessageBytes bounds one message from a server (a JSON-RPC line
	// over stdio, an SSE data line or a JSON body over HTTP), so that a
	// server cannot make Trellis hold an answer of any size: an answer
	// larger than this is discarded as it is read and the call fails with
	// an error saying so; the connection stays up. Default
	// [DefaultMaxMessageBytes] (16 MiB); negative means no bound. Results
	// under it are cut to the provider's MaxResultBytes afterwards.
	MaxMessageBytes int
	// HTTPClient reaches http and sse servers. Default: a client with
	// connect and TLS handshake timeouts and no overall timeout (responses
	// are streams; calls are bounded by the call timeout).
	HTTPClient *http.Client
}

// Manager keeps a set of MCP servers connected and offers their tools
// through an operators.Provider. Start connects in the background, so the
// service starts at once; a server that fails, or whose process exits, is
// marked unavailable (its tools are listed as unavailable and calls fail
// fast), logged, and reconnected with exponential backoff. Close stops
// everything and kills every child process.
type Manager struct {
	cfg        ManagerConfig
	log        *slog.Logger
	httpClient *http.Client
	ownClient  bool      // httpClient was made here: its idle connections are closed at Close
	servers    []*remote // sorted by name

	life context.Context
	stop context.CancelFunc
	wg   sync.WaitGroup

	mu      sync.Mutex
	started bool
	closed  bool
	change  chan struct{} // closed and replaced on every state change
}

// NewManager checks cfg and returns a manager that has not started.
func NewManager(cfg ManagerConfig) (*Manager, error) {
	if cfg.Provider == nil {
		return nil, errors.New("mcp: new manager: no provider")
	}
	if cfg.ClientInfo.Name == "" {
		cfg.ClientInfo = mcpgo.Implementation{Name: "trellis", Version: "dev"}
	}
	setDefault(&cfg.ConnectTimeout, 30*time.Second)
	setDefault(&cfg.MinBackoff, time.Second)
	setDefault(&cfg.MaxBackoff, time.Minute)
	cfg.MaxBackoff = max(cfg.MaxBackoff, cfg.MinBackoff)
	if cfg.MaxMessageBytes == 0 {
		cfg.MaxMessageBytes = DefaultMaxMessageBytes
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	hc := cfg.HTTPClient
	if hc == nil {
		hc = &http.Client{Transport: &http.Transport{
			Proxy:               http.ProxyFromEnvironment,
			DialContext:         (&net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
			TLSHandshakeTimeout: 10 * time.Second,
			MaxIdleConnsPerHost: 8,
			IdleConnTimeout:     90 * time.Second,
		}}
	}
	m := &Manager{cfg: cfg, log: log, httpClient: hc, ownClient: cfg.HTTPClient == nil, change: make(chan struct{})}
	seen := map[string]bool{}
	for _, sc := range cfg.Servers {
		if safeName(sc.Name) != sc.Name {
			return nil, fmt.Errorf("mcp: new manager: server name %q: only letters, digits, '_' and '-'", sc.Name)
		}
		if seen[sc.Name] {
			return nil, fmt.Errorf("mcp: new manager: two servers named %q", sc.Name)
		}
		seen[sc.Name] = true
		if sc.Transport == "" {
			return nil, fmt.Errorf("mcp: new manager: server %q has no transport", sc.Name)
		}
		m.servers = append(m.servers, newRemote(m, sc))
	}
	return m, nil
}

func setDefault(d *time.Duration, v time.Duration) {
	if *d <= 0 {
		*d = v
	}
}

// Start adds every enabled server to the provider as a tool source and
// starts connecting them in the background; it does not wait for any.
// The servers stay connected until Close; ctx only bounds adding the
// sources. Use [Manager.Wait] to wait for servers, [Manager.Ready] for the
// required ones. Start may be called once.
func (m *Manager) Start(ctx context.Context) error {
	m.mu.Lock()
	if m.started || m.closed {
		m.mu.Unlock()
		return errors.New("mcp: start: manager already started or closed")
	}
	m.started = true
	m.life, m.stop = context.WithCancel(context.WithoutCancel(ctx))
	m.mu.Unlock()
	var errs []error
	for _, s := range m.servers {
		if s.cfg.Disabled {
			continue
		}
		// Not connected yet, so the listing fails and the source starts out
		// unavailable; that error is expected.
		if err := m.cfg.Provider.AddSource(ctx, s); err != nil && !errors.Is(err, ErrNotConnected) {
			errs = append(errs, fmt.Errorf("mcp: start %s: %w", s.cfg.Name, err))
			continue
		}
		m.wg.Go(func() { s.run(m.life) })
	}
	return errors.Join(errs...)
}

// Close disconnects every server, kills their processes, and waits for
// the manager's goroutines to end. Calls under way fail.
func (m *Manager) Close() error {
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return nil
	}
	m.closed = true
	stop := m.stop
	m.mu.Unlock()
	if stop != nil {
		stop()
	}
	m.wg.Wait()
	for _, s := range m.servers {
		s.close()
		if !s.cfg.Disabled {
			m.cfg.Provider.RemoveSource(s.cfg.Name)
		}
	}
	if m.ownClient {
		m.httpClient.CloseIdleConnections()
	}
	m.changed()
	return nil
}

// refreshProvider has the provider list every source again (MCP sources
// answer from their cache). The operators provider has no per-source
// refresh, so this re-lists all of them.
func (m *Manager) refreshProvider(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, m.cfg.ConnectTimeout)
	defer cancel()
	_ = m.cfg.Provider.Refresh(ctx) // sources that are down are expected to fail
}

// changed wakes every Wait.
func (m *Manager) changed() {
	m.mu.Lock()
	close(m.change)
	m.change = make(chan struct{})
	m.mu.Unlock()
}

// ServerStatus is one server's health, for logs, /readyz and operators.
type ServerStatus struct {
	Name      string    `json:"name"`
	Transport Transport `json:"transport"`
	State     State     `json:"state"`
	Required  bool      `json:"required,omitempty"`
	// ProtocolVersion is the revision the connection speaks.
	ProtocolVersion string `json:"protocol_version,omitempty"`
	// Tools is the number of tools offered (after the allow-list).
	Tools int `json:"tools"`
	// PID is a stdio server's process id.
	PID int `json:"pid,omitempty"`
	// Since is when the server entered State.
	Since time.Time `json:"since"`
	// Attempts counts failed connection attempts since it was last up.
	Attempts int `json:"attempts,omitempty"`
	// RetryAt is when the next attempt starts, while disconnected.
	RetryAt time.Time `json:"retry_at,omitzero"`
	// Error is why the server is not connected.
	Error string `json:"error,omitempty"`
}

// Status reports every configured server, sorted by name.
func (m *Manager) Status() []ServerStatus {
	out := make([]ServerStatus, len(m.servers))
	for i, s := range m.servers {
		out[i] = s.status()
	}
	return out
}

// Ready is nil when every required server is connected; otherwise it
// names those that are not, and why.
func (m *Manager) Ready() error {
	var missing []string
	for _, st := range m.Status() {
		if st.Required && st.State != StateConnected {
			missing = append(missing, describeStatus(st))
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("%w: required: %s", ErrNotConnected, strings.Join(missing, "; "))
	}
	return nil
}

func describeStatus(st ServerStatus) string {
	s := st.Name + " is " + string(st.State)
	if st.Error != "" {
		s += ": " + st.Error
	}
	return s
}

// Wait blocks until the named servers (every enabled server when none are
// named) are connected, or ctx ends; then it says which are not, and why.
func (m *Manager) Wait(ctx context.Context, names ...string) error {
	for {
		m.mu.Lock()
		change := m.change
		m.mu.Unlock()
		var missing []string
		known := map[string]bool{}
		for _, st := range m.Status() {
			known[st.Name] = true
			if len(names) == 0 && st.State == StateDisabled {
				continue
			}
			if (len(names) == 0 || slices.Contains(names, st.Name)) && st.State != StateConnected {
				missing = append(missing, describeStatus(st))
			}
		}
		for _, n := range names {
			if !known[n] {
				return fmt.Errorf("mcp: wait: no server named %q", n)
			}
		}
		if len(missing) == 0 {
			return nil
		}
		select {
		case <-change:
		case <-ctx.Done():
			return fmt.Errorf("%w: %s: %w", ErrNotConnected, strings.Join(missing, "; "), ctx.Err())
		}
	}
}

// Exported names the servers whose tools Trellis' own MCP server
// re-exports (ServerConfig.Export).
func (m *Manager) Exported() []string {
	var out []string
	for _, s := range m.servers {
		if s.cfg.Export && !s.cfg.Disabled {
			out = append(out, s.cfg.Name)
		}
	}
	return out
}

// SourceResilience returns, for every server in c, the provider resilience
// base with the server's call timeout (when it sets one) as the timeout: the
// provider bounds each call with it — every attempt and the waits between
// them, not counting time spent waiting for the user to answer an
// elicitation. Put it in operators.ProviderConfig.SourceResilience.
func (c *Config) SourceResilience(base llm.ResilienceConfig) map[string]llm.ResilienceConfig {
	out := make(map[string]llm.ResilienceConfig, len(c.Servers))
	for _, s := range c.Servers {
		r := base
		if s.CallTimeout > 0 {
			r.Timeout = s.CallTimeout
		}
		out[s.Name] = r
	}
	return out
}
