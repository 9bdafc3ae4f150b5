package web

import (
	"bytes"
	"crypto/sha256"
	"embed"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io/fs"
	"net/http"
	"path"
	"strings"
	"time"
)

//go:embed static
var staticFS embed.FS

// contentSecurityPolicy lets the page load only its own files and talk
// only to its own origin. Operator HTML is shown in a sandboxed iframe
// (srcdoc), which inherits this policy and runs no script; images may
// come from data: URLs or https.
const contentSecurityPolicy = "default-src 'none'; script-src 'self'; style-src 'self' 'unsafe-inline'; " +
	"img-src 'self' data: blob: https:; connect-src 'self'; frame-src 'self'; " +
	"base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

// Handler returns the handler of the web chat page.
//
// It answers GET and HEAD: "/" is the page (static/index.html) and
// "/static/<name>" its files; any other path is 404 and any other method
// 405, both with API.md's error body. Responses carry an exact
// Content-Type, X-Content-Type-Options: nosniff, a strong ETag and
// Cache-Control: no-cache, so a browser revalidates each file and gets a
// 304 while the binary is unchanged. The page itself also carries a
// Content-Security-Policy that keeps it from loading or sending anything
// to another origin.
//
// The handler is safe for concurrent use and holds no state besides the
// embedded files.
func Handler() http.Handler {
	h := &handler{files: make(map[string]asset)}
	err := fs.WalkDir(staticFS, "static", func(name string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		body, err := staticFS.ReadFile(name)
		if err != nil {
			return err
		}
		sum := sha256.Sum256(body)
		h.files["/"+name] = asset{
			body:        body,
			contentType: contentType(name),
			etag:        `"` + base64.RawURLEncoding.EncodeToString(sum[:12]) + `"`,
		}
		return nil
	})
	if err != nil {
		// The files are compiled in; failing to read them is a build bug.
		panic(fmt.Sprintf("web: read embedded files: %v", err))
	}
	return h
}

type handler struct {
	files map[string]asset // by URL path, "/static/app.js"
}

type asset struct {
	body        []byte
	contentType string
	etag        string
}

func (h *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	name := r.URL.Path
	if name == "/" {
		name = "/static/index.html"
	}
	a, ok := h.files[name]
	if !ok {
		writeError(w, http.StatusNotFound, "not_found", fmt.Sprintf("nothing at %s; the chat page is at /", r.URL.Path))
		return
	}
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		writeError(w, http.StatusMethodNotAllowed, "method_not_allowed", fmt.Sprintf("%s is read with GET or HEAD, not %s", r.URL.Path, r.Method))
		return
	}
	hdr := w.Header()
	hdr.Set("Content-Type", a.contentType)
	hdr.Set("Cache-Control", "no-cache")
	hdr.Set("ETag", a.etag)
	hdr.Set("X-Content-Type-Options", "nosniff")
	if strings.HasSuffix(name, ".html") {
		hdr.Set("Content-Security-Policy", contentSecurityPolicy)
		hdr.Set("Referrer-Policy", "no-referrer")
	}
	// ServeContent answers If-None-Match with 304, HEAD and ranges.
	http.ServeContent(w, r, name, time.Time{}, bytes.NewReader(a.body))
}

// contentType is the Content-Type of an embedded file, by extension; the
// list is explicit so the answer does not depend on the host's MIME
// tables.
func contentType(name string) string {
	switch path.Ext(name) {
	case ".html":
		return "text/html; charset=utf-8"
	case ".css":
		return "text/css; charset=utf-8"
	case ".js":
		return "text/javascript; charset=utf-8"
	case ".svg":
		return "image/svg+xml"
	case ".png":
		return "image/png"
	case ".ico":
		return "image/x-icon"
	case ".json":
		return "application/json"
	default:
		return "application/octet-stream"
	}
}

// writeError writes API.md's error body.
func writeError(w http.ResponseWriter, status int, code, message string) {
	type apiError struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	}
	body, _ := json.Marshal(struct {
		Error apiError `json:"error"`
	}{apiError{code, message}})
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	w.Write(append(body, '\n'))
}
