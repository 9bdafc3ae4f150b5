package llm

import "context"

type nodeKey struct{}

func (nodeKey) String() string { return "llm node" }

// WithNode returns a context that names the graph node making model calls
// with it ("supervisor", "reflect", "write", …). The scripted model matches
// script steps on it; other models ignore it.
//
// The node travels in the context, not in a call option, because
// langchaingo's OpenAI client forwards unknown call-option metadata to the
// API.
func WithNode(ctx context.Context, node string) context.Context {
	return context.WithValue(ctx, nodeKey{}, node)
}

// NodeFrom returns the node set by WithNode, or "".
func NodeFrom(ctx context.Context) string {
	s, _ := ctx.Value(nodeKey{}).(string)
	return s
}
