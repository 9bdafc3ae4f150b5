package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strings"
	"syscall"
	"testing"
	"time"
)

// putFile uploads content to the user's own files at p.
func putFile(t *testing.T, c *child, p, content string) (int, map[string]any) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, "PUT", c.url+"/api/v1/files/user/me/content?path="+url.QueryEscape(p), strings.NewReader(content))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "text/markdown")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var f map[string]any
	_ = json.NewDecoder(resp.Body).Decode(&f)
	return resp.StatusCode, f
}

// fetchLink asks c for a download link of p and fetches it from at, with
// no credentials.
func fetchLink(t *testing.T, c, at *child, p string) (int, string) {
	t.Helper()
	code, link := getJSON(t, c, "/api/v1/files/user/me/download?path="+url.QueryEscape(p))
	if code != http.StatusOK {
		t.Fatalf("GET download = %d %v", code, link)
	}
	base, _ := url.Parse(at.url + "/api/v1/files/user/me/download")
	ref, err := url.Parse(link["url"].(string))
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.Get(base.ResolveReference(ref).String())
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestServeWorkspaceFiles: trellis serve mounts the workspace's
// endpoints: a file uploaded by PUT is listed, downloaded through its
// link without credentials, and an earlier version restored. Two
// processes sharing PostgreSQL and TRELLIS_DOCUMENTS_KEY serve each
// other's links; without the key, a link works only where it was made.
func TestServeWorkspaceFiles(t *testing.T) {
	t.Parallel()
	t.Run("sqlite", func(t *testing.T) {
		c := startServe(t, "TRELLIS_DATA_DIR="+t.TempDir())
		if code, f := putFile(t, c, "notes.md", "one"); code != http.StatusCreated || f["version"] != 1.0 {
			t.Fatalf("PUT = %d %v", code, f)
		}
		if code, f := putFile(t, c, "notes.md", "two"); code != http.StatusOK || f["version"] != 2.0 {
			t.Fatalf("second PUT = %d %v", code, f)
		}
		code, list := getJSON(t, c, "/api/v1/files/user/me")
		if files, _ := list["files"].([]any); code != http.StatusOK || len(files) != 1 {
			t.Fatalf("GET list = %d %v", code, list)
		}
		if code, got := fetchLink(t, c, c, "notes.md"); code != http.StatusOK || got != "two" {
			t.Errorf("the link = %d %q, want two", code, got)
		}
		resp := c.do("POST", "/api/v1/files/user/me/restore", map[string]any{"path": "notes.md", "version": 1})
		var f map[string]any
		_ = json.NewDecoder(resp.Body).Decode(&f)
		if resp.StatusCode != http.StatusOK || f["version"] != 3.0 {
			t.Fatalf("restore = %d %v", resp.StatusCode, f)
		}
		if code, got := fetchLink(t, c, c, "notes.md"); code != http.StatusOK || got != "one" {
			t.Errorf("the link after restoring version 1 = %d %q, want one", code, got)
		}
	})
	t.Run("postgres", func(t *testing.T) {
		dsn := pgDSN(t)
		for _, keyed := range []bool{true, false} {
			env := []string{"DATABASE_URL=" + dsn}
			if keyed {
				env = append(env, "TRELLIS_DOCUMENTS_KEY="+strings.Repeat("3c", 32))
			}
			a := startServe(t, append(env, "TRELLIS_DATA_DIR="+t.TempDir())...)
			b := startServe(t, append(env, "TRELLIS_DATA_DIR="+t.TempDir())...)
			p := "shared.md"
			if !keyed {
				p = "unkeyed.md"
			}
			if code, f := putFile(t, a, p, "from a"); code != http.StatusCreated {
				t.Fatalf("PUT on a = %d %v", code, f)
			}
			code, got := fetchLink(t, a, b, p)
			switch {
			case keyed && (code != http.StatusOK || got != "from a"):
				t.Errorf("with the key, a's link on b = %d %q, want from a", code, got)
			case !keyed && (code != http.StatusForbidden || !bytes.Contains([]byte(got), []byte("invalid_link"))):
				t.Errorf("without the key, a's link on b = %d %q, want 403 invalid_link", code, got)
			}
			a.stop(syscall.SIGTERM)
			b.stop(syscall.SIGTERM)
		}
	})
}
