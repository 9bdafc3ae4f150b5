package metrics_test

import (
	"log/slog"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/trellis-ai/trellis/api/metrics"
	"github.com/trellis-ai/trellis/api/middleware"
)

// A new collector serves the series rates are taken over at zero, from
// the first scrape: every token kind, every reason Authenticate refuses
// for, and both reasons a cognitive context fails for.
func TestSeriesExistFromTheStart(t *testing.T) {
	m := metrics.New()
	w := httptest.NewRecorder()
	m.Handler(slog.New(slog.DiscardHandler)).ServeHTTP(w, httptest.NewRequest("GET", "/metrics", nil))
	body := w.Body.String()
	var want []string
	for _, k := range []string{"input", "output", "thinking", "cache_read", "cache_write"} {
		want = append(want, `trellis_tokens_total{kind="`+k+`"} 0`)
	}
	for _, r := range []string{middleware.AuthMissing, middleware.AuthInvalid, middleware.AuthRateLimited} {
		want = append(want, `trellis_auth_failures_total{reason="`+r+`"} 0`)
	}
	for _, r := range []string{"timeout", "error"} {
		want = append(want, `trellis_cognition_context_failures_total{reason="`+r+`"} 0`)
	}
	for _, line := range want {
		if !strings.Contains(body, line+"\n") {
			t.Errorf("no %s in\n%s", line, body)
		}
	}
}
