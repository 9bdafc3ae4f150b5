package events

// Error codes of run.failed.
const (
	CodeInvalidInput    = "invalid_input"
	CodeApprovalPending = "approval_pending"
	CodeNoPending       = "no_pending_approval"
	CodeUnknownTurn     = "unknown_turn"
	CodeModel           = "model_error"
	CodeModelUnknown    = "unknown_model"
	CodeRecursion       = "recursion_limit"
	CodeInternal        = "internal_error"
)
