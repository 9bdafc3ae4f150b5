package api_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"runtime"
	"runtime/metrics"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/trellis-ai/trellis/store"
)

// bigRun stores a finished run of n events (the last run.completed) in a
// new conversation of alice's, through the store in batches.
func bigRun(t *testing.T, st store.Store, n int) (conversationID, runID string) {
	t.Helper()
	ctx := t.Context()
	c, err := st.CreateConversation(ctx, store.NewConversation{UserID: "alice", Title: "long"})
	if err != nil {
		t.Fatal(err)
	}
	r, err := st.StartRun(ctx, store.NewRun{UserID: "alice", ConversationID: c.ID, UserMessage: "work hard"})
	if err != nil {
		t.Fatal(err)
	}
	// About half a kilobyte an event, as a busy tool's progress notes are.
	note := strings.Repeat("step ", 100)
	const batch = 1000
	for from := 0; from < n; from += batch {
		evs := make([]store.NewEvent, 0, batch)
		for i := from; i < min(from+batch, n); i++ {
			typ, data := "tool.progress", fmt.Sprintf(`{"type":"tool.progress","run_id":%q,"conversation_id":%q,"ts":"2026-11-24T06:00:00Z","tool_call_id":"call-1","progress":%d,"total":%d,"message":%q}`,
				r.ID, c.ID, i, n, note)
			if i == n-1 {
				typ, data = "run.completed", fmt.Sprintf(`{"type":"run.completed","run_id":%q,"conversation_id":%q,"ts":"2026-11-24T06:00:00Z","status":"completed"}`, r.ID, c.ID)
			}
			evs = append(evs, store.NewEvent{RunID: r.ID, Type: typ, Data: json.RawMessage(data)})
		}
		if _, err := st.AppendEvents(ctx, evs); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := st.FinishRun(ctx, r.ID, store.RunEnd{Status: store.RunCompleted}); err != nil {
		t.Fatal(err)
	}
	return c.ID, r.ID
}

// growth is how much the process grew while readers ran: the peak of
// the Go heap's objects (live, or dead and not yet swept: what the
// process holds) and of its resident memory, above their levels at the
// start.
type growth struct{ heap, rss uint64 }

func (g growth) String() string {
	return fmt.Sprintf("heap peak +%.1f MiB, resident peak +%.1f MiB", float64(g.heap)/(1<<20), float64(g.rss)/(1<<20))
}

// measure samples the process's memory until stop is called, which
// returns its growth.
func measure() (stop func() growth) {
	sample := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	read := func() growth {
		metrics.Read(sample)
		return growth{heap: sample[0].Value.Uint64(), rss: residentBytes()}
	}
	runtime.GC()
	base := read()
	done, peak := make(chan struct{}), make(chan growth)
	go func() {
		// A sampling cadence, not a wait for anything: the peak between
		// two samples can be missed, never invented.
		tick := time.NewTicker(time.Millisecond)
		defer tick.Stop()
		high := base
		for {
			select {
			case <-tick.C:
				now := read()
				high = growth{max(high.heap, now.heap), max(high.rss, now.rss)}
			case <-done:
				peak <- growth{high.heap - base.heap, max(high.rss, base.rss) - base.rss}
				return
			}
		}
	}()
	return func() growth {
		close(done)
		return <-peak
	}
}

// residentBytes is the process's resident set size, or 0 where
// /proc/self/statm is not there to say.
func residentBytes() uint64 {
	b, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		return 0
	}
	f := strings.Fields(string(b))
	if len(f) < 2 {
		return 0
	}
	pages, _ := strconv.ParseUint(f[1], 10, 64)
	return pages * uint64(os.Getpagesize())
}

// TestReplayMemoryBounded: many clients replaying one long stored run, or
// reading its conversation, at once hold a page of it each, not all of it.
// (Read whole, 60 replays grew the heap by about 1.4 GiB, 60 reads of the
// conversation by 1.4 to 3.9 GiB; 24 replays, which is all this test runs
// for its time under -race, still grew the resident memory by 456 MiB.)
func TestReplayMemoryBounded(t *testing.T) {
	const (
		events  = 20000
		readers = 24
		bound   = 200 << 20
	)
	for _, b := range backends {
		t.Run(string(b), func(t *testing.T) {
			e := newEnv(t, envOptions{backend: b})
			cid, rid := bigRun(t, e.store, events)

			stop := measure()
			var wg sync.WaitGroup
			for range readers {
				wg.Go(func() {
					last, typ, err := replay(t, e, cid)
					if err != nil || last != events || typ != "run.completed" {
						t.Errorf("replay ended at %d (%s), %v; want %d, run.completed", last, typ, err, events)
					}
				})
			}
			wg.Wait()
			within(t, fmt.Sprintf("%d replays of a %d-event run", readers, events), stop(), bound)

			stop = measure()
			for range readers {
				wg.Go(func() {
					resp, err := e.ts.Client().Do(e.request("GET", "/api/v1/conversations/"+cid, nil, e.key).WithContext(t.Context()))
					if err != nil {
						t.Error(err)
						return
					}
					defer resp.Body.Close()
					head := make([]byte, 512)
					n, _ := io.ReadFull(resp.Body, head)
					if _, err := io.Copy(io.Discard, resp.Body); err != nil || resp.StatusCode != http.StatusOK || !bytes.Contains(head[:n], []byte(rid)) {
						t.Errorf("GET conversation: %d %s…, %v", resp.StatusCode, head[:n], err)
					}
				})
			}
			wg.Wait()
			within(t, fmt.Sprintf("%d reads of its conversation", readers), stop(), bound)
		})
	}
}

// within logs how much the process grew and fails the test when the heap
// or the resident memory grew by more than bound. The resident memory
// counts what the Go heap does not: SQLite's page caches, one per
// connection. It can only understate: memory the process kept from
// before is reused without growing it.
func within(t *testing.T, what string, g growth, bound uint64) {
	t.Helper()
	t.Logf("%s: %v", what, g)
	if g.heap > bound || g.rss > bound {
		t.Errorf("%s grew the process by more than %d MiB: %v", what, bound>>20, g)
	}
}

// replay reads the conversation's stream from its start to its end, a
// line at a time, and returns the last event's id and type; it checks
// that ids run from 1 without gaps.
func replay(t *testing.T, e *env, conversationID string) (last int64, typ string, err error) {
	req := e.request("GET", "/api/v1/conversations/"+conversationID+"/stream", nil, e.key, "Last-Event-ID", "0")
	resp, err := e.ts.Client().Do(req.WithContext(t.Context()))
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return 0, "", fmt.Errorf("status %d", resp.StatusCode)
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "id: "):
			id, err := strconv.ParseInt(line[4:], 10, 64)
			if err != nil || id != last+1 {
				return last, typ, fmt.Errorf("event id %q after %d", line, last)
			}
			last = id
		case strings.HasPrefix(line, "event: "):
			typ = line[7:]
		}
	}
	return last, typ, sc.Err()
}

// bigAnswer stores a finished run whose answer of size bytes was
// streamed in chunks of 60 KB: the chunks, response.done with the whole
// answer, run.completed, and the assistant's message, in a new
// conversation of alice's.
func bigAnswer(t *testing.T, st store.Store, size int) (conversationID string) {
	t.Helper()
	ctx := t.Context()
	c, err := st.CreateConversation(ctx, store.NewConversation{UserID: "alice", Title: "big answer"})
	if err != nil {
		t.Fatal(err)
	}
	r, err := st.StartRun(ctx, store.NewRun{UserID: "alice", ConversationID: c.ID, UserMessage: "write a lot"})
	if err != nil {
		t.Fatal(err)
	}
	const chunk = 60 << 10
	ev := func(typ, extra string) store.NewEvent {
		return store.NewEvent{RunID: r.ID, Type: typ, Data: json.RawMessage(fmt.Sprintf(
			`{"type":%q,"run_id":%q,"conversation_id":%q,"ts":"2026-11-24T06:00:00Z"%s}`, typ, r.ID, c.ID, extra))}
	}
	var evs []store.NewEvent
	for range size / chunk {
		evs = append(evs, ev("response.chunk", fmt.Sprintf(`,"content":%q`, strings.Repeat("w", chunk))))
	}
	answer := strings.Repeat("w", size/chunk*chunk)
	evs = append(evs, ev("response.done", fmt.Sprintf(`,"content":%q`, answer)), ev("run.completed", `,"status":"completed"`))
	if _, err := st.AppendEvents(ctx, evs); err != nil {
		t.Fatal(err)
	}
	if _, err := st.AddMessage(ctx, store.NewMessage{RunID: r.ID, Role: store.RoleAssistant, Content: answer}); err != nil {
		t.Fatal(err)
	}
	if _, err := st.FinishRun(ctx, r.ID, store.RunEnd{Status: store.RunCompleted}); err != nil {
		t.Fatal(err)
	}
	return c.ID
}

// TestBigAnswerReadsMemoryBounded: 60 clients reading at once the
// conversation of a run that streamed a 6 MB answer each get a page
// bounded by store.PageBytes beyond its one run's transcript (the
// answer's message), not the answer three times over (its chunks,
// response.done and the message); the rest of the run's events come
// page by page. (With pages bounded by count alone, each response was
// 18 MB and the 60 reads grew the heap by 4.7 GiB, the resident memory
// by 5.3 GiB; bounded by bytes too, by about 0.65 GiB.)
func TestBigAnswerReadsMemoryBounded(t *testing.T) {
	const (
		answer  = 6 << 20
		readers = 60
	)
	e := newEnv(t, envOptions{})
	cid := bigAnswer(t, e.store, answer)
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		most int64
	)
	stop := measure()
	for range readers {
		wg.Go(func() {
			resp, err := e.ts.Client().Do(e.request("GET", "/api/v1/conversations/"+cid, nil, e.key).WithContext(t.Context()))
			if err != nil {
				t.Error(err)
				return
			}
			defer resp.Body.Close()
			n, err := io.Copy(io.Discard, resp.Body)
			if err != nil || resp.StatusCode != http.StatusOK {
				t.Errorf("GET conversation: %d, %v", resp.StatusCode, err)
			}
			mu.Lock()
			most = max(most, n)
			mu.Unlock()
		})
	}
	wg.Wait()
	g := stop()
	t.Logf("%d reads of a conversation with a %d MiB answer: responses of %.1f MiB at most, %v", readers, answer>>20, float64(most)/(1<<20), g)
	// A page holds its run's transcript (the answer and its JSON
	// escaping: here none) and at most store.PageBytes of the rest.
	if limit := int64(answer + store.PageBytes + 64<<10); most > limit {
		t.Errorf("a response of %d bytes, want at most %d", most, limit)
	}
	// The Go heap only: the race detector's shadow memory inflates the
	// resident size several times over what the reads hold.
	if bound := uint64(readers * 3 * (answer + store.PageBytes)); g.heap > bound {
		t.Errorf("%d reads of the conversation grew the heap by more than %d MiB: %v", readers, bound>>20, g)
	}
}
