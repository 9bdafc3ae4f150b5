package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/go-chi/chi/v5"
)

// BenchmarkServeSyncChat measures POST /api/v1/chat/sync against the
// server serveUntil builds, as `trellis serve` runs it: its flags and
// environment (defaults but the two limits a benchmark would hit),
// storage, logger (JSON, to a file), offline model and HTTP server. 16
// clients with a kept-alive connection each, as `wrk -c16` drives the
// binary, each request a new conversation, or (turns=8) each client's
// conversations running for 8 turns, the first request starting one and
// the others naming it; beside it, in the same run, a bare chi handler
// with the same clients:
//
//	go test -run '^$' -bench ServeSyncChat -count 6 ./cmd/trellis/
//
// api's BenchmarkSyncChat measures the service under the scripted
// model; this one keeps what cmd/trellis adds from drifting away
// unseen.
func BenchmarkServeSyncChat(b *testing.B) {
	b.Run("bare-chi", func(b *testing.B) {
		r := chi.NewRouter()
		body := []byte(`{"conversation_id":"c","run_id":"r","request_id":"q","status":"completed","response":"Done.","usage":{},"tool_calls":[],"citations":[]}` + "\n")
		r.Post("/api/v1/chat/sync", func(w http.ResponseWriter, r *http.Request) {
			_, _ = io.Copy(io.Discard, r.Body)
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write(body)
		})
		ts := httptest.NewServer(r)
		defer ts.Close()
		benchClients(b, ts.URL, 1)
	})
	for _, mode := range []string{"sync", "async", "exit", "boundary"} {
		b.Run("sqlite-"+mode, func(b *testing.B) {
			benchClients(b, startBenchServe(b, "TRELLIS_DATA_DIR", b.TempDir(), "TRELLIS_DURABILITY", mode), 1)
		})
		b.Run("postgres-"+mode, func(b *testing.B) {
			benchClients(b, startBenchServe(b, "DATABASE_URL", pgDSN(b), "TRELLIS_DURABILITY", mode), 1)
		})
	}
	b.Run("sqlite-boundary/turns=8", func(b *testing.B) {
		benchClients(b, startBenchServe(b, "TRELLIS_DATA_DIR", b.TempDir()), 8)
	})
	b.Run("postgres-boundary/turns=8", func(b *testing.B) {
		benchClients(b, startBenchServe(b, "DATABASE_URL", pgDSN(b)), 8)
	})
}

// startBenchServe runs serveUntil in this process on a free loopback
// port with the environment env (pairs) and returns its URL; it stops
// when b ends.
func startBenchServe(b testing.TB, env ...string) string {
	b.Helper()
	vars := map[string]string{"HOME": b.TempDir(), "TRELLIS_ADDR": "127.0.0.1:0",
		"TRELLIS_RATE_PER_MINUTE": "-1", "TRELLIS_MAX_RUNS_PER_USER": "-1"}
	for i := 0; i+1 < len(env); i += 2 {
		vars[env[i]] = env[i+1]
	}
	getenv := func(k string) string { return vars[k] }
	cfg, err := parseServe(nil, getenv, io.Discard)
	if err != nil {
		b.Fatal(err)
	}
	logs, err := os.Create(filepath.Join(b.TempDir(), "stderr"))
	if err != nil {
		b.Fatal(err)
	}
	out, lines := io.Pipe()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- serveUntil(ctx, cfg, getenv, lines, serveLogger(logs, cfg.logLevel)) }()
	start := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			start <- sc.Text()
		}
	}()
	b.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			b.Error(err)
		}
		_ = lines.Close()
		_ = logs.Close()
	})
	select {
	case line := <-start:
		// trellis serve: http://127.0.0.1:PORT · storage … · models offline (default) · …
		f := strings.Fields(line)
		if len(f) < 3 || !strings.Contains(line, "offline (default)") {
			b.Fatalf("start line %q", line)
		}
		return f[2]
	case err := <-done:
		b.Fatalf("serve: %v", err)
	case <-time.After(30 * time.Second):
		b.Fatal("no start line")
	}
	return ""
}

// benchClients posts chat/sync from 16 clients, each with a connection
// kept alive, each client's conversations running for turns turns, and
// reports requests per second and the CPU time of this process (server
// and clients, user and system) per request: on shared cores the wall
// time swings with the other load far more than the CPU time does.
func benchClients(b *testing.B, url string, turns int) {
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 16}}
	defer client.CloseIdleConnections()
	body := []byte(`{"message": "hello"}`)
	b.SetParallelism(8)
	b.ResetTimer()
	start, cpu := time.Now(), cpuTime(b)
	b.RunParallel(func(pb *testing.PB) {
		conv, turn := "", 0
		for pb.Next() {
			req := body
			if turn%turns != 0 {
				req = []byte(`{"message": "hello", "conversation_id": "` + conv + `"}`)
			}
			turn++
			resp, err := client.Post(url+"/api/v1/chat/sync", "application/json", bytes.NewReader(req))
			if err != nil {
				b.Error(err)
				return
			}
			got, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK || !bytes.Contains(got, []byte(`"completed"`)) {
				b.Errorf("%d %s", resp.StatusCode, got)
				return
			}
			if turns > 1 {
				var res struct {
					ConversationID string `json:"conversation_id"`
				}
				if err := json.Unmarshal(got, &res); err != nil {
					b.Error(err)
					return
				}
				conv = res.ConversationID
			}
		}
	})
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "req/s")
	b.ReportMetric(float64(cpuTime(b)-cpu)/float64(time.Millisecond)/float64(b.N), "cpu-ms/op")
}

// cpuTime is the CPU time this process has used, user and system.
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
