package nodes

import (
	"context"
	"fmt"
	"strings"

	"github.com/trellis-ai/trellis/events"
)

// handleBlocked briefs the write node on an honest answer about what
// failed: the rejected calls and their reasons, the iteration limit, an
// unusable decision, the failed tools, or the reflection's reason. The
// brief carries a plain fallback text, written as is when the model
// cannot be reached.
func (a *Agent) handleBlocked(_ context.Context, s ChatState) (ChatState, error) {
	instructions := "## Your task: say honestly what went wrong\n" +
		"You could not complete the user's request. Tell them plainly what you tried, what failed and why, " +
		"give whatever partial results you have, and suggest what they could do next. Do not pretend to have succeeded.\n\n" +
		"## What happened\n" + a.blockedAccount(&s, "You", "you")
	fallback := "I couldn't complete your request.\n\n" + a.blockedAccount(&s, "I", "I")
	return ChatState{Brief: Brief{Kind: BriefBlocked, Instructions: instructions, Fallback: fallback}, Outcome: OutcomeBlocked}, nil
}

// blockedAccount says what went wrong, with the agent called who, or
// whoMid within a sentence ("You"/"you" in the model's brief, "I" in the
// fallback text).
func (a *Agent) blockedAccount(s *ChatState, who, whoMid string) string {
	var lines []string
	switch {
	case s.BudgetExceeded != "":
		lines = append(lines, fmt.Sprintf("%s reached this run's budget — %s — so %s stopped before finishing.", who, s.BudgetExceeded, whoMid))
		var done []string
		for _, r := range s.ToolResults {
			if r.Status == ToolSuccess {
				done = append(done, fmt.Sprintf("- %s: %s", r.Tool, clip(r.Content, 300)))
			}
		}
		if len(done) > 0 {
			lines = append(lines, "Done before the budget ran out:")
			lines = append(lines, done...)
		} else {
			lines = append(lines, "Nothing was completed before the budget ran out.")
		}
		lines = append(lines, "Not done: the rest of the request ("+clip(s.Input.Message, 300)+"); ask again with a larger budget to go on.")
	case s.Rejections >= a.opts.maxRevisions():
		lines = append(lines, fmt.Sprintf("%s proposed tool calls %d times and the user rejected each, so %s stopped proposing:",
			who, s.Rejections, whoMid))
		for _, r := range s.Approvals {
			if r.Decision == events.DecisionReject {
				reason := r.Reason
				if reason == "" {
					reason = "no reason given"
				}
				lines = append(lines, fmt.Sprintf("- %s %s — rejected: %s", r.Tool, string(argsOrEmpty(r.Args)), reason))
			}
		}
	case s.Decision.Action == ActionBlocked:
		lines = append(lines, who+" could not decide how to proceed: "+s.Decision.Reasoning+".")
	case s.Iteration >= a.opts.maxIterations() && s.Reflection.Assessment == AssessNeedMore:
		lines = append(lines, fmt.Sprintf("%s used all %d steps allowed for one message without getting what was needed. The last assessment: %s.",
			who, a.opts.maxIterations(), s.Reflection.Reasoning))
	default:
		reason := s.Reflection.Reasoning
		if reason == "" {
			reason = "the tools could not do what was asked"
		}
		lines = append(lines, "The task cannot be completed: "+reason+".")
	}
	var failed []string
	for _, r := range s.ToolResults {
		if r.Status == ToolError || r.Status == ToolSkipped {
			failed = append(failed, fmt.Sprintf("- %s failed: %s", r.Tool, clip(r.Content, 300)))
		}
	}
	if len(failed) > 0 {
		lines = append(lines, "Tool failures this turn:")
		lines = append(lines, failed...)
	}
	return strings.Join(lines, "\n")
}
