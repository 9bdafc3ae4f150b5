package operators

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/trellis-ai/trellis/events"
	"github.com/trellis-ai/trellis/llm"
)

// SourceKind says where a tool comes from (API.md's "source" field).
type SourceKind string

const (
	SourceLocal    SourceKind = "local"
	SourceOperator SourceKind = "operator"
	SourceMCP      SourceKind = "mcp"
)

// Source is a remote tool source, such as one MCP server; package mcp
// implements it. Calls through a Source are guarded (retry, breaker,
// timeout, bulkhead).
type Source interface {
	// Name identifies the source; it qualifies colliding tool names
	// (name.tool). Letters, digits, '_' and '-'.
	Name() string
	// ListTools returns the source's tools.
	ListTools(ctx context.Context) ([]Spec, error)
	// CallTool runs a tool by its name within the source. A tool that ran
	// and failed is an error Result with a nil error; a Go error means the
	// call itself failed (classify it with [llm.Transient], [llm.RateLimited] or
	// [llm.Permanent]; see [llm.KindOf]). It must honour ctx.
	CallTool(ctx context.Context, name string, args json.RawMessage, call Call) (Result, error)
	// Health reports whether the source is reachable.
	Health(ctx context.Context) error
}

// ApprovalSource is a [Source] that can tell, before it has listed its
// tools, whether its own configuration asks for a human's yes for a tool
// of that name (an MCP server's requireApproval). [Provider.NeedsApproval]
// asks it about a name no source offers yet; of a Source without it, it
// assumes any name may need approval.
type ApprovalSource interface {
	Source
	// RequiresApproval reports whether the source's configuration asks
	// for approval of calls to tool, its name within the source.
	RequiresApproval(tool string) bool
}

// ProviderConfig configures a [Provider]. The zero value is a provider with
// no tools.
type ProviderConfig struct {
	// Local holds local tools; nil means none.
	Local *Registry
	// Operators holds operators; nil means none.
	Operators *OperatorRegistry
	// Resilience guards each remote source; zero fields take
	// [RemoteToolDefaults].
	Resilience llm.ResilienceConfig
	// SourceResilience overrides Resilience for the named sources.
	SourceResilience map[string]llm.ResilienceConfig
	// Approval decides which tools need approval.
	Approval ApprovalPolicy
	// ElicitationExpiry is the deadline of every question a tool asks
	// the user (an elicitation), unless the tool's source (an
	// [ElicitationExpirySource]) sets one; zero waits for ever.
	ElicitationExpiry Expiry
	// SourceWait bounds how long a call to a tool no source offers waits
	// for a remote source that has not listed its tools yet (starting,
	// or reconnecting after a restart) to come up and perhaps offer it.
	// Default 30 s (an MCP server's default connect timeout); negative
	// waits not at all.
	SourceWait time.Duration
	// MaxResultBytes caps the size of every tool result, from every
	// source: a larger one is cut, with a note the model reads, and
	// Result.Truncated set (see [Provider.Execute]). Zero means
	// [DefaultMaxResultBytes] (1 MiB); negative means no cap.
	MaxResultBytes int
	// OnBreakerChange hears every remote source's breaker changes (for
	// metrics); nil means nobody listens. See [llm.BreakerListener].
	OnBreakerChange llm.BreakerListener
	// Logger receives tool failures; nil discards.
	Logger *slog.Logger
}

// ToolInfo is one tool as GET /api/v1/tools lists it.
type ToolInfo struct {
	// Name is what the model calls the tool by: plain, or server.tool
	// when two sources offer the same name.
	Name             string             `json:"name"`
	Description      string             `json:"description"`
	Source           SourceKind         `json:"source"`
	Server           string             `json:"server,omitempty"`
	InputSchema      *jsonschema.Schema `json:"input_schema"`
	RequiresApproval bool               `json:"requires_approval"`
	Available        bool               `json:"available"`
	Annotations      Annotations        `json:"annotations"`
	OutputTypes      []OutputType       `json:"output_types,omitempty"`
}

// Provider is the one place the agent runs tools from: local tools,
// operators and remote sources, merged. Safe for concurrent use.
//
// # Names
//
// A local tool's name wins over an operator's, which wins over a remote
// tool's. A remote tool is listed and callable by its plain name when no
// other source has that name, and always by its qualified name
// "server.tool".
type Provider struct {
	cfg       ProviderConfig
	log       *slog.Logger
	maxResult int // bytes; 0 means no cap

	mu      sync.RWMutex
	remotes map[string]*remote
	plain   map[string]int // plain remote tool name → number of sources offering it

	schemaMaps sync.Map // *jsonschema.Schema → map[string]any, see schemaMap

	// gen counts every change to what Tools lists that is not a registry's
	// own (sources added, removed or re-listed, breakers changing state);
	// catalog is the Catalog built at a generation, see Catalog.
	gen     atomic.Uint64
	catalog atomic.Pointer[cachedCatalog]

	// listed is closed and replaced each time a source lists its tools
	// or is removed: calls waiting for a source to come up (see
	// resolveWaiting) look again.
	listedMu sync.Mutex
	listed   chan struct{}
}

type remote struct {
	src   Source
	guard *llm.Guard[Result]

	mu      sync.RWMutex
	tools   map[string]remoteTool
	listErr error
	listed  bool
}

type remoteTool struct {
	spec Spec
	v    *validator
}

// NewProvider returns a provider over cfg's registries. Add remote sources
// with AddSource.
func NewProvider(cfg ProviderConfig) *Provider {
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	maxResult := cfg.MaxResultBytes
	switch {
	case maxResult == 0:
		maxResult = DefaultMaxResultBytes
	case maxResult < 0:
		maxResult = 0
	}
	return &Provider{cfg: cfg, log: log, maxResult: maxResult, remotes: make(map[string]*remote), plain: make(map[string]int)}
}

// AddSource adds a remote source and lists its tools. A listing error is
// returned but the source stays added (unavailable until a Refresh
// succeeds). A taken name returns [ErrDuplicateSource].
func (p *Provider) AddSource(ctx context.Context, src Source) error {
	name := src.Name()
	if err := checkName(name); err != nil {
		return fmt.Errorf("operators: add source: %w", err)
	}
	cfg, ok := p.cfg.SourceResilience[name]
	if !ok {
		cfg = p.cfg.Resilience
	}
	r := &remote{src: src, tools: map[string]remoteTool{}}
	r.guard = llm.NewGuard[Result](name, cfg.WithDefaults(RemoteToolDefaults()), p.breakerChanged)
	p.mu.Lock()
	if _, dup := p.remotes[name]; dup {
		p.mu.Unlock()
		return fmt.Errorf("%w: %s", ErrDuplicateSource, name)
	}
	p.remotes[name] = r
	p.mu.Unlock()
	p.gen.Add(1)
	return p.refresh(ctx, r)
}

// RemoveSource drops a remote source; it reports whether one was there.
func (p *Provider) RemoveSource(name string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if _, ok := p.remotes[name]; !ok {
		return false
	}
	delete(p.remotes, name)
	p.reindexLocked()
	p.gen.Add(1)
	p.relisted()
	return true
}

func (p *Provider) breakerChanged(source string, state llm.BreakerState) {
	// The breaker has changed state already (failsafe-go calls listeners
	// after the transition), so a Catalog built from now on sees it.
	p.gen.Add(1)
	p.log.LogAttrs(context.Background(), slog.LevelWarn, "tool source breaker changed",
		slog.String("source", source), slog.String("state", string(state)))
	if p.cfg.OnBreakerChange != nil {
		p.cfg.OnBreakerChange(source, state)
	}
}

// Refresh re-lists every remote source's tools, concurrently. Sources that
// fail keep their previous tools but are marked unavailable; the errors
// are joined.
func (p *Provider) Refresh(ctx context.Context) error {
	p.mu.RLock()
	rs := slices.Collect(maps.Values(p.remotes))
	p.mu.RUnlock()
	errs := make([]error, len(rs))
	var wg sync.WaitGroup
	for i, r := range rs {
		wg.Go(func() { errs[i] = p.refresh(ctx, r) })
	}
	wg.Wait()
	return errors.Join(errs...)
}

func (p *Provider) refresh(ctx context.Context, r *remote) error {
	name := r.src.Name()
	if t := r.guard.Config().Timeout; t > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, t)
		defer cancel()
	}
	specs, err := r.src.ListTools(ctx)
	if err != nil {
		err = fmt.Errorf("operators: list tools of %s: %w", name, err)
		r.mu.Lock()
		r.listErr = err
		r.mu.Unlock()
		p.gen.Add(1)
		return err
	}
	tools := make(map[string]remoteTool, len(specs))
	for _, s := range specs {
		v, verr := newValidator(s.InputSchema)
		if verr != nil { // validate nothing rather than lose the tool
			p.log.LogAttrs(ctx, slog.LevelWarn, "remote tool schema does not resolve; arguments will not be validated",
				slog.String("source", name), slog.String("tool", s.Name), slog.Any("error", verr))
		}
		tools[s.Name] = remoteTool{spec: s, v: v}
	}
	// The source's tools and the index of names change together: a
	// lookup between the two would find the source listed but not its
	// tools, and take a gated tool for an unknown one needing no
	// approval.
	p.mu.Lock()
	r.mu.Lock()
	r.tools, r.listErr, r.listed = tools, nil, true
	r.mu.Unlock()
	p.reindexLocked()
	p.mu.Unlock()
	p.gen.Add(1)
	p.relisted()
	return nil
}

// reindexLocked recounts plain remote names; p.mu must be held.
func (p *Provider) reindexLocked() {
	clear(p.plain)
	for _, r := range p.remotes {
		r.mu.RLock()
		for n := range r.tools {
			p.plain[n]++
		}
		r.mu.RUnlock()
	}
}

// target is a resolved tool name.
type target struct {
	kind   SourceKind
	local  localTool
	op     operatorEntry
	remote *remote
	rtool  remoteTool
	name   string // exposed name
}

func (t target) spec() Spec {
	switch t.kind {
	case SourceLocal:
		return t.local.spec
	case SourceOperator:
		return t.op.info.Spec
	default:
		return t.rtool.spec
	}
}

func (t target) validator() *validator {
	switch t.kind {
	case SourceLocal:
		return t.local.v
	case SourceOperator:
		return t.op.v
	default:
		return t.rtool.v
	}
}

func (p *Provider) resolve(name string) (target, bool) {
	t, ok, _ := p.resolveElse(name, nil)
	return t, ok
}

// resolveElse resolves name and, when no source offers it, reports
// unlisted(name) (nil reports false), in one look at the remote
// sources: one that lists its tools meanwhile is seen either before
// its listing or after it. unlisted is called with p.mu read-locked.
func (p *Provider) resolveElse(name string, unlisted func(string) bool) (t target, ok, maybe bool) {
	if lt, ok := p.cfg.Local.lookup(name); ok {
		return target{kind: SourceLocal, local: lt, name: name}, true, false
	}
	if op, ok := p.cfg.Operators.lookup(name); ok {
		return target{kind: SourceOperator, op: op, name: name}, true, false
	}
	p.mu.RLock()
	defer p.mu.RUnlock()
	if t, ok := p.resolveRemoteLocked(name); ok {
		return t, true, false
	}
	return target{}, false, unlisted != nil && unlisted(name)
}

// resolveRemoteLocked resolves name among the remote sources; p.mu must
// be held.
func (p *Provider) resolveRemoteLocked(name string) (target, bool) {
	if server, tool, ok := strings.Cut(name, "."); ok {
		if r := p.remotes[server]; r != nil {
			if rt, ok := r.tool(tool); ok {
				return target{kind: SourceMCP, remote: r, rtool: rt, name: name}, true
			}
		}
		return target{}, false
	}
	if p.plain[name] != 1 {
		return target{}, false
	}
	for _, r := range p.remotes {
		if rt, ok := r.tool(name); ok {
			return target{kind: SourceMCP, remote: r, rtool: rt, name: name}, true
		}
	}
	return target{}, false
}

func (r *remote) tool(name string) (remoteTool, bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	rt, ok := r.tools[name]
	return rt, ok
}

func (r *remote) available() bool {
	r.mu.RLock()
	ok := r.listed && r.listErr == nil
	r.mu.RUnlock()
	return ok && r.guard.State() != llm.BreakerOpen
}

// IsLocal reports whether name is a local tool (in-process, no network).
func (p *Provider) IsLocal(name string) bool {
	_, ok := p.cfg.Local.lookup(name)
	return ok
}

// NeedsApproval reports whether a call to name needs a human's yes under
// the configured [ApprovalPolicy]. It fails closed where the answer
// depends on a spec not known yet: a name no source offers needs
// approval while a remote source that might offer it has not listed its
// tools (it is starting, reconnecting or broken) and some rule could ask
// for it from that source, since the call could run once it has listed.
// A name no rule could ask for, whichever source it came from, needs
// none: the call runs, or fails, unasked. A name that cannot run needs
// none.
func (p *Provider) NeedsApproval(name string) bool {
	t, ok, may := p.resolveElse(name, p.mayNeedApprovalLocked)
	if !ok {
		return slices.Contains(p.cfg.Approval.Tools, name) || may
	}
	names := []string{name}
	if t.kind == SourceMCP {
		names = append(names, t.remote.src.Name()+"."+t.rtool.spec.Name)
	}
	return p.cfg.Approval.Requires(t.spec(), names...)
}

// ApprovalExpiry is how long an approval of a call to name waits, and
// what happens then (see [ApprovalPolicy.Expiry]): the policy's rule for
// the tool, else its source's (an [ExpirySource]), else the policy's
// default. Zero waits for ever.
func (p *Provider) ApprovalExpiry(name string) Expiry {
	names := []string{name}
	var (
		source Expiry
		ok     bool
	)
	if t, found := p.resolve(name); found && t.kind == SourceMCP {
		names = append(names, t.remote.src.Name()+"."+t.rtool.spec.Name)
		if es, is := t.remote.src.(ExpirySource); is {
			source, ok = es.ApprovalExpiry()
		}
	}
	return p.cfg.Approval.expiryOf(source, ok, names...)
}

// ElicitationExpiry is the deadline of a question the tool called name
// asks the user, and what happens then: its source's, else the
// provider's default (ProviderConfig.ElicitationExpiry); zero waits for
// ever.
func (p *Provider) ElicitationExpiry(name string) Expiry {
	if t, found := p.resolve(name); found && t.kind == SourceMCP {
		if es, is := t.remote.src.(ElicitationExpirySource); is {
			if e, ok := es.ElicitationExpiry(); ok {
				return e.normal(events.PendingElicitation)
			}
		}
	}
	return p.cfg.ElicitationExpiry.normal(events.PendingElicitation)
}

// Execute validates args against name's input schema and runs the tool.
// It never returns a Go error and never panics: every failure is an error
// [Result] whose Error the model reads and whose Err matches
// [ErrUnknownTool], [ErrInvalidArguments], [llm.ErrUnavailable],
// [llm.ErrTimeout], [ErrToolPanic] or the tool's own error. Empty or null args
// mean {}.
//
// A result larger than [ProviderConfig.MaxResultBytes] is cut: contents
// and data chunks are kept in order while they fit, the one that does not
// is cut at a character boundary if it is text and dropped if it is an
// image or other binary content, the rest are dropped, a last text content
// says "[truncated: the result was N bytes; the first M are shown]", and
// Truncated is set. An error message is cut the same way.
func (p *Provider) Execute(ctx context.Context, name string, args json.RawMessage, call Call) (res Result) {
	t, ok, pending := p.resolveWaiting(ctx, name)
	if !ok {
		if pending {
			return p.fail(ctx, name, "", fmt.Errorf("operators: %w: no source offers %q yet: a tool source that might has not connected (waited %s)",
				llm.ErrUnavailable, name, p.sourceWait()))
		}
		return p.fail(ctx, name, "", p.unknown(name))
	}
	args = normalizeArgs(args)
	if err := t.validator().validate(name, args); err != nil {
		return p.fail(ctx, name, t.kind, err)
	}
	call.Tool = name
	var direct *directTracker
	if call.Messenger != nil {
		direct = &directTracker{Messenger: call.Messenger}
		call.Messenger = direct
	}
	switch t.kind {
	case SourceMCP:
		a := t.rtool.spec.Annotations
		res = p.callRemote(ctx, name, t.remote, t.rtool.spec.Name, a.ReadOnly || a.Idempotent, args, call)
	case SourceOperator:
		res = p.finish(p.safeCall(ctx, name, func() (Result, error) {
			return t.op.run(ctx, p.cfg.Operators.model, args, call, p)
		}))
	default:
		res = p.finish(p.safeCall(ctx, name, func() (Result, error) { return t.local.tool.Execute(ctx, call, args) }))
	}
	if res.Status == "" {
		res.Status = StatusSuccess
	}
	res = capResult(res, p.maxResult)
	if direct != nil && direct.sent.Load() {
		res.DirectResponse = true
	}
	if res.IsError() {
		p.logFailure(ctx, name, t.kind, res)
	}
	return res
}

// callRemote runs a remote tool under its source's guard. A failed attempt
// that may have reached the source is retried only when the tool says it is
// safe to repeat (repeatable: read-only or idempotent); one that certainly
// did not ([llm.SafeToRetry]) is retried for any tool. It is apart from
// Execute so that the guard's escaping closure captures only what it needs,
// not Execute's whole target (which would then be heap-allocated on every
// call, local ones included).
func (p *Provider) callRemote(ctx context.Context, name string, r *remote, tool string, repeatable bool, args json.RawMessage, call Call) Result {
	do := r.guard.DoAtMostOnce
	if repeatable {
		do = r.guard.Do
	}
	res, err := do(ctx, func(ctx context.Context) (Result, error) {
		return p.safeCall(ctx, name, func() (Result, error) {
			return r.src.CallTool(ctx, tool, args, call)
		})
	})
	if err != nil {
		return ErrorResult(fmt.Errorf("%s: %w", r.src.Name(), err))
	}
	return res
}

func (p *Provider) unknown(name string) error {
	names := make([]string, 0, 32)
	for _, ti := range p.Tools() {
		if ti.Available {
			names = append(names, ti.Name)
		}
	}
	if len(names) > 30 {
		return fmt.Errorf("%w %q", ErrUnknownTool, name)
	}
	return fmt.Errorf("%w %q; available tools: %s", ErrUnknownTool, name, strings.Join(names, ", "))
}

// finish turns a tool's (Result, error) into one Result.
func (p *Provider) finish(res Result, err error) Result {
	if err != nil {
		return ErrorResult(err)
	}
	return res
}

func (p *Provider) fail(ctx context.Context, name string, kind SourceKind, err error) Result {
	res := ErrorResult(err)
	p.logFailure(ctx, name, kind, res)
	return res
}

// logFailure logs a failed call: a warning, but for a call whose run
// was cancelled (its client left, say), which failed because it was
// stopped.
func (p *Provider) logFailure(ctx context.Context, name string, kind SourceKind, res Result) {
	level := slog.LevelWarn
	if ctx.Err() != nil {
		level = slog.LevelInfo
	}
	p.log.LogAttrs(ctx, level, "tool call failed",
		slog.String("tool", name), slog.String("source", string(kind)), slog.String("error", res.Error))
}

// safeCall runs fn and turns a panic into an [ErrToolPanic] error, so a
// panicking tool neither crashes the run nor leaks a bulkhead permit. The
// stack goes to the log, not to the model.
func (p *Provider) safeCall(ctx context.Context, name string, fn func() (Result, error)) (res Result, err error) {
	defer func() {
		if r := recover(); r != nil {
			p.log.LogAttrs(ctx, slog.LevelError, "tool panicked",
				slog.String("tool", name), slog.Any("panic", r), slog.String("stack", string(debug.Stack())))
			err = llm.Permanent(fmt.Errorf("%w: %s: %v", ErrToolPanic, name, r))
		}
	}()
	return fn()
}

// directTracker notices whether a tool sent content straight to the user,
// and stops the call's timeout while the tool waits for the user's answer.
type directTracker struct {
	Messenger
	sent atomic.Bool
}

func (d *directTracker) Elicit(ctx context.Context, r ElicitRequest) (ElicitResponse, error) {
	defer llm.PauseTimeout(ctx)()
	return d.Messenger.Elicit(ctx, r)
}

func (d *directTracker) Direct(ctx context.Context, e events.DirectResponse) error {
	d.sent.Store(true)
	return d.Messenger.Direct(ctx, e)
}

func (d *directTracker) Stream(ctx context.Context, c StreamChunk) error {
	d.sent.Store(true)
	return d.Messenger.Stream(ctx, c)
}
