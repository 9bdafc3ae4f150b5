// Package memory keeps graph checkpoints in process memory, for tests and
// for runs that need not outlive the process.
//
// The Saver stores deep copies of what it is given and hands out deep
// copies, so neither side can change the other's bytes. It never encodes a
// checkpoint, which keeps a Put within a couple of microseconds: cheap
// enough to checkpoint every superstep of an engine benchmark.
package memory
