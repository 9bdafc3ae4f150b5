package growstack

// index is read at run time, so the compiler keeps the frame whole.
var index = 1

// Grow grows the calling goroutine's stack to 64 KiB if it is smaller.
// Call it first in a goroutine that will call into the SQLite driver.
// It costs the frame's zeroing, under a microsecond, also where the
// stack is that large already.
func Grow() { _ = deep() }

// deep returns a byte of its frame: a result, not a shared variable, so
// that goroutines growing at once do not race, and a call the compiler
// neither inlines nor drops.
//
//go:noinline
func deep() byte {
	// 32 KiB of frame does not fit in a 32 KiB stack beside what the
	// goroutine used before the call, so the runtime doubles the stack
	// until it does: to 64 KiB, the size the driver's calls reach. A
	// larger frame would only cost more zeroing.
	var frame [32 << 10]byte
	return frame[index]
}
