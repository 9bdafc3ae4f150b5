package runs

import (
	"encoding/json"

	"github.com/trellis-ai/trellis/events"
	"github.com/trellis-ai/trellis/nodes"
	"github.com/trellis-ai/trellis/store"
)

// The record's and the agent's types that the surfaces read and write
// through the service's verbs, named here so that a surface needs
// neither store nor nodes. They are aliases: the same types, and the
// same sentinels for errors.Is.

// A conversation, a run as the record keeps it, and pages of them.
type (
	Conversation     = store.Conversation
	NewConversation  = store.NewConversation
	ConversationPage = store.ConversationPage
	Page             = store.Page
	// RunRecord is a run as the store records it (Run is a run live
	// in this process).
	RunRecord = store.Run
	RunStatus = store.RunStatus
	RunQuery  = store.RunQuery
	RunPage   = store.RunPage
	Branch    = store.Branch
	// QueuedRun is a message waiting for its conversation's run to end
	// (MultitaskEnqueue).
	QueuedRun = store.QueuedRun
)

// A run's statuses, and the page sizes the store caps.
const (
	RunRunning     = store.RunRunning
	RunInterrupted = store.RunInterrupted
	RunCompleted   = store.RunCompleted
	RunCancelled   = store.RunCancelled
	RunFailed      = store.RunFailed

	MaxConversations = store.MaxLimit
	MaxRuns          = store.MaxRunLimit
)

// A human request (an approval, an elicitation, a clarification, an
// uncertain call) and the answers to it. Its kind is also an interrupted
// run's reason (RunRecord.InterruptReason).
type (
	HumanRequest      = store.HumanRequest
	HumanKind         = events.PendingKind
	ApprovalAnswer    = store.ApprovalAnswer
	Decision          = events.DecisionKind
	ElicitationAnswer = store.ElicitationAnswer
	ElicitationAction = events.ElicitAction
	CallAnswer        = store.CallAnswer
	CallDecision      = events.CallDecision
)

// Kinds of human request, decisions on an approval, actions on an
// elicitation.
const (
	KindApproval      = events.PendingApproval
	KindElicitation   = events.PendingElicitation
	KindClarification = events.PendingClarification
	KindUncertainCall = events.PendingUncertainCall

	DecisionApprove = events.DecisionApprove
	DecisionEdit    = events.DecisionEdit
	DecisionReject  = events.DecisionReject

	ActionAccept  = events.ElicitAccept
	ActionDecline = events.ElicitDecline
	ActionCancel  = events.ElicitCancel

	CallRetry = events.CallRetry
	CallSkip  = events.CallSkip
	CallFail  = events.CallFail
)

// The agent's input and state, as a run takes and reads them.
type (
	Input      = nodes.Input
	Message    = nodes.Message
	Role       = nodes.Role
	ToolCall   = nodes.ToolCall
	ClientTool = nodes.ClientTool
	Snapshot   = nodes.Snapshot
	SubAgent   = nodes.SubAgent
)

// Message roles, and the source of a client tool's call.
const (
	RoleUser      = nodes.RoleUser
	RoleAssistant = nodes.RoleAssistant
	RoleTool      = nodes.RoleTool
	SourceClient  = nodes.SourceClient
)

// The record's errors, for errors.Is.
var (
	ErrNotFound        = store.ErrNotFound
	ErrInvalid         = store.ErrInvalid
	ErrConflict        = store.ErrConflict
	ErrRunActive       = store.ErrRunActive
	ErrAlreadyResolved = store.ErrAlreadyResolved
	// ErrNoConversation: the agent has no state of the conversation
	// yet (State, History).
	ErrNoConversation = nodes.ErrNoConversation
)

// CheckMetadata reports an ErrInvalid error for conversation metadata
// that is neither empty nor a JSON object.
func CheckMetadata(m json.RawMessage) error { return store.CheckMetadata(m) }
