package middleware

import (
	"net/http/httptest"
	"testing"
)

// Failed logins count against the TCP peer; an IPv6 peer counts as its
// /64, so that one host cannot take a fresh bucket per address it holds.
func TestClientAddress(t *testing.T) {
	for remote, want := range map[string]string{
		"192.0.2.7:4711":              "192.0.2.7",
		"[::ffff:192.0.2.7]:4711":     "192.0.2.7",
		"[2001:db8:1:2::1]:4711":      "2001:db8:1:2::/64",
		"[2001:db8:1:2:ffff::9]:4712": "2001:db8:1:2::/64",
		"[2001:db8:1:3::1]:4711":      "2001:db8:1:3::/64",
		"[fe80::1%eth0]:4711":         "fe80::/64",
		"not an address":              "not an address",
	} {
		r := httptest.NewRequest("GET", "/", nil)
		r.RemoteAddr = remote
		if got := clientAddress(r); got != want {
			t.Errorf("clientAddress(%q) = %q, want %q", remote, got, want)
		}
	}
}
