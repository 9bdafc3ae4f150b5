package runs

import "context"

type userKey struct{}

// WithUser returns ctx carrying the user a request was authenticated
// as. Package api sets it once, in its authentication; every surface
// mounted behind that (the native API, MCP, each protocol adapter) reads
// it with UserFrom, so no adapter authenticates on its own.
func WithUser(ctx context.Context, user string) context.Context {
	return context.WithValue(ctx, userKey{}, user)
}

// UserFrom returns the user WithUser put in ctx, or "" outside an
// authenticated request.
func UserFrom(ctx context.Context) string {
	u, _ := ctx.Value(userKey{}).(string)
	return u
}
