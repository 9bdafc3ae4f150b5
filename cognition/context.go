package cognition

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/trellis-ai/trellis/internal/growstack"
	"github.com/trellis-ai/trellis/store"
)

// CognitiveContext is what the agent is told of the user and itself for
// one request.
type CognitiveContext struct {
	Profile store.Profile
	// Memories are the most relevant to the request, best first.
	Memories []store.Memory
	// Identity notes what the agent knows of its own performance.
	Identity []string
}

// Text is the context as the supervisor's and the writer's prompts
// carry it; "" when there is nothing to tell.
func (c CognitiveContext) Text() string {
	var b strings.Builder
	p := c.Profile
	var lines []string
	if p.Expertise != "" {
		lines = append(lines, "- Expertise: "+p.Expertise)
	}
	if p.Style != "" {
		lines = append(lines, "- Style preference: "+p.Style+" ("+styleAdvice[p.Style]+")")
	}
	if len(p.Interests) > 0 {
		lines = append(lines, "- Interests: "+strings.Join(p.Interests[:min(len(p.Interests), 5)], ", "))
	}
	if len(p.Preferences) > 0 {
		keys := make([]string, 0, len(p.Preferences))
		for k := range p.Preferences {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			lines = append(lines, "- The user stated ("+k+"): "+p.Preferences[k])
		}
	}
	if len(lines) > 0 {
		b.WriteString("User profile:\n")
		b.WriteString(strings.Join(lines, "\n"))
		b.WriteString("\nFit the answer's length and register to this profile; what the user stated wins.\n")
	}
	if len(c.Memories) > 0 {
		b.WriteString("What you remember of this user (most relevant first):\n")
		for _, m := range c.Memories {
			b.WriteString("- " + m.CreatedAt.Format("2006-01-02") + ": " + m.Summary)
			if m.Outcome != "" {
				b.WriteString(" (" + m.Outcome + ")")
			}
			b.WriteByte('\n')
		}
	}
	if len(c.Identity) > 0 {
		b.WriteString("About your own performance:\n")
		for _, n := range c.Identity {
			b.WriteString("- " + n + "\n")
		}
	}
	return strings.TrimRight(b.String(), "\n")
}

var styleAdvice = map[string]string{
	"concise":   "short, direct answers",
	"detailed":  "thorough answers with explanation",
	"technical": "precise technical language, code where it helps",
}

// Context loads the user's profile, the memories most relevant to query
// and the agent's notes on itself, within Config.Budget. On timeout or
// error it returns the error; the caller goes on without them.
func (s *Service) Context(ctx context.Context, userID, query string) (CognitiveContext, error) {
	if userID == "" {
		return CognitiveContext{}, ErrNoUser
	}
	ctx, cancel := context.WithTimeout(ctx, s.cfg.Budget)
	defer cancel()
	var (
		wg         sync.WaitGroup
		p          store.Profile
		perr, merr error
		ms         []store.Memory
	)
	// The recall runs beside the profile's read, which runs here on a
	// stack the driver's calls have grown already; the recall's
	// goroutine grows its own in one step before it reads.
	wg.Go(func() {
		growstack.ForRead()
		ms, merr = s.recall(ctx, userID, query, s.cfg.RecallLimit)
	})
	p, perr = s.cfg.Store.GetProfile(ctx, userID)
	notes := s.identity.notes(ctx, s.cfg.Store)
	wg.Wait()
	if err := errors.Join(perr, merr); err != nil {
		return CognitiveContext{}, fmt.Errorf("cognition: context: %w", err)
	}
	s.touched(userID, ms)
	return CognitiveContext{Profile: p, Memories: ms, Identity: notes}, nil
}

// ContextText is Context as the agent's context loader: its text, and
// each failure told to Config.OnContextFailure.
func (s *Service) ContextText(ctx context.Context, userID, query string) (string, error) {
	c, err := s.Context(ctx, userID, query)
	if err != nil {
		if f := s.cfg.OnContextFailure; f != nil {
			reason := "error"
			if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
				reason = "timeout"
			}
			f(reason)
		}
		return "", err
	}
	return c.Text(), nil
}

// Recall returns the user's memories most relevant to query, best first,
// at most limit (RecallLimit for 0), and records their use.
func (s *Service) Recall(ctx context.Context, userID, query string, limit int) ([]store.Memory, error) {
	if userID == "" {
		return nil, ErrNoUser
	}
	if limit <= 0 {
		limit = s.cfg.RecallLimit
	}
	ms, err := s.recall(ctx, userID, query, limit)
	if err != nil {
		return nil, err
	}
	s.touched(userID, ms)
	return ms, nil
}

// recall ranks the full-text matches and the most important memories
// together by Rank; the store finds both in one statement.
func (s *Service) recall(ctx context.Context, userID, query string, limit int) ([]store.Memory, error) {
	hits, err := s.cfg.Store.SearchMemories(ctx, store.MemoryQuery{UserID: userID, Query: query, Limit: 3 * limit, Important: limit})
	if err != nil {
		return nil, err
	}
	return Rank(hits, time.Now(), limit), nil
}

// Rank orders hits by relevance (the full-text score, scaled to the
// best hit's), importance and recency (halving every 30 days since last
// use), weighted 0.6, 0.25 and 0.15, and returns the best limit.
func Rank(hits []store.MemoryHit, now time.Time, limit int) []store.Memory {
	best := 0.0
	for _, h := range hits {
		best = max(best, h.Score)
	}
	type scored struct {
		m     store.Memory
		score float64
	}
	ss := make([]scored, len(hits))
	for i, h := range hits {
		rel := 0.0
		if best > 0 {
			rel = max(h.Score, 0) / best
		}
		age := now.Sub(h.LastAccessed).Hours() / 24
		recency := math.Exp2(-max(age, 0) / 30)
		ss[i] = scored{h.Memory, 0.6*rel + 0.25*h.Importance + 0.15*recency}
	}
	slices.SortStableFunc(ss, func(a, b scored) int {
		switch {
		case a.score > b.score:
			return -1
		case a.score < b.score:
			return 1
		}
		return strings.Compare(a.m.ID, b.m.ID)
	})
	out := make([]store.Memory, 0, min(limit, len(ss)))
	for _, x := range ss[:min(limit, len(ss))] {
		out = append(out, x.m)
	}
	return out
}

// identityCache keeps the agent's notes on itself for a minute: they
// change slowly and are the same for every user, so requests need not
// read them each time.
type identityCache struct {
	mu         sync.Mutex
	at         time.Time
	cache      []string
	refreshing bool
}

// notes returns the cached notes, reading them again when they are a
// minute old; meanwhile other requests get the old ones, never wait.
func (c *identityCache) notes(ctx context.Context, st Store) []string {
	c.mu.Lock()
	cached, fresh := c.cache, c.refreshing || time.Since(c.at) < time.Minute
	c.refreshing = c.refreshing || !fresh
	c.mu.Unlock()
	if fresh {
		return cached
	}
	stats, err := st.ToolStats(ctx)
	c.mu.Lock()
	defer c.mu.Unlock()
	c.refreshing = false
	if err != nil {
		return c.cache // keep the old notes; try again next time
	}
	c.at, c.cache = time.Now(), IdentityNotes(stats)
	return c.cache
}

// IdentityNotes says what the stats tell of the agent: its answers and
// their mean confidence, and the tools that fail or are rejected often
// (a quarter of their calls or more, of at least four).
func IdentityNotes(stats []store.ToolStat) []string {
	var notes []string
	for _, st := range stats {
		if st.Tool == store.AgentTool {
			if st.Calls > 0 {
				notes = append(notes, fmt.Sprintf("%d answers so far, mean confidence %s; %d ended blocked",
					st.Calls, strconv.FormatFloat(st.ConfidenceSum/float64(st.Calls), 'f', 2, 64), st.Blocked))
			}
			continue
		}
		if st.Calls >= 4 && 4*st.Failures >= st.Calls {
			notes = append(notes, fmt.Sprintf("tool %s failed %d of %d calls: check its arguments, or prefer another", st.Tool, st.Failures, st.Calls))
		}
		if st.Calls >= 4 && 4*st.Rejections >= st.Calls {
			notes = append(notes, fmt.Sprintf("users rejected %d of %d calls of %s: propose it only when needed", st.Rejections, st.Calls, st.Tool))
		}
	}
	return notes
}

// Identity returns the agent's performance per tool, for the operator.
func (s *Service) Identity(ctx context.Context) ([]store.ToolStat, []string, error) {
	stats, err := s.cfg.Store.ToolStats(ctx)
	if err != nil {
		return nil, nil, err
	}
	return stats, IdentityNotes(stats), nil
}
