package agui

import "encoding/json"

// AG-UI 1.0 events, as Trellis sends them. Optional fields are omitted
// when empty, never null: the client reads a null as a deprecated
// absence and warns.

type runStarted struct {
	Type        string `json:"type"`
	ThreadID    string `json:"threadId"`
	RunID       string `json:"runId"`
	ParentRunID string `json:"parentRunId,omitempty"`
}

type textMessageStart struct {
	Type      string `json:"type"`
	MessageID string `json:"messageId"`
	Role      string `json:"role"`
}

type textMessageContent struct {
	Type      string `json:"type"`
	MessageID string `json:"messageId"`
	Delta     string `json:"delta"`
}

type textMessageEnd struct {
	Type      string `json:"type"`
	MessageID string `json:"messageId"`
}

// reasoningEvent is REASONING_START, REASONING_MESSAGE_END and
// REASONING_END.
type reasoningEvent struct {
	Type      string `json:"type"`
	MessageID string `json:"messageId"`
}

// reasoningMessageStart is REASONING_MESSAGE_START; Role is "reasoning".
type reasoningMessageStart struct {
	Type      string `json:"type"`
	MessageID string `json:"messageId"`
	Role      string `json:"role"`
}

// The tool call events carry SubagentRunID for a sub-agent's call: the
// path of the sub-agent (its events' namespace).

type toolCallStart struct {
	Type            string `json:"type"`
	ToolCallID      string `json:"toolCallId"`
	ToolCallName    string `json:"toolCallName"`
	ParentMessageID string `json:"parentMessageId,omitempty"`
	SubagentRunID   string `json:"subagentRunId,omitempty"`
}

type toolCallArgs struct {
	Type          string `json:"type"`
	ToolCallID    string `json:"toolCallId"`
	Delta         string `json:"delta"`
	SubagentRunID string `json:"subagentRunId,omitempty"`
}

type toolCallEnd struct {
	Type          string `json:"type"`
	ToolCallID    string `json:"toolCallId"`
	SubagentRunID string `json:"subagentRunId,omitempty"`
}

type toolCallResult struct {
	Type          string `json:"type"`
	MessageID     string `json:"messageId"`
	ToolCallID    string `json:"toolCallId"`
	Content       string `json:"content"`
	Role          string `json:"role"`
	SubagentRunID string `json:"subagentRunId,omitempty"`
}

// step is STEP_STARTED and STEP_FINISHED: a node of the agent's graph,
// or of a sub-agent's.
type step struct {
	Type          string `json:"type"`
	StepName      string `json:"stepName"`
	SubagentRunID string `json:"subagentRunId,omitempty"`
}

// subagentStarted is SUBAGENT_STARTED: the agent's task tool handed a
// job to a sub-agent. SubagentRunID is the sub-agent's path,
// "<name>:<call id>", nested ones joined with "/".
type subagentStarted struct {
	Type                string `json:"type"`
	SubagentRunID       string `json:"subagentRunId"`
	Name                string `json:"name"`
	Description         string `json:"description,omitempty"`
	ParentSubagentRunID string `json:"parentSubagentRunId,omitempty"`
	ParentToolCallID    string `json:"parentToolCallId,omitempty"`
}

// subagentFinished is SUBAGENT_FINISHED: the sub-agent answered
// (outcome success, its answer the result), or its run stopped for a
// person (outcome suspended).
type subagentFinished struct {
	Type          string          `json:"type"`
	SubagentRunID string          `json:"subagentRunId"`
	Result        string          `json:"result,omitempty"`
	Outcome       subagentOutcome `json:"outcome"`
}

type subagentOutcome struct {
	Type string `json:"type"` // success, suspended
}

// subagentError is SUBAGENT_ERROR: the sub-agent failed or was
// cancelled; Code is how it ended.
type subagentError struct {
	Type          string `json:"type"`
	SubagentRunID string `json:"subagentRunId"`
	Message       string `json:"message"`
	Code          string `json:"code,omitempty"`
}

// activitySnapshot is ACTIVITY_SNAPSHOT: a tool's progress (activity
// type tool_progress), the task board (activity type tasks) or a
// workspace file's latest change (activity type file), whole,
// replacing the activity message of the same id.
type activitySnapshot struct {
	Type          string `json:"type"`
	MessageID     string `json:"messageId"`
	ActivityType  string `json:"activityType"`
	Content       any    `json:"content"`
	Replace       bool   `json:"replace"`
	SubagentRunID string `json:"subagentRunId,omitempty"`
}

// progress is a tool_progress activity's content.
type progress struct {
	ToolCallID string  `json:"toolCallId"`
	Progress   float64 `json:"progress"`
	Total      float64 `json:"total,omitempty"`
	Message    string  `json:"message,omitempty"`
}

type messagesSnapshot struct {
	Type     string            `json:"type"`
	Messages []json.RawMessage `json:"messages"`
}

type stateSnapshot struct {
	Type     string `json:"type"`
	Snapshot state  `json:"snapshot"`
}

// state is what STATE_SNAPSHOT says of the thread: Trellis' ids for it
// and its last run, and how that run ended.
type state struct {
	ConversationID string `json:"conversationId"`
	RunID          string `json:"trellisRunId"`
	Status         string `json:"status"`
}

type runFinished struct {
	Type     string       `json:"type"`
	ThreadID string       `json:"threadId"`
	RunID    string       `json:"runId"`
	Outcome  outcome      `json:"outcome"`
	Usage    []tokenUsage `json:"usage,omitempty"`
}

type outcome struct {
	Type       string      `json:"type"` // success, interrupt, cancelled
	Interrupts []interrupt `json:"interrupts,omitempty"`
}

type interrupt struct {
	ID             string          `json:"id"`
	Reason         string          `json:"reason"`
	Message        string          `json:"message,omitempty"`
	ToolCallID     string          `json:"toolCallId,omitempty"`
	ResponseSchema json.RawMessage `json:"responseSchema,omitempty"`
}

type tokenUsage struct {
	InputTokens     int `json:"inputTokens"`
	OutputTokens    int `json:"outputTokens"`
	TotalTokens     int `json:"totalTokens"`
	ReasoningTokens int `json:"reasoningTokens,omitempty"`
}

type runError struct {
	Type    string `json:"type"`
	Message string `json:"message"`
	Code    string `json:"code,omitempty"`
}

// uncertainSchema is the responseSchema of an uncertain call's
// interrupt: run the call again, skip it, or treat it as failed.
var uncertainSchema = json.RawMessage(`{"type":"object","properties":{"decision":{"type":"string","enum":["retry","skip","fail"]}},"required":["decision"]}`)

// approvalSchema is the responseSchema of an approval's interrupt.
var approvalSchema = json.RawMessage(`{"type":"object","properties":{"approved":{"type":"boolean"},"editedArgs":{"type":"object"},"reason":{"type":"string"}},"required":["approved"]}`)

// Wire messages of MESSAGES_SNAPSHOT that the run adds.

type assistantMessage struct {
	ID            string     `json:"id"`
	Role          string     `json:"role"`
	Content       string     `json:"content,omitempty"`
	ToolCalls     []toolCall `json:"toolCalls,omitempty"`
	SubagentRunID string     `json:"subagentRunId,omitempty"`
}

type toolCall struct {
	ID       string       `json:"id"`
	Type     string       `json:"type"`
	Function functionCall `json:"function"`
}

// functionCall is AG-UI's FunctionCall: the function a tool call calls,
// with its arguments as JSON text.
type functionCall struct {
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

// reasoningMessage is a node's reasoning, as the client keeps it.
type reasoningMessage struct {
	ID      string `json:"id"`
	Role    string `json:"role"`
	Content string `json:"content"`
}

type toolMessage struct {
	ID            string `json:"id"`
	Role          string `json:"role"`
	Content       string `json:"content"`
	ToolCallID    string `json:"toolCallId"`
	SubagentRunID string `json:"subagentRunId,omitempty"`
}
