package store

import (
	"context"
	"encoding/json"
	"fmt"
	"time"
)

// Memories keeps what the agent remembers of each user across
// conversations (package cognition decides what that is): episodic
// memories under a full-text index (SQLite's FTS5 ranked by BM25, or
// PostgreSQL's stored tsvector, read for the user's rows alone and
// ranked by ts_rank), one profile per user, and the agent's own
// performance per tool.
//
// Every method that names a memory takes the user id too: another
// user's memory is ErrNotFound, as an unknown one is.
type Memories interface {
	// AddMemory stores a memory. Returns ErrInvalid for one that cannot
	// be stored (no user, no summary, importance outside [0, 1]), and
	// ErrErasing when the user is being erased (see Users.BeginErasure).
	AddMemory(ctx context.Context, m NewMemory) (Memory, error)

	// UpdateMemory replaces the user's memory's summary, outcome, topics
	// and importance with m's (m.UserID and m.ConversationID are
	// ignored), and returns it. Returns ErrNotFound when it is unknown or
	// another user's, and ErrInvalid as AddMemory does.
	UpdateMemory(ctx context.Context, userID, id string, m NewMemory) (Memory, error)

	// ListMemories returns a page of the user's memories, newest first.
	// Returns ErrInvalid for a negative limit or a cursor ListMemories
	// did not make.
	ListMemories(ctx context.Context, userID string, page Page) (MemoryPage, error)

	// SearchMemories returns the user's memories that best match
	// q.Query, best first by full-text relevance; with no word to search
	// for, the most important ones. Among equals the more important go
	// first, then the more recently used. q.Important adds the most
	// important ones after the matches, in the same statement. Returns
	// ErrInvalid for a negative limit or a missing user.
	SearchMemories(ctx context.Context, q MemoryQuery) ([]MemoryHit, error)

	// TouchMemories records recalls, in one transaction: each adds one to
	// its memories' access count and sets their last use to its time.
	// Unknown ids, and other users', are skipped.
	TouchMemories(ctx context.Context, recalls []Recall) error

	// DeleteMemory deletes the user's memory. Returns ErrNotFound when it
	// is unknown or another user's.
	DeleteMemory(ctx context.Context, userID, id string) error

	// DeleteMemories deletes all the user's memories and profile, and
	// returns how many memories there were. The turns of the user's
	// conversations so far count as learned (MarkLearned): what was
	// forgotten is not learned again.
	DeleteMemories(ctx context.Context, userID string) (int, error)

	// PruneMemories deletes memories last used before rule.UsedBefore
	// (when it is set), then, of each user with more than
	// rule.MaxPerUser (when it is positive), the least important (the
	// oldest first among equals), and returns how many it deleted.
	PruneMemories(ctx context.Context, rule PruneRule) (int, error)

	// GetProfile returns the user's profile; a user with none has the
	// zero profile (with UserID set), not an error.
	GetProfile(ctx context.Context, userID string) (Profile, error)

	// UpdateProfile calls fn with the user's profile (GetProfile's) and
	// stores what fn leaves in it, in one transaction, so concurrent
	// updates of one profile apply one after the other. An error from
	// fn stores nothing and is returned. Returns ErrInvalid for a
	// missing user or a profile that cannot be stored, and ErrErasing
	// when the user is being erased (see Users.BeginErasure).
	UpdateProfile(ctx context.Context, userID string, fn func(p *Profile) error) (Profile, error)

	// AddToolStats adds each stat's counts to the tool's totals, as the
	// user's share of them (EraseUser takes it out again). Returns
	// ErrInvalid for a stat without a tool.
	AddToolStats(ctx context.Context, userID string, stats []ToolStat) error

	// ToolStats returns every tool's totals over all users, by tool
	// name.
	ToolStats(ctx context.Context) ([]ToolStat, error)

	// UnlearnedTurns returns the runs of the user's conversation that
	// memory has not learned from yet (numbered after the last
	// MarkLearned), in order, at most limit of them (MaxLimit when 0 or
	// more), each with its answer when it has one. Returns ErrNotFound
	// when the conversation is unknown or another user's.
	UnlearnedTurns(ctx context.Context, userID, conversationID string, limit int) ([]UnlearnedTurn, error)

	// MarkLearned records that memory has learned from the user's
	// conversation's runs numbered up to num; a num at or below the
	// one recorded changes nothing. Returns ErrNotFound when the
	// conversation is unknown or another user's.
	MarkLearned(ctx context.Context, userID, conversationID string, num int64) error

	// Learn writes l in one transaction: all of it, or, when it fails
	// (or the process dies), none. Returns ErrInvalid as the methods it
	// stands for do, ErrErasing when the user is being erased, and
	// ErrNotFound when l.ConversationID is unknown or another user's.
	Learn(ctx context.Context, l Lesson) error
}

// Lesson is what memory learns at once (Memories.Learn): from turns of
// a conversation, or a fact the user asked it to remember. Written whole
// or not at all, so a learning job that dies part-way and runs again
// counts nothing twice.
type Lesson struct {
	UserID string // required
	// Profile, when set, changes the user's profile as UpdateProfile's
	// fn does.
	Profile func(p *Profile) error
	// Deletes are the user's memories to delete, Updates the ones to
	// rewrite as UpdateMemory does; one that is gone is passed over.
	Deletes []string
	Updates []MemoryUpdate
	// Adds are new memories of the user (their UserID is UserID), stored
	// in order: the last is the newest.
	Adds []NewMemory
	// Stats are added to the tools' totals as AddToolStats adds them.
	Stats []ToolStat
	// ConversationID, when set, is the conversation whose runs up to
	// Learned the lesson was learned from, recorded as MarkLearned does.
	ConversationID string
	Learned        int64
}

// MemoryUpdate rewrites the memory ID with Memory (Lesson.Updates).
type MemoryUpdate struct {
	ID     string
	Memory NewMemory
}

// UnlearnedTurn is a run of a conversation as learning reads it (see
// Memories.UnlearnedTurns).
type UnlearnedTurn struct {
	// Num numbers the run in its conversation: 1, 2, … in the order the
	// runs started.
	Num        int64
	Status     RunStatus
	Superseded bool
	RequestID  string
	// Query is the user's message that started the run.
	Query string
	// Answered: the run stored an answer (Conversations.AddMessage),
	// whose content and meta are Answer and Meta.
	Answered bool
	Answer   string
	Meta     json.RawMessage
}

// Memory is one thing the agent remembers of a user: an episode of a
// conversation, or a fact the user asked it to remember. Its JSON is the
// item of GET /me/memories.
type Memory struct {
	ID             string `json:"id"`
	UserID         string `json:"-"`
	ConversationID string `json:"conversation_id"`
	Summary        string `json:"summary"`
	// Outcome is how the turn went: success, partial or failure; "" for
	// a fact.
	Outcome string   `json:"outcome"`
	Topics  []string `json:"topics"`
	// Importance is from 0 to 1; pruning deletes the least important
	// first.
	Importance   float64   `json:"importance"`
	AccessCount  int       `json:"access_count"`
	CreatedAt    time.Time `json:"created_at"`
	LastAccessed time.Time `json:"last_accessed"`
}

// NewMemory is what AddMemory and UpdateMemory need.
type NewMemory struct {
	UserID         string // required
	ConversationID string
	Summary        string // required
	Outcome        string
	Topics         []string
	Importance     float64
}

// Validate reports an ErrInvalid error for a memory that cannot be
// stored.
func (m NewMemory) Validate() error {
	switch {
	case m.UserID == "":
		return fmt.Errorf("%w: user id is required", ErrInvalid)
	case m.Summary == "":
		return fmt.Errorf("%w: summary is required", ErrInvalid)
	case !(m.Importance >= 0 && m.Importance <= 1):
		return fmt.Errorf("%w: importance %v is not within [0, 1]", ErrInvalid, m.Importance)
	}
	for _, t := range m.Topics {
		if err := checkText("topic", t); err != nil {
			return err
		}
	}
	return checkText("user id", m.UserID, "conversation id", m.ConversationID, "summary", m.Summary, "outcome", m.Outcome)
}

// MemoryPage is one page of ListMemories.
type MemoryPage struct {
	Memories []Memory `json:"memories"`
	// NextCursor fetches the next page; "" when this page is the last.
	// The key is always there, as API.md lists it.
	NextCursor string `json:"next_cursor"`
}

// Recall is one use of some of a user's memories, for TouchMemories.
type Recall struct {
	UserID    string
	MemoryIDs []string
	At        time.Time
}

// MemoryQuery asks SearchMemories for memories.
type MemoryQuery struct {
	UserID string // required
	// Query is what to look for, in words (see ChunkQuery.Query).
	Query string
	// Limit is the most hits; 0 is DefaultSearchLimit, and more than
	// MaxSearchLimit is MaxSearchLimit.
	Limit int
	// Important, when above 0, adds after the matches those of the
	// user's Important most important memories (ordered as with no word
	// to search for; at most MaxSearchLimit) that are not among them,
	// each with score 0: a recall that ranks by importance as well as by
	// relevance asks for both in one statement.
	Important int
}

// MemoryHit is a memory SearchMemories found, with its full-text score:
// higher is better, comparable only within one search; 0 when the query
// had no word to search for.
type MemoryHit struct {
	Memory
	Score float64 `json:"score"`
}

// PruneRule says which memories PruneMemories deletes.
type PruneRule struct {
	// UsedBefore deletes memories last used before it; zero keeps them.
	UsedBefore time.Time
	// MaxPerUser is the most memories a user keeps; 0 is no limit.
	MaxPerUser int
}

// Profile is what the agent knows of how a user works with it. Its JSON is
// the body of GET /me/profile.
type Profile struct {
	UserID string `json:"user_id"`
	// Expertise is novice, intermediate or expert; "" before any
	// inference.
	Expertise string `json:"expertise_level"`
	// Style is concise, detailed or technical; "" before any inference.
	Style string `json:"communication_style"`
	// Interests are topics the user asks about, most frequent first.
	Interests []string `json:"interests"`
	// Patterns count how the user interacts (questions, turns, …): the
	// agent's bookkeeping, not part of the profile API.md shows.
	Patterns map[string]int `json:"-"`
	// Preferences are what the user stated, by name: they win over
	// inference.
	Preferences map[string]string `json:"preferences"`
	UpdatedAt   time.Time         `json:"updated_at"`
}

// ToolStat is a tool's performance: how many times it was called, failed,
// left a run blocked, and how many of its calls a user rejected. Tool
// AgentTool holds the agent's own: answers given (Calls), failed
// (Failures), blocked and with a rejection, and the sum of the answers'
// confidence.
type ToolStat struct {
	Tool          string  `json:"tool"`
	Calls         int64   `json:"calls"`
	Failures      int64   `json:"failures"`
	Blocked       int64   `json:"blocked"`
	Rejections    int64   `json:"rejections"`
	ConfidenceSum float64 `json:"confidence_sum"`
}

// AgentTool names the agent's own line among the tool stats.
const AgentTool = "(agent)"
