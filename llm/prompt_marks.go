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
