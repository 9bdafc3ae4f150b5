package api

import (
	"bufio"
	"fmt"
	"io"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/trellis-ai/trellis/llm"
	"github.com/trellis-ai/trellis/operators"
)

// Metrics collects what GET /metrics serves, in Prometheus' text format:
//
//	trellis_runs_total{status}                 run segments ended, by how
//	trellis_runs_active                        runs live in this process
//	trellis_run_duration_seconds{status}       histogram of run segments
//	trellis_tokens_total{kind}                 model tokens, by kind
//	trellis_tool_calls_total{tool,status}      tool calls, success or error
//	trellis_breaker_state{source}              0 closed, 1 half-open, 2 open
//	trellis_sse_streams_open                   SSE responses being written
//	trellis_http_requests_total{code}          answered requests, by status
//
// A run segment is a run from its start, or from its resumption, to its
// next terminal event. Make the collector before the tool provider and
// give it BreakerChanged as operators.ProviderConfig.OnBreakerChange.
// Safe for concurrent use; the zero value is not usable, call NewMetrics.
type Metrics struct {
	activeRuns  atomic.Int64
	openStreams atomic.Int64

	mu       sync.Mutex
	runs     map[string]uint64
	duration map[string]*histogram
	tokens   map[string]uint64
	tools    map[toolKey]uint64
	breakers map[string]operators.BreakerState
	requests map[int]uint64
}

type toolKey struct{ tool, status string }

// durationBuckets are the upper bounds of run_duration_seconds, in seconds.
var durationBuckets = []float64{0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600}

type histogram struct {
	counts []uint64 // per bucket, not cumulative; the last is +Inf
	sum    float64
	n      uint64
}

// NewMetrics returns an empty collector.
func NewMetrics() *Metrics {
	return &Metrics{
		runs: map[string]uint64{}, duration: map[string]*histogram{}, tokens: map[string]uint64{},
		tools: map[toolKey]uint64{}, breakers: map[string]operators.BreakerState{}, requests: map[int]uint64{},
	}
}

// BreakerChanged records a tool source's breaker state; it is an
// operators.BreakerListener.
func (m *Metrics) BreakerChanged(source string, state operators.BreakerState) {
	m.mu.Lock()
	m.breakers[source] = state
	m.mu.Unlock()
}

func (m *Metrics) runEnded(status string, d time.Duration) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.runs[status]++
	h := m.duration[status]
	if h == nil {
		h = &histogram{counts: make([]uint64, len(durationBuckets)+1)}
		m.duration[status] = h
	}
	s := d.Seconds()
	i, _ := slices.BinarySearch(durationBuckets, s)
	h.counts[i]++
	h.sum += s
	h.n++
}

func (m *Metrics) addUsage(u llm.TokenUsage) {
	if u == (llm.TokenUsage{}) {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.tokens["input"] += uint64(max(u.InputTokens, 0))
	m.tokens["output"] += uint64(max(u.OutputTokens, 0))
	m.tokens["thinking"] += uint64(max(u.ThinkingTokens, 0))
	m.tokens["cache_read"] += uint64(max(u.CacheReadTokens, 0))
	m.tokens["cache_write"] += uint64(max(u.CacheWriteTokens, 0))
}

func (m *Metrics) toolCall(tool, status string) {
	m.mu.Lock()
	m.tools[toolKey{tool, status}]++
	m.mu.Unlock()
}

func (m *Metrics) request(code int) {
	m.mu.Lock()
	m.requests[code]++
	m.mu.Unlock()
}

// WriteTo writes every metric in Prometheus' text exposition format,
// series sorted by label.
func (m *Metrics) WriteTo(w io.Writer) (int64, error) {
	cw := &countingWriter{w: bufio.NewWriter(w)}
	m.mu.Lock()
	m.write(cw)
	m.mu.Unlock()
	if err := cw.w.Flush(); err != nil {
		return cw.n, err
	}
	return cw.n, cw.err
}

func (m *Metrics) write(w *countingWriter) {
	w.header("trellis_runs_total", "counter", "Run segments ended, by status.")
	for _, s := range slices.Sorted(maps.Keys(m.runs)) {
		w.printf("trellis_runs_total{status=%s} %d\n", quote(s), m.runs[s])
	}
	w.header("trellis_runs_active", "gauge", "Runs live in this process.")
	w.printf("trellis_runs_active %d\n", m.activeRuns.Load())

	w.header("trellis_run_duration_seconds", "histogram", "Duration of run segments, from start or resumption to the terminal event.")
	for _, s := range slices.Sorted(maps.Keys(m.duration)) {
		h := m.duration[s]
		var cum uint64
		for i, le := range durationBuckets {
			cum += h.counts[i]
			w.printf("trellis_run_duration_seconds_bucket{status=%s,le=%q} %d\n", quote(s), strconv.FormatFloat(le, 'g', -1, 64), cum)
		}
		cum += h.counts[len(durationBuckets)]
		w.printf("trellis_run_duration_seconds_bucket{status=%s,le=\"+Inf\"} %d\n", quote(s), cum)
		w.printf("trellis_run_duration_seconds_sum{status=%s} %s\n", quote(s), strconv.FormatFloat(h.sum, 'g', -1, 64))
		w.printf("trellis_run_duration_seconds_count{status=%s} %d\n", quote(s), h.n)
	}

	w.header("trellis_tokens_total", "counter", "Model tokens used by runs, by kind.")
	for _, k := range []string{"input", "output", "thinking", "cache_read", "cache_write"} {
		w.printf("trellis_tokens_total{kind=%s} %d\n", quote(k), m.tokens[k])
	}

	w.header("trellis_tool_calls_total", "counter", "Tool calls, by tool and status (success or error).")
	keys := slices.SortedFunc(maps.Keys(m.tools), func(a, b toolKey) int {
		if c := strings.Compare(a.tool, b.tool); c != 0 {
			return c
		}
		return strings.Compare(a.status, b.status)
	})
	for _, k := range keys {
		w.printf("trellis_tool_calls_total{tool=%s,status=%s} %d\n", quote(k.tool), quote(k.status), m.tools[k])
	}

	w.header("trellis_breaker_state", "gauge", "Circuit breaker state of each remote tool source: 0 closed, 1 half-open, 2 open.")
	for _, s := range slices.Sorted(maps.Keys(m.breakers)) {
		v := 0
		switch m.breakers[s] {
		case operators.BreakerHalfOpen:
			v = 1
		case operators.BreakerOpen:
			v = 2
		}
		w.printf("trellis_breaker_state{source=%s} %d\n", quote(s), v)
	}

	w.header("trellis_sse_streams_open", "gauge", "SSE responses being written.")
	w.printf("trellis_sse_streams_open %d\n", m.openStreams.Load())

	w.header("trellis_http_requests_total", "counter", "HTTP requests answered, by status code.")
	for _, c := range slices.Sorted(maps.Keys(m.requests)) {
		w.printf("trellis_http_requests_total{code=\"%d\"} %d\n", c, m.requests[c])
	}
}

// quote writes a label value: Prometheus escapes backslash, quote and
// newline, as %q does for the characters tool names may hold.
func quote(s string) string {
	r := strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`)
	return `"` + r.Replace(s) + `"`
}

type countingWriter struct {
	w   *bufio.Writer
	n   int64
	err error
}

func (c *countingWriter) printf(format string, args ...any) {
	if c.err != nil {
		return
	}
	n, err := fmt.Fprintf(c.w, format, args...)
	c.n += int64(n)
	c.err = err
}

func (c *countingWriter) header(name, typ, help string) {
	c.printf("# HELP %s %s\n# TYPE %s %s\n", name, help, name, typ)
}

func (s *Server) handleMetrics(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
	_, _ = s.metrics.WriteTo(w)
}
