package web_test

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package when a test leaves a goroutine behind: the
// browser harness, the fake's scripts and its streams must all end at
// cleanup.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
