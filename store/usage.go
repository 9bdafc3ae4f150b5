package store

import (
	"context"
	"fmt"
	"time"
)

// UsageLog is the record of what users spent: tokens, tool calls and
// runs per user, model and UTC day. It is added to in the transaction
// that ends a run (Runs.FinishRun, Runs.EndRun), never recomputed from
// events: a run's tokens count once whatever the number of times its
// stream ends (each end adds what the run's total grew by since the
// last; an end refused adds nothing), its tool calls once per stretch
// (RunEnd.ToolCalls), and the run itself once, when it reaches a final
// status. The tokens of a day are those of the runs that ended on it.
type UsageLog interface {
	// UsageDays returns a page of the usage of q.UserID (every user's
	// when "") on the days from q.From to q.To, ordered by day, user and
	// model, and the sums of the whole range. Returns ErrInvalid for a
	// day that is not YYYY-MM-DD, a range that ends before it starts or
	// is longer than MaxUsageDays, a negative limit or a cursor that
	// UsageDays did not make.
	UsageDays(ctx context.Context, q UsageQuery) (UsagePage, error)

	// MonthTokens returns the total tokens of the user's runs that
	// ended in the UTC month holding at: what a monthly quota counts.
	MonthTokens(ctx context.Context, userID string, at time.Time) (int64, error)
}

// MaxUsageDays is the longest range UsageDays reads.
const MaxUsageDays = 366

// DayFormat is how a usage day is written: YYYY-MM-DD, in UTC.
const DayFormat = time.DateOnly

// UsageQuery selects a range of days of usage.
type UsageQuery struct {
	// UserID names the user; "" means every user.
	UserID string
	// From and To are the range's first and last days (DayFormat),
	// both included; required.
	From, To string
	Page
}

// Days returns the range's first and last days, or an ErrInvalid error.
func (q UsageQuery) Days() (from, to time.Time, err error) {
	from, err = time.Parse(DayFormat, q.From)
	if err != nil {
		return from, to, fmt.Errorf("%w: from %q is not a day (YYYY-MM-DD)", ErrInvalid, q.From)
	}
	to, err = time.Parse(DayFormat, q.To)
	if err != nil {
		return from, to, fmt.Errorf("%w: to %q is not a day (YYYY-MM-DD)", ErrInvalid, q.To)
	}
	switch days := int(to.Sub(from).Hours()/24) + 1; {
	case days < 1:
		return from, to, fmt.Errorf("%w: to %s is before from %s", ErrInvalid, q.To, q.From)
	case days > MaxUsageDays:
		return from, to, fmt.Errorf("%w: the range holds %d days, more than %d", ErrInvalid, days, MaxUsageDays)
	}
	return from, to, nil
}

// UsageCounts are what a user spent.
type UsageCounts struct {
	InputTokens  int64 `json:"input_tokens"`
	OutputTokens int64 `json:"output_tokens"`
	// TotalTokens are every token counted (thinking and cache ones
	// included): what a quota counts.
	TotalTokens int64 `json:"total_tokens"`
	// ToolCalls are the tool calls the runs made, sub-agents' included.
	ToolCalls int64 `json:"tool_calls"`
	// Runs are the runs that ended with a final status.
	Runs int64 `json:"runs"`
}

// UsageDay is one user's usage of one model on one day.
type UsageDay struct {
	UserID string `json:"user_id"`
	Day    string `json:"day"`
	// Model is the model the run was started with (NewRun.Model).
	Model string `json:"model"`
	UsageCounts
}

// UsagePage is one page of UsageDays.
type UsagePage struct {
	Days []UsageDay `json:"days"`
	// Totals sums the whole range, not only this page.
	Totals     UsageCounts `json:"totals"`
	NextCursor string      `json:"next_cursor"`
}
