package api_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/trellis-ai/trellis/api/apitest"
	"github.com/trellis-ai/trellis/api/middleware"
	"github.com/trellis-ai/trellis/store"
)

// issuing configures a server that checks the keys issued in the
// service, with alice its operator.
func issuing(c *apitest.Config) {
	c.API.IssuedKeys = c.API.Store.(store.Keys)
	c.API.Admins = []string{"alice"}
}

type issued struct {
	ID        string     `json:"id"`
	UserID    string     `json:"user_id"`
	Name      string     `json:"name"`
	Prefix    string     `json:"prefix"`
	Key       string     `json:"key"`
	RevokedAt *time.Time `json:"revoked_at"`
}

// An operator issues a key over the API; it authenticates its user at
// once, on this process and on another sharing the database; lists show
// it without its secret; revoked, it is refused on both within
// StoredKeyTTL. Nobody else may manage keys.
func TestIssuedKeys(t *testing.T) {
	for _, be := range backends {
		t.Run(string(be), func(t *testing.T) {
			e := newEnv(t, envOptions{backend: be, configure: issuing})
			envs := []*env{e}
			if be == postgresBackend {
				envs = append(envs, newEnv(t, envOptions{backend: be, data: e.data, configure: issuing}))
			}
			if status, body := e.doAs(bobKey, http.MethodPost, "/api/v1/admin/keys", map[string]any{"user_id": "carol"}); status != http.StatusForbidden {
				t.Fatalf("bob issued a key: %d %s", status, body)
			}
			status, body := e.do(http.MethodPost, "/api/v1/admin/keys", map[string]any{"user_id": "carol", "name": "carol's laptop"})
			var k issued
			if status != http.StatusCreated || json.Unmarshal(body, &k) != nil {
				t.Fatalf("issue: %d %s", status, body)
			}
			if !strings.HasPrefix(k.Key, middleware.KeyPrefix) || len(k.Key) != len(middleware.KeyPrefix)+43 || k.Prefix != k.Key[:middleware.ShownPrefix] ||
				k.UserID != "carol" || k.Name != "carol's laptop" || k.ID == "" || k.RevokedAt != nil {
				t.Fatalf("issued %+v", k)
			}
			for i, p := range envs {
				if status, body := p.doAs(k.Key, http.MethodGet, "/api/v1/conversations", nil); status != http.StatusOK {
					t.Fatalf("process %d: the new key: %d %s", i, status, body)
				}
			}

			status, body = e.do(http.MethodGet, "/api/v1/admin/keys?user_id=carol", nil)
			var list struct {
				Keys       []issued `json:"keys"`
				NextCursor *string  `json:"next_cursor"`
			}
			if status != http.StatusOK || json.Unmarshal(body, &list) != nil || len(list.Keys) != 1 || list.Keys[0].ID != k.ID || list.NextCursor == nil {
				t.Fatalf("list: %d %s", status, body)
			}
			if strings.Contains(string(body), k.Key) {
				t.Fatalf("the list shows the key: %s", body)
			}

			if status, body := e.do(http.MethodDelete, "/api/v1/admin/keys/"+k.ID, nil); status != http.StatusNoContent {
				t.Fatalf("revoke: %d %s", status, body)
			}
			deadline := time.Now().Add(middleware.StoredKeyTTL + 5*time.Second)
			for i, p := range envs {
				for {
					status, _ := p.doAs(k.Key, http.MethodGet, "/api/v1/conversations", nil)
					if status == http.StatusUnauthorized {
						break
					}
					if time.Now().After(deadline) {
						t.Fatalf("process %d: the revoked key still answers %d", i, status)
					}
					time.Sleep(100 * time.Millisecond)
				}
			}
			_, body = e.do(http.MethodGet, "/api/v1/admin/keys", nil)
			if json.Unmarshal(body, &list) != nil || len(list.Keys) != 1 || list.Keys[0].RevokedAt == nil {
				t.Fatalf("after revoking: %s", body)
			}
		})
	}
}

// Bad requests to the keys endpoints change nothing, alike on both
// backends; in local mode no key is issued.
func TestIssuedKeysRefused(t *testing.T) {
	for _, be := range backends {
		t.Run(string(be), func(t *testing.T) {
			e := newEnv(t, envOptions{backend: be, configure: issuing})
			for _, tc := range []struct {
				method, path string
				body         any
				status       int
			}{
				{http.MethodPost, "/api/v1/admin/keys", map[string]any{"name": "nobody's"}, http.StatusBadRequest},
				{http.MethodPost, "/api/v1/admin/keys", map[string]any{"user_id": "carol", "scope": "all"}, http.StatusBadRequest},
				{http.MethodPost, "/api/v1/admin/keys", map[string]any{"user_id": "carol", "name": strings.Repeat("n", store.MaxKeyName+1)}, http.StatusBadRequest},
				{http.MethodPost, "/api/v1/admin/keys", "not json", http.StatusBadRequest},
				{http.MethodGet, "/api/v1/admin/keys?limit=-1", nil, http.StatusBadRequest},
				{http.MethodGet, "/api/v1/admin/keys?cursor=nonsense", nil, http.StatusBadRequest},
				{http.MethodDelete, "/api/v1/admin/keys/no-such-key", nil, http.StatusNotFound},
			} {
				if status, body := e.do(tc.method, tc.path, tc.body); status != tc.status {
					t.Errorf("%s %s %v: %d %s, want %d", tc.method, tc.path, tc.body, status, body, tc.status)
				}
			}
			if status, body := e.do(http.MethodGet, "/api/v1/admin/keys", nil); status != http.StatusOK || !strings.Contains(string(body), `"keys":[]`) {
				t.Errorf("a refused request stored a key: %d %s", status, body)
			}

			local := newEnv(t, envOptions{backend: be, local: true})
			status, body := local.do(http.MethodPost, "/api/v1/admin/keys", map[string]any{"user_id": "carol"})
			if status != http.StatusConflict || !strings.Contains(string(body), "local_mode") {
				t.Errorf("local mode issued a key: %d %s", status, body)
			}
		})
	}
}
