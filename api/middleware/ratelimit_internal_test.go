package middleware

import (
	"testing"
	"time"
)

// Requests that passed check together each cost a token when they fail,
// and the debt is not forgiven when idle buckets are dropped: guessing
// in parallel buys no extra guesses.
func TestRateLimiterSpendLeavesADebt(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	l := NewLimiter(60, 3) // a token a second, 3 s from empty to full
	l.Now = func() time.Time { return now }
	if ok, _ := l.check("a"); !ok {
		t.Fatal("a new bucket has no token")
	}
	for range 5 { // five requests passed check before any failed
		l.spend("a")
	}
	if ok, wait := l.check("a"); ok || wait != 3*time.Second {
		t.Fatalf("after 5 failures with 3 tokens: ok %v, wait %v; want a 3 s wait", ok, wait)
	}
	if ok, _ := l.check("b"); !ok {
		t.Error("another key's bucket is affected")
	}
	// Long enough idle that dropping full buckets runs, not long
	// enough to have paid the debt back and filled up.
	now = now.Add(3500 * time.Millisecond)
	if ok, _ := l.take("a"); !ok {
		t.Fatal("no token after the debt was paid back")
	}
	if ok, wait := l.take("a"); ok || wait != 500*time.Millisecond {
		t.Errorf("second take: ok %v, wait %v; the debt was forgiven", ok, wait)
	}
}
