package files

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/go-chi/chi/v5"

	"github.com/trellis-ai/trellis/api/httperr"
	"github.com/trellis-ai/trellis/api/jsonbody"
	"github.com/trellis-ai/trellis/documents/workspace"
	"github.com/trellis-ai/trellis/runs"
)

// Files is what the file endpoints need of the workspace
// (*workspace.Workspaces). Every method checks that user may reach the
// scope, and answers workspace.ErrNotFound when not.
type Files interface {
	List(ctx context.Context, user string, s workspace.Scope, prefix, after string, limit int) ([]workspace.File, string, error)
	Stat(ctx context.Context, user string, s workspace.Scope, path string) (workspace.File, error)
	Read(ctx context.Context, user string, s workspace.Scope, path string) (workspace.File, []byte, error)
	ReadVersion(ctx context.Context, user string, s workspace.Scope, path string, version int) (workspace.Version, []byte, error)
	Write(ctx context.Context, user string, s workspace.Scope, path string, data []byte) (workspace.File, error)
	Delete(ctx context.Context, user string, s workspace.Scope, path string) error
	Versions(ctx context.Context, user string, s workspace.Scope, path string) ([]workspace.Version, error)
	Restore(ctx context.Context, user string, s workspace.Scope, path string, version int) (workspace.File, error)
}

// Presigner is a Files that can link to a version in its bucket: an
// absolute URL that works without credentials until ttl has passed.
// An error matching errors.ErrUnsupported (files not in a bucket, or
// encrypted by Trellis) makes the link one of this server's instead.
type Presigner interface {
	PresignRead(ctx context.Context, user string, s workspace.Scope, path string, version int, ttl time.Duration) (string, error)
}

// Config is the workspace the endpoints serve, and how they answer.
type Config struct {
	// Files is the workspace. Required.
	Files Files
	// Projects is the workspace's projects; nil leaves /projects and
	// PUT /conversations/{id}/project out (404).
	Projects Projects
	// Error answers an error as the native API answers it. Required.
	Error func(http.ResponseWriter, *http.Request, error)
	// MaxFileBytes is the most an uploaded file may hold (413 beyond):
	// the workspace's per-file limit (workspace.Limits.FileBytes). 0
	// means workspace.DefaultFileBytes.
	MaxFileBytes int64
	// LinkKey signs download links. The same key on every process lets
	// any of them serve a link another made; nil means a random key of
	// this process's.
	LinkKey []byte
	// Index, when set, adds a text file to a conversation's documents
	// as POST /documents uploads one, returning the upload's answer and
	// the API's errors; it serves POST …/index.
	Index func(ctx context.Context, user, conversation, filename string, data []byte) (any, error)
	// LinkTTL is how long a download link works; 0 means DefaultLinkTTL.
	LinkTTL time.Duration
	// Now tells the time, for links; nil means time.Now.
	Now func() time.Time
}

// Defaults.
const (
	DefaultLinkTTL = 5 * time.Minute
	// DefaultListLimit and MaxListLimit bound a page of files. With
	// paths of at most workspace.MaxPathBytes, MaxListLimit bounds a
	// page's bytes too, under 1 MiB, as every list's is (docs/api.md).
	DefaultListLimit = 200
	MaxListLimit     = 1000
)

// Handler serves the workspace's endpoints.
type Handler struct{ cfg Config }

// New returns the Handler over cfg.Files.
func New(cfg Config) *Handler {
	if cfg.MaxFileBytes <= 0 {
		cfg.MaxFileBytes = workspace.DefaultFileBytes
	}
	if cfg.LinkTTL <= 0 {
		cfg.LinkTTL = DefaultLinkTTL
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if len(cfg.LinkKey) == 0 {
		cfg.LinkKey = make([]byte, 32)
		rand.Read(cfg.LinkKey) // never fails (crypto/rand)
	}
	return &Handler{cfg: cfg}
}

// Routes adds the workspace's endpoints to r, the router of /api/v1,
// behind authentication.
func (h *Handler) Routes(r chi.Router) {
	r.Get("/files/{scope}/{scope_id}", h.handleList)
	r.Delete("/files/{scope}/{scope_id}", h.handleDelete)
	r.Get("/files/{scope}/{scope_id}/content", h.handleContent)
	r.Put("/files/{scope}/{scope_id}/content", h.handleUpload)
	r.Get("/files/{scope}/{scope_id}/download", h.handleDownload)
	r.Get("/files/{scope}/{scope_id}/versions", h.handleVersions)
	r.Post("/files/{scope}/{scope_id}/restore", h.handleRestore)
	if h.cfg.Index != nil {
		r.Post("/files/{scope}/{scope_id}/index", h.handleIndex)
	}
	if h.cfg.Projects != nil {
		h.projectRoutes(r)
	}
}

// SignedRoutes adds the endpoint of download links to r, the server's
// root router, outside authentication: the token is the credential.
func (h *Handler) SignedRoutes(r chi.Router) {
	r.Get(signedPattern, h.handleSigned)
}

const signedPattern = "/api/v1/files/{scope}/{scope_id}/signed"

// IsUpload reports whether r uploads a file (PUT …/content), whose body
// may be larger than the server's body limit (see UploadLimit).
func IsUpload(r *http.Request) bool {
	return r.Method == http.MethodPut && strings.HasPrefix(r.URL.Path, "/api/v1/files/") && strings.HasSuffix(r.URL.Path, "/content")
}

// UploadLimit is the body limit of an upload, where bodyLimit is the
// server's for other requests.
func (h *Handler) UploadLimit(bodyLimit int64) int64 { return max(bodyLimit, h.cfg.MaxFileBytes) }

// TooLarge is the refusal of a file over the per-file limit, whether
// the body's length told it or reading the file did.
func (h *Handler) TooLarge() error {
	return httperr.New(http.StatusRequestEntityTooLarge, "file_too_large",
		fmt.Sprintf("the file is larger than %d bytes, the most a workspace file may be", h.cfg.MaxFileBytes))
}

// file is a file as the API answers it.
type file struct {
	Path      string    `json:"path"`
	SizeBytes int64     `json:"size_bytes"`
	Version   int       `json:"version"`
	SHA256    string    `json:"sha256"`
	UpdatedAt time.Time `json:"updated_at"`
}

func fileOf(f workspace.File) file {
	return file{Path: f.Path, SizeBytes: f.Size, Version: f.Version, SHA256: f.SHA256, UpdatedAt: f.UpdatedAt.UTC()}
}

// version is a version as the API answers it.
type version struct {
	Version   int       `json:"version"`
	SizeBytes int64     `json:"size_bytes"`
	SHA256    string    `json:"sha256"`
	CreatedAt time.Time `json:"created_at"`
	Op        string    `json:"op"`
}

// scopeOf reads {scope}/{scope_id}: "me" as a user scope's id is the
// caller.
func scopeOf(r *http.Request, user string) (workspace.Scope, error) {
	k, err := workspace.ParseKind(r.PathValue("scope"))
	if err != nil {
		return workspace.Scope{}, httperr.New(http.StatusBadRequest, "invalid_scope",
			fmt.Sprintf("%q is not a scope; use conversation, user or project", r.PathValue("scope")))
	}
	id := r.PathValue("scope_id")
	if k == workspace.KindUser && id == "me" {
		id = user
	}
	return workspace.Scope{Kind: k, ID: id}, nil
}

// query checks that r's query has no parameter but known ones, and
// returns it.
func query(r *http.Request, known ...string) (map[string]string, error) {
	q := r.URL.Query()
	out := make(map[string]string, len(q))
	for name, vs := range q {
		if !contains(known, name) {
			return nil, httperr.New(http.StatusBadRequest, "invalid_parameter",
				fmt.Sprintf("unknown parameter %q; this endpoint takes %s", name, strings.Join(known, ", ")))
		}
		if len(vs) > 1 {
			return nil, httperr.New(http.StatusBadRequest, "invalid_parameter", fmt.Sprintf("parameter %q is given more than once", name))
		}
		out[name] = vs[0]
	}
	return out, nil
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// target is a request's user, scope and the parameters it may take.
type target struct {
	user  string
	scope workspace.Scope
	q     map[string]string
}

// read reads r's user, scope and query, which must name a path when
// needPath.
func read(r *http.Request, needPath bool, known ...string) (target, error) {
	t := target{user: runs.UserFrom(r.Context())}
	var err error
	if t.scope, err = scopeOf(r, t.user); err != nil {
		return t, err
	}
	if t.q, err = query(r, known...); err != nil {
		return t, err
	}
	if needPath && t.q["path"] == "" {
		return t, httperr.New(http.StatusBadRequest, "invalid_path", "the query parameter path is required: the file's path in its scope")
	}
	return t, nil
}

// whole reads a whole number from 1 of parameter name, or 0 when absent.
func whole(q map[string]string, name string) (int, error) {
	v, ok := q[name]
	if !ok {
		return 0, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		return 0, httperr.New(http.StatusBadRequest, "invalid_parameter", fmt.Sprintf("%q must be a whole number from 1", name))
	}
	return n, nil
}

// problem maps the workspace's errors to API statuses; the rest
// (workspace.ErrNotFound, which wraps store's or answers as it, among
// them) are the native API's to answer.
func (h *Handler) problem(err error) error {
	switch {
	case errors.Is(err, workspace.ErrNotFound):
		return httperr.NotFound
	case errors.Is(err, workspace.ErrBadPath):
		return httperr.New(http.StatusBadRequest, "invalid_path", strings.TrimPrefix(err.Error(), "workspace: "))
	case errors.Is(err, workspace.ErrTooLarge):
		return h.TooLarge()
	case errors.Is(err, workspace.ErrQuota):
		return httperr.New(http.StatusConflict, "workspace_quota_exceeded", strings.TrimPrefix(err.Error(), "workspace: "))
	case errors.Is(err, workspace.ErrConflict):
		return httperr.New(http.StatusConflict, "conflict", strings.TrimPrefix(err.Error(), "workspace: "))
	case errors.Is(err, workspace.ErrBadScope):
		return httperr.New(http.StatusBadRequest, "invalid_scope", strings.TrimPrefix(err.Error(), "workspace: "))
	case errors.Is(err, workspace.ErrInvalid):
		return httperr.Invalid("%s", strings.TrimPrefix(err.Error(), "workspace: "))
	}
	return err
}

func (h *Handler) fail(w http.ResponseWriter, r *http.Request, err error) {
	h.cfg.Error(w, r, h.problem(err))
}

// handleList is GET /files/{scope}/{scope_id}?prefix=&after=&limit=.
func (h *Handler) handleList(w http.ResponseWriter, r *http.Request) {
	t, err := read(r, false, "prefix", "after", "limit")
	if err != nil {
		h.fail(w, r, err)
		return
	}
	limit := DefaultListLimit
	if v, ok := t.q["limit"]; ok {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			h.fail(w, r, httperr.New(http.StatusBadRequest, "invalid_parameter", `"limit" must be a whole number, 0 or more`))
			return
		}
		if n > 0 {
			limit = min(n, MaxListLimit)
		}
	}
	fs, next, err := h.cfg.Files.List(r.Context(), t.user, t.scope, t.q["prefix"], t.q["after"], limit)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	out := make([]file, len(fs))
	for i, f := range fs {
		out[i] = fileOf(f)
	}
	jsonbody.Write(w, http.StatusOK, struct {
		Files []file `json:"files"`
		Next  string `json:"next"`
	}{out, next})
}

// handleContent is GET /files/{scope}/{scope_id}/content?path=&version=.
func (h *Handler) handleContent(w http.ResponseWriter, r *http.Request) {
	t, err := read(r, true, "path", "version")
	if err != nil {
		h.fail(w, r, err)
		return
	}
	v, err := whole(t.q, "version")
	if err != nil {
		h.fail(w, r, err)
		return
	}
	path := t.q["path"]
	var (
		data []byte
		ver  int
		sum  string
	)
	if v == 0 {
		var f workspace.File
		f, data, err = h.cfg.Files.Read(r.Context(), t.user, t.scope, path)
		ver, sum = f.Version, f.SHA256
	} else {
		var fv workspace.Version
		fv, data, err = h.cfg.Files.ReadVersion(r.Context(), t.user, t.scope, path, v)
		ver, sum = fv.Version, fv.SHA256
	}
	if err != nil {
		h.fail(w, r, err)
		return
	}
	writeBytes(w, path, ver, sum, data, false)
}

// writeBytes answers a file's bytes, in a sandbox: an HTML file must not
// run as the API's origin.
func writeBytes(w http.ResponseWriter, path string, version int, sum string, data []byte, attachment bool) {
	hd := w.Header()
	hd.Set("Content-Type", contentType(path, data))
	hd.Set("Content-Length", strconv.Itoa(len(data)))
	hd.Set("ETag", strconv.Quote(sum))
	hd.Set("X-File-Version", strconv.Itoa(version))
	hd.Set("X-Content-Type-Options", "nosniff")
	hd.Set("Content-Security-Policy", "sandbox; default-src 'none'")
	if attachment {
		hd.Set("Content-Disposition", attachmentOf(path))
	}
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(data)
}

// handleUpload is PUT /files/{scope}/{scope_id}/content?path=: the body
// is the file, read to one byte past the limit.
func (h *Handler) handleUpload(w http.ResponseWriter, r *http.Request) {
	t, err := read(r, true, "path")
	if err != nil {
		h.fail(w, r, err)
		return
	}
	if r.ContentLength > h.cfg.MaxFileBytes {
		h.fail(w, r, h.TooLarge())
		return
	}
	data, err := io.ReadAll(io.LimitReader(r.Body, h.cfg.MaxFileBytes+1))
	if err != nil {
		if _, ok := errors.AsType[*http.MaxBytesError](err); ok {
			err = h.TooLarge()
		}
		h.fail(w, r, err)
		return
	}
	if int64(len(data)) > h.cfg.MaxFileBytes {
		h.fail(w, r, h.TooLarge())
		return
	}
	f, err := h.cfg.Files.Write(r.Context(), t.user, t.scope, t.q["path"], data)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	// A file's first version is 1, and a path written again after a
	// delete starts over: 1 is a new file, whatever raced with this.
	status := http.StatusOK
	if f.Version == 1 {
		status = http.StatusCreated
	}
	jsonbody.Write(w, status, fileOf(f))
}

// handleDelete is DELETE /files/{scope}/{scope_id}?path=.
func (h *Handler) handleDelete(w http.ResponseWriter, r *http.Request) {
	t, err := read(r, true, "path")
	if err != nil {
		h.fail(w, r, err)
		return
	}
	if err := h.cfg.Files.Delete(r.Context(), t.user, t.scope, t.q["path"]); err != nil {
		h.fail(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// handleVersions is GET /files/{scope}/{scope_id}/versions?path=.
func (h *Handler) handleVersions(w http.ResponseWriter, r *http.Request) {
	t, err := read(r, true, "path")
	if err != nil {
		h.fail(w, r, err)
		return
	}
	vs, err := h.cfg.Files.Versions(r.Context(), t.user, t.scope, t.q["path"])
	if err != nil {
		h.fail(w, r, err)
		return
	}
	out := make([]version, len(vs))
	for i, v := range vs {
		out[i] = version{Version: v.Version, SizeBytes: v.Size, SHA256: v.SHA256, CreatedAt: v.CreatedAt.UTC(), Op: v.Op}
	}
	jsonbody.Write(w, http.StatusOK, map[string][]version{"versions": out})
}

// restoreBody is the body of POST …/restore.
type restoreBody struct {
	Path    *string `json:"path"`
	Version *int    `json:"version"`
}

// handleRestore is POST /files/{scope}/{scope_id}/restore.
func (h *Handler) handleRestore(w http.ResponseWriter, r *http.Request) {
	t, err := read(r, false)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	var b restoreBody
	if err := jsonbody.Decode(r, &b); err != nil {
		h.fail(w, r, err)
		return
	}
	switch {
	case b.Path == nil || *b.Path == "":
		err = httperr.New(http.StatusBadRequest, "invalid_path", `"path" is required: the file's path in its scope`)
	case b.Version == nil || *b.Version < 1:
		err = httperr.New(http.StatusBadRequest, "invalid_field", `"version" is required: a whole number from 1`)
	}
	if err != nil {
		h.fail(w, r, err)
		return
	}
	f, err := h.cfg.Files.Restore(r.Context(), t.user, t.scope, *b.Path, *b.Version)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	jsonbody.Write(w, http.StatusOK, fileOf(f))
}

// indexBody is POST …/index's body.
type indexBody struct {
	Path           string `json:"path"`
	ConversationID string `json:"conversation_id"`
}

// handleIndex is POST /files/{scope}/{scope_id}/index: the file's current
// version becomes a document of the conversation (the scope's own for a
// conversation scope, else conversation_id), as an upload would.
func (h *Handler) handleIndex(w http.ResponseWriter, r *http.Request) {
	t, err := read(r, false)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	var b indexBody
	if err := jsonbody.Decode(r, &b); err != nil {
		h.fail(w, r, err)
		return
	}
	conv := b.ConversationID
	if conv == "" && t.scope.Kind == workspace.KindConversation {
		conv = t.scope.ID
	}
	switch {
	case b.Path == "":
		err = httperr.New(http.StatusBadRequest, "invalid_path", `"path" is required: the file's path in its scope`)
	case conv == "":
		err = httperr.New(http.StatusBadRequest, "invalid_field", `"conversation_id" is required: the conversation whose documents the file joins`)
	}
	if err != nil {
		h.fail(w, r, err)
		return
	}
	f, data, err := h.cfg.Files.Read(r.Context(), t.user, t.scope, b.Path)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	if !utf8.Valid(data) {
		h.fail(w, r, httperr.New(http.StatusUnsupportedMediaType, "unsupported_document_type", fmt.Sprintf("%s is binary data, not text", f.Path)))
		return
	}
	doc, err := h.cfg.Index(r.Context(), t.user, conv, f.Path, data)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	jsonbody.Write(w, http.StatusAccepted, doc)
}
