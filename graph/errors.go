package graph

import (
	"errors"
	"fmt"
	"strings"
)

// Sentinel errors callers branch on; match them with errors.Is.
var (
	// ErrRecursionLimit: the run took more supersteps than its limit.
	ErrRecursionLimit = errors.New("graph: recursion limit reached")
	// ErrInterrupted: the run paused at an interrupt; continue the thread
	// with a resume value. The error is an *InterruptError.
	ErrInterrupted = errors.New("graph: run interrupted")
	// ErrConcurrentUpdate: two tasks of one step wrote the same field that
	// has no reducer.
	ErrConcurrentUpdate = errors.New("graph: concurrent update of a field without reducer")
	// ErrNoCheckpointer: the operation needs a checkpointer and a thread id.
	ErrNoCheckpointer = errors.New("graph: no checkpointer or thread id")
	// ErrUnknownInterrupt: a resume value names no pending interrupt.
	ErrUnknownInterrupt = errors.New("graph: no such pending interrupt")
	// ErrUnknownNode: a router, Goto or Send named a node the graph lacks.
	ErrUnknownNode = errors.New("graph: unknown node")
)

// NodeError is a node's failure, wrapped with where it happened.
type NodeError struct {
	Node string // task name: the node, with "#n" for the n-th Send to it
	Step int
	Err  error
}

func (e *NodeError) Error() string {
	return fmt.Sprintf("graph: node %s (step %d): %v", e.Node, e.Step, e.Err)
}

func (e *NodeError) Unwrap() error { return e.Err }

// PanicError is a panic inside a node, turned into an error.
type PanicError struct {
	Value any
	Stack []byte
}

func (e *PanicError) Error() string {
	return fmt.Sprintf("panic: %v\n%s", e.Value, e.Stack)
}

// RecursionError reports the limit and the nodes of the last step.
type RecursionError struct {
	Limit int
	Nodes []string
}

func (e *RecursionError) Error() string {
	return fmt.Sprintf("graph: recursion limit of %d supersteps reached; last nodes: %s (raise RunConfig.RecursionLimit if the loop is intended)",
		e.Limit, strings.Join(e.Nodes, ", "))
}

func (e *RecursionError) Is(target error) bool { return target == ErrRecursionLimit }

// InterruptError ends a run that paused. Every pending interrupt is listed;
// each can be answered by id.
type InterruptError struct {
	Interrupts []PendingInterrupt
}

func (e *InterruptError) Error() string {
	parts := make([]string, len(e.Interrupts))
	for i, in := range e.Interrupts {
		parts[i] = in.String()
	}
	return "graph: run interrupted: " + strings.Join(parts, "; ")
}

func (e *InterruptError) Is(target error) bool { return target == ErrInterrupted }
