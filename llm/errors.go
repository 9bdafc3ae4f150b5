package llm

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/failsafe-go/failsafe-go/circuitbreaker"
	"github.com/failsafe-go/failsafe-go/timeout"
)

// Sentinel errors. Match them with errors.Is.
var (
	// ErrUnknownModel: no model has that id or alias.
	ErrUnknownModel = errors.New("llm: unknown model")
	// ErrMissingAPIKey: the provider needs an API key and its env var is empty.
	ErrMissingAPIKey = errors.New("llm: missing API key")
	// ErrUnknownProvider: a ModelConfig names a provider this package cannot build.
	ErrUnknownProvider = errors.New("llm: unknown provider")
	// ErrInvalidFallback: a model's fallbacks name the model itself or
	// form a cycle.
	ErrInvalidFallback = errors.New("llm: invalid fallback")
	// ErrCircuitOpen: the provider's circuit breaker is open; the call was not made.
	ErrCircuitOpen = errors.New("llm: circuit breaker open")
	// ErrNoScriptMatch: a scripted model got a call that no remaining step matches.
	ErrNoScriptMatch = errors.New("llm: no script step matches")
	// ErrInvalidScript: a script file does not parse or fails validation.
	ErrInvalidScript = errors.New("llm: invalid script")
	// ErrUnavailable: a [Guard] refused the call — its circuit breaker is
	// open or its bulkhead is full; the call was not attempted. Its text
	// has no package prefix: callers of either kind of dependency say
	// whose service it is.
	ErrUnavailable = errors.New("service unavailable")
	// ErrTimeout: a guarded call ran out of its timeout, which bounds the
	// whole call (see [ResilienceConfig.Timeout]). Errors matching it match
	// context.DeadlineExceeded too.
	ErrTimeout = errors.New("llm: call timed out")
)

// Kind says what a caller may do about a failed remote call — a model's
// or a tool source's. It is the one classification of remote errors; see
// [KindOf].
type Kind int

const (
	// KindPermanent: retrying will not help (4xx, invalid request, unknown
	// tool, a model call whose caller gave up). Never retried; does not
	// trip breakers.
	KindPermanent Kind = iota
	// KindTransient: 5xx, timeouts, connection errors; worth retrying.
	KindTransient
	// KindRateLimited: 429; transient, retried after its Retry-After when
	// it carries one.
	KindRateLimited
	// KindCanceled: the caller gave up (context.Canceled); abort.
	KindCanceled
)

// String returns "permanent", "transient", "rate_limited" or "canceled".
func (k Kind) String() string {
	switch k {
	case KindTransient:
		return "transient"
	case KindRateLimited:
		return "rate_limited"
	case KindCanceled:
		return "canceled"
	default:
		return "permanent"
	}
}

// ParseKind reads the kind of a scripted model error: the inverse of
// Kind.String for every kind but canceled, which no model call returns.
func ParseKind(s string) (Kind, error) {
	switch s {
	case "transient":
		return KindTransient, nil
	case "rate_limited":
		return KindRateLimited, nil
	case "permanent":
		return KindPermanent, nil
	}
	return KindPermanent, fmt.Errorf("llm: unknown error kind %q (want transient, rate_limited or permanent)", s)
}

// Error is a classified model-call failure. Every error returned by a
// resilient model (see WithResilience) is, or wraps, an *Error. Tool
// sources mark their errors with [Transient], [Permanent], [RateLimited]
// and [NotSent] instead.
type Error struct {
	Kind     Kind
	Provider string // the name given to WithResilience, or "" when unknown
	// StatusCode is the HTTP status the provider answered with, 0 if none.
	StatusCode int
	// RetryAfter is the provider's Retry-After, 0 if it sent none.
	RetryAfter time.Duration
	Err        error
}

// Error describes the failure with its provider, kind and status.
func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString("llm")
	if e.Provider != "" {
		b.WriteString(" ")
		b.WriteString(e.Provider)
	}
	b.WriteString(": ")
	b.WriteString(e.Kind.String())
	if e.StatusCode != 0 {
		fmt.Fprintf(&b, " (HTTP %d)", e.StatusCode)
	}
	if e.RetryAfter > 0 {
		fmt.Fprintf(&b, " retry after %s", e.RetryAfter)
	}
	if e.Err != nil {
		b.WriteString(": ")
		b.WriteString(e.Err.Error())
	}
	return b.String()
}

// Unwrap returns the provider's original error.
func (e *Error) Unwrap() error { return e.Err }

// Retryable reports whether the call may succeed if made again.
func (e *Error) Retryable() bool { return e.Kind != KindPermanent }

var statusInMessage = regexp.MustCompile(`status code:? (\d{3})`)

// providerError marks any error from a model provider's call as an *Error,
// as a tool source marks its own: it knows langchaingo's habits, which
// [KindOf] does not. rec, when not nil, holds what the HTTP transport saw
// for this attempt; it is the most reliable source because langchaingo
// reports HTTP failures as plain strings. An unrecognised failure is
// permanent: a model call that fails for no known reason (a request the
// provider's client refuses to build) fails the same way again.
func providerError(err error, rec *httpRecord) *Error {
	var e *Error
	if errors.As(err, &e) {
		return e
	}
	out := &Error{Kind: KindPermanent, Err: err}
	if rec != nil {
		if status, after := rec.get(); status != 0 {
			out.StatusCode, out.RetryAfter = status, after
			out.Kind = kindForStatus(status)
			return out
		}
	}
	// A model that marks its errors (see [Transient], [RateLimited]) is
	// taken at its word, as KindOf would.
	var rl *RateLimitedError
	if errors.As(err, &rl) {
		out.Kind, out.RetryAfter = KindRateLimited, rl.RetryAfter
		return out
	}
	var marked interface{ Retryable() bool }
	if errors.As(err, &marked) {
		if marked.Retryable() {
			out.Kind = KindTransient
		}
		return out
	}
	switch {
	case errors.Is(err, context.Canceled):
		return out
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, timeout.ErrExceeded):
		out.Kind = KindTransient
		return out
	case errors.Is(err, circuitbreaker.ErrOpen):
		out.Kind = KindTransient
		return out
	}
	var netErr net.Error
	if errors.As(err, &netErr) {
		out.Kind = KindTransient
		return out
	}
	msg := err.Error()
	if m := statusInMessage.FindStringSubmatch(msg); m != nil {
		status, _ := strconv.Atoi(m[1])
		out.StatusCode = status
		out.Kind = kindForStatus(status)
		return out
	}
	// An error event in an Anthropic stream (HTTP 200, so no status) comes
	// back as the event printed: its error type says what it would have
	// been as a status (overloaded_error is a 529).
	if strings.Contains(msg, "received error event") {
		switch {
		case strings.Contains(msg, "type:rate_limit_error"):
			out.Kind = KindRateLimited
		case strings.Contains(msg, "type:overloaded_error"), strings.Contains(msg, "type:api_error"):
			out.Kind = KindTransient
		}
		return out
	}
	// langchaingo's openai client replaces transport errors with fixed strings
	// (sanitizeHTTPError), so the last resort is to recognise those.
	lower := strings.ToLower(msg)
	for _, s := range []string{"request timeout", "network error", "connection refused", "connection reset",
		"unexpected eof", "error reading streaming response", "broken pipe", "no such host", "tls handshake timeout"} {
		if strings.Contains(lower, s) {
			out.Kind = KindTransient
			return out
		}
	}
	return out
}

func kindForStatus(status int) Kind {
	switch {
	case status == http.StatusTooManyRequests:
		return KindRateLimited
	case status == http.StatusRequestTimeout, status == 529: // 529: Anthropic "overloaded"
		return KindTransient
	case status >= 500 && status != http.StatusNotImplemented:
		return KindTransient
	default:
		return KindPermanent
	}
}

// parseRetryAfter reads a Retry-After header: delay-seconds or an HTTP date.
// Seconds too many for a time.Duration are the longest wait it holds (a
// float converted out of an int64's range would be negative, which reads
// as no wait at all); NaN is no wait.
func parseRetryAfter(v string, now time.Time) time.Duration {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0
	}
	if secs, err := strconv.ParseFloat(v, 64); err == nil {
		switch ns := secs * float64(time.Second); {
		case math.IsNaN(secs) || secs <= 0:
			return 0
		case ns >= math.MaxInt64:
			return math.MaxInt64
		default:
			return time.Duration(ns)
		}
	}
	if t, err := http.ParseTime(v); err == nil {
		if d := t.Sub(now); d > 0 {
			return d
		}
	}
	return 0
}
