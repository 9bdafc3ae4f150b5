package web_test

import (
	"crypto/sha256"
	"encoding/hex"
	"io"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"
)

// fakeFile is one file of the fake's workspace, every version kept.
type fakeFile struct {
	versions []fakeVersion
	deleted  bool
}

type fakeVersion struct {
	data    []byte
	op      string
	created time.Time
}

// fakeLinkToken is the one download token the fake gives.
const fakeLinkToken = "fake-signed"

// filesRoutes adds docs/api.md's workspace endpoints (a scope's files,
// their content, versions, restore, upload and download link) to mux,
// over f.workspace: the scope "user/me" and each conversation's.
func (f *contractFake) filesRoutes(mux *http.ServeMux) {
	mux.HandleFunc("GET /api/v1/files/{scope}/{id}", f.listFiles)
	mux.HandleFunc("GET /api/v1/files/{scope}/{id}/content", f.fileContent)
	mux.HandleFunc("PUT /api/v1/files/{scope}/{id}/content", f.uploadFile)
	mux.HandleFunc("GET /api/v1/files/{scope}/{id}/versions", f.fileVersions)
	mux.HandleFunc("POST /api/v1/files/{scope}/{id}/restore", f.restoreFile)
	mux.HandleFunc("GET /api/v1/files/{scope}/{id}/download", f.downloadFile)
	mux.HandleFunc("GET /api/v1/files/{scope}/{id}/signed", f.signedFile)
}

// writeFile writes a version of the conversation's file p, as the agent's
// write_file does, and emits file.changed on the run's stream.
func (r *fakeRun) writeFile(p, content string) {
	r.f.mu.Lock()
	defer r.f.mu.Unlock()
	v := r.f.putLocked("conversation/"+r.conv.id, p, []byte(content), "write")
	r.emitLocked("file.changed", map[string]any{"scope": "conversation", "scope_id": r.conv.id, "path": p, "version": v, "op": "write"})
}

// putLocked adds a version to the file p of scope; the caller holds f.mu.
func (f *contractFake) putLocked(scope, p string, data []byte, op string) int {
	if f.workspace == nil {
		f.workspace = map[string]map[string]*fakeFile{}
	}
	if f.workspace[scope] == nil {
		f.workspace[scope] = map[string]*fakeFile{}
	}
	ff := f.workspace[scope][p]
	if ff == nil {
		ff = &fakeFile{}
		f.workspace[scope][p] = ff
	}
	ff.deleted = false
	ff.versions = append(ff.versions, fakeVersion{data: data, op: op, created: time.Now().UTC()})
	f.notifyLocked()
	return len(ff.versions)
}

// scopeOf names r's scope, "" (after a 404) when it is not the local
// user's.
func (f *contractFake) scopeOf(w http.ResponseWriter, r *http.Request) string {
	scope, id := r.PathValue("scope"), r.PathValue("id")
	switch {
	case scope == "user" && id == "me":
		return "user/me"
	case scope == "conversation" && f.convLocked(id) != nil:
		return "conversation/" + id
	}
	writeErr(w, http.StatusNotFound, "not_found", "no such resource, or it is not yours")
	return ""
}

func (f *contractFake) fileOf(w http.ResponseWriter, r *http.Request, p string) (string, *fakeFile) {
	scope := f.scopeOf(w, r)
	if scope == "" {
		return "", nil
	}
	ff := f.workspace[scope][p]
	if ff == nil || ff.deleted {
		writeErr(w, http.StatusNotFound, "not_found", "no such file")
		return "", nil
	}
	return scope, ff
}

func fileJSON(p string, ff *fakeFile) map[string]any {
	v := ff.versions[len(ff.versions)-1]
	sum := sha256.Sum256(v.data)
	return map[string]any{"path": p, "size_bytes": len(v.data), "version": len(ff.versions),
		"sha256": hex.EncodeToString(sum[:]), "updated_at": v.created.Format(time.RFC3339)}
}

func (f *contractFake) listFiles(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	scope := f.scopeOf(w, r)
	if scope == "" {
		return
	}
	out := []map[string]any{}
	for _, p := range slices.Sorted(maps.Keys(f.workspace[scope])) {
		if ff := f.workspace[scope][p]; !ff.deleted && p > r.URL.Query().Get("after") {
			out = append(out, fileJSON(p, ff))
		}
	}
	writeJSON(w, http.StatusOK, map[string]any{"files": out, "next": ""})
}

func (f *contractFake) fileContent(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	p := r.URL.Query().Get("path")
	_, ff := f.fileOf(w, r, p)
	if ff == nil {
		return
	}
	n := len(ff.versions)
	if v := r.URL.Query().Get("version"); v != "" {
		n, _ = strconv.Atoi(v)
	}
	if n < 1 || n > len(ff.versions) {
		writeErr(w, http.StatusNotFound, "not_found", "no such version")
		return
	}
	w.Header().Set("Content-Type", "text/markdown; charset=utf-8")
	w.Header().Set("Content-Length", strconv.Itoa(len(ff.versions[n-1].data)))
	w.Write(ff.versions[n-1].data)
}

func (f *contractFake) uploadFile(w http.ResponseWriter, r *http.Request) {
	data, _ := io.ReadAll(r.Body)
	f.mu.Lock()
	defer f.mu.Unlock()
	scope := f.scopeOf(w, r)
	if scope == "" {
		return
	}
	p := r.URL.Query().Get("path")
	v := f.putLocked(scope, p, data, "write")
	status := http.StatusOK
	if v == 1 {
		status = http.StatusCreated
	}
	writeJSON(w, status, fileJSON(p, f.workspace[scope][p]))
}

func (f *contractFake) fileVersions(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	_, ff := f.fileOf(w, r, r.URL.Query().Get("path"))
	if ff == nil {
		return
	}
	out := []map[string]any{}
	for i := len(ff.versions) - 1; i >= 0; i-- {
		v := ff.versions[i]
		sum := sha256.Sum256(v.data)
		out = append(out, map[string]any{"version": i + 1, "size_bytes": len(v.data), "sha256": hex.EncodeToString(sum[:]),
			"created_at": v.created.Format(time.RFC3339), "op": v.op})
	}
	writeJSON(w, http.StatusOK, map[string]any{"versions": out})
}

func (f *contractFake) restoreFile(w http.ResponseWriter, r *http.Request) {
	var b struct {
		Path    string `json:"path"`
		Version int    `json:"version"`
	}
	if !decodeStrict(w, r, &b) {
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	scope, ff := f.fileOf(w, r, b.Path)
	if ff == nil {
		return
	}
	if b.Version < 1 || b.Version > len(ff.versions) {
		writeErr(w, http.StatusNotFound, "not_found", "no such version")
		return
	}
	f.putLocked(scope, b.Path, ff.versions[b.Version-1].data, "restore")
	writeJSON(w, http.StatusOK, fileJSON(b.Path, ff))
}

// downloadFile answers a relative link to signedFile, as the server does
// when its files are not in a bucket.
func (f *contractFake) downloadFile(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, ff := f.fileOf(w, r, r.URL.Query().Get("path")); ff == nil {
		return
	}
	q := url.Values{"token": {fakeLinkToken + ":" + r.URL.Query().Get("path")}}
	writeJSON(w, http.StatusOK, map[string]any{"url": "signed?" + q.Encode(), "expires_at": time.Now().Add(5 * time.Minute).UTC().Format(time.RFC3339)})
}

// signedFile serves a link's file; it needs no key, so the fake refuses
// one, as a link followed by a browser sends none.
func (f *contractFake) signedFile(w http.ResponseWriter, r *http.Request) {
	tok, ok := strings.CutPrefix(r.URL.Query().Get("token"), fakeLinkToken+":")
	if !ok || r.Header.Get("Authorization") != "" {
		writeErr(w, http.StatusForbidden, "invalid_link", "not a link of the fake's, or sent with a key")
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	_, ff := f.fileOf(w, r, tok)
	if ff == nil {
		return
	}
	w.Header().Set("Content-Disposition", "attachment")
	w.Write(ff.versions[len(ff.versions)-1].data)
}

// approveWrite asks for an approval of write_file with the diff the
// workspace's tools send, and waits for the page's answer.
func (r *fakeRun) approveWrite(id, p, content, diff string) (map[string]any, bool) {
	w := r.f.expect(id, "approval", nil)
	r.emit("approval.required", map[string]any{"approval_id": id, "tool_call_id": "call-" + id, "tool": "write_file",
		"args": map[string]any{"path": p, "content": content}, "revision": 0, "diff": diff})
	return r.wait(w)
}

// deleteFile deletes the conversation's file p, as delete_file does, and
// emits file.changed (version 0).
func (r *fakeRun) deleteFile(p string) {
	r.f.mu.Lock()
	defer r.f.mu.Unlock()
	if ff := r.f.workspace["conversation/"+r.conv.id][p]; ff != nil {
		ff.deleted = true
	}
	r.emitLocked("file.changed", map[string]any{"scope": "conversation", "scope_id": r.conv.id, "path": p, "version": 0, "op": "delete"})
}
