// Package graph runs typed state graphs in Pregel supersteps, the model of
// LangGraph, in Go; it imports nothing LLM-related.
//
// # State
//
// A graph's state is a Go struct S. Each exported field merges the updates
// nodes return through a reducer declared once, in New: Append, Sum, Merge,
// or any Reduce function; undeclared fields take the newest value. A node
// returns a partial update: its non-zero fields are merged, its zero
// fields left alone. A command node's Command.Overwrite sets fields to
// exact values, zero included, bypassing reducers.
//
// # Running
//
// Each superstep runs every triggered node concurrently on a copy of the
// state, then merges their updates in node-name order, so results never
// depend on scheduling. Edges, conditional edges, joins, Command.Goto and
// Send decide the next step; a run ends when no node is triggered.
// CompileOptions.MaxConcurrency (or RunConfig's, per run) bounds how many
// tasks of a step run at once, for a wide Send fan-out; by default all do.
// Invoke returns the final state; Stream yields values, updates, custom,
// message and debug events as they happen.
//
// # Persistence
//
// With a Checkpointer and a RunConfig.ThreadID, a checkpoint is written
// before the first step and after every superstep, each before the next
// step starts; a Durability (per graph or per run) writes them in the
// background instead (async), or only the input's and the run's last
// (exit). Only fields whose value
// changed are stored, and append fields only what they gained, so a step
// costs the same at the thousandth turn as at the first. A step that fails
// or pauses keeps the writes of its finished tasks, which never run again.
// Invoke with a nil input continues a thread from its checkpoint: after a
// crash, or with a resume value after Interrupt. GetState, History,
// UpdateState and RunConfig.CheckpointID read, edit and fork threads.
// Backends live in graph/checkpoint: memory, sqlite and postgres.
package graph
