package nodes

import (
	"encoding/json"

	"github.com/trellis-ai/trellis/events"
	"github.com/trellis-ai/trellis/graph"
	"github.com/trellis-ai/trellis/operators"
)

// ChatState is the agent graph's state: everything a conversation's turns
// read and write, and nothing else. It is plain data — strings, numbers,
// slices of structs — so every checkpointer stores it as JSON and gives it
// back equal. Runtime dependencies (models, tools, hooks, the messenger)
// live in the Agent, never here.
//
// Fields marked "per turn" are reset by initialize at the start of each
// user message; the others last for the whole conversation.
type ChatState struct {
	// ---- Input: the turn's request, replaced whole by each turn's input
	// (Input.Message is the query), so nothing of an earlier request
	// lingers.
	Input Input `json:"input"`

	// ---- Conversation (append).

	// Messages is the conversation: user, assistant and tool messages in
	// order, but for its first MessagesFrom, which a turn moved into
	// pages of history once the summaries covered them (see history.go).
	// Models see a window of it (see Window). The states Agent.State and
	// Agent.History return hold the whole conversation.
	Messages []Message `json:"messages,omitempty"`
	// MessagesFrom is how many of the conversation's first messages are
	// in pages of history, not in Messages: Messages[i] is the
	// conversation's message MessagesFrom+i.
	MessagesFrom int `json:"messages_from,omitempty"`
	// HistoryPage names the newest page of history holding them; "" when
	// none does.
	HistoryPage string `json:"history_page,omitempty"`
	// Turn counts the user messages that started turns; messages carry
	// the turn they belong to.
	Turn int `json:"turn"`
	// Summary is the rolling summary of the messages before SummaryUpTo.
	Summary string `json:"summary,omitempty"`
	// SummaryUpTo is the index in the whole conversation up to which
	// Summary covers (in Messages, SummaryUpTo-MessagesFrom).
	SummaryUpTo int `json:"summary_up_to,omitempty"`
	// ModelSummary is a model's summary of the turns up to
	// ModelSummaryTurn (see Window.AskSummary); Summary then covers only
	// what came after them. "" when there is none.
	ModelSummary     string `json:"model_summary,omitempty"`
	ModelSummaryTurn int    `json:"model_summary_turn,omitempty"`
	// SummaryAsk is the latest ask for a model summary; a stored summary
	// is adopted only when it answers this ask.
	SummaryAsk SummaryAsk `json:"summary_ask,omitzero"`

	// ---- Supervisor (per turn).

	// Decision is the supervisor's latest decision.
	Decision Decision `json:"decision"`
	// Iteration counts the supervisor's decisions this turn.
	Iteration int `json:"iteration"`
	// Actions is the history of decisions this turn (append).
	Actions []ActionRecord `json:"actions,omitempty"`
	// TaskContext is what the supervisor is told about the task beyond the
	// messages: the reflection's advice, a rejection's reason.
	TaskContext string `json:"task_context,omitempty"`

	// ---- Execution (per turn).

	// ToolResults are every tool call's outcome this turn (append).
	ToolResults []ToolResult `json:"tool_results,omitempty"`
	// CurrentTool names the tool(s) of the latest execution.
	CurrentTool string `json:"current_tool,omitempty"`
	// WorkflowSteps is the latest workflow, with each step's status.
	WorkflowSteps []WorkflowStep `json:"workflow_steps,omitempty"`
	// Approvals records every approval decision this turn (append), so the
	// revision history keeps each rejection's reason, not just a count.
	Approvals []ApprovalRecord `json:"approvals,omitempty"`
	// Rejections counts rejected tool calls this turn.
	Rejections int `json:"rejections,omitempty"`
	// Reflection is the latest judgement of the tool results.
	Reflection Reflection `json:"reflection"`

	// ---- Context.

	// DataChunks are the citable chunks tools returned this turn, numbered
	// from 1 (append; per turn): among them the passages the document
	// tools loaded, each placed in its document (DataChunk.Document).
	DataChunks []DataChunk `json:"data_chunks,omitempty"`
	// DataSummaries describe the conversation's documents for the
	// supervisor (per turn, loaded by initialize through
	// Options.Documents; replaced whole).
	DataSummaries []DataSummary `json:"data_summaries,omitempty"`
	// SourceCounter is the number of the last data chunk (sum; per turn).
	SourceCounter int `json:"source_counter,omitempty"`
	// Cognitive is the user's cognitive context: profile and memories
	// (per turn, loaded by initialize).
	Cognitive string `json:"cognitive,omitempty"`

	// ---- Messaging (per turn).

	// DirectResponses are what operators showed the user directly
	// (append).
	DirectResponses []DirectResponse `json:"direct_responses,omitempty"`

	// ---- Plan.

	// Tasks is the task board the agent writes with write_todos and a
	// user may edit between runs; it lasts for the conversation. The
	// newest revision wins (see TaskBoard).
	Tasks TaskBoard `json:"tasks"`

	// ---- Token usage.

	// Usage sums every model call of the conversation.
	Usage events.Usage `json:"usage"`
	// TurnUsage sums every model call of the turn (per turn).
	TurnUsage events.Usage `json:"turn_usage"`
	// UsageBase is TurnUsage when the current run resumed the turn, so a
	// run's usage is TurnUsage - UsageBase (per turn).
	UsageBase events.Usage `json:"usage_base"`

	// ---- Output (per turn).

	// Brief is what the write node is asked to write.
	Brief Brief `json:"brief"`
	// FinalResponse is the answer's text.
	FinalResponse string `json:"final_response,omitempty"`
	// Citations are the sources FinalResponse cites.
	Citations []events.Citation `json:"citations,omitempty"`
	// ClarifyQuestion is the question the agent asked, while it waits for
	// the answer.
	ClarifyQuestion string `json:"clarify_question,omitempty"`
	// Outcome says how the turn ended.
	Outcome Outcome `json:"outcome,omitempty"`
	// BudgetExceeded names the run's limit the turn reached, with its
	// figures; "" while none (per turn).
	BudgetExceeded string `json:"budget_exceeded,omitempty"`
	// BudgetSpent is the run's use of its budget so far, run totals
	// written after every step (the larger of each figure wins; per
	// turn): a run resumed after a pause or a crash adopts it, and goes
	// on counting from it.
	BudgetSpent BudgetSpent `json:"budget_spent"`
}

// schemaFields declares how ChatState's fields merge; undeclared fields
// take the newest non-zero value.
func schemaFields() []graph.Field[ChatState] {
	addUsage := func(a, b events.Usage) events.Usage { return a.Add(b) }
	return []graph.Field[ChatState]{
		graph.Append(func(s *ChatState) *[]Message { return &s.Messages }),
		graph.Append(func(s *ChatState) *[]ActionRecord { return &s.Actions }),
		graph.Append(func(s *ChatState) *[]ToolResult { return &s.ToolResults }),
		graph.Append(func(s *ChatState) *[]ApprovalRecord { return &s.Approvals }),
		graph.Append(func(s *ChatState) *[]DataChunk { return &s.DataChunks }),
		graph.Append(func(s *ChatState) *[]DirectResponse { return &s.DirectResponses }),
		graph.Sum(func(s *ChatState) *int { return &s.SourceCounter }),
		graph.Reduce(func(s *ChatState) *events.Usage { return &s.Usage }, addUsage),
		graph.Reduce(func(s *ChatState) *events.Usage { return &s.TurnUsage }, addUsage),
		graph.Reduce(func(s *ChatState) *TaskBoard { return &s.Tasks }, newestBoard),
		graph.Reduce(func(s *ChatState) *BudgetSpent { return &s.BudgetSpent }, maxSpent),
	}
}

// resetTurn clears the per-turn fields; initialize applies it through
// Command.Overwrite.
func resetTurn(s *ChatState) {
	s.Decision = Decision{}
	s.Iteration = 0
	s.Actions = nil
	s.TaskContext = ""
	s.ToolResults = nil
	s.CurrentTool = ""
	s.WorkflowSteps = nil
	s.Approvals = nil
	s.Rejections = 0
	s.Reflection = Reflection{}
	s.DataChunks = nil
	s.DataSummaries = nil
	s.SourceCounter = 0
	s.Cognitive = ""
	s.DirectResponses = nil
	s.TurnUsage = events.Usage{}
	s.UsageBase = events.Usage{}
	s.Brief = Brief{}
	s.FinalResponse = ""
	s.Citations = nil
	s.ClarifyQuestion = ""
	s.Outcome = ""
	s.BudgetExceeded = ""
	s.BudgetSpent = BudgetSpent{}
}

// Input is one user message and its request: the input section of the
// state, and what Agent.Run takes.
type Input struct {
	// Message is the user's message: the turn's query. Required.
	Message string `json:"message"`
	// ConversationID is the thread; Run sets it.
	ConversationID string `json:"conversation_id"`
	// RequestID identifies the turn; Agent.Edit finds a turn by it.
	RequestID string `json:"request_id,omitempty"`
	// UserID is who asks.
	UserID string `json:"user_id,omitempty"`
	// Model is the model id or alias the user asked for; "" is the
	// registry's default. The write node answers with it.
	Model string `json:"model,omitempty"`
	// DocumentIDs are the documents the request points at.
	DocumentIDs []string `json:"document_ids,omitempty"`
	// Context is the request's optional "context" object, as compact
	// JSON: the client's data, not instructions. Every model call's
	// system prompt shows it fenced and says so, every tool call gets it
	// (operators.Call.Context), and sub-agents inherit it.
	Context json.RawMessage `json:"context,omitempty"`
	// NoMemory keeps the turn out of the user's memory: Options.Cognition
	// is not asked and Hooks.Learn not called.
	NoMemory bool `json:"no_memory,omitempty"`
	// NoDocuments tells that the conversation held no documents when
	// the turn started (its caller knows it from the record), so
	// Options.Documents is not asked. It is not stored: a turn taken up
	// again from its checkpoint asks.
	NoDocuments bool `json:"-"`
	// Budget tightens Options.Budget for this request's runs; nil keeps
	// it.
	Budget *events.Budget `json:"budget,omitempty"`
	// Namespace is the sub-agent's path ("researcher:call_1", nested
	// ones joined with "/"); "" for the root agent. The sub-agent tool
	// sets it.
	Namespace string `json:"namespace,omitempty"`

	// A stateless client (an OpenAI-style one) sends the whole
	// conversation with each request. History is what came before
	// Message; Continued is what came after it: the assistant's calls of
	// client tools and the client's results, from which the turn goes
	// on. initialize adds both to the conversation around the user's
	// message. Turn numbers follow History's user messages.
	History   []Message `json:"history,omitempty"`
	Continued []Message `json:"continued,omitempty"`
	// ClientTools are tools the client runs itself: offered to the
	// supervisor beside Trellis' own, and never run here. A turn whose
	// decision calls one ends at once with the call (Outcome
	// OutcomeClientTools; tool.start with source "client" per call), for
	// the client to run it and send the result in a new request.
	ClientTools []ClientTool `json:"client_tools,omitempty"`
}

// ClientTool is a tool the client declares and runs (see
// Input.ClientTools). Parameters is its JSON Schema; nil is an object
// with no properties.
type ClientTool struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	Parameters  json.RawMessage `json:"parameters,omitempty"`
}

// SourceClient is ToolStart.Source for a call of a client tool.
const SourceClient = "client"

// clientTool reports whether name is one of the input's client tools.
func (in *Input) clientTool(name string) bool {
	for i := range in.ClientTools {
		if in.ClientTools[i].Name == name {
			return true
		}
	}
	return false
}

// Role is who wrote a message.
type Role string

const (
	RoleUser      Role = "user"
	RoleAssistant Role = "assistant"
	RoleTool      Role = "tool"
)

// Message is one message of the conversation.
type Message struct {
	Role    Role   `json:"role"`
	Content string `json:"content,omitempty"`
	// ToolCalls are the calls an assistant message makes.
	ToolCalls []ToolCall `json:"tool_calls,omitempty"`
	// ToolCallID and Name identify the call a tool message answers.
	ToolCallID string `json:"tool_call_id,omitempty"`
	Name       string `json:"name,omitempty"`
	// Turn is the turn the message belongs to.
	Turn int `json:"turn"`
}

// Action is a supervisor decision's kind.
type Action string

const (
	ActionAnswer         Action = "ANSWER"
	ActionCallTool       Action = "CALL_TOOL"
	ActionCreateWorkflow Action = "CREATE_WORKFLOW"
	ActionClarify        Action = "CLARIFY"
	// ActionBlocked is not the model's to choose: the supervisor records it
	// when it cannot go on (no parsable decision, iteration limit).
	ActionBlocked Action = "BLOCKED"
)

// ToolCall is one call of a tool with its arguments (a JSON object).
type ToolCall struct {
	ID   string          `json:"id"`
	Tool string          `json:"tool"`
	Args json.RawMessage `json:"args,omitempty"`
	// Gate is whether the call waits for a human's yes, decided once,
	// when the supervisor proposes it, and kept in the checkpoint with
	// the call: a run resumed or recovered later never decides again
	// from tool sources that may not have connected yet.
	Gate Gate `json:"gate,omitempty"`
}

// Gate says whether a tool call needs approval. The zero Gate (a call
// from a checkpoint that predates gates) asks: approval fails closed.
type Gate string

const (
	GateAsk  Gate = "ask"
	GateNone Gate = "none"
)

// WorkflowStep is one step of a CREATE_WORKFLOW decision. Steps whose
// dependencies are done run concurrently. A string argument may include
// "{{id}}", replaced by the text result of step id (a dependency).
type WorkflowStep struct {
	ID        string          `json:"id"`
	Tool      string          `json:"tool"`
	Args      json.RawMessage `json:"args,omitempty"`
	DependsOn []string        `json:"depends_on,omitempty"`
	// ToolCallID is the id the step's call runs under; set by the
	// supervisor.
	ToolCallID string `json:"tool_call_id,omitempty"`
	// Gate is the step's call's, as for ToolCall.
	Gate Gate `json:"gate,omitempty"`
	// Status is the step's outcome once run: a ToolStatus.
	Status ToolStatus `json:"status,omitempty"`
}

// Decision is the supervisor's structured decision.
type Decision struct {
	Action    Action `json:"action"`
	Reasoning string `json:"reasoning,omitempty"`
	// ToolCalls are the calls of CALL_TOOL, run concurrently.
	ToolCalls []ToolCall `json:"tool_calls,omitempty"`
	// Workflow is the plan of CREATE_WORKFLOW.
	Workflow []WorkflowStep `json:"workflow,omitempty"`
	// Question is CLARIFY's question.
	Question string `json:"question,omitempty"`
	// Answer is the text the model gave with an ANSWER, if any.
	Answer string `json:"answer,omitempty"`
}

// ActionRecord is one decision in the turn's action history.
type ActionRecord struct {
	Iteration int      `json:"iteration"`
	Action    Action   `json:"action"`
	Tools     []string `json:"tools,omitempty"`
	Reasoning string   `json:"reasoning,omitempty"`
}

// ToolStatus is a tool call's outcome.
type ToolStatus string

const (
	ToolSuccess  ToolStatus = "success"
	ToolError    ToolStatus = "error"
	ToolRejected ToolStatus = "rejected"
	// ToolSkipped: a workflow step whose dependency failed or was rejected.
	ToolSkipped ToolStatus = "skipped"
)

// ToolResult is one tool call's outcome.
type ToolResult struct {
	ToolCallID string          `json:"tool_call_id"`
	Tool       string          `json:"tool"`
	Args       json.RawMessage `json:"args,omitempty"`
	Status     ToolStatus      `json:"status"`
	// Content is the result as the model reads it (the error message for
	// a failed call, the reason for a rejected one).
	Content string `json:"content"`
	// DirectResponse: the tool showed content to the user itself.
	DirectResponse bool `json:"direct_response,omitempty"`
	// Sources are the numbers of the data chunks the call returned.
	Sources []int `json:"sources,omitempty"`
	// Iteration is the supervisor iteration that asked for the call.
	Iteration  int   `json:"iteration"`
	DurationMS int64 `json:"duration_ms"`
}

// ApprovalRecord is one answered approval.
type ApprovalRecord struct {
	ApprovalID string              `json:"approval_id"`
	ToolCallID string              `json:"tool_call_id"`
	Tool       string              `json:"tool"`
	Args       json.RawMessage     `json:"args,omitempty"`
	Revision   int                 `json:"revision"`
	Decision   events.DecisionKind `json:"decision"`
	EditedArgs json.RawMessage     `json:"edited_args,omitempty"`
	Reason     string              `json:"reason,omitempty"`
}

// Assessment is the reflect node's verdict.
type Assessment string

const (
	AssessSatisfied      Assessment = "satisfied"
	AssessNeedMore       Assessment = "need_more"
	AssessBlocked        Assessment = "blocked"
	AssessDirectResponse Assessment = "direct_response"
)

// Reflection is the reflect node's judgement of the results so far.
type Reflection struct {
	Assessment Assessment `json:"assessment,omitempty"`
	Reasoning  string     `json:"reasoning,omitempty"`
}

// DataChunk is a citable piece of material a tool returned, numbered for
// citations ([1], [2], …) in the order the agent received them.
type DataChunk struct {
	Number     int    `json:"number"`
	ToolCallID string `json:"tool_call_id,omitempty"`
	Source     string `json:"source"`
	Title      string `json:"title,omitempty"`
	Text       string `json:"text"`
	// Document places a passage of an uploaded document; nil for other
	// sources.
	Document *operators.DocumentSpan `json:"document,omitempty"`
}

// DataSummary describes one document of the conversation.
type DataSummary struct {
	DocumentID string `json:"document_id"`
	// Title is the document's file name.
	Title string `json:"title,omitempty"`
	// Status is its processing status (ready, summarizing, …, error).
	Status  string `json:"status,omitempty"`
	Summary string `json:"summary"`
}

// DirectResponse is content an operator showed the user directly.
type DirectResponse struct {
	ToolCallID  string `json:"tool_call_id,omitempty"`
	Content     string `json:"content"`
	ContentType string `json:"content_type"`
	WidgetType  string `json:"widget_type,omitempty"`
}

// BriefKind says what the write node is writing.
type BriefKind string

const (
	// BriefAnswer: answer from the conversation (the supervisor's ANSWER).
	BriefAnswer BriefKind = "answer"
	// BriefSynthesis: answer from tool results, citing numbered sources.
	BriefSynthesis BriefKind = "synthesis"
	// BriefBlocked: say honestly what failed.
	BriefBlocked BriefKind = "blocked"
)

// Brief is the write node's assignment: what to write, and from what.
type Brief struct {
	Kind BriefKind `json:"kind,omitempty"`
	// Instructions are added to the system prompt.
	Instructions string `json:"instructions,omitempty"`
	// Fallback is written when the model fails (blocked briefs have one).
	Fallback string `json:"fallback,omitempty"`
}

// Outcome says how a turn ended.
type Outcome string

const (
	OutcomeAnswered Outcome = "answered"
	OutcomeDirect   Outcome = "direct"
	OutcomeBlocked  Outcome = "blocked"
	OutcomeClarify  Outcome = "clarify"
	// OutcomeClientTools: the turn ended with calls of client tools (see
	// Input.ClientTools), for the client to run.
	OutcomeClientTools Outcome = "client_tools"
	// OutcomeCancelled: the user cancelled the turn while it waited for a
	// human (see Agent.Abandon). It is in the checkpoint so that a process
	// that died before recording the run's end ends it cancelled too.
	OutcomeCancelled Outcome = "cancelled"
)
