package docs

import (
	"context"
	"log/slog"
	"net/http"

	"github.com/trellis-ai/trellis/documents/ingest"
	"github.com/trellis-ai/trellis/internal/sse"
	"github.com/trellis-ai/trellis/runs"
)

// Config is the document service the endpoints serve, and how they
// answer.
type Config struct {
	// Documents is the document service. Required.
	Documents *ingest.Service
	// Error answers an error as the native API answers it. Required.
	Error func(http.ResponseWriter, *http.Request, error)
	// Logger receives what a stream's reads of the documents could not
	// tell; nil discards.
	Logger *slog.Logger
}

// Handler serves the documents endpoints, and document.status on the
// native API's streams.
type Handler struct{ cfg Config }

// New returns the Handler over cfg.Documents.
func New(cfg Config) *Handler {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	return &Handler{cfg: cfg}
}

// Watch sets req to write document.status on sw (see documentWatch)
// while Follow follows the run, and returns what stops watching, to call
// once Follow returns.
func (h *Handler) Watch(ctx context.Context, req *runs.FollowRequest, sw *sse.Writer) (stop func()) {
	// Watched before the first read, so that no change falls between.
	w := h.cfg.Documents.Watch(req.ConversationID)
	dw := &documentWatch{h: h, ctx: ctx, user: req.User, conv: req.ConversationID, sw: sw, w: w}
	req.PollEvery, req.PollNow, req.Poll = documentPoll, w.C, dw.poll
	return w.Close
}
