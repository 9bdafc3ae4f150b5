package api

import (
	"math"
	"net/http"
	"sync"
	"time"
)

// rateLimiter is a token bucket per key (a user, a client address):
// Burst tokens, refilled at RatePerMinute. Buckets full again are dropped
// as others are touched, so the map stays small. A nil rateLimiter
// limits nothing.
type rateLimiter struct {
	rate  float64 // tokens per second
	burst float64
	now   func() time.Time

	mu      sync.Mutex
	buckets map[string]*bucket
	swept   time.Time
}

type bucket struct {
	tokens float64 // below 0 after spend: a debt refilling pays first
	at     time.Time
}

func newRateLimiter(perMinute, burst int) *rateLimiter {
	if perMinute < 0 {
		return nil
	}
	return &rateLimiter{rate: float64(perMinute) / 60, burst: float64(max(burst, 1)), now: time.Now, buckets: map[string]*bucket{}}
}

// take spends a token of key's bucket; when there is none it returns how
// long until there is.
func (l *rateLimiter) take(key string) (ok bool, wait time.Duration) {
	if l == nil {
		return true, 0
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	b := l.fill(key)
	if b.tokens >= 1 {
		b.tokens--
		return true, 0
	}
	return false, l.wait(b)
}

// check reports whether key's bucket holds a token, without spending it;
// when it holds none it returns how long until it does.
func (l *rateLimiter) check(key string) (ok bool, wait time.Duration) {
	if l == nil {
		return true, 0
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	b := l.fill(key)
	if b.tokens >= 1 {
		return true, 0
	}
	return false, l.wait(b)
}

// spend takes a token from key's bucket even when it holds none. Several
// requests may pass check before any of them spends; each still costs a
// token, paid back by refilling before the next check passes.
func (l *rateLimiter) spend(key string) {
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
func (l *rateLimiter) fill(key string) *bucket {
	now := l.now()
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
func (l *rateLimiter) wait(b *bucket) time.Duration {
	return time.Duration((1 - b.tokens) / l.rate * float64(time.Second))
}

// retryAfter is Retry-After's whole seconds for wait, rounded up.
func retryAfter(wait time.Duration) int { return int(math.Ceil(wait.Seconds())) }

// limitRate is the middleware: 429 with Retry-After (whole seconds,
// rounded up) once the user's bucket is empty.
func (s *Server) limitRate(next http.Handler) http.Handler {
	if s.limiter == nil {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if ok, wait := s.limiter.take(userOf(r)); !ok {
			e := errorf(http.StatusTooManyRequests, "rate_limited", "too many requests; retry after the time Retry-After gives")
			e.RetryAfter = retryAfter(wait)
			s.writeError(w, r, e)
			return
		}
		next.ServeHTTP(w, r)
	})
}
