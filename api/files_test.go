package api_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3mem"

	"github.com/trellis-ai/trellis/api/apitest"
	"github.com/trellis-ai/trellis/documents"
	"github.com/trellis-ai/trellis/documents/ingest"
	"github.com/trellis-ai/trellis/documents/s3store"
	"github.com/trellis-ai/trellis/documents/workspace"
	"github.com/trellis-ai/trellis/store"
)

// fileReply is a file as the API answers it.
type fileReply struct {
	Path      string    `json:"path"`
	SizeBytes int64     `json:"size_bytes"`
	Version   int       `json:"version"`
	SHA256    string    `json:"sha256"`
	UpdatedAt time.Time `json:"updated_at"`
}

type projectReply struct {
	ID      string   `json:"id"`
	Name    string   `json:"name"`
	Owner   string   `json:"owner"`
	Members []string `json:"members"`
}

// filesEnv is a server with a workspace whose bytes go to files (a
// directory when nil) and whose files are at most fileBytes (default
// when 0).
func filesEnv(t *testing.T, b backend, files documents.Storage, fileBytes int64) (*env, *workspace.Workspaces) {
	t.Helper()
	if files == nil {
		fs, err := documents.NewFileStorage(t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		files = fs
	}
	var ws *workspace.Workspaces
	e := newEnv(t, envOptions{backend: b, configure: func(c *apitest.Config) {
		ws = workspace.New(c.API.Store.(workspace.Record), files, workspace.Limits{FileBytes: fileBytes})
		c.API.Workspace = ws
	}})
	return e, ws
}

func (e *env) conversation(user string) string {
	e.t.Helper()
	c, err := e.store.CreateConversation(e.t.Context(), store.NewConversation{UserID: user})
	if err != nil {
		e.t.Fatal(err)
	}
	return c.ID
}

// put uploads content as e's user to base (…/files/{scope}/{id}) at p.
func (e *env) put(key, base, p, content string) (int, []byte) {
	e.t.Helper()
	return e.doAs(key, "PUT", base+"/content?path="+url.QueryEscape(p), []byte(content), "Content-Type", "text/markdown")
}

func hexSum(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}

// TestFilesEndpoints: a file is uploaded (201, then 200 with a new
// version), listed, read (current and earlier versions, typed by its
// extension), its versions listed, an earlier one restored as a new
// version, fetched through its download link without a key, and deleted;
// on both backends.
func TestFilesEndpoints(t *testing.T) {
	for _, b := range backends {
		t.Run(string(b), func(t *testing.T) {
			e, _ := filesEnv(t, b, nil, 0)
			cid := e.conversation("alice")
			base := "/api/v1/files/conversation/" + cid

			st, body := e.put(aliceKey, base, "notes/today.md", "hello")
			if st != http.StatusCreated {
				t.Fatalf("first PUT = %d %s, want 201", st, body)
			}
			f := jsonOf[fileReply](t, body)
			if f.Path != "notes/today.md" || f.Version != 1 || f.SizeBytes != 5 || f.SHA256 != hexSum("hello") || f.UpdatedAt.IsZero() {
				t.Errorf("the new file = %+v", f)
			}
			st, body = e.put(aliceKey, base, "notes/today.md", "hello\nworld")
			if st != http.StatusOK || jsonOf[fileReply](t, body).Version != 2 {
				t.Fatalf("second PUT = %d %s, want 200 with version 2", st, body)
			}
			if st, body := e.put(aliceKey, base, "a.txt", "a"); st != http.StatusCreated {
				t.Fatalf("PUT a.txt = %d %s", st, body)
			}

			st, body = e.do("GET", base, nil)
			list := jsonOf[struct {
				Files []fileReply `json:"files"`
				Next  *string     `json:"next"`
			}](t, body)
			if st != http.StatusOK || len(list.Files) != 2 || list.Files[0].Path != "a.txt" || list.Files[1].Path != "notes/today.md" ||
				list.Next == nil || *list.Next != "" {
				t.Fatalf("GET list = %d %s", st, body)
			}
			// Paged by limit, then by prefix.
			st, body = e.do("GET", base+"?limit=1", nil)
			if p := jsonOf[struct {
				Files []fileReply `json:"files"`
				Next  string      `json:"next"`
			}](t, body); st != 200 || len(p.Files) != 1 || p.Next != "a.txt" {
				t.Errorf("GET ?limit=1 = %d %s, want a.txt and next a.txt", st, body)
			}
			st, body = e.do("GET", base+"?after=a.txt", nil)
			if !bytes.Contains(body, []byte(`"notes/today.md"`)) || bytes.Contains(body, []byte(`"a.txt"`)) {
				t.Errorf("GET ?after=a.txt = %d %s", st, body)
			}
			st, body = e.do("GET", base+"?prefix=notes/", nil)
			if !bytes.Contains(body, []byte(`"notes/today.md"`)) || bytes.Contains(body, []byte(`"a.txt"`)) {
				t.Errorf("GET ?prefix=notes/ = %d %s", st, body)
			}

			r := send(t, e.ts.Client(), e.request("GET", base+"/content?path=notes/today.md", nil, aliceKey))
			if r.status != 200 || string(r.body) != "hello\nworld" || r.header.Get("Content-Type") != "text/markdown; charset=utf-8" ||
				r.header.Get("X-File-Version") != "2" || r.header.Get("ETag") != `"`+hexSum("hello\nworld")+`"` ||
				!strings.Contains(r.header.Get("Content-Security-Policy"), "sandbox") {
				t.Errorf("GET content = %d %q %v", r.status, r.body, r.header)
			}
			r = send(t, e.ts.Client(), e.request("GET", base+"/content?path=notes/today.md&version=1", nil, aliceKey))
			if r.status != 200 || string(r.body) != "hello" || r.header.Get("X-File-Version") != "1" {
				t.Errorf("GET content of version 1 = %d %q", r.status, r.body)
			}

			st, body = e.do("GET", base+"/versions?path=notes/today.md", nil)
			vs := jsonOf[struct {
				Versions []struct {
					Version   int       `json:"version"`
					SizeBytes int64     `json:"size_bytes"`
					SHA256    string    `json:"sha256"`
					CreatedAt time.Time `json:"created_at"`
					Op        string    `json:"op"`
				} `json:"versions"`
			}](t, body)
			if st != 200 || len(vs.Versions) != 2 || vs.Versions[1].Version != 2 || vs.Versions[0].SHA256 != hexSum("hello") ||
				vs.Versions[0].Op != "write" || vs.Versions[0].CreatedAt.IsZero() {
				t.Errorf("GET versions = %d %s", st, body)
			}

			st, body = e.do("POST", base+"/restore", map[string]any{"path": "notes/today.md", "version": 1})
			if f := jsonOf[fileReply](t, body); st != 200 || f.Version != 3 || f.SHA256 != hexSum("hello") {
				t.Fatalf("POST restore = %d %s, want version 3 with version 1's bytes", st, body)
			}

			st, body = e.do("GET", base+"/download?path=notes/today.md", nil)
			link := jsonOf[struct {
				URL       string    `json:"url"`
				ExpiresAt time.Time `json:"expires_at"`
			}](t, body)
			if st != 200 || !strings.HasPrefix(link.URL, "signed?token=") || time.Until(link.ExpiresAt) < 4*time.Minute || time.Until(link.ExpiresAt) > 6*time.Minute {
				t.Fatalf("GET download = %d %s", st, body)
			}
			u, _ := url.Parse(e.ts.URL + base + "/download")
			signed := u.ResolveReference(&url.URL{Path: "signed", RawQuery: strings.TrimPrefix(link.URL, "signed?")}).String()
			resp, err := http.Get(signed) // no key
			if err != nil {
				t.Fatal(err)
			}
			got := readBody(t, resp)
			if resp.StatusCode != 200 || got != "hello" || !strings.Contains(resp.Header.Get("Content-Disposition"), `filename=today.md`) {
				t.Errorf("GET the signed link without a key = %d %q %v", resp.StatusCode, got, resp.Header)
			}
			// The link names its scope: under another's path it is refused.
			other := strings.Replace(signed, "/conversation/"+cid+"/", "/user/alice/", 1)
			if resp, err := http.Get(other); err != nil || resp.StatusCode != http.StatusForbidden {
				t.Errorf("the link under another scope's path = %v %v, want 403", resp, err)
			} else {
				resp.Body.Close()
			}

			if st, body := e.do("DELETE", base+"?path=notes/today.md", nil); st != http.StatusNoContent {
				t.Fatalf("DELETE = %d %s", st, body)
			}
			st, body = e.do("GET", base+"/content?path=notes/today.md", nil)
			wantError(t, st, body, http.StatusNotFound)
			if resp, err := http.Get(signed); err != nil || resp.StatusCode != http.StatusNotFound {
				t.Errorf("the link of a deleted file = %v %v, want 404", resp, err)
			} else {
				resp.Body.Close()
			}
		})
	}
}

func readBody(t *testing.T, resp *http.Response) string {
	t.Helper()
	defer resp.Body.Close()
	b, err := readAll(resp)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestFilesIsolation: bob gets 404 on alice's conversation scope,
// alice's user scope, and a project he is not a member of, for every
// endpoint, and nothing of hers changes; made a member, he reaches the
// project.
func TestFilesIsolation(t *testing.T) {
	for _, b := range backends {
		t.Run(string(b), func(t *testing.T) {
			e, _ := filesEnv(t, b, nil, 0)
			cid := e.conversation("alice")
			st, body := e.do("POST", "/api/v1/projects", map[string]any{"name": "Apollo"})
			if st != http.StatusCreated {
				t.Fatalf("POST project = %d %s", st, body)
			}
			pid := jsonOf[projectReply](t, body).ID
			bases := map[string]string{
				"conversation": "/api/v1/files/conversation/" + cid,
				"user":         "/api/v1/files/user/alice",
				"project":      "/api/v1/files/project/" + pid,
			}
			for _, base := range bases {
				if st, body := e.put(aliceKey, base, "secret.md", "alice's"); st != http.StatusCreated {
					t.Fatalf("alice's PUT %s = %d %s", base, st, body)
				}
				if st, body := e.put(aliceKey, base, "secret.md", "alice's, v2"); st != http.StatusOK {
					t.Fatalf("alice's second PUT %s = %d %s", base, st, body)
				}
			}
			for scope, base := range bases {
				for _, c := range []struct {
					method, path string
					body         any
				}{
					{"GET", base, nil},
					{"GET", base + "/content?path=secret.md", nil},
					{"GET", base + "/content?path=secret.md&version=1", nil},
					{"GET", base + "/download?path=secret.md", nil},
					{"PUT", base + "/content?path=secret.md", []byte("bob's")},
					{"PUT", base + "/content?path=new.md", []byte("bob's")},
					{"DELETE", base + "?path=secret.md", nil},
					{"GET", base + "/versions?path=secret.md", nil},
					{"POST", base + "/restore", map[string]any{"path": "secret.md", "version": 1}},
				} {
					st, body := e.doAs(bobKey, c.method, c.path, c.body)
					if st != http.StatusNotFound {
						t.Errorf("bob's %s %s (%s scope) = %d %s, want 404", c.method, c.path, scope, st, body)
					}
				}
				st, body := e.do("GET", base+"/content?path=secret.md", nil)
				if st != 200 || string(body) != "alice's, v2" {
					t.Errorf("alice's %s file after bob's tries = %d %q", scope, st, body)
				}
				st, body = e.do("GET", base, nil)
				if st != 200 || bytes.Contains(body, []byte("new.md")) {
					t.Errorf("alice's %s list after bob's tries = %d %s", scope, st, body)
				}
			}
			// "me" is bob himself, not alice.
			if st, body := e.doAs(bobKey, "GET", "/api/v1/files/user/me/content?path=secret.md", nil); st != http.StatusNotFound {
				t.Errorf("bob's user/me = %d %s, want 404", st, body)
			}
			// Projects: bob sees none of alice's and cannot manage it.
			for _, c := range []struct {
				method, path string
				body         any
			}{
				{"GET", "/api/v1/projects/" + pid, nil},
				{"DELETE", "/api/v1/projects/" + pid, nil},
				{"POST", "/api/v1/projects/" + pid + "/members", map[string]any{"user_id": "bob"}},
				{"DELETE", "/api/v1/projects/" + pid + "/members/alice", nil},
				{"PUT", "/api/v1/conversations/" + cid + "/project", map[string]any{"project_id": pid}},
			} {
				if st, body := e.doAs(bobKey, c.method, c.path, c.body); st != http.StatusNotFound {
					t.Errorf("bob's %s %s = %d %s, want 404", c.method, c.path, st, body)
				}
			}
			if _, body := e.doAs(bobKey, "GET", "/api/v1/projects", nil); bytes.Contains(body, []byte(pid)) {
				t.Errorf("bob's projects list alice's: %s", body)
			}

			// A member reaches the project's files, but may not manage it.
			st, body = e.do("POST", "/api/v1/projects/"+pid+"/members", map[string]any{"user_id": "bob"})
			if p := jsonOf[projectReply](t, body); st != 200 || fmt.Sprint(p.Members) != "[alice bob]" || p.Owner != "alice" {
				t.Fatalf("add bob = %d %s", st, body)
			}
			if st, body := e.doAs(bobKey, "GET", bases["project"]+"/content?path=secret.md", nil); st != 200 || string(body) != "alice's, v2" {
				t.Errorf("member bob reads the project's file = %d %q", st, body)
			}
			if st, body := e.doAs(bobKey, "DELETE", "/api/v1/projects/"+pid, nil); st != http.StatusNotFound {
				t.Errorf("member bob deletes the project = %d %s, want 404", st, body)
			}
			st, body = e.do("DELETE", "/api/v1/projects/"+pid+"/members/bob", nil)
			if st != 200 {
				t.Fatalf("remove bob = %d %s", st, body)
			}
			if st, body := e.doAs(bobKey, "GET", bases["project"], nil); st != http.StatusNotFound {
				t.Errorf("bob, removed, lists the project = %d %s, want 404", st, body)
			}
		})
	}
}

// TestFilesBadRequests: what the endpoints refuse, with the status and
// code docs/api.md gives, storing nothing.
func TestFilesBadRequests(t *testing.T) {
	for _, b := range backends {
		t.Run(string(b), func(t *testing.T) {
			e, _ := filesEnv(t, b, nil, 64)
			cid := e.conversation("alice")
			base := "/api/v1/files/conversation/" + cid
			if st, body := e.put(aliceKey, base, "keep.md", "kept"); st != http.StatusCreated {
				t.Fatalf("PUT = %d %s", st, body)
			}
			big := strings.Repeat("x", 65)
			for _, c := range []struct {
				name, method, path string
				body               any
				headers            []string
				status             int
				code               string
			}{
				{"unknown scope", "GET", "/api/v1/files/team/x", nil, nil, 400, "invalid_scope"},
				{"no path", "GET", base + "/content", nil, nil, 400, "invalid_path"},
				{"dot-dot path", "PUT", base + "/content?path=../x.md", []byte("x"), nil, 400, "invalid_path"},
				{"absolute path", "PUT", base + "/content?path=/x.md", []byte("x"), nil, 400, "invalid_path"},
				{"unknown parameter", "GET", base + "?sort=size", nil, nil, 400, "invalid_parameter"},
				{"negative limit", "GET", base + "?limit=-1", nil, nil, 400, "invalid_parameter"},
				{"version zero", "GET", base + "/content?path=keep.md&version=0", nil, nil, 400, "invalid_parameter"},
				{"missing version", "GET", base + "/content?path=keep.md&version=9", nil, nil, 404, "not_found"},
				{"too large", "PUT", base + "/content?path=big.md", []byte(big), nil, 413, "file_too_large"},
				{"restore unknown field", "POST", base + "/restore", map[string]any{"path": "keep.md", "version": 1, "x": 1}, nil, 400, "unknown_field"},
				{"restore no version", "POST", base + "/restore", map[string]any{"path": "keep.md"}, nil, 400, "invalid_field"},
				{"restore not JSON", "POST", base + "/restore", []byte("path=keep.md"), []string{"Content-Type", "text/plain"}, 415, "unsupported_media_type"},
				{"project no name", "POST", "/api/v1/projects", map[string]any{"name": ""}, nil, 400, "invalid_request"},
				{"project long name", "POST", "/api/v1/projects", map[string]any{"name": strings.Repeat("n", 201)}, nil, 400, "invalid_request"},
				{"attach no field", "PUT", "/api/v1/conversations/" + cid + "/project", map[string]any{}, nil, 400, "invalid_field"},
				{"signed bad token", "GET", base + "/signed?token=abc.def", nil, nil, 403, "invalid_link"},
			} {
				st, body := e.do(c.method, c.path, c.body, c.headers...)
				if got := jsonOf[apiError](t, body).Error.Code; st != c.status || got != c.code {
					t.Errorf("%s: %s %s = %d %s, want %d %s", c.name, c.method, c.path, st, body, c.status, c.code)
				}
			}
			// A too large body whose length is not told is refused as
			// well, by reading one byte past the limit.
			req := e.request("PUT", base+"/content?path=big.md", nil, aliceKey)
			req.Body, req.ContentLength = readCloser(big), -1
			if r := send(t, e.ts.Client(), req); r.status != 413 || !bytes.Contains(r.body, []byte("file_too_large")) {
				t.Errorf("a chunked too large body = %d %s", r.status, r.body)
			}
			st, body := e.do("GET", base, nil)
			if st != 200 || bytes.Count(body, []byte(`"path"`)) != 1 {
				t.Errorf("after the refusals the list = %d %s, want keep.md alone", st, body)
			}
			if st, body := e.do("GET", "/api/v1/projects", nil); st != 200 || !bytes.Equal(bytes.TrimSpace(body), []byte(`{"projects":[]}`)) {
				t.Errorf("after the refusals the projects = %d %s", st, body)
			}
		})
	}
}

type stringCloser struct{ *strings.Reader }

func (stringCloser) Close() error { return nil }

func readCloser(s string) stringCloser { return stringCloser{strings.NewReader(s)} }

// TestProjectsEndpoints: a project is made, listed, read, gets and loses
// a member, keeps its owner, takes a conversation and lets it go, and is
// deleted with its files.
func TestProjectsEndpoints(t *testing.T) {
	for _, b := range backends {
		t.Run(string(b), func(t *testing.T) {
			e, ws := filesEnv(t, b, nil, 0)
			st, body := e.do("POST", "/api/v1/projects", map[string]any{"name": "Apollo"})
			p := jsonOf[projectReply](t, body)
			if st != http.StatusCreated || p.Name != "Apollo" || p.Owner != "alice" || fmt.Sprint(p.Members) != "[alice]" || p.ID == "" {
				t.Fatalf("POST /projects = %d %s", st, body)
			}
			st, body = e.do("GET", "/api/v1/projects", nil)
			if st != 200 || !bytes.Contains(body, []byte(p.ID)) {
				t.Errorf("GET /projects = %d %s", st, body)
			}
			if st, body := e.do("GET", "/api/v1/projects/"+p.ID, nil); st != 200 || !bytes.Contains(body, []byte(`"created_at"`)) {
				t.Errorf("GET /projects/{id} = %d %s", st, body)
			}
			st, body = e.do("DELETE", "/api/v1/projects/"+p.ID+"/members/alice", nil)
			if got := jsonOf[apiError](t, body).Error.Code; st != http.StatusConflict || got != "conflict" {
				t.Errorf("removing the owner = %d %s, want 409 conflict", st, body)
			}

			cid := e.conversation("alice")
			st, body = e.do("PUT", "/api/v1/conversations/"+cid+"/project", map[string]any{"project_id": p.ID})
			if st != 200 || !bytes.Equal(bytes.TrimSpace(body), []byte(`{"conversation_id":"`+cid+`","project_id":"`+p.ID+`"}`)) {
				t.Errorf("attach = %d %s", st, body)
			}
			if got, err := ws.ConversationProject(t.Context(), "alice", cid); err != nil || got != p.ID {
				t.Errorf("the conversation's project after attaching = %q, %v", got, err)
			}
			st, body = e.do("PUT", "/api/v1/conversations/"+cid+"/project", map[string]any{"project_id": nil})
			if st != 200 || !bytes.Contains(body, []byte(`"project_id":null`)) {
				t.Errorf("detach = %d %s", st, body)
			}
			if got, err := ws.ConversationProject(t.Context(), "alice", cid); err != nil || got != "" {
				t.Errorf("the conversation's project after detaching = %q, %v", got, err)
			}

			base := "/api/v1/files/project/" + p.ID
			if st, body := e.put(aliceKey, base, "plan.md", "plan"); st != http.StatusCreated {
				t.Fatalf("PUT = %d %s", st, body)
			}
			if st, body := e.do("DELETE", "/api/v1/projects/"+p.ID, nil); st != http.StatusNoContent {
				t.Fatalf("DELETE project = %d %s", st, body)
			}
			if st, body := e.do("GET", base, nil); st != http.StatusNotFound {
				t.Errorf("the deleted project's files = %d %s, want 404", st, body)
			}
		})
	}
}

// TestFilesDownloadPresigned: with the files in a bucket, the download
// link is the bucket's own presigned URL, which reads the file with no
// credentials; encrypted by Trellis, the link is the server's.
func TestFilesDownloadPresigned(t *testing.T) {
	backend := s3mem.New()
	srv := httptest.NewServer(gofakes3.New(backend).Server())
	t.Cleanup(srv.Close)
	if err := backend.CreateBucket("files"); err != nil {
		t.Fatal(err)
	}
	bucket, err := s3store.New(s3store.Config{Endpoint: strings.TrimPrefix(srv.URL, "http://"), Bucket: "files",
		AccessKey: "key", SecretKey: "secret", Region: "us-east-1", Insecure: true, PathStyle: true})
	if err != nil {
		t.Fatal(err)
	}
	sealed, err := documents.NewEncrypted(bucket, bytes.Repeat([]byte{7}, 32))
	if err != nil {
		t.Fatal(err)
	}
	for name, files := range map[string]documents.Storage{"bucket": bucket, "encrypted": sealed} {
		t.Run(name, func(t *testing.T) {
			e, _ := filesEnv(t, sqliteBackend, files, 0)
			base := "/api/v1/files/user/me"
			if st, body := e.put(aliceKey, base, name+".md", "in the bucket"); st != http.StatusCreated {
				t.Fatalf("PUT = %d %s", st, body)
			}
			st, body := e.do("GET", base+"/download?path="+name+".md", nil)
			link := jsonOf[struct {
				URL string `json:"url"`
			}](t, body)
			if st != 200 {
				t.Fatalf("GET download = %d %s", st, body)
			}
			presigned := strings.HasPrefix(link.URL, srv.URL+"/files/") && strings.Contains(link.URL, "X-Amz-Signature=")
			if presigned != (name == "bucket") {
				t.Fatalf("the %s link is %s", name, link.URL)
			}
			u, _ := url.Parse(e.ts.URL + base + "/download")
			ref, _ := url.Parse(link.URL)
			resp, err := http.Get(u.ResolveReference(ref).String())
			if err != nil {
				t.Fatal(err)
			}
			if got := readBody(t, resp); resp.StatusCode != 200 || got != "in the bucket" {
				t.Errorf("GET the link = %d %q", resp.StatusCode, got)
			}
		})
	}
}

// TestFilesUploadOverBodyLimit: a file may be as large as the
// workspace's limit even past the server's body limit, and one past the
// file limit is refused by its Content-Length with the file limit's
// message, not the body limit's.
func TestFilesUploadOverBodyLimit(t *testing.T) {
	e, _ := filesEnv(t, sqliteBackend, nil, 2<<20)
	base := "/api/v1/files/user/me"
	big := strings.Repeat("x", 3<<19) // 1.5 MiB, over the 1 MiB body limit
	if st, body := e.put(aliceKey, base, "big.txt", big); st != http.StatusCreated {
		t.Fatalf("PUT 1.5 MiB = %d %s, want 201", st, body)
	}
	st, body := e.put(aliceKey, base, "bigger.txt", big+big)
	if got := jsonOf[apiError](t, body); st != 413 || got.Error.Code != "file_too_large" || !strings.Contains(got.Error.Message, "2097152") {
		t.Errorf("PUT 3 MiB = %d %s, want 413 file_too_large naming 2097152", st, body)
	}
}

// TestFilesIndex: POST …/index makes a workspace file a document of the
// conversation (202, the upload's answer), which becomes ready and
// searchable; another user's file answers 404 and indexes nothing.
func TestFilesIndex(t *testing.T) {
	for _, b := range backends {
		t.Run(string(b), func(t *testing.T) {
			e := newDocEnv(t, b, ingest.Config{}, func(c *apitest.Config) {
				dir, err := documents.NewFileStorage(t.TempDir())
				if err != nil {
					t.Fatal(err)
				}
				c.API.Workspace = workspace.New(c.API.Store.(workspace.Record), dir, workspace.Limits{})
			})
			c := e.conversation("alice")
			base := "/api/v1/files/conversation/" + c
			if code, body := e.put(aliceKey, base, "notes/plan.md", "The quarterly zeppelin budget is forty crowns.\n"); code != http.StatusCreated {
				t.Fatalf("put: %d %s", code, body)
			}
			code, body := e.doAs(aliceKey, "POST", base+"/index", []byte(`{"path":"notes/plan.md"}`))
			var d uploaded
			if code != http.StatusAccepted || json.Unmarshal(body, &d) != nil || d.ConversationID != c || d.Filename != "plan.md" {
				t.Fatalf("index: %d %s", code, body)
			}
			if code, body := e.doAs(bobKey, "POST", base+"/index", []byte(`{"path":"notes/plan.md"}`)); code != http.StatusNotFound {
				t.Errorf("bob indexing alice's file: %d %s", code, body)
			}
			if code, body := e.doAs(aliceKey, "POST", base+"/index", []byte(`{"path":"missing.md"}`)); code != http.StatusNotFound {
				t.Errorf("a missing file: %d %s", code, body)
			}
			if code, body := e.doAs(aliceKey, "POST", base+"/index", []byte(`{}`)); code != http.StatusBadRequest {
				t.Errorf("no path: %d %s", code, body)
			}
			if code, body := e.doAs(aliceKey, "POST", "/api/v1/files/user/me/index", []byte(`{"path":"x.md"}`)); code != http.StatusBadRequest {
				t.Errorf("a user scope without conversation_id: %d %s", code, body)
			}
			if code, body := e.put(aliceKey, "/api/v1/files/user/me", "mine.md", "alice's own notes"); code != http.StatusCreated {
				t.Fatalf("put: %d %s", code, body)
			}
			bobs := e.conversation("bob")
			if code, body := e.doAs(aliceKey, "POST", "/api/v1/files/user/me/index", []byte(`{"path":"mine.md","conversation_id":"`+bobs+`"}`)); code != http.StatusNotFound {
				t.Errorf("into bob's conversation: %d %s", code, body)
			}
			if code, body := e.doAs(aliceKey, "POST", "/api/v1/files/user/me/index", []byte(`{"path":"mine.md","conversation_id":"`+c+`"}`)); code != http.StatusAccepted {
				t.Errorf("a user-scope file into her conversation: %d %s", code, body)
			}
			docs, err := e.store.(store.DocumentLister).ListDocuments(t.Context(), "alice", c, store.Page{Limit: 10})
			if err != nil || len(docs.Documents) != 2 {
				t.Fatalf("documents %+v, %v", docs, err)
			}
		})
	}
}
