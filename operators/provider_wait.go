package operators

import (
	"context"
	"slices"
	"strings"
	"time"
)

// defaultSourceWait is ProviderConfig.SourceWait's default: an MCP
// server's default connect timeout.
const defaultSourceWait = 30 * time.Second

func (p *Provider) sourceWait() time.Duration {
	switch w := p.cfg.SourceWait; {
	case w < 0:
		return 0
	case w == 0:
		return defaultSourceWait
	default:
		return w
	}
}

// mayAppearLocked reports whether name, which no source offers now,
// may be offered once a remote source that has never listed its tools
// does: a qualified name of such a source, or a plain name while any
// source is such. A process that has just started (recovering runs) or
// a source that has not connected yet is in that state; a source that
// listed its tools once keeps them while it reconnects. p.mu must be
// held.
func (p *Provider) mayAppearLocked(name string) bool {
	if server, _, ok := strings.Cut(name, "."); ok {
		r := p.remotes[server]
		return r != nil && !r.hasListed()
	}
	if p.plain[name] > 1 {
		return false // ambiguous: a further source cannot fix that
	}
	for _, r := range p.remotes {
		if !r.hasListed() {
			return true
		}
	}
	return false
}

// mayNeedApprovalLocked reports whether name, which no source offers
// now, could need approval once a remote source that has never listed
// its tools offers it (see mayAppearLocked): the policy asks for every
// destructive tool (an unlisted tool may be one), or names the tool
// plainly or as that source's, or the source's own configuration may
// ask for it. p.mu must be held.
func (p *Provider) mayNeedApprovalLocked(name string) bool {
	server, tool, qualified := strings.Cut(name, ".")
	if !qualified && p.plain[name] > 1 {
		return false // ambiguous: a further source cannot fix that
	}
	if !qualified {
		tool = name
	}
	for n, r := range p.remotes {
		if (qualified && n != server) || r.hasListed() {
			continue
		}
		if r.mayRequire(tool) || p.cfg.Approval.Destructive ||
			slices.Contains(p.cfg.Approval.Tools, tool) || slices.Contains(p.cfg.Approval.Tools, n+"."+tool) {
			return true
		}
	}
	return false
}

// mayRequire reports whether the source's configuration may ask for
// approval of tool: yes for a source that cannot tell (see
// ApprovalSource).
func (r *remote) mayRequire(tool string) bool {
	a, ok := r.src.(ApprovalSource)
	return !ok || a.RequiresApproval(tool)
}

func (r *remote) hasListed() bool {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.listed
}

// resolveWaiting resolves name; when no source offers it but one that
// has not listed its tools yet may (see mayAppear), it waits for that,
// SourceWait at most. pending reports a name that still may appear when
// the wait ended: the call fails as unavailable, not as unknown.
func (p *Provider) resolveWaiting(ctx context.Context, name string) (t target, ok, pending bool) {
	t, ok, may := p.resolveElse(name, p.mayAppearLocked)
	if ok || !may {
		return t, ok, false
	}
	wait := p.sourceWait()
	if wait == 0 {
		return target{}, false, true
	}
	timer := time.NewTimer(wait)
	defer timer.Stop()
	for {
		ch := p.listings()
		if t, ok, may = p.resolveElse(name, p.mayAppearLocked); ok {
			return t, true, false
		}
		if !may {
			return target{}, false, false
		}
		select {
		case <-ch:
		case <-timer.C:
			return target{}, false, true
		case <-ctx.Done():
			return target{}, false, true
		}
	}
}

// listings returns a channel closed at the next listing or removal of a
// source.
func (p *Provider) listings() <-chan struct{} {
	p.listedMu.Lock()
	defer p.listedMu.Unlock()
	if p.listed == nil {
		p.listed = make(chan struct{})
	}
	return p.listed
}

// relisted wakes the calls waiting in resolveWaiting.
func (p *Provider) relisted() {
	p.listedMu.Lock()
	defer p.listedMu.Unlock()
	if p.listed != nil {
		close(p.listed)
		p.listed = nil
	}
}
