package files

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/trellis-ai/trellis/documents/workspace"
)

// TestLinkToken: a token verifies as what it was signed with until it
// expires; altered, cut, signed under another key, or expired, it is
// refused as invalid_link.
func TestLinkToken(t *testing.T) {
	now := time.Date(2026, 11, 29, 6, 0, 0, 0, time.UTC)
	h := New(Config{LinkKey: []byte("key one"), Now: func() time.Time { return now }})
	l := link{User: "alice", Kind: workspace.KindConversation, ScopeID: "conv-1", Path: "notes.md", Version: 2, Expires: now.Add(time.Minute).Unix()}
	tok := h.sign(l)
	got, err := h.verify(tok)
	if err != nil || got != l {
		t.Fatalf("verify(sign(l)) = %+v, %v; want %+v", got, err, l)
	}
	other := New(Config{LinkKey: []byte("key two"), Now: h.cfg.Now})
	body, sig, _ := strings.Cut(tok, ".")
	flip := func(s string) string {
		b := []byte(s)
		b[len(b)/2] ^= 1
		return string(b)
	}
	for name, bad := range map[string]string{
		"empty":           "",
		"no signature":    body,
		"body altered":    flip(body) + "." + sig,
		"sig altered":     body + "." + flip(sig),
		"another key's":   other.sign(l),
		"not base64":      "!!!." + sig,
		"signature alone": "." + sig,
	} {
		if _, err := h.verify(bad); !errors.Is(err, errInvalidLink) {
			t.Errorf("%s: verify = %v, want invalid_link", name, err)
		}
	}
	now = now.Add(time.Minute)
	if _, err := h.verify(tok); !errors.Is(err, errInvalidLink) {
		t.Errorf("verify at the expiry = %v, want invalid_link", err)
	}
}

// FuzzLinkToken: no token a client sends panics verify, and only the
// tokens this key signed pass.
func FuzzLinkToken(f *testing.F) {
	now := time.Unix(1_800_000_000, 0)
	h := New(Config{LinkKey: []byte("fuzz key"), Now: func() time.Time { return now }})
	f.Add(h.sign(link{User: "u", Kind: workspace.KindUser, ScopeID: "u", Path: "a", Version: 1, Expires: now.Unix() + 60}))
	f.Add("e30.AAAA")
	f.Add("..")
	f.Fuzz(func(t *testing.T, tok string) {
		l, err := h.verify(tok)
		if err != nil {
			return
		}
		if again, err := h.verify(h.sign(l)); err != nil || again != l {
			t.Fatalf("a token that verified as %+v does not round-trip: %+v, %v", l, again, err)
		}
		body, sig, _ := strings.Cut(tok, ".")
		if _, err := h.verify(body + "." + sig + "x"); err == nil && !strings.HasSuffix(sig, "x") {
			t.Fatalf("a token verified with a longer signature")
		}
	})
}
