package llm

import (
	"context"
	"time"

	"github.com/failsafe-go/failsafe-go"
	"github.com/failsafe-go/failsafe-go/retrypolicy"
)

// Backoff retries work that must succeed sooner or later and has no
// caller waiting on it: reconnecting to a server, taking a database
// session again. Unlike a [Guard], it retries every error, without limit
// and without a breaker, until the work succeeds or its context ends.
// Waits start at Base and double up to Max, each spread by ±20 %, so that
// processes that lost a dependency together do not come back together.
type Backoff struct {
	// Base is the wait after the first failure; Max caps the waits.
	Base, Max time.Duration
	// Retrying, if set, hears each failure that will be retried: the
	// error, the attempts made so far and the wait before the next.
	Retrying func(err error, attempts int, wait time.Duration)
}

// backoffJitter spreads each wait by ±20 %.
const backoffJitter = 0.2

// Run calls fn until it returns nil, waiting between attempts. fn gets a
// context that ends with ctx. Run returns nil, or once ctx has ended,
// fn's last error or ctx's.
func (b Backoff) Run(ctx context.Context, fn func(ctx context.Context) error) error {
	rp := retrypolicy.NewBuilder[any]().
		HandleIf(func(_ any, err error) bool { return err != nil && ctx.Err() == nil }).
		WithMaxRetries(-1).
		WithBackoff(b.Base, max(b.Max, b.Base)).
		WithJitterFactor(backoffJitter).
		OnRetryScheduled(func(e failsafe.ExecutionScheduledEvent[any]) {
			if b.Retrying != nil {
				b.Retrying(e.LastError(), e.Attempts(), e.Delay)
			}
		}).
		Build()
	return failsafe.With(rp).WithContext(ctx).RunWithExecution(func(exec failsafe.Execution[any]) error {
		return fn(exec.Context())
	})
}
