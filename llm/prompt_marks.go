package llm

// Headings the agent's prompts open their sections with. The offline
// model reads the sections they open, so the agent and it share them.
const (
	// DocumentsHeading opens the list of the conversation's documents in
	// the supervisor's prompt, one per line:
	// "- <id> (<file name>) [<status>]: <summary>".
	DocumentsHeading = "## Documents in this conversation"
	// SourcesHeading opens the numbered sources of a synthesis, each
	// "[<n>] <title> — <source>" and its text on the lines after, up to a
	// blank line.
	SourcesHeading = "## Sources"
	// ClientContextOpen and ClientContextClose fence, each on a line of
	// its own, the request's context object (compact JSON, in which no
	// '<' is left unescaped) in every prompt of a request that has one.
	ClientContextOpen  = "<client_context>"
	ClientContextClose = "</client_context>"
)

// Headings of the summary requests the agent makes of its summary model
// (the fast alias). The offline model answers a request under either
// with the facts of the text it is given (see Offline).
const (
	// ConversationSummaryHeading opens the system prompt of a request to
	// summarise earlier turns. The human message holds the previous
	// summary after SummarySoFarLabel (when there is one) and the turns
	// after TranscriptLabel, one "- User: …" or "- Assistant: …" line a
	// message.
	ConversationSummaryHeading = "## Summarize the conversation so far"
	// ToolResultSummaryHeading opens the system prompt of a request to
	// summarise a tool result too large to show whole; the human message
	// is the result after TranscriptLabel.
	ToolResultSummaryHeading = "## Summarize a tool result"
	// SummarySoFarLabel and TranscriptLabel open the parts of a summary
	// request's human message, each on a line of its own.
	SummarySoFarLabel = "Summary so far:"
	TranscriptLabel   = "To summarize:"
)
