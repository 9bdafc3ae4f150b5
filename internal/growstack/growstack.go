package growstack

// index is read at run time, so the compiler keeps the frames whole.
var index = 1

// ForRun grows the calling goroutine's stack to 64 KiB if it is
// smaller: what a run's goroutine reaches, reading and writing the
// record and its checkpoints. Call it first in the goroutine. It costs
// the frame's zeroing, under a microsecond, also where the stack is that
// large already.
func ForRun() { _ = frame32() }

// ForRead grows the calling goroutine's stack to 32 KiB if it is
// smaller: what a goroutine reaches that reads the database (the memory
// context's loader and its recall).
func ForRead() { _ = frame16() }

// A frame function returns a byte of its frame: a result, not a shared
// variable, so that goroutines growing at once do not race, and a call
// the compiler neither inlines nor drops. A frame of half the size
// wanted does not fit in a stack of that half beside what the goroutine
// used before the call, so the runtime doubles the stack until it does:
// to the size wanted. A larger frame would only cost more zeroing.

//go:noinline
func frame32() byte {
	var frame [32 << 10]byte
	return frame[index]
}

//go:noinline
func frame16() byte {
	var frame [16 << 10]byte
	return frame[index]
}
