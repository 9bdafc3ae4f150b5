package llm

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/failsafe-go/failsafe-go/bulkhead"
	"github.com/failsafe-go/failsafe-go/circuitbreaker"
)

// TransientError marks Err as worth retrying.
type TransientError struct{ Err error }

func (e *TransientError) Error() string   { return e.Err.Error() }
func (e *TransientError) Unwrap() error   { return e.Err }
func (e *TransientError) Retryable() bool { return true }

// PermanentError marks Err as not worth retrying.
type PermanentError struct{ Err error }

func (e *PermanentError) Error() string   { return e.Err.Error() }
func (e *PermanentError) Unwrap() error   { return e.Err }
func (e *PermanentError) Retryable() bool { return false }

// RateLimitedError marks Err as a rate limit. RetryAfter, when positive, is
// the server's Retry-After and becomes the retry delay.
type RateLimitedError struct {
	Err        error
	RetryAfter time.Duration
}

func (e *RateLimitedError) Error() string {
	if e.RetryAfter > 0 {
		return fmt.Sprintf("%v (retry after %s)", e.Err, e.RetryAfter)
	}
	return e.Err.Error()
}
func (e *RateLimitedError) Unwrap() error   { return e.Err }
func (e *RateLimitedError) Retryable() bool { return true }

// NotSentError marks Err as a failure that happened before the request
// could reach the remote side (not connected, connection refused): the
// remote side did nothing, so retrying cannot repeat a side effect. It is
// transient.
type NotSentError struct{ Err error }

func (e *NotSentError) Error() string     { return e.Err.Error() }
func (e *NotSentError) Unwrap() error     { return e.Err }
func (e *NotSentError) Retryable() bool   { return true }
func (e *NotSentError) SafeToRetry() bool { return true }

// timeoutError is a guarded call whose timeout ran out; it is the cause of
// the call's context then. Transient, so a hung dependency trips its
// breaker.
type timeoutError struct{ d time.Duration }

func (e *timeoutError) Error() string   { return "no answer within " + e.d.String() }
func (e *timeoutError) Retryable() bool { return true }
func (e *timeoutError) Is(target error) bool {
	return target == ErrTimeout || target == context.DeadlineExceeded
}

// Transient wraps err as a [TransientError]; nil stays nil.
func Transient(err error) error {
	if err == nil {
		return nil
	}
	return &TransientError{Err: err}
}

// Permanent wraps err as a [PermanentError]; nil stays nil.
func Permanent(err error) error {
	if err == nil {
		return nil
	}
	return &PermanentError{Err: err}
}

// RateLimited wraps err as a [RateLimitedError]; nil stays nil.
func RateLimited(err error, retryAfter time.Duration) error {
	if err == nil {
		return nil
	}
	return &RateLimitedError{Err: err, RetryAfter: retryAfter}
}

// NotSent wraps err as a [NotSentError]; nil stays nil.
func NotSent(err error) error {
	if err == nil {
		return nil
	}
	return &NotSentError{Err: err}
}

// KindOf sorts err into a [Kind], checked in this order:
//   - nil → KindPermanent;
//   - an [*Error] in the chain (a model call, already classified by the
//     provider wrapper) → its Kind;
//   - context.Canceled → KindCanceled (the caller gave up);
//   - a [*RateLimitedError] in the chain → KindRateLimited;
//   - anything in the chain with a Retryable() bool method → transient or
//     permanent as it says (the pgconn.SafeToRetry habit; [Transient],
//     [Permanent] and [NotSent] mark errors so);
//   - anything else → KindTransient: timeouts (context.DeadlineExceeded,
//     a failsafe timeout, a net.Error), and any remote call that failed
//     for an unknown reason, which is assumed to be network trouble.
//     Sources that know better mark their errors.
func KindOf(err error) Kind {
	if err == nil {
		return KindPermanent
	}
	var e *Error
	if errors.As(err, &e) {
		return e.Kind
	}
	if errors.Is(err, context.Canceled) {
		return KindCanceled
	}
	var rl *RateLimitedError
	if errors.As(err, &rl) {
		return KindRateLimited
	}
	var r interface{ Retryable() bool }
	if errors.As(err, &r) {
		if r.Retryable() {
			return KindTransient
		}
		return KindPermanent
	}
	return KindTransient
}

// SafeToRetry reports whether err says the request certainly never
// reached the remote side: something in its chain has a SafeToRetry() bool
// method that says true (the pgconn.SafeToRetry habit; see [NotSent]), or
// a guard refused the call (open breaker, full bulkhead). Any other
// failure may have reached it — a timeout after sending, a connection lost
// mid-call, a 5xx — and is retried only for work that is safe to repeat
// (see [Guard.DoAtMostOnce]).
func SafeToRetry(err error) bool {
	if err == nil {
		return false
	}
	var s interface{ SafeToRetry() bool }
	if errors.As(err, &s) {
		return s.SafeToRetry()
	}
	return isRejection(err)
}

// retryAfter returns the Retry-After carried by err, or 0.
func retryAfter(err error) time.Duration {
	var e *Error
	if errors.As(err, &e) {
		return e.RetryAfter
	}
	var rl *RateLimitedError
	if errors.As(err, &rl) {
		return rl.RetryAfter
	}
	return 0
}

// isRejection reports whether err is a guard refusing to make the call
// (open breaker, full bulkhead) rather than the call failing.
func isRejection(err error) bool {
	return errors.Is(err, circuitbreaker.ErrOpen) || errors.Is(err, bulkhead.ErrFull)
}
