package api_test

import (
	"bytes"
	"math"
	"slices"
	"strings"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// exposition is a scrape of /metrics, parsed as Prometheus parses it.
type exposition map[string]*dto.MetricFamily

// scrape gets /metrics without a key and parses it.
func scrape(t testing.TB, e *env) exposition {
	t.Helper()
	r := send(t, e.ts.Client(), e.request("GET", "/metrics", nil, ""))
	if r.status != 200 {
		t.Fatalf("/metrics: %d %s", r.status, r.body)
	}
	if ct := r.header.Get("Content-Type"); !strings.HasPrefix(ct, "text/plain") {
		t.Errorf("/metrics Content-Type %q", ct)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(bytes.NewReader(r.body))
	if err != nil {
		t.Fatalf("parse /metrics: %v\n%s", err, r.body)
	}
	return fams
}

// series returns the series of family name whose labels include the
// given name, value pairs.
func (x exposition) series(name string, labels ...string) (*dto.Metric, bool) {
	f := x[name]
	if f == nil {
		return nil, false
	}
	for _, m := range f.GetMetric() {
		have := map[string]string{}
		for _, l := range m.GetLabel() {
			have[l.GetName()] = l.GetValue()
		}
		match := true
		for i := 0; i+1 < len(labels); i += 2 {
			if have[labels[i]] != labels[i+1] {
				match = false
			}
		}
		if match {
			return m, true
		}
	}
	return nil, false
}

// value is the value of a counter, gauge or untyped series (0 when absent).
func (x exposition) value(name string, labels ...string) (float64, bool) {
	m, ok := x.series(name, labels...)
	switch {
	case !ok:
		return 0, false
	case m.Counter != nil:
		return m.Counter.GetValue(), true
	case m.Gauge != nil:
		return m.Gauge.GetValue(), true
	default:
		return m.Untyped.GetValue(), true
	}
}

// labelNames are the label names of family name's series.
func (x exposition) labelNames(name string) []string {
	f := x[name]
	if f == nil || len(f.GetMetric()) == 0 {
		return nil
	}
	var out []string
	for _, l := range f.GetMetric()[0].GetLabel() {
		out = append(out, l.GetName())
	}
	slices.Sort(out)
	return out
}

// /metrics has Trellis' metrics under their names, types and labels,
// and the Go runtime's and the process's, so leaks can be watched.
func TestMetricsExposition(t *testing.T) {
	e := newEnv(t, envOptions{})
	s := e.chat(map[string]any{"message": "what is 2+2?"})
	s.all()
	e.srv.Metrics().BreakerChanged("github", "half-open")
	_, _ = e.doAs("wrong", "GET", "/api/v1/tools", nil)
	var m exposition
	waitFor(t, "the run to end", func() bool {
		m = scrape(t, e)
		v, _ := m.value("trellis_runs_active")
		return v == 0
	})

	for _, name := range []string{"go_goroutines", "go_memstats_heap_alloc_bytes", "process_resident_memory_bytes", "process_open_fds"} {
		if v, ok := m.value(name); !ok || v <= 0 {
			t.Errorf("%s = %v (present %v), want > 0", name, v, ok)
		}
	}
	want := []struct {
		name   string
		typ    dto.MetricType
		labels []string
	}{
		{"trellis_runs_total", dto.MetricType_COUNTER, []string{"status"}},
		{"trellis_runs_active", dto.MetricType_GAUGE, nil},
		{"trellis_run_duration_seconds", dto.MetricType_HISTOGRAM, []string{"status"}},
		{"trellis_tokens_total", dto.MetricType_COUNTER, []string{"kind"}},
		{"trellis_tool_calls_total", dto.MetricType_COUNTER, []string{"status", "tool"}},
		{"trellis_breaker_state", dto.MetricType_GAUGE, []string{"source"}},
		{"trellis_sse_streams_open", dto.MetricType_GAUGE, nil},
		{"trellis_http_requests_total", dto.MetricType_COUNTER, []string{"code"}},
		{"trellis_auth_failures_total", dto.MetricType_COUNTER, []string{"reason"}},
	}
	for _, w := range want {
		f := m[w.name]
		if f == nil {
			t.Errorf("%s is missing", w.name)
			continue
		}
		if f.GetType() != w.typ || f.GetHelp() == "" {
			t.Errorf("%s: type %v help %q, want type %v", w.name, f.GetType(), f.GetHelp(), w.typ)
		}
		if got := m.labelNames(w.name); !slices.Equal(got, w.labels) {
			t.Errorf("%s labels %v, want %v", w.name, got, w.labels)
		}
	}

	h, ok := m.series("trellis_run_duration_seconds", "status", "completed")
	if !ok {
		t.Fatal("no run duration of the completed run")
	}
	var bounds []float64
	for _, b := range h.GetHistogram().GetBucket() {
		bounds = append(bounds, b.GetUpperBound())
	}
	if wantBounds := []float64{0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600, math.Inf(1)}; !slices.Equal(bounds, wantBounds) {
		t.Errorf("duration buckets %v, want %v", bounds, wantBounds)
	}
	if h.GetHistogram().GetSampleCount() != 1 || h.GetHistogram().GetSampleSum() <= 0 {
		t.Errorf("duration of one run: %v", h.GetHistogram())
	}
	for _, c := range []struct {
		name   string
		labels []string
		want   float64
	}{
		{"trellis_runs_total", []string{"status", "completed"}, 1},
		{"trellis_tool_calls_total", []string{"tool", "calculator", "status", "success"}, 1},
		{"trellis_breaker_state", []string{"source", "github"}, 1},
		{"trellis_sse_streams_open", nil, 0},
		{"trellis_auth_failures_total", []string{"reason", "invalid"}, 1},
		{"trellis_auth_failures_total", []string{"reason", "rate_limited"}, 0},
		{"trellis_http_requests_total", []string{"code", "401"}, 1},
	} {
		if got, ok := m.value(c.name, c.labels...); !ok || got != c.want {
			t.Errorf("%s%v = %v (present %v), want %v", c.name, c.labels, got, ok, c.want)
		}
	}
	for _, kind := range []string{"input", "output", "thinking", "cache_read", "cache_write"} {
		if _, ok := m.value("trellis_tokens_total", "kind", kind); !ok {
			t.Errorf("trellis_tokens_total{kind=%q} is missing", kind)
		}
	}
	if v, _ := m.value("trellis_tokens_total", "kind", "output"); v <= 0 {
		t.Error("no output tokens counted")
	}
}
