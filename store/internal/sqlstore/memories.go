package sqlstore

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/trellis-ai/trellis/internal/ids"
	"github.com/trellis-ai/trellis/store"
	"github.com/trellis-ai/trellis/store/internal/storeutil"
)

// memoryCols are read by scanMemory.
const memoryCols = `m.id, m.user_id, m.conversation_id, m.summary, m.outcome, m.topics, m.importance, m.access_count,
    m.created_at, m.last_accessed`

func scanMemory(row Row, extra ...any) (store.Memory, error) {
	var (
		m              store.Memory
		topics         []byte
		created, since dbTime
	)
	dest := append([]any{&m.ID, &m.UserID, &m.ConversationID, &m.Summary, &m.Outcome, &topics, &m.Importance,
		&m.AccessCount, &created, &since}, extra...)
	if err := row.Scan(dest...); err != nil {
		return m, err
	}
	m.CreatedAt, m.LastAccessed = created.t, since.t
	m.Topics = []string{}
	if err := json.Unmarshal(topics, &m.Topics); err != nil {
		return m, err
	}
	return m, nil
}

// topicsJSON is how topics are stored, never null.
func topicsJSON(topics []string) string {
	if topics == nil {
		topics = []string{}
	}
	b, _ := json.Marshal(topics)
	return string(b)
}

// AddMemory implements store.Memories.
func (s *Store) AddMemory(ctx context.Context, nm store.NewMemory) (store.Memory, error) {
	if err := nm.Validate(); err != nil {
		return store.Memory{}, s.errorf("add memory: %w", err)
	}
	var m store.Memory
	err := s.db.Auto(ctx, func(ctx context.Context, q Querier) error {
		var err error
		if m, err = s.addMemory(ctx, q, nm); err != nil {
			return err
		}
		return s.db.MemorySearch().Upkeep.run(ctx, q)
	})
	if err != nil {
		return store.Memory{}, s.errorf("add memory: %w", s.refused(err))
	}
	return m, nil
}

// addMemory inserts a valid memory; the full-text upkeep is the
// caller's.
func (s *Store) addMemory(ctx context.Context, q Querier, nm store.NewMemory) (store.Memory, error) {
	now := storeutil.Now()
	m := store.Memory{ID: ids.New(), UserID: nm.UserID, ConversationID: nm.ConversationID, Summary: nm.Summary,
		Outcome: nm.Outcome, Topics: slices.Clone(nm.Topics), Importance: nm.Importance, CreatedAt: now, LastAccessed: now}
	if m.Topics == nil {
		m.Topics = []string{}
	}
	at := s.db.Time(now)
	_, err := q.Exec(ctx, `INSERT INTO memories (id, user_id, conversation_id, summary, outcome, topics, topic_text, importance,
            created_at, last_accessed) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		m.ID, m.UserID, m.ConversationID, m.Summary, m.Outcome, topicsJSON(m.Topics), strings.Join(m.Topics, " "),
		m.Importance, at, at)
	return m, err
}

// UpdateMemory implements store.Memories.
func (s *Store) UpdateMemory(ctx context.Context, userID, id string, nm store.NewMemory) (store.Memory, error) {
	nm.UserID, nm.ConversationID = userID, ""
	if err := nm.Validate(); err != nil {
		return store.Memory{}, s.errorf("update memory %s: %w", id, err)
	}
	var m store.Memory
	err := s.db.Tx(ctx, func(ctx context.Context, q Querier) error {
		found, err := rewriteMemory(ctx, q, userID, id, nm)
		if err != nil {
			return err
		}
		if !found {
			return store.ErrNotFound
		}
		if err := s.db.MemorySearch().Upkeep.run(ctx, q); err != nil {
			return err
		}
		m, err = scanMemory(q.QueryRow(ctx, `SELECT `+memoryCols+` FROM memories m WHERE m.id = ?`, id))
		return err
	})
	if err != nil {
		return store.Memory{}, s.errorf("update memory %s: %w", id, err)
	}
	return m, nil
}

// rewriteMemory rewrites the user's memory id with a valid nm, and
// reports whether there was one; the full-text upkeep is the caller's.
func rewriteMemory(ctx context.Context, q Querier, userID, id string, nm store.NewMemory) (bool, error) {
	if storeutil.CheckIDs(id) != nil {
		return false, nil
	}
	n, err := q.Exec(ctx, `UPDATE memories SET summary = ?, outcome = ?, topics = ?, topic_text = ?, importance = ?
            WHERE id = ? AND user_id = ?`,
		nm.Summary, nm.Outcome, topicsJSON(nm.Topics), strings.Join(nm.Topics, " "), nm.Importance, id, userID)
	return n > 0, err
}

// ListMemories implements store.Memories, paged as ListConversations is.
func (s *Store) ListMemories(ctx context.Context, userID string, page store.Page) (store.MemoryPage, error) {
	items, next, err := newestFirst(ctx, s, `SELECT `+memoryCols+` FROM memories m`, "m", userID, page,
		func(r Row) (store.Memory, error) { return scanMemory(r) },
		func(m store.Memory) storeutil.Cursor { return storeutil.Cursor{CreatedAt: m.CreatedAt, ID: m.ID} },
		func(m store.Memory) int { return len(m.Summary) + len(strings.Join(m.Topics, ",")) })
	if err != nil {
		return store.MemoryPage{}, s.errorf("list memories: %w", err)
	}
	return store.MemoryPage{Memories: items, NextCursor: next}, nil
}

// SearchMemories implements store.Memories with the backend's
// MemorySearch.
func (s *Store) SearchMemories(ctx context.Context, mq store.MemoryQuery) ([]store.MemoryHit, error) {
	hits, err := s.searchMemories(ctx, mq)
	if err != nil {
		return nil, s.errorf("search memories: %w", err)
	}
	return hits, nil
}

func (s *Store) searchMemories(ctx context.Context, mq store.MemoryQuery) ([]store.MemoryHit, error) {
	limit, err := searchLimit(mq.UserID, mq.Limit)
	if err != nil {
		return nil, err
	}
	if mq.Important < 0 {
		return nil, fmt.Errorf("%w: important %d is negative", store.ErrInvalid, mq.Important)
	}
	if storeutil.CheckIDs(mq.UserID) != nil {
		return []store.MemoryHit{}, nil
	}
	important := min(mq.Important, store.MaxSearchLimit)
	// The most important memories, the most recently used first among
	// equals. Their score is a REAL as the full-text scores are, so that
	// a UNION of both has one type on both databases.
	const byImportance = `SELECT ` + memoryCols + `, CAST(0 AS REAL) AS score FROM memories m WHERE m.user_id = ?
            ORDER BY m.importance DESC, m.last_accessed DESC, m.id LIMIT ?`
	var query string
	var args []any
	union := false
	if terms := SearchTerms(mq.Query); len(terms) > 0 {
		ms := s.db.MemorySearch()
		query = `SELECT ` + memoryCols + `, ` + ms.Score + ` AS score FROM ` + ms.From + `
            WHERE ` + ms.Match + ` AND m.user_id = ? ORDER BY score DESC, m.importance DESC, m.last_accessed DESC, m.id LIMIT ?`
		args = append(ms.Args(terms, mq.UserID), mq.UserID, limit)
		if important > 0 {
			// Each part keeps its order and limit in a subquery; the
			// matches go first, and among the important ones (score 0
			// below any match's) the order is byImportance's.
			query = `SELECT * FROM (` + query + `) AS matches UNION ALL SELECT * FROM (` + byImportance + `) AS important
            ORDER BY score DESC, importance DESC, last_accessed DESC, id`
			args = append(args, mq.UserID, important)
			union = true
		}
	} else {
		// The matches are the most important already: important adds
		// only those past limit.
		query = byImportance
		args = []any{mq.UserID, max(limit, important)}
	}
	hits, err := queryAll(ctx, s.db, func(r Row) (store.MemoryHit, error) {
		var h store.MemoryHit
		m, err := scanMemory(r, &h.Score)
		h.Memory = m
		return h, err
	}, query, args...)
	if err != nil || !union {
		return hits, err
	}
	// A match that is among the most important comes twice.
	seen := make(map[string]bool, len(hits))
	return slices.DeleteFunc(hits, func(h store.MemoryHit) bool {
		dup := seen[h.ID]
		seen[h.ID] = true
		return dup
	}), nil
}

// TouchMemories implements store.Memories: an UPDATE a recall, one
// commit for all.
func (s *Store) TouchMemories(ctx context.Context, recalls []store.Recall) error {
	var (
		updates [][]any
		ids     []any
	)
	for _, r := range recalls {
		if storeutil.CheckIDs(r.UserID) != nil {
			continue
		}
		args := []any{s.db.Time(r.At.UTC().Truncate(time.Microsecond)), r.UserID}
		for _, id := range r.MemoryIDs {
			if storeutil.CheckIDs(id) == nil {
				args = append(args, id)
			}
		}
		if len(args) > 2 {
			updates = append(updates, args)
			ids = append(ids, args[2:]...)
		}
	}
	if len(updates) == 0 {
		return nil
	}
	slices.SortFunc(ids, func(a, b any) int { return strings.Compare(a.(string), b.(string)) })
	ids = slices.Compact(ids)
	err := s.db.Tx(ctx, func(ctx context.Context, q Querier) error {
		// The rows are locked in one order first. Two batches (two
		// processes' recorders) touching the same memories in different
		// orders, a recall at a time, deadlocked on PostgreSQL. SQLite's
		// one writer needs no lock (ForUpdate is empty there).
		if lock := s.db.ForUpdate(); lock != "" {
			if _, err := q.Exec(ctx, `SELECT id FROM memories WHERE id IN (`+placeholders(len(ids))+`) ORDER BY id`+lock, ids...); err != nil {
				return err
			}
		}
		for _, args := range updates {
			_, err := q.Exec(ctx, `UPDATE memories SET access_count = access_count + 1, last_accessed = ?
                WHERE user_id = ? AND id IN (`+placeholders(len(args)-2)+`)`, args...)
			if err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return s.errorf("touch memories: %w", err)
	}
	return nil
}

// DeleteMemory implements store.Memories.
func (s *Store) DeleteMemory(ctx context.Context, userID, id string) error {
	return s.deleteOwned(ctx, "memories", "memory", userID, id)
}

// DeleteMemories implements store.Memories.
func (s *Store) DeleteMemories(ctx context.Context, userID string) (int, error) {
	if storeutil.CheckIDs(userID) != nil {
		return 0, nil
	}
	var n int64
	err := s.db.Tx(ctx, func(ctx context.Context, q Querier) error {
		var err error
		if n, err = q.Exec(ctx, `DELETE FROM memories WHERE user_id = ?`, userID); err != nil {
			return err
		}
		if _, err = q.Exec(ctx, `DELETE FROM profiles WHERE user_id = ?`, userID); err != nil {
			return err
		}
		_, err = q.Exec(ctx, `UPDATE conversations SET learned_num = run_count WHERE user_id = ? AND learned_num < run_count`, userID)
		return err
	})
	if err != nil {
		return 0, s.errorf("delete memories: %w", err)
	}
	return int(n), nil
}

// PruneMemories implements store.Memories: the TTL first, then each
// user's least important memories beyond the limit, ranked by a window
// function (both databases have them).
func (s *Store) PruneMemories(ctx context.Context, rule store.PruneRule) (int, error) {
	if rule.MaxPerUser < 0 {
		return 0, s.errorf("prune memories: %w: negative limit", store.ErrInvalid)
	}
	var total int64
	err := s.db.Tx(ctx, func(ctx context.Context, q Querier) error {
		if !rule.UsedBefore.IsZero() {
			n, err := q.Exec(ctx, `DELETE FROM memories WHERE last_accessed < ?`, s.db.Time(rule.UsedBefore.UTC()))
			if err != nil {
				return err
			}
			total += n
		}
		if rule.MaxPerUser > 0 {
			n, err := q.Exec(ctx, `DELETE FROM memories WHERE id IN (
                SELECT id FROM (
                    SELECT id, row_number() OVER (PARTITION BY user_id
                        ORDER BY importance DESC, created_at DESC, id DESC) AS place
                    FROM memories) AS ranked
                WHERE place > ?)`, rule.MaxPerUser)
			if err != nil {
				return err
			}
			total += n
		}
		return nil
	})
	if err != nil {
		return 0, s.errorf("prune memories: %w", err)
	}
	return int(total), nil
}

// profileCols are read by scanProfile.
const profileCols = `user_id, expertise, style, interests, patterns, preferences, updated_at`

func scanProfile(row Row) (store.Profile, error) {
	var (
		p                          store.Profile
		interests, patterns, prefs []byte
		updated                    dbTime
	)
	if err := row.Scan(&p.UserID, &p.Expertise, &p.Style, &interests, &patterns, &prefs, &updated); err != nil {
		return p, err
	}
	p.UpdatedAt = updated.t
	if err := json.Unmarshal(interests, &p.Interests); err != nil {
		return p, err
	}
	if err := json.Unmarshal(patterns, &p.Patterns); err != nil {
		return p, err
	}
	return p, json.Unmarshal(prefs, &p.Preferences)
}

// emptyProfile is the profile of a user with none stored.
func emptyProfile(userID string) store.Profile {
	return store.Profile{UserID: userID, Interests: []string{}, Patterns: map[string]int{}, Preferences: map[string]string{}}
}

// fill makes p's collections non-nil, as a stored profile's are.
func fill(p *store.Profile) {
	if p.Interests == nil {
		p.Interests = []string{}
	}
	if p.Patterns == nil {
		p.Patterns = map[string]int{}
	}
	if p.Preferences == nil {
		p.Preferences = map[string]string{}
	}
}

// GetProfile implements store.Memories.
func (s *Store) GetProfile(ctx context.Context, userID string) (store.Profile, error) {
	if storeutil.CheckIDs(userID) != nil {
		return emptyProfile(userID), nil
	}
	p, err := scanProfile(s.db.QueryRow(ctx, `SELECT `+profileCols+` FROM profiles WHERE user_id = ?`, userID))
	if noRows(err) {
		return emptyProfile(userID), nil
	}
	if err != nil {
		return store.Profile{}, s.errorf("get profile: %w", err)
	}
	fill(&p)
	return p, nil
}

// UpdateProfile implements store.Memories. The row is written before it
// is read, which locks it in PostgreSQL (SQLite's writers are one at a
// time anyway), so concurrent updates apply one after the other.
func (s *Store) UpdateProfile(ctx context.Context, userID string, fn func(p *store.Profile) error) (store.Profile, error) {
	if userID == "" || !store.ValidText(userID) {
		return store.Profile{}, s.errorf("update profile: %w: user id", store.ErrInvalid)
	}
	var p store.Profile
	err := s.db.Tx(ctx, func(ctx context.Context, q Querier) error {
		var err error
		p, err = s.updateProfile(ctx, q, userID, fn)
		return err
	})
	if err != nil {
		return store.Profile{}, s.errorf("update profile: %w", s.refused(err))
	}
	return p, nil
}

// updateProfile is UpdateProfile's work, in the caller's transaction.
func (s *Store) updateProfile(ctx context.Context, q Querier, userID string, fn func(p *store.Profile) error) (store.Profile, error) {
	at := s.db.Time(storeutil.Now())
	if _, err := q.Exec(ctx, `INSERT INTO profiles (user_id, updated_at) VALUES (?, ?)
            ON CONFLICT (user_id) DO UPDATE SET updated_at = excluded.updated_at`, userID, at); err != nil {
		return store.Profile{}, err
	}
	p, err := scanProfile(q.QueryRow(ctx, `SELECT `+profileCols+` FROM profiles WHERE user_id = ?`, userID))
	if err != nil {
		return store.Profile{}, err
	}
	fill(&p)
	if err := fn(&p); err != nil {
		return store.Profile{}, err
	}
	p.UserID = userID
	fill(&p)
	if err := checkProfile(p); err != nil {
		return store.Profile{}, err
	}
	p.UpdatedAt = storeutil.Now()
	interests, _ := json.Marshal(p.Interests)
	patterns, _ := json.Marshal(p.Patterns)
	prefs, _ := json.Marshal(p.Preferences)
	_, err = q.Exec(ctx, `UPDATE profiles SET expertise = ?, style = ?, interests = ?, patterns = ?, preferences = ?, updated_at = ?
            WHERE user_id = ?`, p.Expertise, p.Style, string(interests), string(patterns), string(prefs), s.db.Time(p.UpdatedAt), userID)
	return p, err
}

// checkProfile refuses text no backend keeps as it is.
func checkProfile(p store.Profile) error {
	texts := append([]string{p.Expertise, p.Style}, p.Interests...)
	for _, k := range slices.Sorted(maps.Keys(p.Preferences)) {
		texts = append(texts, k, p.Preferences[k])
	}
	for k := range p.Patterns {
		texts = append(texts, k)
	}
	for _, t := range texts {
		if !store.ValidText(t) {
			return store.ErrInvalid
		}
	}
	return nil
}

// AddToolStats implements store.Memories: one upsert a tool, in the
// user's row of it.
func (s *Store) AddToolStats(ctx context.Context, userID string, stats []store.ToolStat) error {
	if err := checkStats(userID, stats); err != nil {
		return s.errorf("add tool stats: %w", err)
	}
	err := s.db.Tx(ctx, func(ctx context.Context, q Querier) error {
		return addToolStats(ctx, q, userID, stats)
	})
	if err != nil {
		return s.errorf("add tool stats: %w", err)
	}
	return nil
}

// checkStats refuses a stat without a tool, and text no backend keeps.
func checkStats(userID string, stats []store.ToolStat) error {
	for _, st := range stats {
		if st.Tool == "" || !store.ValidText(st.Tool) || !store.ValidText(userID) {
			return fmt.Errorf("%w: tool name", store.ErrInvalid)
		}
	}
	return nil
}

// addToolStats is AddToolStats' work on checked stats, in the caller's
// transaction.
func addToolStats(ctx context.Context, q Querier, userID string, stats []store.ToolStat) error {
	for _, st := range stats {
		_, err := q.Exec(ctx, `INSERT INTO tool_stats (user_id, tool, calls, failures, blocked, rejections, confidence_sum)
                VALUES (?, ?, ?, ?, ?, ?, ?)
                ON CONFLICT (user_id, tool) DO UPDATE SET calls = tool_stats.calls + excluded.calls,
                    failures = tool_stats.failures + excluded.failures, blocked = tool_stats.blocked + excluded.blocked,
                    rejections = tool_stats.rejections + excluded.rejections,
                    confidence_sum = tool_stats.confidence_sum + excluded.confidence_sum`,
			userID, st.Tool, st.Calls, st.Failures, st.Blocked, st.Rejections, st.ConfidenceSum)
		if err != nil {
			return err
		}
	}
	return nil
}

// ToolStats implements store.Memories.
func (s *Store) ToolStats(ctx context.Context) ([]store.ToolStat, error) {
	out, err := queryAll(ctx, s.db, func(r Row) (store.ToolStat, error) {
		var st store.ToolStat
		err := r.Scan(&st.Tool, &st.Calls, &st.Failures, &st.Blocked, &st.Rejections, &st.ConfidenceSum)
		return st, err
	}, `SELECT tool, sum(calls), sum(failures), sum(blocked), sum(rejections), sum(confidence_sum)
        FROM tool_stats GROUP BY tool ORDER BY tool`)
	if err != nil {
		return nil, s.errorf("tool stats: %w", err)
	}
	return out, nil
}
