package openai

import (
	"errors"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/trellis-ai/trellis/api/jsonbody"
	"github.com/trellis-ai/trellis/llm"
	"github.com/trellis-ai/trellis/runs"
)

// Config configures the handler. Runs is required.
type Config struct {
	Runs *runs.Service
	// Logger receives failures the client is not told about; nil
	// discards.
	Logger *slog.Logger
	// WriteTimeout bounds each write to the client: the server's, which
	// it passes in.
	WriteTimeout time.Duration
}

type handler struct {
	cfg     Config
	log     *slog.Logger
	created int64
}

// Handler serves the protocol; mount it at /v1.
func Handler(cfg Config) http.Handler {
	h := &handler{cfg: cfg, log: cfg.Logger, created: time.Now().Unix()}
	if h.log == nil {
		h.log = slog.New(slog.DiscardHandler)
	}
	r := chi.NewRouter()
	r.Get("/models", h.listModels)
	r.Get("/models/{id}", h.getModel)
	r.Post("/chat/completions", h.chat)
	r.Post("/responses", h.responses)
	r.Get("/responses/{id}", h.getResponse)
	r.Post("/responses/{id}/cancel", h.cancelResponse)
	r.NotFound(func(w http.ResponseWriter, r *http.Request) {
		writeError(w, &apiError{Status: http.StatusNotFound, Type: "invalid_request_error", Code: ptr("unknown_url"),
			Message: "unknown URL " + r.Method + " " + r.URL.Path})
	})
	r.MethodNotAllowed(func(w http.ResponseWriter, r *http.Request) {
		writeError(w, &apiError{Status: http.StatusMethodNotAllowed, Type: "invalid_request_error",
			Message: r.Method + " is not allowed on " + r.URL.Path})
	})
	return r
}

type model struct {
	ID      string `json:"id"`
	Object  string `json:"object"`
	Created int64  `json:"created"`
	OwnedBy string `json:"owned_by"`
}

// models lists every id and alias of the registry, each once.
func (h *handler) models() []model {
	var out []model
	seen := map[string]bool{}
	add := func(id string) {
		if k := strings.ToLower(id); id != "" && !seen[k] {
			seen[k] = true
			out = append(out, model{ID: id, Object: "model", Created: h.created, OwnedBy: "trellis"})
		}
	}
	for _, m := range h.cfg.Runs.Models().Models() {
		add(m.ID)
		for _, a := range m.Aliases {
			add(a)
		}
	}
	return out
}

func (h *handler) listModels(w http.ResponseWriter, _ *http.Request) {
	jsonbody.Write(w, http.StatusOK, map[string]any{"object": "list", "data": h.models()})
}

func (h *handler) getModel(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	for _, m := range h.models() {
		if strings.EqualFold(m.ID, id) {
			jsonbody.Write(w, http.StatusOK, m)
			return
		}
	}
	writeError(w, modelNotFound(id))
}

func modelNotFound(id string) *apiError {
	return &apiError{Status: http.StatusNotFound, Type: "invalid_request_error", Param: ptr("model"), Code: ptr("model_not_found"),
		Message: "the model " + id + " does not exist; GET /v1/models lists them"}
}

// decode reads the request's body with parse and checks the model it
// names, answering the client when either fails.
func decode[T any](h *handler, w http.ResponseWriter, r *http.Request, parse func([]byte) (T, error), model func(T) string) (T, bool) {
	var zero T
	body, err := io.ReadAll(r.Body)
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			writeError(w, &apiError{Status: http.StatusRequestEntityTooLarge, Type: "invalid_request_error", Message: "the request body is too large"})
			return zero, false
		}
		writeError(w, invalid("", "the request body could not be read"))
		return zero, false
	}
	t, err := parse(body)
	if err != nil {
		writeError(w, err)
		return zero, false
	}
	if _, err := h.cfg.Runs.Models().Resolve(model(t)); err != nil {
		if errors.Is(err, llm.ErrUnknownModel) {
			err = modelNotFound(model(t))
		}
		writeError(w, err)
		return zero, false
	}
	return t, true
}

func (h *handler) chat(w http.ResponseWriter, r *http.Request) {
	t, ok := decode(h, w, r, parseRequest, func(t turn) string { return t.model })
	if !ok {
		return
	}
	ctx := r.Context()
	user := runs.UserFrom(ctx)
	t.input.Model = t.model
	// A completion that is not streamed is written once the run ends.
	rn, sub, err := h.cfg.Runs.Start(ctx, runs.StartRequest{UserID: user, Input: t.input, AwaitsEnd: !t.stream})
	if err != nil {
		h.log.LogAttrs(ctx, slog.LevelWarn, "openai: starting a run failed", slog.Any("error", err))
		writeError(w, err)
		return
	}
	defer sub.Close()
	w.Header().Set("X-Trellis-Conversation-Id", rn.ConversationID())
	c := &completion{id: "chatcmpl-" + rn.ID(), model: t.model, created: time.Now().Unix()}
	var out answerer
	if t.stream {
		out = newStreamer(w, c, t.includeUsage, h.cfg.WriteTimeout)
	} else {
		out = &collector{w: w, c: c, timeout: h.cfg.WriteTimeout}
	}
	// Not streamed, it waits for the end as sync chat does: a subscription
	// cut behind a burst of events is renewed (Rejoin). A client that
	// goes away cancels the run: it stops a completion by aborting its
	// request.
	done, err := h.cfg.Runs.Follow(ctx, runs.FollowRequest{User: user, ConversationID: rn.ConversationID(), RunID: rn.ID(), Sub: sub,
		Rejoin: !t.stream, Gone: out.gone, OnDisconnect: runs.DisconnectCancel},
		func(e *runs.Event) error {
			p, err := e.Typed()
			if err != nil {
				return err
			}
			return c.take(p, out)
		})
	if done || ctx.Err() != nil || out.gone() {
		return
	}
	if err != nil {
		h.log.LogAttrs(ctx, slog.LevelError, "openai: following the run failed", slog.String("run_id", rn.ID()), slog.Any("error", err))
	}
	out.fail(err)
}
