// Package events is the one vocabulary of a run's events: their type
// names (API.md's "type" field), one payload struct per type, the
// envelope-free JSON encoding, the decoder that turns stored JSON back
// into typed payloads, and which events end a run.
//
// The agent (package nodes) emits these payloads, tools reach them
// through operators' Messenger, the run service (package runs) adds
// run.started and stores them, and every surface — the native SSE and
// sync chat in package api and each protocol adapter — reads the typed
// payloads instead of re-parsing JSON. The values those payloads carry
// live here too: token usage (the usage object of response.done and
// run.completed, and of every model call in package llm), what a parked
// run waits for ([Pending]), the kind of a human request ([PendingKind])
// and a person's answers (an approval's [DecisionKind], a tool question's
// [ElicitAction], an uncertain call's [CallDecision]), which the record,
// the tools and the surfaces all use; citations, a run's budget, the task
// board, and run.failed's error codes.
//
// It imports nothing but the standard library, so that every package of
// the module may import it.
package events
