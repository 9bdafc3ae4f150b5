package llmtest

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// Replay is one answer of a [ReplayServer]: a fixture file sent as it is,
// byte for byte, with a status and headers. A 200 answer to a request
// asking to stream ("stream": true) is a stream: the file (named *.sse)
// is sent event by event (each ending in a blank line) and flushed after
// each, as text/event-stream. Any other answer sends the file whole as
// JSON. A stream fixture for a request that does not stream, or the
// reverse, fails the test.
type Replay struct {
	Status int
	Header map[string]string
	File   string // relative to the server's directory
	// Hold keeps a stream open after its last byte until the client goes
	// away (at most 5 s), as a server may before it closes.
	Hold bool
}

// WireRequest is a request a ReplayServer received.
type WireRequest struct {
	Path   string
	Header http.Header
	Body   map[string]any // the JSON body, decoded
}

// ReplayServer replays recorded provider answers — any provider: the
// fixtures carry the wire format — to whatever client calls it, and
// records the requests. Its URL and Client are httptest's.
type ReplayServer struct {
	*httptest.Server
	t       testing.TB
	dir     string
	replies []Replay
	check   func(body map[string]any) *Replay
	mu      sync.Mutex
	reqs    []WireRequest
	next    int // the next reply of the list
}

// NewReplayServer starts a server that answers its n-th request with
// replies[n-1], files read from dir. check, when not nil, sees each
// request's body first: an answer it returns (a provider's documented
// refusal) is sent instead, and the request takes no reply of the list.
// A request past the list fails the test. The server is closed when the
// test ends.
func NewReplayServer(t testing.TB, dir string, check func(body map[string]any) *Replay, replies ...Replay) *ReplayServer {
	t.Helper()
	s := &ReplayServer{t: t, dir: dir, replies: replies, check: check}
	s.Server = httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(s.Close)
	return s
}

// Requests returns the requests received so far.
func (s *ReplayServer) Requests() []WireRequest {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]WireRequest(nil), s.reqs...)
}

func (s *ReplayServer) serve(w http.ResponseWriter, r *http.Request) {
	raw, _ := io.ReadAll(r.Body)
	var body map[string]any
	if err := json.Unmarshal(raw, &body); err != nil {
		s.t.Errorf("llmtest: request body is not JSON: %v: %s", err, raw)
	}
	var rep *Replay
	if s.check != nil {
		rep = s.check(body)
	}
	s.mu.Lock()
	s.reqs = append(s.reqs, WireRequest{Path: r.URL.Path, Header: r.Header.Clone(), Body: body})
	if rep == nil && s.next < len(s.replies) {
		rep = &s.replies[s.next]
		s.next++
	}
	s.mu.Unlock()
	if rep == nil {
		s.t.Errorf("llmtest: request %d, but only %d replies", len(s.Requests()), len(s.replies))
		http.Error(w, "llmtest: no more replies", http.StatusInternalServerError)
		return
	}
	b, err := os.ReadFile(filepath.Join(s.dir, rep.File))
	if err != nil {
		s.t.Errorf("llmtest: %v", err)
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	for k, v := range rep.Header {
		w.Header().Set(k, v)
	}
	streamed := body["stream"] == true
	if ok := rep.Status != 0 && rep.Status != http.StatusOK; ok || !streamed {
		if !ok && strings.HasSuffix(rep.File, ".sse") {
			s.t.Errorf("llmtest: stream fixture %s for a request that does not stream", rep.File)
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(max(rep.Status, http.StatusOK))
		_, _ = w.Write(b)
		return
	}
	if !strings.HasSuffix(rep.File, ".sse") {
		s.t.Errorf("llmtest: fixture %s for a request that streams", rep.File)
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	for ev := range bytes.SplitAfterSeq(b, []byte("\n\n")) {
		_, _ = w.Write(ev)
		w.(http.Flusher).Flush()
	}
	if rep.Hold {
		select {
		case <-r.Context().Done():
		case <-time.After(5 * time.Second):
			s.t.Error("llmtest: the client kept a held stream open")
		}
	}
}
