package main

import (
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/trellis-ai/trellis/api/middleware"
)

// Keys issued with trellis keys, while a server with TRELLIS_AUTH=keys
// and no listed key runs on the same record, authenticate at once and
// stop within seconds of being revoked, with no restart; list shows
// them without their secret. On both backends.
func TestKeysWithoutRestart(t *testing.T) {
	t.Parallel()
	for _, db := range []string{"sqlite", "postgres"} {
		t.Run(db, func(t *testing.T) {
			env := map[string]string{"TRELLIS_DATA_DIR": t.TempDir()}
			if db == "postgres" {
				env = map[string]string{"DATABASE_URL": pgDSN(t)}
			}
			var serveEnv []string
			for k, v := range env {
				serveEnv = append(serveEnv, k+"="+v)
			}
			c := startServe(t, append(serveEnv, "TRELLIS_AUTH=keys")...)
			if !strings.Contains(c.startLine, "auth API keys for 0 users and keys issued in the service") {
				t.Fatalf("start line %q", c.startLine)
			}
			if resp := c.do(http.MethodGet, "/api/v1/conversations", nil); resp.StatusCode != http.StatusUnauthorized {
				t.Fatalf("no key: %d", resp.StatusCode)
			}

			code, out := trellis(t, env, "keys", "create", "--user", "carol", "--name", "ci")
			key := strings.SplitN(out, "\n", 2)[0]
			if code != 0 || !strings.HasPrefix(key, middleware.KeyPrefix) {
				t.Fatalf("keys create: exit %d: %s", code, out)
			}
			auth := []string{"Authorization", "Bearer " + key}
			if resp := c.do(http.MethodGet, "/api/v1/conversations", nil, auth...); resp.StatusCode != http.StatusOK {
				t.Fatalf("the issued key: %d", resp.StatusCode)
			}
			code, out = trellis(t, env, "keys", "list")
			if code != 0 || !strings.Contains(out, key[:middleware.ShownPrefix]+"…") || !strings.Contains(out, "carol") || strings.Contains(out, key) {
				t.Fatalf("keys list: exit %d: %s", code, out)
			}
			id := strings.Fields(strings.Split(out, "\n")[1])[0]
			if code, out := trellis(t, env, "keys", "revoke", id); code != 0 || !strings.Contains(out, "revoked "+id) {
				t.Fatalf("keys revoke: exit %d: %s", code, out)
			}
			deadline := time.Now().Add(middleware.StoredKeyTTL + 5*time.Second)
			for c.do(http.MethodGet, "/api/v1/conversations", nil, auth...).StatusCode != http.StatusUnauthorized {
				if time.Now().After(deadline) {
					t.Fatal("the revoked key still works")
				}
				time.Sleep(100 * time.Millisecond)
			}
			c.stop(syscall.SIGTERM)
		})
	}
}

// trellis keys refuses what it cannot do: no verb, an unknown one, a
// key with no user, a revoke with no id, a data directory that does
// not exist.
func TestKeysRefuses(t *testing.T) {
	t.Parallel()
	env := map[string]string{"TRELLIS_DATA_DIR": t.TempDir()}
	for _, tc := range []struct {
		args []string
		code int
		says string
	}{
		{[]string{"keys"}, 2, "want create, list or revoke"},
		{[]string{"keys", "mint"}, 2, "unknown verb"},
		{[]string{"keys", "create"}, 2, "--user is required"},
		{[]string{"keys", "revoke"}, 2, "the id of one key"},
		{[]string{"keys", "list", "--data-dir", "/nonexistent/trellis"}, 1, "start trellis serve once"},
		{[]string{"keys", "revoke", "no-such-key"}, 1, "not found"},
	} {
		if code, out := trellis(t, env, tc.args...); code != tc.code || !strings.Contains(out, tc.says) {
			t.Errorf("%v: exit %d, %q; want %d and %q", tc.args, code, out, tc.code, tc.says)
		}
	}
}
