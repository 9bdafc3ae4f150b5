package nodes

import "context"

// synthesize prepares the answer from the tool results: it numbers the
// data chunks tools returned as sources [1], [2], … and briefs the write
// node to answer from the results, citing those numbers. The answer itself
// is written once, by write, with the user's model and streamed — so the
// tool path costs one model call after the tools, not two.
func (a *Agent) synthesize(_ context.Context, s ChatState) (ChatState, error) {
	return ChatState{Brief: Brief{Kind: BriefSynthesis, Instructions: synthesisInstructions(&s)}}, nil
}
