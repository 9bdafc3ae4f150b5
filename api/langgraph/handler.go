package langgraph

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/trellis-ai/trellis/api/httperr"
	"github.com/trellis-ai/trellis/api/jsonbody"
	"github.com/trellis-ai/trellis/runs"
)

// graphID is the one graph Trellis serves, and the id of its one
// assistant: agent-chat-ui's default.
const graphID = "agent"

// Config configures the adapter. Runs is required.
type Config struct {
	Runs *runs.Service
	// Heartbeat is how often an idle stream gets a keep-alive comment,
	// and WriteTimeout drops a stream whose client takes nothing for
	// that long: the server's, which it passes in.
	Heartbeat    time.Duration
	WriteTimeout time.Duration
	// Version is reported by /info.
	Version string
	// Logger receives what goes wrong on the server's side; nil discards.
	Logger *slog.Logger
}

// handler serves the API.
type handler struct {
	cfg  Config
	runs *runs.Service
	log  *slog.Logger
}

// New returns the API's handler, to be mounted where the SDK's apiUrl
// points, behind authentication that sets runs.WithUser.
func New(cfg Config) http.Handler {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	h := &handler{cfg: cfg, runs: cfg.Runs, log: cfg.Logger}
	r := chi.NewRouter()
	r.NotFound(func(w http.ResponseWriter, r *http.Request) {
		h.fail(w, r, errorf(http.StatusNotFound, "not_found", "no such endpoint in Trellis' LangGraph API subset: %s %s", r.Method, r.URL.Path))
	})
	r.MethodNotAllowed(func(w http.ResponseWriter, r *http.Request) {
		h.fail(w, r, errorf(http.StatusMethodNotAllowed, "method_not_allowed", "%s is not allowed on %s", r.Method, r.URL.Path))
	})
	r.Get("/info", h.info)
	r.Get("/ok", h.info)
	r.Post("/assistants/search", h.searchAssistants)
	r.Get("/assistants/{assistant_id}", h.getAssistant)
	r.Get("/assistants/{assistant_id}/graph", h.assistantGraph)
	r.Post("/threads", h.createThread)
	r.Post("/threads/search", h.searchThreads)
	r.Get("/threads/{thread_id}", h.getThread)
	r.Patch("/threads/{thread_id}", h.patchThread)
	r.Delete("/threads/{thread_id}", h.deleteThread)
	r.Get("/threads/{thread_id}/state", h.getState)
	r.Post("/threads/{thread_id}/history", h.postHistory)
	r.Get("/threads/{thread_id}/history", h.getHistory)
	r.Post("/threads/{thread_id}/runs/stream", h.streamRun)
	r.Post("/threads/{thread_id}/runs/wait", h.waitRun)
	r.Post("/threads/{thread_id}/runs", h.backgroundRun)
	r.Get("/threads/{thread_id}/runs", h.listRuns)
	r.Get("/threads/{thread_id}/runs/{run_id}", h.getRun)
	r.Get("/threads/{thread_id}/runs/{run_id}/join", h.joinRun)
	r.Get("/threads/{thread_id}/runs/{run_id}/stream", h.joinStream)
	r.Post("/threads/{thread_id}/runs/{run_id}/cancel", h.cancelRun)
	return r
}

// fail answers err as httperr classifies it, anything else 500 (logged),
// in Trellis' {"error": {code, message}} plus LangGraph's "detail".
func (h *handler) fail(w http.ResponseWriter, r *http.Request, err error) {
	p := httperr.Of(err)
	switch {
	case p == httperr.RunActive:
		p = errorf(p.Status, p.Code, "the thread has a run going or waiting for an answer; wait, cancel it, or answer its interrupt with command.resume")
	case p == nil && errors.Is(err, context.Canceled) && r.Context().Err() != nil:
		return // the client is gone
	case p == nil:
		h.log.LogAttrs(r.Context(), slog.LevelError, "langgraph: request failed", slog.String("path", r.URL.Path), slog.Any("error", err))
		p = httperr.Internal("")
	}
	p.Header(w.Header())
	jsonbody.Write(w, p.Status, map[string]any{"error": map[string]string{"code": p.Code, "message": p.Message}, "detail": p.Message})
}

// body reads a request body; an empty one reads as {}.
func body(r *http.Request) ([]byte, error) {
	b, err := io.ReadAll(r.Body)
	var tooBig *http.MaxBytesError
	if errors.As(err, &tooBig) {
		return nil, errorf(http.StatusRequestEntityTooLarge, "too_large", "the body is larger than %d bytes", tooBig.Limit)
	}
	if err != nil {
		return nil, httperr.Invalid("the body could not be read")
	}
	if len(b) == 0 {
		b = []byte("{}")
	}
	return b, nil
}

// decode reads the request's body (an empty one as {}) into v.
func decode(r *http.Request, v any) error {
	b, err := body(r)
	if err != nil {
		return err
	}
	return unmarshal(b, v)
}

// search reads a search body and the page it asks for: 10 by default,
// 1000 at most.
func search(r *http.Request) (q searchBody, limit, offset int, err error) {
	if err = decode(r, &q); err != nil {
		return q, 0, 0, err
	}
	limit, offset, err = page(q.Limit, q.Offset, 10, 1000)
	return q, limit, offset, err
}

func user(r *http.Request) string { return runs.UserFrom(r.Context()) }

// info is GET /info: agent-chat-ui's connection probe.
func (h *handler) info(w http.ResponseWriter, r *http.Request) {
	jsonbody.Write(w, http.StatusOK, map[string]any{"version": h.cfg.Version, "langgraph_py_version": "", "context": "trellis",
		"flags": map[string]bool{"assistants": true, "crons": false, "langsmith": false}})
}

// assistant is the one assistant: the chat agent, graph "agent".
type assistant struct {
	AssistantID string         `json:"assistant_id"`
	GraphID     string         `json:"graph_id"`
	Config      map[string]any `json:"config"`
	Context     map[string]any `json:"context"`
	Metadata    map[string]any `json:"metadata"`
	Name        string         `json:"name"`
	Description string         `json:"description"`
	Version     int            `json:"version"`
	CreatedAt   string         `json:"created_at"`
	UpdatedAt   string         `json:"updated_at"`
}

var epoch = timestamp(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))

func theAssistant() assistant {
	return assistant{AssistantID: graphID, GraphID: graphID, Config: map[string]any{}, Context: map[string]any{},
		Metadata: map[string]any{"created_by": "system"}, Name: "Trellis",
		Description: "Trellis' chat agent: supervisor, tools with approvals, reflection, a streamed answer.",
		Version:     1, CreatedAt: epoch, UpdatedAt: epoch}
}

// checkAssistant accepts the one assistant, by its id or its graph's;
// "" means it.
func checkAssistant(id string) error {
	if id != "" && id != graphID {
		return errorf(http.StatusNotFound, "not_found", "no assistant %q; Trellis serves one, %q", id, graphID)
	}
	return nil
}

func (h *handler) searchAssistants(w http.ResponseWriter, r *http.Request) {
	q, limit, offset, err := search(r)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	out := []assistant{}
	if (q.GraphID == "" || q.GraphID == graphID) && offset == 0 && limit > 0 {
		out = append(out, theAssistant())
	}
	jsonbody.Write(w, http.StatusOK, out)
}

func (h *handler) getAssistant(w http.ResponseWriter, r *http.Request) {
	if err := checkAssistant(chi.URLParam(r, "assistant_id")); err != nil {
		h.fail(w, r, err)
		return
	}
	jsonbody.Write(w, http.StatusOK, theAssistant())
}

// assistantGraph is GET /assistants/{id}/graph: the agent's nodes.
func (h *handler) assistantGraph(w http.ResponseWriter, r *http.Request) {
	if err := checkAssistant(chi.URLParam(r, "assistant_id")); err != nil {
		h.fail(w, r, err)
		return
	}
	jsonbody.Write(w, http.StatusOK, map[string]any{"mermaid": h.runs.Mermaid()})
}
