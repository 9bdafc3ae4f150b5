// Package checkpointtest is the conformance suite every graph.Checkpointer
// passes. A backend's test calls Run with a constructor for fresh, empty
// savers, the way testing/slogtest checks slog handlers:
//
//	func TestConformance(t *testing.T) {
//		checkpointtest.Run(t, func(t *testing.T) graph.Checkpointer {
//			return memory.New()
//		})
//	}
//
// Each case is a subtest of its own with its own saver, so a failure names
// the behaviour that broke and a backend can skip a case with -skip.
//
// BenchmarkPutAnswer is the backends' one benchmark of storing a turn's
// answer on long threads, so their figures compare.
package checkpointtest
