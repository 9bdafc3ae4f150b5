package llm

import (
	"math"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"
)

// FuzzParseRetryAfter feeds the Retry-After (and Retry-After-Ms) a
// provider, or whatever proxy stands before it, answers with: the wait
// read is never negative; delay-seconds give that many seconds, or the
// longest wait when they are too many to count, so that the guard gives
// up rather than retrying at once; an HTTP date gives the time until
// it; anything else no wait.
func FuzzParseRetryAfter(f *testing.F) {
	for _, seed := range []string{
		"7", "0", "-3", "0.05", " 120 ", "", "soon",
		"Wed, 21 Oct 2015 07:28:00 GMT", "Sun, 06 Nov 1994 08:49:37 GMT", "Fri, 31 Dec 9999 23:59:59 GMT",
		"1e10", "9223372036", "9223372037", "1e300", "Inf", "-Inf", "NaN", "0x1p40", "1e-12",
	} {
		f.Add(seed)
	}
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	f.Fuzz(func(t *testing.T, v string) {
		d := parseRetryAfter(v, now)
		if d < 0 {
			t.Fatalf("parseRetryAfter(%q) = %s, negative", v, d)
		}
		s := strings.TrimSpace(v)
		if secs, err := strconv.ParseFloat(s, 64); err == nil {
			switch ns := secs * float64(time.Second); {
			case math.IsNaN(secs) || secs <= 0:
				if d != 0 {
					t.Fatalf("parseRetryAfter(%q) = %s, want 0", v, d)
				}
			case ns >= math.MaxInt64:
				if d != math.MaxInt64 {
					t.Fatalf("parseRetryAfter(%q) = %s, want the longest wait", v, d)
				}
			case d != time.Duration(ns):
				t.Fatalf("parseRetryAfter(%q) = %s, want %s", v, d, time.Duration(ns))
			}
		} else if at, err := http.ParseTime(s); err == nil {
			if want := max(at.Sub(now), 0); d != want {
				t.Fatalf("parseRetryAfter(%q) = %s, want %s", v, d, want)
			}
		} else if d != 0 {
			t.Fatalf("parseRetryAfter(%q) = %s, but it is neither seconds nor a date", v, d)
		}
		h := http.Header{"Retry-After-Ms": {v}, "Retry-After": {v}}
		if d := retryAfterFrom(h); d < 0 {
			t.Fatalf("retryAfterFrom(%q) = %s, negative", v, d)
		}
	})
}
