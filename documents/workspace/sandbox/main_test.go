package sandbox_test

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package's tests when a goroutine outlives them: no
// run may leave its watchdog behind. regexp2's clock, which a match with
// a timeout starts and which stops itself once no match has needed it for
// a while, is the library's, one per process, not a run's.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m, goleak.IgnoreAnyFunction("github.com/dlclark/regexp2/v2.runClock"))
}
