// Package growstack grows a goroutine's stack in one step, while it is
// still shallow, to the size the goroutine's work will reach.
//
// A goroutine starts with a small stack, and the runtime doubles it each
// time a call does not fit, copying the stack and adjusting every frame
// on it. The SQLite driver's calls are deep (its C, translated to Go,
// keeps large frames), so a run's goroutine grew from 8 to 64 KiB in
// three copies, and a goroutine that reads the database to 32 KiB in
// two, each made deep inside the driver with dozens of frames to adjust.
// Grown once at its start, a goroutine copies a few frames once. The
// sizes are those the goroutines reached under load (ForRun, ForRead),
// so the memory is the same: a goroutine gives it back when it ends, and
// while it waits with little of its stack in use the collector shrinks
// the stack as it would any other.
package growstack
