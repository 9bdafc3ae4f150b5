package graph

import (
	"context"
	"time"
)

// Mode selects what a Stream yields. Modes combine with |.
type Mode uint8

const (
	// ModeValues yields the whole state after the input and after every
	// superstep.
	ModeValues Mode = 1 << iota
	// ModeUpdates yields each task's update after its step.
	ModeUpdates
	// ModeCustom yields what nodes pass to Emit.
	ModeCustom
	// ModeMessages yields the LLM token chunks nodes pass to EmitMessage.
	ModeMessages
	// ModeDebug yields task starts and ends with durations, and checkpoints.
	ModeDebug
)

// Event is one item of a Stream.
type Event[S any] struct {
	Mode Mode
	// Namespace is empty for the root graph; for a subgraph's events it is
	// the path of "node:task" entries leading to it.
	Namespace []string
	// Node is the node that produced the event; empty for values events.
	Node string
	// Step is the superstep the event belongs to.
	Step int
	// State is the whole state (ModeValues) or the node's update
	// (ModeUpdates).
	State S
	// Data is the value of a custom event, a MessageChunk, a DebugEvent,
	// or the state of a subgraph whose state type differs from S.
	Data any
}

// MessageChunk is a piece of LLM output streamed by a node.
type MessageChunk struct {
	// ID groups the chunks of one message.
	ID string `json:"id,omitempty"`
	// Text is the new text.
	Text string `json:"text"`
	// Reasoning marks thinking output rather than answer text.
	Reasoning bool `json:"reasoning,omitempty"`
}

// DebugKind says what a DebugEvent reports.
type DebugKind string

const (
	DebugTaskStart  DebugKind = "task_start"
	DebugTaskEnd    DebugKind = "task_end"
	DebugCheckpoint DebugKind = "checkpoint"
)

// DebugEvent is the Data of a ModeDebug event.
type DebugEvent struct {
	Kind         DebugKind
	TaskID       string
	Duration     time.Duration // task_end
	Err          string        // task_end of a failed task
	CheckpointID string        // checkpoint
}

// Emit sends v to the run's stream as a ModeCustom event. It returns an
// error only when the run is over (its consumer stopped or its context
// ended); outside a node it does nothing. Emit blocks only while the
// stream's bounded buffer is full.
func Emit(ctx context.Context, v any) error {
	if t := taskFrom(ctx); t != nil {
		return t.emit(ModeCustom, v)
	}
	return nil
}

// EmitMessage streams a chunk of LLM output as a ModeMessages event.
func EmitMessage(ctx context.Context, chunk MessageChunk) error {
	if t := taskFrom(ctx); t != nil {
		return t.emit(ModeMessages, chunk)
	}
	return nil
}
