package web_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"

	"github.com/trellis-ai/trellis/api/web"
)

func TestHandlerServesFiles(t *testing.T) {
	t.Parallel()
	h := web.Handler()
	for _, tc := range []struct {
		path, contentType, contains string
	}{
		{"/", "text/html; charset=utf-8", `<script type="module" src="static/app.js">`},
		{"/static/index.html", "text/html; charset=utf-8", "<title>Trellis</title>"},
		{"/static/app.css", "text/css; charset=utf-8", ":root"},
		{"/static/app.js", "text/javascript; charset=utf-8", "import"},
		{"/static/markdown.js", "text/javascript; charset=utf-8", "export function renderMarkdown"},
		{"/static/sse.js", "text/javascript; charset=utf-8", "export class SSEParser"},
	} {
		t.Run(tc.path, func(t *testing.T) {
			t.Parallel()
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, tc.path, nil))
			res := rec.Result()
			body, _ := io.ReadAll(res.Body)
			if res.StatusCode != http.StatusOK {
				t.Fatalf("status %d", res.StatusCode)
			}
			for k, want := range map[string]string{
				"Content-Type":           tc.contentType,
				"Cache-Control":          "no-cache",
				"X-Content-Type-Options": "nosniff",
			} {
				if got := res.Header.Get(k); got != want {
					t.Errorf("%s = %q, want %q", k, got, want)
				}
			}
			if !strings.Contains(string(body), tc.contains) {
				t.Errorf("the body lacks %q", tc.contains)
			}
			csp := res.Header.Get("Content-Security-Policy")
			if isPage := strings.HasSuffix(tc.contentType, "html; charset=utf-8"); isPage != strings.Contains(csp, "default-src 'none'") {
				t.Errorf("Content-Security-Policy = %q", csp)
			}

			// The ETag makes a revalidation cheap.
			etag := res.Header.Get("ETag")
			if etag == "" {
				t.Fatal("no ETag")
			}
			req := httptest.NewRequest(http.MethodGet, tc.path, nil)
			req.Header.Set("If-None-Match", etag)
			rec = httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			if rec.Code != http.StatusNotModified {
				t.Errorf("If-None-Match: status %d, want 304", rec.Code)
			}
		})
	}
}

func TestHandlerErrors(t *testing.T) {
	t.Parallel()
	h := web.Handler()
	for _, tc := range []struct {
		method, path string
		status       int
		code         string
	}{
		{http.MethodGet, "/nope", http.StatusNotFound, "not_found"},
		{http.MethodGet, "/static/", http.StatusNotFound, "not_found"},
		{http.MethodGet, "/static/../go.mod", http.StatusNotFound, "not_found"},
		{http.MethodPost, "/", http.StatusMethodNotAllowed, "method_not_allowed"},
		{http.MethodDelete, "/static/app.js", http.StatusMethodNotAllowed, "method_not_allowed"},
	} {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(tc.method, tc.path, nil))
		var body struct {
			Error struct{ Code, Message string }
		}
		if err := json.Unmarshal(rec.Body.Bytes(), &body); err != nil {
			t.Errorf("%s %s: the body %q is not API.md's error: %v", tc.method, tc.path, rec.Body, err)
		}
		if rec.Code != tc.status || body.Error.Code != tc.code || body.Error.Message == "" {
			t.Errorf("%s %s = %d %+v, want %d %s", tc.method, tc.path, rec.Code, body.Error, tc.status, tc.code)
		}
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodHead, "/", nil))
	if rec.Code != http.StatusOK || rec.Body.Len() != 0 {
		t.Errorf("HEAD / = %d with %d bytes", rec.Code, rec.Body.Len())
	}
}

// TestPageIsSelfContained checks that the page loads nothing from another
// origin: it must work offline, with no CDN.
func TestPageIsSelfContained(t *testing.T) {
	t.Parallel()
	h := web.Handler()
	get := func(path string) string {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
		if rec.Code != http.StatusOK {
			t.Fatalf("GET %s: %d", path, rec.Code)
		}
		return rec.Body.String()
	}
	index := get("/")
	for _, m := range regexp.MustCompile(`(?:src|href)="([^"]*)"`).FindAllStringSubmatch(index, -1) {
		// Relative, so that the page works under the path prefix a
		// reverse proxy serves it at; auth/login is the server's own
		// sign-in, a link on this origin.
		if u := m[1]; !strings.HasPrefix(u, "static/") && !strings.HasPrefix(u, "#") && u != "data:," && u != "auth/login" {
			t.Errorf("index.html refers to %q", u)
		}
	}
	// Every module the page imports is served, and imports only relative paths.
	seen := map[string]bool{}
	queue := []string{"app.js"}
	for len(queue) > 0 {
		name := queue[0]
		queue = queue[1:]
		if seen[name] {
			continue
		}
		seen[name] = true
		src := get("/static/" + name)
		for _, m := range regexp.MustCompile(`(?m)^import .* from "([^"]+)";$`).FindAllStringSubmatch(src, -1) {
			if !strings.HasPrefix(m[1], "./") {
				t.Errorf("%s imports %q", name, m[1])
				continue
			}
			queue = append(queue, strings.TrimPrefix(m[1], "./"))
		}
		if regexp.MustCompile(`fetch\(\s*["'\x60]https?:`).MatchString(src) {
			t.Errorf("%s fetches from another origin", name)
		}
	}
	if len(seen) < 7 {
		t.Errorf("found only the modules %v", seen)
	}
}
