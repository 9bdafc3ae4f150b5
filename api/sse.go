package api

import (
	"net/http"
	"time"

	"github.com/trellis-ai/trellis/internal/sse"
)

// startSSE starts a run's stream with API.md's headers naming its
// conversation and run. Each stored event is then a frame with its seq
// as id; a document.status notice is a frame with no id, so it takes no
// seq and leaves the client's Last-Event-ID where the run's events put
// it.
func startSSE(w http.ResponseWriter, conversationID, runID string, timeout time.Duration) *sse.Writer {
	h := w.Header()
	h.Set("X-Conversation-ID", conversationID)
	h.Set("X-Run-ID", runID)
	return sse.Start(w, timeout)
}
