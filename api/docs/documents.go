package docs

import (
	"context"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strconv"
	"strings"

	"github.com/go-chi/chi/v5"

	"github.com/trellis-ai/trellis/api/httperr"
	"github.com/trellis-ai/trellis/api/jsonbody"
	"github.com/trellis-ai/trellis/api/paging"
	"github.com/trellis-ai/trellis/documents"
	"github.com/trellis-ai/trellis/documents/ingest"
	"github.com/trellis-ai/trellis/runs"
	"github.com/trellis-ai/trellis/store"
)

// UploadPath is the one route of the server whose body may be larger
// than its body limit: a document of the service's size limit and its
// multipart framing (see UploadLimit).
const UploadPath = "/api/v1/documents"

// multipartSlack is what multipart framing and the conversation_id field
// may add to a document's bytes.
const multipartSlack = 64 << 10

// UploadLimit is the body limit of an upload, where bodyLimit is the
// server's for other requests.
func (h *Handler) UploadLimit(bodyLimit int64) int64 {
	return max(bodyLimit, h.cfg.Documents.MaxBytes()+multipartSlack)
}

// Routes adds the documents endpoints to r, the router of /api/v1.
func (h *Handler) Routes(r chi.Router) {
	r.Post("/documents", h.handleUploadDocument)
	r.Get("/documents/{conversation_id}", h.handleListDocuments)
	r.Get("/documents/{conversation_id}/{document_id}/status", h.handleDocumentStatus)
	r.Get("/documents/{conversation_id}/{document_id}/content", h.handleDocumentContent)
	r.Delete("/documents/{conversation_id}/{document_id}", h.handleDeleteDocument)
}

// uploadAnswer is the 202 of an upload.
type uploadAnswer struct {
	DocumentID     string               `json:"document_id"`
	ConversationID string               `json:"conversation_id"`
	Filename       string               `json:"filename"`
	ContentType    string               `json:"content_type"`
	SizeBytes      int64                `json:"size_bytes"`
	Status         store.DocumentStatus `json:"status"`
}

// handleUploadDocument is POST /api/v1/documents: multipart with a file
// part "file" and an optional field "conversation_id". The file is read
// to one byte past the limit, so a file too large is refused without
// reading the rest of it into memory.
func (h *Handler) handleUploadDocument(w http.ResponseWriter, r *http.Request) {
	mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if mt != "multipart/form-data" {
		h.cfg.Error(w, r, httperr.New(http.StatusUnsupportedMediaType, "unsupported_media_type",
			"upload a document as multipart/form-data with the file in a part named \"file\" (and optionally conversation_id)"))
		return
	}
	mr, err := r.MultipartReader()
	if err != nil {
		h.cfg.Error(w, r, httperr.New(http.StatusBadRequest, "invalid_multipart", "the multipart body cannot be read: "+err.Error()))
		return
	}
	limit := h.cfg.Documents.MaxBytes()
	var up ingest.Upload
	gotFile := false
	for {
		part, err := mr.NextPart()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			h.cfg.Error(w, r, multipartError(err))
			return
		}
		switch part.FormName() {
		case "file":
			if gotFile {
				h.cfg.Error(w, r, httperr.New(http.StatusBadRequest, "invalid_multipart", "send one file per upload"))
				return
			}
			gotFile = true
			up.Filename = part.FileName()
			up.Data, err = io.ReadAll(io.LimitReader(part, limit+1))
			if err != nil {
				h.cfg.Error(w, r, multipartError(err))
				return
			}
			if int64(len(up.Data)) > limit {
				h.cfg.Error(w, r, h.TooLarge())
				return
			}
		case "conversation_id":
			b, err := io.ReadAll(io.LimitReader(part, 257))
			if err != nil {
				h.cfg.Error(w, r, multipartError(err))
				return
			}
			up.ConversationID = strings.TrimSpace(string(b))
			if up.ConversationID == "" {
				h.cfg.Error(w, r, httperr.New(http.StatusBadRequest, "invalid_request", "conversation_id is empty; leave the field out for a new conversation"))
				return
			}
		}
		part.Close()
	}
	if !gotFile {
		h.cfg.Error(w, r, httperr.New(http.StatusBadRequest, "missing_file", "the upload has no part named \"file\""))
		return
	}
	up.UserID = runs.UserFrom(r.Context())
	a, err := h.Upload(r.Context(), up)
	if err != nil {
		h.cfg.Error(w, r, err)
		return
	}
	jsonbody.Write(w, http.StatusAccepted, a)
}

// Upload uploads a document as POST /documents does, for another
// endpoint that adds one (the workspace's index): its answer is the
// upload's JSON, its errors are the API's.
func (h *Handler) Upload(ctx context.Context, up ingest.Upload) (any, error) {
	d, err := h.cfg.Documents.Upload(ctx, up)
	if err != nil {
		return nil, h.documentError(err)
	}
	return uploadAnswer{DocumentID: d.ID, ConversationID: d.ConversationID, Filename: d.Filename,
		ContentType: d.ContentType, SizeBytes: d.SizeBytes, Status: d.Status}, nil
}

// multipartError is a body that broke off or was too large.
func multipartError(err error) error {
	if _, ok := errors.AsType[*http.MaxBytesError](err); ok {
		return err
	}
	return httperr.New(http.StatusBadRequest, "invalid_multipart", "the multipart body cannot be read: "+err.Error())
}

// TooLarge is the refusal of a file over the document limit,
// whether the body's length told it or reading the file did: the limit
// the user can act on, not the body's, which counts the framing too.
func (h *Handler) TooLarge() error {
	return h.documentError(&ingest.TooLarge{Limit: h.cfg.Documents.MaxBytes()})
}

// documentError maps the document service's errors to API.md's.
func (h *Handler) documentError(err error) error {
	var tooLarge *ingest.TooLarge
	switch {
	case errors.As(err, &tooLarge):
		return httperr.New(http.StatusRequestEntityTooLarge, "document_too_large",
			fmt.Sprintf("the file is larger than %d bytes, the most a document may be", tooLarge.Limit))
	case errors.Is(err, documents.ErrUnsupported):
		return httperr.New(http.StatusUnsupportedMediaType, "unsupported_document_type", strings.TrimPrefix(err.Error(), "documents: "))
	case errors.Is(err, documents.ErrEmpty):
		return httperr.New(http.StatusBadRequest, "empty_document", "the file is empty or has no text")
	case errors.Is(err, documents.ErrUnreadable):
		return httperr.New(http.StatusBadRequest, "unreadable_document", strings.TrimPrefix(err.Error(), "documents: "))
	case errors.Is(err, store.ErrTooMany):
		return httperr.New(http.StatusConflict, "too_many_documents", "the conversation holds as many documents as it may; delete one first")
	}
	return err
}

// handleListDocuments is GET
// /api/v1/documents/{conversation_id}?limit=&cursor=.
func (h *Handler) handleListDocuments(w http.ResponseWriter, r *http.Request) {
	page, err := paging.Page(r)
	if err != nil {
		h.cfg.Error(w, r, err)
		return
	}
	p, err := h.cfg.Documents.List(r.Context(), runs.UserFrom(r.Context()), r.PathValue("conversation_id"), page)
	if err != nil {
		h.cfg.Error(w, r, err)
		return
	}
	paging.NextCursor(w, p.NextCursor)
	jsonbody.Write(w, http.StatusOK, map[string][]store.Document{"documents": p.Documents})
}

// documentStatus is the answer of GET …/status.
type documentStatus struct {
	DocumentID string               `json:"document_id"`
	Status     store.DocumentStatus `json:"status"`
	Error      string               `json:"error"`
}

func (h *Handler) handleDocumentStatus(w http.ResponseWriter, r *http.Request) {
	d, err := h.cfg.Documents.Get(r.Context(), runs.UserFrom(r.Context()), r.PathValue("conversation_id"), r.PathValue("document_id"))
	if err != nil {
		h.cfg.Error(w, r, err)
		return
	}
	jsonbody.Write(w, http.StatusOK, documentStatus{DocumentID: d.ID, Status: d.Status, Error: d.Error})
}

// handleDocumentContent answers the original bytes with their sniffed
// type, as an attachment in a sandbox: an uploaded HTML page must not
// run as the API's origin.
func (h *Handler) handleDocumentContent(w http.ResponseWriter, r *http.Request) {
	d, data, err := h.cfg.Documents.Content(r.Context(), runs.UserFrom(r.Context()), r.PathValue("conversation_id"), r.PathValue("document_id"))
	if err != nil {
		h.cfg.Error(w, r, err)
		return
	}
	ct := d.ContentType
	if strings.HasPrefix(ct, "text/") {
		ct += "; charset=utf-8"
	}
	hd := w.Header()
	hd.Set("Content-Type", ct)
	hd.Set("Content-Length", strconv.Itoa(len(data)))
	hd.Set("Content-Disposition", mime.FormatMediaType("attachment", map[string]string{"filename": d.Filename}))
	hd.Set("X-Content-Type-Options", "nosniff")
	hd.Set("Content-Security-Policy", "sandbox; default-src 'none'")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(data)
}

func (h *Handler) handleDeleteDocument(w http.ResponseWriter, r *http.Request) {
	if err := h.cfg.Documents.Delete(r.Context(), runs.UserFrom(r.Context()), r.PathValue("conversation_id"), r.PathValue("document_id")); err != nil {
		h.cfg.Error(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// Check answers 404 unless every id is a document of the user's in the
// conversation: a request scoped to documents that are not there starts
// no run. A new conversation (no id) has none, and neither has any
// conversation with a nil Handler (no document service).
func (h *Handler) Check(r *http.Request, conversationID string, ids []string) error {
	if len(ids) == 0 {
		return nil
	}
	if conversationID == "" || h == nil {
		return httperr.New(http.StatusNotFound, "not_found", fmt.Sprintf("no document %q in this conversation", ids[0]))
	}
	for _, id := range ids {
		if _, err := h.cfg.Documents.Get(r.Context(), runs.UserFrom(r.Context()), conversationID, id); errors.Is(err, store.ErrNotFound) {
			return httperr.New(http.StatusNotFound, "not_found", fmt.Sprintf("no document %q in this conversation", id))
		} else if err != nil {
			return err
		}
	}
	return nil
}
