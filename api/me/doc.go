// Package me is the native API's endpoints of a user's own record
// beside their conversations: what the agent remembers of them
// (/api/v1/me/profile, /me/memories, over cognition), the tokens they
// spent and their monthly quota (/me/usage), and the erasure of
// everything of theirs (DELETE /me, GET /me/erasure, over an Eraser
// that cmd/trellis runs as a durable job). The operators' views of the
// same records across users sit beside them: the agent's identity
// (/cognition/identity) and every user's usage (/admin/usage). It is
// pure HTTP over the services it is given: the bounds of a profile
// edit are the API's, what is remembered is cognition's. Package api
// mounts it behind its authentication and answers its errors
// (Config.Error) as it answers its own.
package me
