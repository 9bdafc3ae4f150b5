package me

import (
	"errors"
	"net/http"
	"net/url"
	"slices"
	"testing"
	"time"

	"github.com/trellis-ai/trellis/api/httperr"
	"github.com/trellis-ai/trellis/store"
)

// FuzzUsageQuery feeds the query of GET /api/v1/admin/usage: it is
// refused 400 invalid_parameter, or it names no parameter but the known
// ones and gives a range of days written YYYY-MM-DD, first before last,
// at most store.MaxUsageDays long, with the limit 0 or more and the
// cursor as sent.
func FuzzUsageQuery(f *testing.F) {
	for _, seed := range []string{
		"", "from=2026-01-01&to=2026-01-31", "from=2026-01-31&to=2026-01-01", "from=2025-01-01&to=2025-12-31",
		"from=2024-01-01&to=2024-12-31", "from=2024-01-01&to=2025-01-01", "from=2026-02-30", "from=2026-1-5", "to=0001-01-01",
		"from=0001-01-01&to=9999-12-31", "from=9999-12-31&to=0001-01-01", "limit=10&cursor=abc", "limit=-1", "limit=1e3",
		"limit=99999999999999999999", "user_id=alice&user_id=bob", "bogus=1", "from=%zz", "from=2026-01-01T00:00:00Z",
		"from=+2026-01-01", "from=2026-01-01%00",
	} {
		f.Add(seed)
	}
	known := []string{"user_id", "from", "to", "limit", "cursor"}
	f.Fuzz(func(t *testing.T, raw string) {
		r := &http.Request{Method: http.MethodGet, URL: &url.URL{Path: "/api/v1/admin/usage", RawQuery: raw}}
		q, err := usageQuery(r, known...)
		var p *httperr.Problem
		if err != nil {
			if !errors.As(err, &p) || p.Status != http.StatusBadRequest || p.Code != "invalid_parameter" {
				t.Fatalf("usageQuery(%q) = %v, want a 400 invalid_parameter", raw, err)
			}
			return
		}
		v := r.URL.Query()
		for name := range v {
			if !slices.Contains(known, name) {
				t.Fatalf("usageQuery(%q) took parameter %q", raw, name)
			}
		}
		from, err1 := time.Parse(store.DayFormat, q.From)
		to, err2 := time.Parse(store.DayFormat, q.To)
		switch {
		case err1 != nil || err2 != nil || from.Format(store.DayFormat) != q.From || to.Format(store.DayFormat) != q.To:
			t.Fatalf("usageQuery(%q) = %q to %q, not days", raw, q.From, q.To)
		case (v.Get("from") != "" && q.From != v.Get("from")) || (v.Get("to") != "" && q.To != v.Get("to")):
			t.Fatalf("usageQuery(%q) = %q to %q, not the days asked for", raw, q.From, q.To)
		case to.Before(from) || to.Sub(from) >= store.MaxUsageDays*24*time.Hour:
			t.Fatalf("usageQuery(%q) = %q to %q, not 1 to %d days", raw, q.From, q.To, store.MaxUsageDays)
		case q.Limit < 0 || q.Cursor != v.Get("cursor"):
			t.Fatalf("usageQuery(%q) = limit %d, cursor %q", raw, q.Limit, q.Cursor)
		}
	})
}
