package operators

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/failsafe-go/failsafe-go/bulkhead"
	"github.com/failsafe-go/failsafe-go/circuitbreaker"
	"github.com/failsafe-go/failsafe-go/timeout"
)

// Sentinel errors. Callers branch on them with errors.Is, usually through
// [Result.Err].
var (
	// ErrUnknownTool: no source offers a tool by that name.
	ErrUnknownTool = errors.New("operators: unknown tool")
	// ErrInvalidArguments: the arguments do not match the tool's input schema.
	ErrInvalidArguments = errors.New("operators: invalid arguments")
	// ErrDuplicateTool: a registry already holds a tool or operator by that name.
	ErrDuplicateTool = errors.New("operators: duplicate tool name")
	// ErrDuplicateSource: the provider already has a source by that name.
	ErrDuplicateSource = errors.New("operators: duplicate source name")
	// ErrUnavailable: the source's circuit breaker is open or its bulkhead is
	// full; the call was not attempted.
	ErrUnavailable = errors.New("operators: service unavailable")
	// ErrToolPanic: the tool panicked; the panic was recovered.
	ErrToolPanic = errors.New("operators: tool panicked")
	// ErrNoUser: elicitation was requested but no user is attached to the run.
	ErrNoUser = errors.New("operators: no user to ask")
	// ErrElicitationCanceled: the user cancelled (or the request timed out).
	ErrElicitationCanceled = errors.New("operators: elicitation cancelled")
	// ErrAskLater: nobody answered a tool's question while the run could
	// wait, so the run parks with the question pending and the call must
	// end now, its result unused. Once the user answers, a call whose
	// question was Replayable runs again from its start and the same
	// question returns the answer at once; any other call is reported to
	// the model as expired.
	ErrAskLater = errors.New("operators: the question waits for the user beyond this call")
	// ErrNoModel: an operator needs a model and none was configured.
	ErrNoModel = errors.New("operators: no model configured")
	// ErrTimeout: a guarded call ran out of its timeout, which bounds the
	// whole call (see [ResilienceConfig.Timeout]). Errors matching it match
	// context.DeadlineExceeded too.
	ErrTimeout = errors.New("operators: call timed out")
)

// ErrorClass says whether a failed call is worth retrying.
type ErrorClass int

const (
	// ClassPermanent errors fail the same way again: bad input, unknown
	// tool, authorisation. They are never retried and do not trip breakers.
	ClassPermanent ErrorClass = iota
	// ClassTransient errors may pass on retry: network trouble, 5xx,
	// timeouts.
	ClassTransient
	// ClassRateLimited errors are transient and may say when to come back.
	ClassRateLimited
	// ClassCanceled means the caller gave up (context.Canceled); abort.
	ClassCanceled
)

func (c ErrorClass) String() string {
	switch c {
	case ClassTransient:
		return "transient"
	case ClassRateLimited:
		return "rate_limited"
	case ClassCanceled:
		return "canceled"
	default:
		return "permanent"
	}
}

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

// NotSent wraps err as a [NotSentError]; nil stays nil.
func NotSent(err error) error {
	if err == nil {
		return nil
	}
	return &NotSentError{Err: err}
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

// Classify sorts err into an [ErrorClass], checked in this order:
//   - context.Canceled → ClassCanceled (the caller gave up);
//   - a *RateLimitedError in the chain → ClassRateLimited;
//   - anything in the chain with a Retryable() bool method → transient or
//     permanent as it says (the pgconn.SafeToRetry habit);
//   - context.DeadlineExceeded, a failsafe timeout, or a Timeout() bool
//     error that says true (net.Error) → ClassTransient;
//   - [ErrInvalidArguments], [ErrUnknownTool] → ClassPermanent;
//   - anything else → ClassTransient: a remote call that failed for an
//     unknown reason is assumed to be network trouble. Sources that know
//     better wrap with [Permanent].
func Classify(err error) ErrorClass {
	if err == nil {
		return ClassPermanent
	}
	if errors.Is(err, context.Canceled) {
		return ClassCanceled
	}
	var rl *RateLimitedError
	if errors.As(err, &rl) {
		return ClassRateLimited
	}
	var r interface{ Retryable() bool }
	if errors.As(err, &r) {
		if r.Retryable() {
			return ClassTransient
		}
		return ClassPermanent
	}
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, timeout.ErrExceeded) {
		return ClassTransient
	}
	var t interface{ Timeout() bool }
	if errors.As(err, &t) && t.Timeout() {
		return ClassTransient
	}
	if errors.Is(err, ErrInvalidArguments) || errors.Is(err, ErrUnknownTool) {
		return ClassPermanent
	}
	return ClassTransient
}

// retryAfter returns the Retry-After carried by err, or 0.
func retryAfter(err error) time.Duration {
	var rl *RateLimitedError
	if errors.As(err, &rl) {
		return rl.RetryAfter
	}
	return 0
}

// isRejection reports whether err is the guard refusing to make the call
// (open breaker, full bulkhead) rather than the call failing.
func isRejection(err error) bool {
	return errors.Is(err, circuitbreaker.ErrOpen) || errors.Is(err, bulkhead.ErrFull)
}
