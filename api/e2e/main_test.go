package e2e_test

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package when a test leaves a goroutine behind: the
// server's runs and streams, the browser harness and the databases must
// all end at cleanup.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m,
		// database/sql's opener goroutine ends with its database; as in
		// package api's tests, it may outlive a test's cleanup briefly.
		goleak.IgnoreAnyFunction("database/sql.(*DB).connectionOpener"),
	)
}
