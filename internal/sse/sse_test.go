package sse_test

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/trellis-ai/trellis/internal/sse"
)

func TestFraming(t *testing.T) {
	rec := httptest.NewRecorder()
	rec.Header().Set("X-Run-ID", "r1")
	s := sse.Start(rec, time.Second)
	steps := []func() error{
		func() error { return s.Event(7, "run.started", []byte(`{"a":1}`)) },
		func() error { return s.Event(0, "document.status", []byte(`{}`)) },
		func() error { return s.Event(0, "", []byte("[DONE]")) },
		func() error { return s.JSON(3, "values", map[string]int{"n": 2}) },
		func() error { return s.Comment("ping") },
		func() error { return s.Retry(1500 * time.Millisecond) },
	}
	for _, step := range steps {
		if err := step(); err != nil {
			t.Fatal(err)
		}
	}
	want := "id: 7\nevent: run.started\ndata: {\"a\":1}\n\n" +
		"event: document.status\ndata: {}\n\n" +
		"data: [DONE]\n\n" +
		"id: 3\nevent: values\ndata: {\"n\":2}\n\n" +
		": ping\n\n" +
		"retry: 1500\n\n"
	if got := rec.Body.String(); got != want {
		t.Errorf("stream:\n%q\nwant\n%q", got, want)
	}
	h := rec.Result().Header
	if rec.Code != http.StatusOK || h.Get("Content-Type") != "text/event-stream" || h.Get("Cache-Control") != "no-cache" ||
		h.Get("X-Accel-Buffering") != "no" || h.Get("X-Run-ID") != "r1" {
		t.Errorf("status %d, headers %v", rec.Code, h)
	}
	if !rec.Flushed || s.Failed() {
		t.Errorf("flushed %v, failed %v", rec.Flushed, s.Failed())
	}
	if err := s.JSON(1, "x", func() {}); err == nil {
		t.Error("JSON of a func: no error")
	}
}

// goneWriter is a client that went away.
type goneWriter struct{ httptest.ResponseRecorder }

func (g *goneWriter) Write([]byte) (int, error) { return 0, errors.New("broken pipe") }

func TestFailedWrite(t *testing.T) {
	g := &goneWriter{*httptest.NewRecorder()}
	s := sse.Start(g, time.Second)
	if s.Failed() {
		t.Fatal("failed before a write")
	}
	if err := s.Comment("ping"); err == nil || !s.Failed() {
		t.Errorf("write to a gone client: %v, failed %v", err, s.Failed())
	}
}
