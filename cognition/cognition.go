package cognition

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/trellis-ai/trellis/internal/jobs"
	"github.com/trellis-ai/trellis/store"
)

// Store is the record the service keeps its rows in.
type Store interface {
	store.Memories
}

// Config is what the service is built from; Store is required, and the
// zero value of every other field is its default.
type Config struct {
	Store Store
	// Budget bounds Context. Default 100 ms.
	Budget time.Duration
	// MaxMemories is the most memories a user keeps. Default 100.
	MaxMemories int
	// TTL drops memories unused for this long. Default 90 days.
	TTL time.Duration
	// PruneEvery is how often pruning runs. Default 1 hour.
	PruneEvery time.Duration
	// LearnTimeout bounds one attempt of a learning job. A learning job
	// left running by a process that died is taken over by another no
	// sooner than this (nor than the queue's RescueAfter) after its
	// attempt began. Default DefaultLearnTimeout.
	LearnTimeout time.Duration
	// LearnAfter is how long after a turn its conversation's learning
	// job runs (LearnLater): turns that come meanwhile are learned by the
	// same job. Default DefaultLearnAfter; negative learns at once.
	LearnAfter time.Duration
	// LearnEvery, when positive, learns at once every LearnEvery turns
	// of a conversation, however soon they come. Default 0: only
	// LearnAfter decides.
	LearnEvery int
	// RecallLimit is the most memories Context returns. Default 5.
	RecallLimit int
	// MergeAt is the topic similarity (Jaccard) at and above which a new
	// memory merges into an old one. Default 0.7.
	MergeAt float64
	// Extractor, when set, reads facts, preferences and memory decisions
	// from the turns learned together with a model, in one call; nil
	// keeps to the rules.
	Extractor Extractor
	// OnContextFailure is told each Context that failed: "timeout" or
	// "error" (a metric counts them); nil tells no one.
	OnContextFailure func(reason string)
	// Logger receives failures of background work; nil discards.
	Logger *slog.Logger
}

// DefaultLearnTimeout is Config.LearnTimeout's default.
const DefaultLearnTimeout = 2 * time.Minute

// DefaultLearnAfter is Config.LearnAfter's default: long enough that the
// quick turns of an exchange (a follow-up, a correction, a client's
// scripted steps) are learned together, short enough that what a user
// said is remembered in their next conversation.
const DefaultLearnAfter = 10 * time.Second

// Service is the cognition service. Build it with New, Register its jobs
// before the queue opens, Attach the queue, and Close it last.
type Service struct {
	cfg   Config
	queue *jobs.Queue
	log   *slog.Logger

	// touches carries recalled memories to the goroutine that records
	// their use, off the request's path.
	touches chan store.Recall
	done    chan struct{}
	// mu guards closed: touched sends only while the recorder runs.
	mu     sync.RWMutex
	closed bool

	identity identityCache
}

// New returns the service and starts its recorder of recalls.
func New(cfg Config) (*Service, error) {
	if cfg.Store == nil {
		return nil, errors.New("cognition: a store is required")
	}
	if cfg.Budget <= 0 {
		cfg.Budget = 100 * time.Millisecond
	}
	if cfg.MaxMemories <= 0 {
		cfg.MaxMemories = 100
	}
	if cfg.TTL <= 0 {
		cfg.TTL = 90 * 24 * time.Hour
	}
	if cfg.PruneEvery <= 0 {
		cfg.PruneEvery = time.Hour
	}
	if cfg.LearnTimeout <= 0 {
		cfg.LearnTimeout = DefaultLearnTimeout
	}
	switch {
	case cfg.LearnAfter == 0:
		cfg.LearnAfter = DefaultLearnAfter
	case cfg.LearnAfter < 0:
		cfg.LearnAfter = 0
	}
	if cfg.RecallLimit <= 0 {
		cfg.RecallLimit = 5
	}
	if cfg.MergeAt <= 0 {
		cfg.MergeAt = 0.7
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	s := &Service{cfg: cfg, log: log, touches: make(chan store.Recall, 256), done: make(chan struct{})}
	go s.recordTouches()
	return s, nil
}

// Close stops recording recalls once those queued are recorded.
func (s *Service) Close() {
	s.mu.Lock()
	if !s.closed {
		s.closed = true
		close(s.touches)
	}
	s.mu.Unlock()
	<-s.done
}

// recordTouches records recalls as they come, those queued meanwhile in
// one batch: one commit for many recalls, so that under load the
// recorder's writes do not crowd the requests' reads. A batch whose
// record fails is only counts lost, so it is logged, not retried.
func (s *Service) recordTouches() {
	defer close(s.done)
	var batch []store.Recall
	for r := range s.touches {
		batch = append(batch[:0], r)
	drain:
		for len(batch) < cap(s.touches) {
			select {
			case r, ok := <-s.touches:
				if !ok {
					break drain
				}
				batch = append(batch, r)
			default:
				break drain
			}
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		if err := s.cfg.Store.TouchMemories(ctx, batch); err != nil {
			s.log.LogAttrs(ctx, slog.LevelWarn, "cognition: recording recalls", slog.Int("recalls", len(batch)),
				slog.Any("error", err))
		}
		cancel()
	}
}

// touched queues the record of a recall; when the recorder is behind, the
// count is dropped rather than the request slowed.
func (s *Service) touched(userID string, ms []store.Memory) {
	if len(ms) == 0 {
		return
	}
	ids := make([]string, len(ms))
	for i, m := range ms {
		ids[i] = m.ID
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return
	}
	select {
	case s.touches <- store.Recall{UserID: userID, MemoryIDs: ids, At: time.Now()}:
	default:
	}
}

// Register registers the service's jobs (learning, pruning) with ws.
func (s *Service) Register(ws *jobs.Workers) {
	jobs.Handle(ws, s.learnConversation, jobs.HandleOptions{Timeout: s.cfg.LearnTimeout})
	jobs.Handle(ws, func(ctx context.Context, j jobs.Job[Turn]) error { return s.Learn(ctx, j.Args) },
		jobs.HandleOptions{Timeout: s.cfg.LearnTimeout})
	jobs.Handle(ws, s.prune, jobs.HandleOptions{})
}

// Periodic is the service's periodic job (pruning), for jobs.Config.
func (s *Service) Periodic() []jobs.Periodic {
	return []jobs.Periodic{{Every: s.cfg.PruneEvery, Args: PruneArgs{}, RunOnStart: true}}
}

// Attach gives the service the queue its jobs go to.
func (s *Service) Attach(q *jobs.Queue) { s.queue = q }

// ErrNoUser: a call names no user.
var ErrNoUser = errors.New("cognition: no user")

// Profile returns the user's profile.
func (s *Service) Profile(ctx context.Context, userID string) (store.Profile, error) {
	if userID == "" {
		return store.Profile{}, ErrNoUser
	}
	return s.cfg.Store.GetProfile(ctx, userID)
}

// ProfileEdit is what a user states of themself (PATCH /me/profile).
type ProfileEdit struct {
	// Preferences are set by name; an empty value removes one.
	Preferences map[string]string
	// Expertise and Style, when not "", win over inference.
	Expertise, Style string
	// Interests, when not nil, replace the inferred ones.
	Interests []string
}

// SetPreferences records what the user states of themself: each
// preference set (an empty value removes it), expertise and style when
// not "" (they then win over inference), and interests when not nil.
// ErrInvalid for an unknown expertise or style.
func (s *Service) SetPreferences(ctx context.Context, userID string, e ProfileEdit) (store.Profile, error) {
	if userID == "" {
		return store.Profile{}, ErrNoUser
	}
	if e.Expertise != "" && !validExpertise(e.Expertise) {
		return store.Profile{}, fmt.Errorf("%w: expertise %q is not novice, intermediate or expert", store.ErrInvalid, e.Expertise)
	}
	if e.Style != "" && !validStyle(e.Style) {
		return store.Profile{}, fmt.Errorf("%w: style %q is not concise, detailed or technical", store.ErrInvalid, e.Style)
	}
	return s.cfg.Store.UpdateProfile(ctx, userID, func(p *store.Profile) error {
		for k, v := range e.Preferences {
			if v == "" {
				delete(p.Preferences, k)
			} else {
				p.Preferences[k] = v
			}
		}
		if e.Expertise != "" {
			p.Preferences[PrefExpertise], p.Expertise = e.Expertise, e.Expertise
		}
		if e.Style != "" {
			p.Preferences[PrefStyle], p.Style = e.Style, e.Style
		}
		if e.Interests != nil {
			p.Interests = slices.Clone(e.Interests)
		}
		return nil
	})
}

// Memories returns a page of the user's memories, newest first.
func (s *Service) Memories(ctx context.Context, userID string, page store.Page) (store.MemoryPage, error) {
	if userID == "" {
		return store.MemoryPage{}, ErrNoUser
	}
	return s.cfg.Store.ListMemories(ctx, userID, page)
}

// Forget deletes the user's memory: store.ErrNotFound when it is unknown
// or another user's.
func (s *Service) Forget(ctx context.Context, userID, id string) error {
	if userID == "" {
		return ErrNoUser
	}
	return s.cfg.Store.DeleteMemory(ctx, userID, id)
}

// PurgeLearning deletes the user's learning jobs, waiting or done: their
// arguments hold the user's words. Erasing the user calls it. A job
// still running is cancelled, kept, and reported with an error matching
// jobs.ErrRunning: call again once it has ended.
func (s *Service) PurgeLearning(ctx context.Context, userID string) error {
	if userID == "" {
		return ErrNoUser
	}
	if s.queue == nil {
		return nil
	}
	for _, kind := range []string{Turn{}.Kind(), Pending{}.Kind()} {
		if _, err := s.queue.Purge(ctx, kind, "user_id", userID); err != nil {
			return fmt.Errorf("cognition: purge learning: %w", err)
		}
	}
	return nil
}

// ForgetAll cancels the user's learning jobs not yet done, then deletes
// every memory and the profile of the user, and returns how many
// memories there were; the turns not learned yet are not learned later
// (the store counts them learned).
func (s *Service) ForgetAll(ctx context.Context, userID string) (int, error) {
	if userID == "" {
		return 0, ErrNoUser
	}
	if s.queue != nil {
		for _, kind := range []string{Turn{}.Kind(), Pending{}.Kind()} {
			if _, err := s.queue.CancelMatching(ctx, kind, "user_id", userID); err != nil {
				return 0, fmt.Errorf("cognition: cancel learning: %w", err)
			}
		}
	}
	return s.cfg.Store.DeleteMemories(ctx, userID)
}
