package sqlstore

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/trellis-ai/trellis/events"
	"github.com/trellis-ai/trellis/store"
)

// addUsage adds to the user's usage of the model on the day the run's
// stream ended (at) what the run spent since its stream last ended: the
// growth of its total from before (its usage as last recorded) to
// end.Usage, the stretch's tool calls, and the run itself when it ended
// for good. It runs in finishRun's transaction, after the update that
// a second end of the same stretch fails, so nothing counts twice.
func addUsage(ctx context.Context, q Querier, userID, model string, at time.Time, before []byte, end store.RunEnd) error {
	var was events.Usage
	if len(before) > 0 {
		if err := json.Unmarshal(before, &was); err != nil {
			return fmt.Errorf("usage before: %w", err)
		}
	}
	grown := func(now, then int) int64 { return int64(max(now-then, 0)) }
	in, out := grown(end.Usage.InputTokens, was.InputTokens), grown(end.Usage.OutputTokens, was.OutputTokens)
	total := grown(end.Usage.TotalTokens, was.TotalTokens)
	var runs int64
	if end.Status.Final() {
		runs = 1
	}
	if in == 0 && out == 0 && total == 0 && end.ToolCalls == 0 && runs == 0 {
		return nil // an interrupted stretch that spent nothing
	}
	// Held on PostgreSQL: the run's end updates the conversation next.
	return execLater(ctx, q, `INSERT INTO usage_days (user_id, day, model, input_tokens, output_tokens, total_tokens, tool_calls, runs)
VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (user_id, day, model) DO UPDATE SET
    input_tokens = usage_days.input_tokens + excluded.input_tokens,
    output_tokens = usage_days.output_tokens + excluded.output_tokens,
    total_tokens = usage_days.total_tokens + excluded.total_tokens,
    tool_calls = usage_days.tool_calls + excluded.tool_calls,
    runs = usage_days.runs + excluded.runs`,
		userID, at.UTC().Format(store.DayFormat), model, in, out, total, int64(end.ToolCalls), runs)
}

// usageCursorVersion prefixes the cursors of UsageDays.
const usageCursorVersion = "u1"

// usageKey is a row's place in UsageDays' order, and its cursor.
type usageKey struct{ Day, UserID, Model string }

func (k usageKey) encode() string {
	raw, _ := json.Marshal([]string{usageCursorVersion, k.Day, k.UserID, k.Model})
	return base64.RawURLEncoding.EncodeToString(raw)
}

func decodeUsageCursor(s string) (usageKey, error) {
	var parts []string
	raw, err := base64.RawURLEncoding.DecodeString(s)
	if err == nil {
		err = json.Unmarshal(raw, &parts)
	}
	// JSON may spell a NUL (\u0000), which PostgreSQL refuses in text.
	if err != nil || len(parts) != 4 || parts[0] != usageCursorVersion || !store.ValidText(parts[1]+parts[2]+parts[3]) {
		return usageKey{}, fmt.Errorf("%w: cursor %q was not returned by a list of usage", store.ErrInvalid, s)
	}
	return usageKey{Day: parts[1], UserID: parts[2], Model: parts[3]}, nil
}

// usageCols are read by scanUsageCounts, after what precedes them.
const usageCols = `input_tokens, output_tokens, total_tokens, tool_calls, runs`

func scanUsageDay(row Row) (store.UsageDay, error) {
	var d store.UsageDay
	c := &d.UsageCounts
	err := row.Scan(&d.Day, &d.UserID, &d.Model, &c.InputTokens, &c.OutputTokens, &c.TotalTokens, &c.ToolCalls, &c.Runs)
	return d, err
}

// UsageDays implements store.UsageLog. The page and its totals are read
// in one transaction, so they agree.
func (s *Store) UsageDays(ctx context.Context, uq store.UsageQuery) (store.UsagePage, error) {
	var p store.UsagePage
	if _, _, err := uq.Days(); err != nil {
		return p, s.errorf("usage: %w", err)
	}
	most, err := uq.Page.Size()
	if err != nil {
		return p, s.errorf("usage: %w", err)
	}
	var after *usageKey
	if uq.Cursor != "" {
		k, err := decodeUsageCursor(uq.Cursor)
		if err != nil {
			return p, s.errorf("usage: %w", err)
		}
		after = &k
	}
	if !store.ValidText(uq.UserID) {
		return p, s.errorf("usage: %w: user id is not valid UTF-8 or holds a NUL character", store.ErrInvalid)
	}
	where, args := `day >= ? AND day <= ?`, []any{uq.From, uq.To}
	if uq.UserID != "" {
		where += ` AND user_id = ?`
		args = append(args, uq.UserID)
	}
	err = s.db.Tx(ctx, func(ctx context.Context, q Querier) error {
		err := q.QueryRow(ctx, `SELECT CAST(coalesce(sum(input_tokens), 0) AS BIGINT), CAST(coalesce(sum(output_tokens), 0) AS BIGINT), CAST(coalesce(sum(total_tokens), 0) AS BIGINT),
    CAST(coalesce(sum(tool_calls), 0) AS BIGINT), CAST(coalesce(sum(runs), 0) AS BIGINT) FROM usage_days WHERE `+where, args...).
			Scan(&p.Totals.InputTokens, &p.Totals.OutputTokens, &p.Totals.TotalTokens, &p.Totals.ToolCalls, &p.Totals.Runs)
		if err != nil {
			return err
		}
		query, qargs := `SELECT day, user_id, model, `+usageCols+` FROM usage_days WHERE `+where, args
		if after != nil {
			query += ` AND (day, user_id, model) > (?, ?, ?)`
			qargs = append(qargs[:len(qargs):len(qargs)], after.Day, after.UserID, after.Model)
		}
		query += ` ORDER BY day, user_id, model LIMIT ?`
		qargs = append(qargs[:len(qargs):len(qargs)], most+1)
		p.Days, err = queryAll(ctx, q, scanUsageDay, query, qargs...)
		return err
	})
	if err != nil {
		return store.UsagePage{}, s.errorf("usage of %q from %s to %s: %w", uq.UserID, uq.From, uq.To, err)
	}
	if len(p.Days) > most {
		p.Days = p.Days[:most]
		last := p.Days[most-1]
		p.NextCursor = usageKey{Day: last.Day, UserID: last.UserID, Model: last.Model}.encode()
	}
	return p, nil
}

// MonthTokens implements store.UsageLog.
func (s *Store) MonthTokens(ctx context.Context, userID string, at time.Time) (int64, error) {
	at = at.UTC()
	first := time.Date(at.Year(), at.Month(), 1, 0, 0, 0, 0, time.UTC)
	last := first.AddDate(0, 1, -1)
	var n int64
	err := s.db.QueryRow(ctx, `SELECT CAST(coalesce(sum(total_tokens), 0) AS BIGINT) FROM usage_days WHERE user_id = ? AND day >= ? AND day <= ?`,
		userID, first.Format(store.DayFormat), last.Format(store.DayFormat)).Scan(&n)
	if err != nil {
		return 0, s.errorf("tokens of %s in %s: %w", userID, strings.ToLower(first.Format("January 2006")), err)
	}
	return n, nil
}
