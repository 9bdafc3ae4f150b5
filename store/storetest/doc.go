// Package storetest is the conformance suite of the store package: every
// backend runs Run against a fresh Record of its own (a store.Store with
// documents, memories, users, keys, sessions, webhooks and workspaces)
// and must pass it unchanged, as slogtest does for slog handlers. It
// checks what a user of the HTTP API could observe: ownership (another
// user's ids are unknown ids), stable and complete pagination, cascading
// deletes, gap-free event numbers under concurrent appends, events stored
// in batches read one by one from any number (and, with RunLegacy, those
// older code stored a row each), one active run per conversation under
// concurrent starts, first-answer-wins approvals and elicitations, edit
// and rerun, a run started in a new conversation stored with it or not at
// all, the same text kept and refused on every backend (ids that cannot
// exist are unknown), and that a rejected call changes nothing.
package storetest
