package middleware_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/trellis-ai/trellis/api/middleware"
)

// API keys parse from TRELLIS_API_KEYS' format and never print or log.
func TestAPIKeysRedact(t *testing.T) {
	keys, err := middleware.ParseKeys(" k1:alice , k2:bob,")
	if err != nil || len(keys) != 2 || keys["k1"] != "alice" || keys["k2"] != "bob" {
		t.Fatalf("%v %v", keys, err)
	}
	for k := range keys {
		if s := fmt.Sprint(k); strings.Contains(s, "k1") || strings.Contains(s, "k2") {
			t.Errorf("a key prints: %s", s)
		}
		if v := k.LogValue().String(); strings.Contains(v, "k") && v != "[redacted]" {
			t.Errorf("a key logs: %s", v)
		}
		b, _ := json.Marshal(map[string]any{"key": k.LogValue().Any()})
		if strings.Contains(string(b), "k1") || strings.Contains(string(b), "k2") {
			t.Errorf("a key logs: %s", b)
		}
	}
	for _, bad := range []string{"k1", "k1:", ":alice", "k1:alice,k1:bob"} {
		if _, err := middleware.ParseKeys(bad); err == nil {
			t.Errorf("ParseKeys(%q) accepted", bad)
		}
	}
}
