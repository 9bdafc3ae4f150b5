package signin

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"net/http"
	"path"
	"strings"
	"testing"
	"time"
)

// FuzzDecodeFlow feeds the sign-in cookie a browser sends back to the
// callback: only a cookie this service signed, with its key, and not yet
// expired, is read; what is read encodes to a cookie that reads the
// same; a service with another key refuses it.
func FuzzDecodeFlow(f *testing.F) {
	si := &SignIn{flowKey: []byte("fuzz flow key")}
	other := &SignIn{flowKey: []byte("another key")}
	good := flow{State: "s1", Nonce: "n1", Verifier: "v1", Expires: time.Date(2999, 1, 1, 0, 0, 0, 0, time.UTC)}
	f.Add(si.encodeFlow(good))
	f.Add(other.encodeFlow(good))
	f.Add(si.encodeFlow(flow{State: "s", Expires: time.Date(2001, 1, 1, 0, 0, 0, 0, time.UTC)}))
	f.Add(si.encodeFlow(flow{}))
	body := base64.RawURLEncoding.EncodeToString([]byte(`{"state":"\u0000","expires":"2999-01-01T00:00:00Z"}`))
	f.Add(body + "." + base64.RawURLEncoding.EncodeToString(si.sign([]byte(`{"state":"\u0000","expires":"2999-01-01T00:00:00Z"}`))))
	f.Add(body + ".")
	f.Add("")
	f.Add(".")
	f.Add("e30.e30.e30")
	f.Add(si.encodeFlow(good) + "=")
	f.Fuzz(func(t *testing.T, v string) {
		fl, err := si.decodeFlow(v)
		if err != nil {
			return
		}
		b64, sig, _ := strings.Cut(v, ".")
		b, err1 := base64.RawURLEncoding.DecodeString(b64)
		mac, err2 := base64.RawURLEncoding.DecodeString(sig)
		m := hmac.New(sha256.New, si.flowKey)
		m.Write(b)
		if err1 != nil || err2 != nil || !hmac.Equal(mac, m.Sum(nil)) {
			t.Fatalf("decodeFlow(%q) read a cookie this service did not sign: %+v", v, fl)
		}
		if !time.Now().Before(fl.Expires) {
			t.Fatalf("decodeFlow(%q) read an expired flow: %+v", v, fl)
		}
		again, err := si.decodeFlow(si.encodeFlow(fl))
		if err != nil || again.State != fl.State || again.Nonce != fl.Nonce || again.Verifier != fl.Verifier || !again.Expires.Equal(fl.Expires) {
			t.Fatalf("decodeFlow(%q) = %+v; encoded again, %+v, %v", v, fl, again, err)
		}
		if fl, err := other.decodeFlow(v); err == nil {
			t.Fatalf("decodeFlow(%q) under another key = %+v", v, fl)
		}
	})
}

// FuzzPrefix feeds the operator's redirect URL: a prefix it gives is ""
// or a clean absolute path without a trailing slash, that a cookie's
// Path keeps as it is, that a redirect to prefix/ cannot turn into
// another host, and that the same URL under another origin gives again.
func FuzzPrefix(f *testing.F) {
	for _, seed := range []string{
		"https://chat.example.com/auth/callback", "https://example.com/trellis/auth/callback", "http://localhost:8080/a/b/auth/callback",
		"https://h/trellis/auth/callback?x=1#y", "https://h/trellis//auth/callback", "https://h/a/../b/auth/callback",
		"https://h/a;b/auth/callback", "https://h/%2F%2Fevil.com/auth/callback", "https://h//evil.com/auth/callback",
		"https://h/caf%C3%A9/auth/callback", "https://h/a%20b/auth/callback", "https://h/a\\b/auth/callback",
		"https://h/auth/callback/", "/auth/callback", "auth/callback", "https://h/x/auth/callbacks", "%zz",
		"0/auth/callback", // a relative path, which Prefix once gave as the prefix "0"
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, u string) {
		prefix, err := Prefix(u)
		if err != nil {
			if prefix != "" {
				t.Fatalf("Prefix(%q) = %q and %v", u, prefix, err)
			}
			return
		}
		if prefix != "" && (!strings.HasPrefix(prefix, "/") || path.Clean(prefix) != prefix || strings.HasSuffix(prefix, "/")) {
			t.Fatalf("Prefix(%q) = %q, not a clean absolute path", u, prefix)
		}
		if home := prefix + "/"; strings.HasPrefix(home, "//") || strings.ContainsAny(home, "\\") {
			t.Fatalf("Prefix(%q) = %q: a redirect to %q may leave the host", u, prefix, home)
		}
		for _, p := range []string{prefix + "/", prefix + "/auth/"} {
			c := (&http.Cookie{Name: flowCookie, Value: "v", Path: p}).String()
			if !strings.Contains(c, "; Path="+p) || strings.Count(c, ";") != 1 {
				t.Fatalf("Prefix(%q) = %q: the cookie of path %q is %q", u, prefix, p, c)
			}
		}
		if again, err := Prefix("https://other.example" + prefix + CallbackPath); err != nil || again != prefix {
			t.Fatalf("Prefix(%q) = %q; under another origin %q, %v", u, prefix, again, err)
		}
	})
}
