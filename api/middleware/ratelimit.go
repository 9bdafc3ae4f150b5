package middleware

import (
	"math"
	"net/http"
	"sync"
	"time"

	"github.com/trellis-ai/trellis/api/httperr"
	"github.com/trellis-ai/trellis/runs"
)

// Limiter is a token bucket per key (a user, a client address): burst
// tokens, refilled at perMinute. Buckets full again are dropped as
// others are touched, so the map stays small. A nil Limiter limits
// nothing.
type Limiter struct {
	// Now is the time buckets fill by; set it before the limiter is
	// used (tests move time instead of waiting). NewLimiter sets
	// time.Now.
	Now func() time.Time

	rate  float64 // tokens per second
	burst float64

	mu      sync.Mutex
	buckets map[string]*bucket
	swept   time.Time
}

type bucket struct {
	tokens float64 // below 0 after spend: a debt refilling pays first
	at     time.Time
}

// NewLimiter returns a limiter of burst tokens per key refilled at
// perMinute, or nil (no limit) for a negative perMinute.
func NewLimiter(perMinute, burst int) *Limiter {
	if perMinute < 0 {
		return nil
	}
	return &Limiter{rate: float64(perMinute) / 60, burst: float64(max(burst, 1)), Now: time.Now, buckets: map[string]*bucket{}}
}

// take spends a token of key's bucket; when there is none it returns how
// long until there is.
func (l *Limiter) take(key string) (ok bool, wait time.Duration) { return l.look(key, true) }

// check reports whether key's bucket holds a token, without spending it;
// when it holds none it returns how long until it does.
func (l *Limiter) check(key string) (ok bool, wait time.Duration) { return l.look(key, false) }

// look is take (spending) and check.
func (l *Limiter) look(key string, spending bool) (ok bool, wait time.Duration) {
	if l == nil {
		return true, 0
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	b := l.fill(key)
	if b.tokens >= 1 {
		if spending {
			b.tokens--
		}
		return true, 0
	}
	return false, l.wait(b)
}

// spend takes a token from key's bucket even when it holds none. Several
// requests may pass check before any of them spends; each still costs a
// token, paid back by refilling before the next check passes.
func (l *Limiter) spend(key string) {
	if l == nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.fill(key).tokens--
}

// fill returns key's bucket, refilled up to now, and drops the buckets
// that are full again (as good as none) at most once per time a bucket
// takes to fill from empty. l.mu must be held.
func (l *Limiter) fill(key string) *bucket {
	now := l.Now()
	if now.Sub(l.swept) > time.Duration(l.burst/l.rate*float64(time.Second)) {
		for k, b := range l.buckets {
			if b.tokens+now.Sub(b.at).Seconds()*l.rate >= l.burst {
				delete(l.buckets, k)
			}
		}
		l.swept = now
	}
	b := l.buckets[key]
	if b == nil {
		b = &bucket{tokens: l.burst, at: now}
		l.buckets[key] = b
	}
	b.tokens = math.Min(l.burst, b.tokens+now.Sub(b.at).Seconds()*l.rate)
	b.at = now
	return b
}

// wait is how long until b holds a whole token.
func (l *Limiter) wait(b *bucket) time.Duration {
	return time.Duration((1 - b.tokens) / l.rate * float64(time.Second))
}

// retryAfter is Retry-After's whole seconds for wait, rounded up.
func retryAfter(wait time.Duration) int { return int(math.Ceil(wait.Seconds())) }

// LimitRate answers 429 with Retry-After (whole seconds, rounded up)
// once the bucket in l of the request's user (runs.UserFrom, which
// Authenticate names) is empty. A nil l limits nothing.
func LimitRate(l *Limiter) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler { return limitRate(l, next) }
}

func limitRate(l *Limiter, next http.Handler) http.Handler {
	if l == nil {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if ok, wait := l.take(runs.UserFrom(r.Context())); !ok {
			e := httperr.New(http.StatusTooManyRequests, "rate_limited", "too many requests; retry after the time Retry-After gives")
			e.RetryAfter = retryAfter(wait)
			httperr.Write(w, e)
			return
		}
		next.ServeHTTP(w, r)
	})
}
