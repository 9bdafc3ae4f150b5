package middleware

import (
	"net/http"
	"slices"
)

// CORS answers browsers of origins ("*" for any); with none it is not
// installed, and browsers get no CORS headers at all.
func CORS(origins []string) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler { return cors(origins, next) }
}

// What a browser of an allowed origin may do. Methods are every method
// a route answers. Headers are those the real clients send: Trellis'
// own (Authorization, Last-Event-ID, X-Request-Id), the LangGraph SDK's
// x-api-key, MCP's session and version headers, and the openai client's
// (in a browser it sends its X-Stainless-* telemetry and OpenAI-*
// scopes on every request). Exposed are the response headers a client
// reads: the native API's ids, Retry-After, LangGraph's Content-Location
// (the SDK's onRunCreated), the OpenAI adapter's conversation, MCP's
// session and a workspace file's version and ETag.
const (
	corsMethods = "GET, POST, PUT, PATCH, DELETE"
	corsHeaders = "Authorization, Content-Type, Last-Event-ID, X-Request-Id, X-Api-Key, " +
		"Mcp-Session-Id, Mcp-Protocol-Version, OpenAI-Organization, OpenAI-Project, " +
		"X-Stainless-Arch, X-Stainless-Helper-Method, X-Stainless-Lang, X-Stainless-OS, " +
		"X-Stainless-Package-Version, X-Stainless-Retry-Count, X-Stainless-Runtime, " +
		"X-Stainless-Runtime-Version, X-Stainless-Timeout"
	corsExposed = "X-Conversation-ID, X-Run-ID, X-Next-Cursor, X-Request-Id, Retry-After, Content-Location, " +
		"X-Trellis-Conversation-Id, Mcp-Session-Id, X-File-Version, ETag"
)

func cors(origins []string, next http.Handler) http.Handler {
	if len(origins) == 0 {
		return next
	}
	any := slices.Contains(origins, "*")
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		origin := r.Header.Get("Origin")
		if origin == "" || !(any || slices.Contains(origins, origin)) {
			next.ServeHTTP(w, r)
			return
		}
		h := w.Header()
		h.Add("Vary", "Origin")
		h.Set("Access-Control-Allow-Origin", origin)
		h.Set("Access-Control-Expose-Headers", corsExposed)
		if r.Method == http.MethodOptions && r.Header.Get("Access-Control-Request-Method") != "" {
			h.Set("Access-Control-Allow-Methods", corsMethods)
			h.Set("Access-Control-Allow-Headers", corsHeaders)
			h.Set("Access-Control-Max-Age", "600")
			w.WriteHeader(http.StatusNoContent)
			return
		}
		next.ServeHTTP(w, r)
	})
}
