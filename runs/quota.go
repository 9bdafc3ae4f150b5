package runs

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/trellis-ai/trellis/events"
	"github.com/trellis-ai/trellis/nodes"
)

// QuotaError refuses a run of a user whose monthly token quota
// (Config.MonthlyTokenQuota) is used up; it matches ErrQuotaExceeded.
type QuotaError struct {
	// Quota is the user's tokens a month, Used what this month's ended
	// runs spent.
	Quota, Used int64
	// Resets is when the next month starts (UTC), and the quota with it.
	Resets time.Time
}

// ErrQuotaExceeded matches a *QuotaError.
var ErrQuotaExceeded = errors.New("runs: the monthly token quota is used up")

func (e *QuotaError) Error() string {
	return fmt.Sprintf("%v: %d of %d tokens used; it resets at %s", ErrQuotaExceeded, e.Used, e.Quota, e.Resets.Format(time.RFC3339))
}

// Is makes a *QuotaError match ErrQuotaExceeded.
func (e *QuotaError) Is(target error) bool { return target == ErrQuotaExceeded }

// quota refuses a run of a user whose monthly quota is used up, and
// otherwise spends the rest of it as the run's token budget (tightening
// in's), so that a run that reaches it stops as a run over its budget
// does. The month is counted from the usage record, which holds the runs
// that ended: runs of the user going at once may together spend beyond
// the quota, each no more than what was left when it started.
func (m *Service) quota(ctx context.Context, userID string, in *nodes.Input) error {
	most := m.cfg.MonthlyTokenQuota
	if most <= 0 {
		return nil
	}
	now := time.Now().UTC()
	used, err := m.st.MonthTokens(ctx, userID, now)
	if err != nil {
		return fmt.Errorf("runs: monthly quota of %s: %w", userID, err)
	}
	if used >= most {
		return &QuotaError{Quota: most, Used: used, Resets: time.Date(now.Year(), now.Month()+1, 1, 0, 0, 0, 0, time.UTC)}
	}
	left := int(min(most-used, int64(^uint(0)>>1)))
	b := events.Budget{}
	if in.Budget != nil {
		b = *in.Budget
	}
	if b.Tokens <= 0 || left < b.Tokens {
		b.Tokens = left
	}
	in.Budget = &b
	return nil
}

// MonthUsage returns what the user's runs spent of their monthly quota
// this month, and the quota (0: none).
func (m *Service) MonthUsage(ctx context.Context, userID string) (used, quota int64, err error) {
	used, err = m.st.MonthTokens(ctx, userID, time.Now())
	if err != nil {
		return 0, 0, fmt.Errorf("runs: month usage of %s: %w", userID, err)
	}
	return used, m.cfg.MonthlyTokenQuota, nil
}

// modelOf names the model a run asked for (an alias or id; "" for the
// default) as the usage record counts it: its id in the registry.
func (m *Service) modelOf(asked string) string {
	if m.cfg.Models == nil {
		return asked
	}
	if mc, err := m.cfg.Models.Resolve(asked); err == nil {
		return mc.ID
	}
	return asked
}
