package api_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/trellis-ai/trellis/api/apitest"
	"github.com/trellis-ai/trellis/graph"
	"github.com/trellis-ai/trellis/llm"
	"github.com/trellis-ai/trellis/operators"
)

// The benchmarks run each measurement beside its baseline, a bare chi
// handler over the same loopback, in the same run:
//
//	go test -run '^$' -bench . -benchmem ./api/
//
// The scripted model answers instantly (no delays), so what is measured
// is the service: routing, validation, the run service, the store (every
// event is written before it is sent) and the agent's checkpoints.

// benchConfig switches off the limits a benchmark would hit.
func benchConfig(c *apitest.Config) {
	c.API.Limits.RatePerMinute = -1
	c.API.Limits.MaxConcurrentRunsPerUser = -1
}

// bareJSON is the baseline for sync chat: a fixed JSON body.
func bareJSON() *httptest.Server {
	r := chi.NewRouter()
	body := []byte(`{"conversation_id":"c","run_id":"r","request_id":"q","status":"completed","response":"Done: all good.","usage":{},"tool_calls":[],"citations":[]}` + "\n")
	r.Post("/api/v1/chat/sync", func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(body)
	})
	return httptest.NewServer(r)
}

// BenchmarkSyncChat measures POST /api/v1/chat/sync, each request a new
// conversation answered by the agent, in requests per second, with 16
// clients at once (8 per GOMAXPROCS).
func BenchmarkSyncChat(b *testing.B) {
	run := benchSync
	b.Run("bare-chi", func(b *testing.B) {
		ts := bareJSON()
		defer ts.Close()
		run(b, ts.URL, ts.Client())
	})
	for _, be := range backends {
		b.Run("trellis-"+string(be), func(b *testing.B) {
			e := newEnv(b, envOptions{backend: be, local: true, configure: benchConfig})
			run(b, e.ts.URL, e.ts.Client())
		})
		// The agent in the other durability modes: async writes a
		// turn's checkpoints while it goes on, exit writes its input's
		// and its last, boundary those and its barriers' (the answer's,
		// for a turn that calls no tool).
		for _, d := range []graph.Durability{graph.DurabilityAsync, graph.DurabilityExit, graph.DurabilityBoundary} {
			b.Run("trellis-"+string(be)+"-"+d.String(), func(b *testing.B) {
				e := newEnv(b, envOptions{backend: be, local: true, configure: func(c *apitest.Config) {
					benchConfig(c)
					c.Runs.Agent.Durability = d
				}})
				run(b, e.ts.URL, e.ts.Client())
			})
		}
	}
}

// BenchmarkSyncChatCall is BenchmarkSyncChat with a turn that calls one
// tool, the same in both, annotated read-only or not annotated, in the
// same run: the call of the one that is not is recorded in the store's
// tool calls before it starts and again when it ends (see
// nodes.CallLog), so the ratio is what recording costs a turn:
//
//	go test -run '^$' -bench SyncChatCall -count 6 ./api/ | benchstat -col /call -
func BenchmarkSyncChatCall(b *testing.B) {
	for _, be := range backends {
		for _, call := range []string{"read-only", "recorded"} {
			b.Run("backend="+string(be)+"/call="+call, func(b *testing.B) {
				var opts []operators.ToolOption
				if call == "read-only" {
					opts = append(opts, operators.ReadOnly())
				}
				e := newEnv(b, envOptions{backend: be, local: true, configure: func(c *apitest.Config) {
					benchConfig(c)
					sc, err := llm.ParseScript([]byte(callScript))
					if err != nil {
						b.Fatal(err)
					}
					if c.Runs.Models, err = llm.NewRegistry(llm.Config{
						Models:     []llm.ModelConfig{{ID: "scripted", Provider: llm.ProviderScripted, Instance: llm.NewScripted(sc), ToolCalling: true}},
						Resilience: llm.ResilienceConfig{Disabled: true},
					}); err != nil {
						b.Fatal(err)
					}
					local := operators.NewRegistry()
					local.MustAdd(operators.NewTool("tally", "Counts.", func(context.Context, operators.Call, emptyIn) (operators.Result, error) {
						return operators.TextResult("42"), nil
					}, opts...))
					c.Runs.Tools = operators.NewProvider(operators.ProviderConfig{Local: local})
				}})
				benchSync(b, e.ts.URL, e.ts.Client())
			})
		}
	}
}

// callScript is BenchmarkSyncChatCall's model: every turn calls tally
// once, then answers.
const callScript = `{"steps": [
	{"match": {"node": "supervisor", "tool_result": false}, "reply": {"tool_calls": [{"name": "tally", "args": {}}]}, "repeat": true},
	{"match": {"node": "reflect"}, "reply": {"json": {"assessment": "satisfied"}}, "repeat": true},
	{"match": {"node": "write"}, "reply": {"text": "It is 42."}, "repeat": true}
]}`

func benchSync(b *testing.B, url string, client *http.Client) { benchSyncTurns(b, url, client, 1) }

// benchSyncTurns is benchSync with each client's conversations running
// for turns turns: the first request of each starts it, the others name
// it.
func benchSyncTurns(b *testing.B, url string, client *http.Client, turns int) {
	b.SetParallelism(8)
	body := []byte(`{"message": "hello"}`)
	{
		b.ResetTimer()
		start := time.Now()
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
				b2, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if resp.StatusCode != 200 || !bytes.Contains(b2, []byte(`"completed"`)) {
					b.Errorf("%d %s", resp.StatusCode, b2)
					return
				}
				if turns > 1 {
					var res struct {
						ConversationID string `json:"conversation_id"`
					}
					if err := json.Unmarshal(b2, &res); err != nil {
						b.Error(err)
						return
					}
					conv = res.ConversationID
				}
			}
		})
		b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "req/s")
	}
}

// BenchmarkSSEFirstEvent measures the time from sending POST /api/v1/chat
// to reading its first event (run.started), against a bare chi handler
// that writes one SSE event; it reports the median (ms-median) beside the
// mean (ns/op). Each run is read to its end before the next starts.
func BenchmarkSSEFirstEvent(b *testing.B) {
	body := []byte(`{"message": "hello"}`)
	run := func(b *testing.B, url string, client *http.Client) {
		lat := make([]time.Duration, 0, b.N)
		b.ResetTimer()
		for range b.N {
			start := time.Now()
			resp, err := client.Post(url+"/api/v1/chat", "application/json", bytes.NewReader(body))
			if err != nil {
				b.Fatal(err)
			}
			br := bufio.NewReader(resp.Body)
			for {
				line, err := br.ReadString('\n')
				if err != nil {
					b.Fatalf("no event: %v", err)
				}
				if strings.HasPrefix(line, "data: ") {
					break
				}
			}
			lat = append(lat, time.Since(start))
			_, _ = io.Copy(io.Discard, br)
			resp.Body.Close()
		}
		b.StopTimer()
		slices.Sort(lat)
		b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "ms-median")
	}
	b.Run("bare-chi", func(b *testing.B) {
		r := chi.NewRouter()
		r.Post("/api/v1/chat", func(w http.ResponseWriter, r *http.Request) {
			_, _ = io.Copy(io.Discard, r.Body)
			w.Header().Set("Content-Type", "text/event-stream")
			_, _ = io.WriteString(w, "id: 1\nevent: run.started\ndata: {\"seq\":1,\"type\":\"run.started\"}\n\n")
			_ = http.NewResponseController(w).Flush()
		})
		ts := httptest.NewServer(r)
		defer ts.Close()
		run(b, ts.URL, ts.Client())
	})
	for _, be := range backends {
		b.Run("trellis-"+string(be), func(b *testing.B) {
			e := newEnv(b, envOptions{backend: be, local: true, configure: benchConfig})
			run(b, e.ts.URL, e.ts.Client())
		})
	}
}

// BenchmarkIdleStreams opens 1,000 SSE streams that stay idle (they
// follow a run parked on an approval) and reports the memory they hold,
// per stream (KiB/stream: heap and goroutine stacks, after GC, measured
// with runtime.MemStats before and after), against a bare chi handler
// that holds its streams open the same way. Clients are raw TCP
// connections, so they add next to nothing to the figure.
func BenchmarkIdleStreams(b *testing.B) {
	const streams = 1000
	measure := func(b *testing.B, addr, path string, headers string) {
		for range b.N {
			before := memInUse()
			conns := make([]net.Conn, 0, streams)
			for range streams {
				c, err := net.Dial("tcp", addr)
				if err != nil {
					b.Fatal(err)
				}
				fmt.Fprintf(c, "GET %s HTTP/1.1\r\nHost: %s\r\n%s\r\n", path, addr, headers)
				if err := awaitHeaders(c); err != nil {
					b.Fatal(err)
				}
				conns = append(conns, c)
			}
			after := memInUse()
			b.ReportMetric(float64(after-before)/streams/1024, "KiB/stream")
			for _, c := range conns {
				c.Close()
			}
		}
	}
	b.Run("bare-chi", func(b *testing.B) {
		r := chi.NewRouter()
		r.Get("/stream", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/event-stream")
			w.WriteHeader(200)
			_ = http.NewResponseController(w).Flush()
			<-r.Context().Done()
		})
		ts := httptest.NewServer(r)
		defer ts.Close()
		measure(b, ts.Listener.Addr().String(), "/stream", "")
	})
	b.Run("trellis", func(b *testing.B) {
		e := newEnv(b, envOptions{local: true, configure: func(c *apitest.Config) {
			benchConfig(c)
			c.Runs.InterruptAfter = -1
			c.API.Heartbeat = 15 * time.Second
		}})
		s := e.chat(map[string]any{"message": "please delete /tmp/a.txt"})
		evs := s.all() // parked on its approval
		conv, last := s.header("X-Conversation-ID"), evs[len(evs)-1].ID
		measure(b, e.ts.Listener.Addr().String(), "/api/v1/conversations/"+conv+"/stream",
			"Last-Event-ID: "+strconv.FormatInt(last, 10)+"\r\n")
		// Let the handlers see their clients go before the server closes.
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = e.srv.Shutdown(ctx)
	})
}

// awaitHeaders reads a response's header block, byte by byte so that
// nothing is buffered per connection.
func awaitHeaders(c net.Conn) error {
	var tail [4]byte
	var one [1]byte
	for {
		if _, err := c.Read(one[:]); err != nil {
			return err
		}
		copy(tail[:], tail[1:])
		tail[3] = one[0]
		if string(tail[:]) == "\r\n\r\n" {
			return nil
		}
	}
}

// memInUse is heap plus goroutine stacks in use, after a GC.
func memInUse() uint64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapInuse + m.StackInuse
}
