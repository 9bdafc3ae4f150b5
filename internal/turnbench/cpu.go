package turnbench

import (
	"syscall"
	"testing"
	"time"
)

// CPU is the CPU time, user and system, this process has used so far.
// Benchmarks report its growth a turn beside the time a turn takes: it
// counts the work of every goroutine of the process (learning jobs,
// group commits) and none of a database server's, whose time a turn's
// wall clock holds.
func CPU(tb testing.TB) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		tb.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// ReportCPU reports the CPU time used since start, a CPU reading, in
// milliseconds an iteration, as cpu-ms/turn.
func ReportCPU(b *testing.B, start time.Duration) {
	b.ReportMetric(float64(CPU(b)-start)/float64(time.Millisecond)/float64(b.N), "cpu-ms/turn")
}
