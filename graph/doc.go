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
// background instead (async), only the input's and the run's last
// (exit), or those and the ones planning the steps the graph's Barrier
// marks, each committed before its step starts (boundary): a graph that
// marks the steps doing what must not happen twice gets a run that a
// crash never makes repeat them, for a few writes a run. A caller that
// keeps the run's input itself (RunConfig.DeferInput) lets exit and
// boundary runs store the input's checkpoint with the next one, in one
// PutBatch where the backend is a BatchPutter (sqlite and postgres are).
// Only fields whose value changed are stored, and append fields
// only what they gained, as a delta on the previous value. Once the newest
// deltas hold 16 elements they are merged into one, and once the merged
// ones hold 256 so are they: loading a thread reads a few dozen blobs, not
// one per step, while a step writes the same, on average, at the
// thousandth turn as at the first. A step that fails or pauses keeps the
// writes of its finished tasks, which never run again. Invoke with a nil
// input continues a thread from its checkpoint: after a crash, or with a
// resume value after Interrupt. GetState, History, UpdateState and
// RunConfig.CheckpointID read, edit and fork threads. Backends live in
// graph/checkpoint: memory, sqlite and postgres. A backend that is also a
// Pruner drops old checkpoints as PlanPrune decides: each branch's newest,
// pending interrupts, the checkpoints the caller pins (turns a chat can
// still edit) and every delta base they read stay; PruneWalk and
// PruneRead.Plan are the walk and the count every such backend shares.
//
// Nor does a run load its thread again when it need not: a run that ends
// or pauses leaves its state in memory (CompileOptions.ThreadCache bounds
// how much), and the next run on the thread takes it from there when the
// thread's newest checkpoint is still the one it belongs to, which one
// List of a single checkpoint tells (or RunConfig.Newest, when the caller
// has just listed it). Otherwise — another process wrote the
// thread, UpdateState or a fork did, the process restarted, the state was
// evicted — the run loads and decodes the thread from the Checkpointer.
// Invoke's result and values events have their slices clipped, so
// appending to them never writes into the state the next run continues. A
// cached state is the run's own, not its JSON round trip: fields that JSON
// does not store outlive a run only while its state is cached, so keep
// them out of the state. RunConfig.NewThread tells a run that its thread
// has no checkpoint yet, so it looks for none.
package graph
