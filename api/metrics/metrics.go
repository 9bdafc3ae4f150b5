package metrics

import (
	"log/slog"
	"net/http"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/trellis-ai/trellis/events"
	"github.com/trellis-ai/trellis/llm"
	"github.com/trellis-ai/trellis/runs"
)

// Collector collects what GET /metrics serves, in Prometheus' exposition
// format:
//
//	trellis_runs_total{status}                 run segments ended, by how
//	trellis_runs_active                        runs live in this process
//	trellis_run_duration_seconds{status}       histogram of run segments
//	trellis_tokens_total{kind}                 model tokens, by kind
//	trellis_tool_calls_total{tool,status}      tool calls, success or error
//	trellis_breaker_state{source}              0 closed, 1 half-open, 2 open
//	trellis_sse_streams_open                   SSE responses being written
//	trellis_http_requests_total{code}          answered requests, by status
//	trellis_auth_failures_total{reason}        requests refused at authentication
//	trellis_cognition_context_failures_total{reason}  cognitive contexts not loaded: timeout or error
//
// and the Go runtime's (go_*) and the process's (process_*) metrics, so
// that goroutine and memory leaks can be watched.
//
// A run segment is a run from its start, or from its resumption, to its
// next terminal event. Make the collector before the tool provider and
// give it BreakerChanged as operators.ProviderConfig.OnBreakerChange.
// Each collector has a registry of its own, not the process-wide default
// one, so several servers in one process (tests) keep apart.
// Safe for concurrent use; the zero value is not usable, call New.
type Collector struct {
	activeRuns  atomic.Int64
	openStreams atomic.Int64

	reg          *prometheus.Registry
	runs         *prometheus.CounterVec
	duration     *prometheus.HistogramVec
	tokens       *prometheus.CounterVec
	tools        *prometheus.CounterVec
	breakers     *prometheus.GaugeVec
	requests     *prometheus.CounterVec
	authFailures *prometheus.CounterVec
	cognition    *prometheus.CounterVec
	checkpoints  *prometheus.GaugeVec
}

// durationBuckets are the upper bounds of run_duration_seconds, in seconds.
var durationBuckets = []float64{0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600}

// tokenKinds are the kinds of trellis_tokens_total, always all present.
var tokenKinds = []string{"input", "output", "thinking", "cache_read", "cache_write"}

// authReasons are the reasons of trellis_auth_failures_total, always
// all present: those middleware.Authenticate reports.
var authReasons = []string{"missing", "invalid", "rate_limited"}

// New returns an empty collector.
func New() *Collector {
	m := &Collector{
		reg: prometheus.NewRegistry(),
		runs: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "trellis_runs_total", Help: "Run segments ended, by status.",
		}, []string{"status"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "trellis_run_duration_seconds",
			Help:    "Duration of run segments, from start or resumption to the terminal event.",
			Buckets: durationBuckets,
		}, []string{"status"}),
		tokens: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "trellis_tokens_total", Help: "Model tokens used by runs, by kind.",
		}, []string{"kind"}),
		tools: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "trellis_tool_calls_total", Help: "Tool calls, by tool and status (success or error).",
		}, []string{"tool", "status"}),
		breakers: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "trellis_breaker_state", Help: "Circuit breaker state of each remote tool source: 0 closed, 1 half-open, 2 open.",
		}, []string{"source"}),
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "trellis_http_requests_total", Help: "HTTP requests answered, by status code.",
		}, []string{"code"}),
		authFailures: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "trellis_auth_failures_total",
			Help: "Requests refused at authentication: missing or invalid API key (401), or refused unchecked after too many invalid ones from the client's address (rate_limited, 429).",
		}, []string{"reason"}),
		cognition: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "trellis_cognition_context_failures_total",
			Help: "Cognitive contexts (profile, memories) not loaded in their budget (timeout) or failed (error); the run went on without them.",
		}, []string{"reason"}),
		checkpoints: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "trellis_checkpoint_bytes",
			Help: "Bytes of checkpoints, blobs and pending writes stored, by backend (sqlite or postgres), as the checkpoint prune job last measured them.",
		}, []string{"backend"}),
	}
	// Series that exist from the start read 0 rather than being absent,
	// so rates over them work from the first scrape.
	for _, k := range tokenKinds {
		m.tokens.WithLabelValues(k)
	}
	for _, r := range authReasons {
		m.authFailures.WithLabelValues(r)
	}
	for _, r := range []string{"timeout", "error"} {
		m.cognition.WithLabelValues(r)
	}
	m.reg.MustRegister(
		m.runs, m.duration, m.tokens, m.tools, m.breakers, m.requests, m.authFailures, m.cognition, m.checkpoints,
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "trellis_runs_active", Help: "Runs live in this process."},
			func() float64 { return float64(m.activeRuns.Load()) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "trellis_sse_streams_open", Help: "SSE responses being written."},
			func() float64 { return float64(m.openStreams.Load()) }),
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
	)
	return m
}

// BreakerChanged records a tool source's breaker state; it is an
// llm.BreakerListener.
func (m *Collector) BreakerChanged(source string, state llm.BreakerState) {
	v := 0.0
	switch state {
	case llm.BreakerHalfOpen:
		v = 1
	case llm.BreakerOpen:
		v = 2
	}
	m.breakers.WithLabelValues(source).Set(v)
}

// RunsActive adds delta to the runs live in this process; with RunEnded,
// Usage and ToolCall it is what the run service reports
// (runs.Config.Metrics).
func (m *Collector) RunsActive(delta int64) { m.activeRuns.Add(delta) }

// RunEnded counts a run segment that ended with status after d.
func (m *Collector) RunEnded(status string, d time.Duration) {
	m.runs.WithLabelValues(status).Inc()
	m.duration.WithLabelValues(status).Observe(d.Seconds())
}

// Usage adds a segment's model tokens.
func (m *Collector) Usage(u events.Usage) {
	if u == (events.Usage{}) {
		return
	}
	add := func(kind string, n int) { m.tokens.WithLabelValues(kind).Add(float64(max(n, 0))) }
	add("input", u.InputTokens)
	add("output", u.OutputTokens)
	add("thinking", u.ThinkingTokens)
	add("cache_read", u.CacheReadTokens)
	add("cache_write", u.CacheWriteTokens)
}

// ToolCall counts a tool call, "success" or "error".
func (m *Collector) ToolCall(tool, status string) {
	m.tools.WithLabelValues(tool, status).Inc()
}

// StreamsOpen adds delta to the SSE responses being written.
func (m *Collector) StreamsOpen(delta int64) { m.openStreams.Add(delta) }

// Answered counts an answered HTTP request by its status; give it to
// middleware.LogRequests.
func (m *Collector) Answered(code int) {
	m.requests.WithLabelValues(strconv.Itoa(code)).Inc()
}

// CognitionFailed counts a cognitive context not loaded, by reason
// (timeout or error); give it as cognition.Config.OnContextFailure.
func (m *Collector) CognitionFailed(reason string) {
	m.cognition.WithLabelValues(reason).Inc()
}

// AuthFailed counts a request refused at authentication, by reason;
// give it as middleware.AuthConfig.Refused.
func (m *Collector) AuthFailed(reason string) {
	m.authFailures.WithLabelValues(reason).Inc()
}

// Handler serves the metrics, logging to log. A collector that fails is
// logged and left out of the answer rather than failing the whole
// scrape.
func (m *Collector) Handler(log *slog.Logger) http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{
		ErrorLog:      slog.NewLogLogger(log.Handler(), slog.LevelError),
		ErrorHandling: promhttp.ContinueOnError,
	})
}

var _ runs.Metrics = (*Collector)(nil)

// CheckpointBytes records the bytes the checkpointer of backend stores. It
// is set by a periodic job, never on a request's path: measuring costs a
// scan of the checkpoint tables.
func (m *Collector) CheckpointBytes(backend string, n int64) {
	m.checkpoints.WithLabelValues(backend).Set(float64(n))
}
