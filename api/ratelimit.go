package api

import (
	"math"
	"net/http"
	"sync"
	"time"
)

// rateLimiter is a token bucket per user: Burst tokens, refilled at
// RatePerMinute. Buckets of users idle long enough to be full again are
// dropped as others are touched, so the map stays small.
type rateLimiter struct {
	rate  float64 // tokens per second
	burst float64
	now   func() time.Time

	mu      sync.Mutex
	buckets map[string]*bucket
	swept   time.Time
}

type bucket struct {
	tokens float64
	at     time.Time
}

func newRateLimiter(perMinute, burst int) *rateLimiter {
	if perMinute < 0 {
		return nil
	}
	return &rateLimiter{rate: float64(perMinute) / 60, burst: float64(max(burst, 1)), now: time.Now, buckets: map[string]*bucket{}}
}

// take spends a token of user's bucket; when there is none it returns how
// long until there is.
func (l *rateLimiter) take(user string) (ok bool, wait time.Duration) {
	now := l.now()
	l.mu.Lock()
	defer l.mu.Unlock()
	full := time.Duration(l.burst / l.rate * float64(time.Second))
	if now.Sub(l.swept) > full {
		for u, b := range l.buckets {
			if now.Sub(b.at) > full {
				delete(l.buckets, u)
			}
		}
		l.swept = now
	}
	b := l.buckets[user]
	if b == nil {
		b = &bucket{tokens: l.burst, at: now}
		l.buckets[user] = b
	}
	b.tokens = math.Min(l.burst, b.tokens+now.Sub(b.at).Seconds()*l.rate)
	b.at = now
	if b.tokens >= 1 {
		b.tokens--
		return true, 0
	}
	return false, time.Duration((1 - b.tokens) / l.rate * float64(time.Second))
}

// limitRate is the middleware: 429 with Retry-After (whole seconds,
// rounded up) once the user's bucket is empty.
func (s *Server) limitRate(next http.Handler) http.Handler {
	if s.limiter == nil {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if ok, wait := s.limiter.take(userOf(r)); !ok {
			e := errorf(http.StatusTooManyRequests, "rate_limited", "too many requests; retry after the time Retry-After gives")
			e.RetryAfter = int(math.Ceil(wait.Seconds()))
			s.writeError(w, r, e)
			return
		}
		next.ServeHTTP(w, r)
	})
}
