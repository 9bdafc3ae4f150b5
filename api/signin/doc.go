// Package signin is the web page's sign-in through the team's OpenID
// Connect provider: GET /auth/login sends the browser to the provider
// (the authorization-code flow with PKCE, S256, its state, nonce and
// verifier in a signed cookie), GET /auth/callback verifies the ID token
// (go-oidc) and starts a session, GET /auth/session says who the session
// cookie signs in with the CSRF token its writes need, POST /auth/logout
// ends it. A session is a row of store.Sessions (only a hash of its
// cookie), so it holds, and ends, on every process at once.
//
// cmd/trellis builds the sign-in (New: discovery) from its flags; package
// api mounts its endpoints under /auth (Routes) with what it takes of the
// server (Server: the failed-credential limiter shared with the keys,
// the metrics of refused credentials, the error writer, the log), and
// names the user of a session cookie through it (SessionUser) in its
// authentication (api/middleware), which also checks the CSRF token of
// a cookie's writes.
package signin
