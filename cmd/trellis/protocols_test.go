package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// The client-protocol adapters are tested with the protocols' own client
// packages, pinned by a lockfile under each adapter's testdata (.ci/run
// installs them with npm ci), against a real trellis serve.

// clientDir returns an adapter's testdata directory once its pinned npm
// packages are installed: without node, or without them, the test is
// skipped, except in CI, where it fails.
func clientDir(t *testing.T, dir, pkg string) string {
	t.Helper()
	skipOrFail := func(msg string) {
		t.Helper()
		if os.Getenv("CI") != "" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	if _, err := exec.LookPath("node"); err != nil {
		skipOrFail("node is not installed: " + err.Error())
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(abs, "node_modules", pkg)); err != nil {
		skipOrFail("the pinned npm packages are not installed; run npm ci --prefix " + dir + ": " + err.Error())
	}
	return abs
}

// serveProtocols starts trellis serve on a fresh SQLite data directory
// with the protocol tests' script (calculator needs approval).
func serveProtocols(t *testing.T, env ...string) *child {
	t.Helper()
	script, err := filepath.Abs("testdata/protocols.json")
	if err != nil {
		t.Fatal(err)
	}
	return startServe(t, append([]string{"TRELLIS_DATA_DIR=" + t.TempDir(), "TRELLIS_MODEL=scripted:" + script}, env...)...)
}

// runClient runs a client script of dir with node (the given binary) and
// decodes the JSON line it prints into out.
func runClient(t *testing.T, node, dir, script string, out any, args ...string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, append([]string{filepath.Join(dir, script)}, args...)...)
	cmd.Dir = dir
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("node %s %v: %v\n%s\n%s", script, args, err, stdout.String(), stderr.String())
	}
	if err := json.Unmarshal(stdout.Bytes(), out); err != nil {
		t.Fatalf("node %s %v printed %q: %v\n%s", script, args, stdout.String(), err, stderr.String())
	}
}
