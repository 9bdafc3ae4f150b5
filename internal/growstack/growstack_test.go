package growstack_test

import (
	"testing"

	"github.com/trellis-ai/trellis/internal/growstack"
)

// deep uses about n KiB of stack in n frames, as a goroutine does
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

// A goroutine that goes as deep as a run's (48 KiB) or a read's
// (24 KiB) once, with its stack grown first and without: the runtime's
// copies of a deep stack against one copy of a shallow one.
func BenchmarkDeepGoroutine(b *testing.B) {
	for _, c := range []struct {
		name  string
		depth int
		grow  func()
	}{
		{"run/grown", 48, growstack.ForRun},
		{"run/doubling", 48, nil},
		{"read/grown", 24, growstack.ForRead},
		{"read/doubling", 24, nil},
	} {
		b.Run(c.name, func(b *testing.B) {
			done := make(chan byte)
			for b.Loop() {
				go func() {
					if c.grow != nil {
						c.grow()
					}
					done <- deep(c.depth)
				}()
				<-done
			}
		})
	}
}
