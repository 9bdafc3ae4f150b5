package growstack_test

import (
	"testing"

	"github.com/trellis-ai/trellis/internal/growstack"
)

// deep uses about 48 KiB of stack in 48 frames, as a goroutine does
// inside the SQLite driver.
//
//go:noinline
func deep(n int) byte {
	var frame [1000]byte
	frame[n%len(frame)] = byte(n)
	if n == 0 {
		return frame[0]
	}
	return deep(n-1) + frame[n%len(frame)]
}

// A goroutine that goes deep once, with its stack grown first and
// without: the runtime's copies of a deep stack against one copy of a
// shallow one.
func BenchmarkDeepGoroutine(b *testing.B) {
	for _, c := range []struct {
		name string
		grow bool
	}{{"grown", true}, {"doubling", false}} {
		b.Run(c.name, func(b *testing.B) {
			done := make(chan byte)
			for b.Loop() {
				go func() {
					if c.grow {
						growstack.Grow()
					}
					done <- deep(48)
				}()
				<-done
			}
		})
	}
}
