package middleware

import (
	"fmt"
	"net/http"
	"net/netip"
	"strings"

	chimw "github.com/go-chi/chi/v5/middleware"
)

// ClientIP returns the middleware that finds the client IP Authenticate
// counts failures against: the TCP peer, or, for a peer within trusted
// (CIDR prefixes, see ParseTrustedProxies), the nearest untrusted hop of
// X-Forwarded-For.
func ClientIP(trusted []netip.Prefix) func(http.Handler) http.Handler {
	if len(trusted) == 0 {
		return chimw.ClientIPFromRemoteAddr
	}
	cidrs := make([]string, len(trusted))
	for i, p := range trusted {
		cidrs[i] = p.String()
	}
	return chimw.ClientIPFromXFF(cidrs...)
}

// ParseTrustedProxies reads a list of reverse proxies (api's
// Config.TrustedProxies): CIDR prefixes, or bare addresses meaning just
// themselves.
func ParseTrustedProxies(list []string) ([]netip.Prefix, error) {
	var out []netip.Prefix
	for _, v := range list {
		v = strings.TrimSpace(v)
		if v == "" {
			continue
		}
		if !strings.Contains(v, "/") {
			a, err := netip.ParseAddr(v)
			if err != nil {
				return nil, fmt.Errorf("api: trusted proxy %q is neither an address nor a CIDR prefix", v)
			}
			out = append(out, netip.PrefixFrom(a.Unmap(), a.Unmap().BitLen()))
			continue
		}
		p, err := netip.ParsePrefix(v)
		if err != nil {
			return nil, fmt.Errorf("api: trusted proxy %q is neither an address nor a CIDR prefix", v)
		}
		out = append(out, p.Masked())
	}
	return out, nil
}
