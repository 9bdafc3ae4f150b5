// Package memory keeps graph checkpoints in process memory, for tests and
// for runs that need not outlive the process.
//
// The Saver stores deep copies of what it is given and hands out deep
// copies, so neither side can change the other's bytes. It never encodes a
// checkpoint as JSON: a checkpoint's field versions and blobs are copied
// into one string, which keeps a Put to a few hundred nanoseconds and the
// pointers the garbage collector follows through a long-lived process's
// checkpoints to a handful per checkpoint.
package memory
