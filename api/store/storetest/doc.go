// Package storetest is the conformance suite of store.Store: every backend
// runs Run against a fresh store of its own and must pass it unchanged, as
// slogtest does for slog handlers. It checks what a user of the HTTP API
// could observe: ownership (another user's ids are unknown ids), stable
// and complete pagination, cascading deletes, gap-free event numbers under
// concurrent appends, one active run per conversation under concurrent
// starts, first-answer-wins approvals and elicitations, edit and rerun,
// and that a rejected call changes nothing.
package storetest
