package operators

import "context"

// A tool call's idempotency key names one call of one turn: the same
// call issued again — after a question, a person's "run it again", or a
// crash — carries the same key, and a different call never does. A tool
// with side effects can record the keys it has acted on and do nothing
// the second time. The agent sets it on the context of every call; MCP
// servers receive it in the request's _meta (see mcp), local tools and
// operators read it with IdempotencyKey.

// IdempotencyKeyContextKey is the context key of a call's idempotency
// key; its value is the key, a string. WithIdempotencyKey sets it. A
// caller may instead answer it from a context of its own, to make the
// key only when something reads it: the agent does, as most calls never
// read theirs.
type IdempotencyKeyContextKey struct{}

// WithIdempotencyKey returns ctx carrying the call's idempotency key.
func WithIdempotencyKey(ctx context.Context, key string) context.Context {
	return context.WithValue(ctx, IdempotencyKeyContextKey{}, key)
}

// IdempotencyKey returns the idempotency key of the call ctx belongs to;
// "" outside a call, or for a caller that set none.
func IdempotencyKey(ctx context.Context) string {
	k, _ := ctx.Value(IdempotencyKeyContextKey{}).(string)
	return k
}
