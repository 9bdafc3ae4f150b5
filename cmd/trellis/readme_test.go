package main

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

// readmeExample is one shell example of README.md.
type readmeExample struct {
	line int    // of the opening fence
	code string // the block's text
	// serve is the environment the example needs the server started
	// with, from a "<!-- serve: NAME=value … -->" line right above the
	// block (invisible once rendered); empty for the defaults.
	serve string
}

// serveMark names the server settings an example of README.md needs.
var serveMark = regexp.MustCompile(`^<!-- serve: (.*) -->$`)

// readmeExamples reads README.md's ```sh blocks.
func readmeExamples(t *testing.T, path string) []readmeExample {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []readmeExample
	var cur *readmeExample
	prev := ""
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		switch {
		case cur == nil && strings.TrimSpace(line) == "```sh":
			cur = &readmeExample{line: n}
			if m := serveMark.FindStringSubmatch(strings.TrimSpace(prev)); m != nil {
				cur.serve = m[1]
			}
		case cur != nil && strings.TrimSpace(line) == "```":
			out = append(out, *cur)
			cur = nil
		case cur != nil:
			cur.code += line + "\n"
		}
		prev = line
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// assigned finds the shell variables an example sets (CONV=…), which
// later examples use.
var assigned = regexp.MustCompile(`(?m)^\s*([A-Z][A-Z0-9_]*)=`)

// examplePrelude runs before each example: strict mode, so an unset
// variable or a failing command fails the example, and curl failing on
// an HTTP error status (a 415 or a 404 included), which it otherwise
// prints and exits 0 on.
const examplePrelude = `set -euo pipefail
curl() { command curl --fail-with-body --silent --show-error --max-time 30 "$@"; }
`

// TestREADMEExamples runs every shell example of README.md that talks to
// the server (each sh block with a curl in it) or writes a file for it
// (one that starts with cat >), as written, one after
// the other in one working directory, carrying the variables one sets
// (CONV, ID…) to the next, as a reader pasting them into one shell would.
// The server is a real trellis serve with the offline model on SQLite in
// a temporary data directory, started again with the settings an example
// names above its block (<!-- serve: … -->) and back to the defaults
// after, in the examples' working directory, so that a file an example
// wrote (cat > …) is the one a setting names; the address in the
// examples, 127.0.0.1:8080, is replaced by the server's.
// TRELLIS_INTERRUPT_AFTER is 2 s rather than 60, so that an approval's
// stream gives up waiting soon. Other blocks with no curl start a server
// or run the tests themselves, and are not run here.
func TestREADMEExamples(t *testing.T) {
	t.Parallel()
	for _, tool := range []string{"bash", "curl", "jq"} {
		if _, err := exec.LookPath(tool); err != nil {
			if os.Getenv("CI") != "" {
				t.Fatalf("the README's examples need %s: %v", tool, err)
			}
			t.Skipf("the README's examples need %s: %v", tool, err)
		}
	}
	data, work := t.TempDir(), t.TempDir()
	state := filepath.Join(work, ".state")
	if err := os.WriteFile(state, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	env := slices.DeleteFunc(os.Environ(), func(kv string) bool {
		// Only loopback: no proxy may take the requests elsewhere.
		return strings.Contains(strings.ToLower(strings.SplitN(kv, "=", 2)[0]), "proxy")
	})
	var (
		srv     *child
		serving string
		vars    []string
		ran     int
	)
	for _, ex := range readmeExamples(t, "../../README.md") {
		writes := strings.HasPrefix(ex.code, "cat > ")
		if !strings.Contains(ex.code, "curl ") && !writes {
			continue
		}
		if !writes && (srv == nil || ex.serve != serving) {
			if srv != nil {
				srv.stop(syscall.SIGTERM)
			}
			serverEnv := append([]string{"TRELLIS_DATA_DIR=" + data, "TRELLIS_MODEL=offline", "TRELLIS_APPROVAL_TOOLS=",
				"TRELLIS_INTERRUPT_AFTER=2s", "TRELLIS_LOG_LEVEL=info"}, strings.Fields(ex.serve)...)
			srv, serving = startServeIn(t, work, serverEnv...), ex.serve
		}
		host := "127.0.0.1:8080"
		if srv != nil {
			host = strings.TrimPrefix(srv.url, "http://")
		}
		code := strings.NewReplacer("127.0.0.1:8080", host, "localhost:8080", host).Replace(ex.code)
		for _, m := range assigned.FindAllStringSubmatch(ex.code, -1) {
			if !slices.Contains(vars, m[1]) {
				vars = append(vars, m[1])
			}
		}
		script := examplePrelude + "source " + state + "\n" + code
		if len(vars) > 0 {
			script += fmt.Sprintf("declare -p %s > %s 2>/dev/null || true\n", strings.Join(vars, " "), state)
		}
		ctx, cancel := context.WithTimeout(t.Context(), 90*time.Second)
		cmd := exec.CommandContext(ctx, "bash", "-c", script)
		cmd.Dir, cmd.Env = work, env
		out, err := cmd.CombinedOutput()
		cancel()
		if err != nil {
			t.Errorf("README.md, the example at line %d: %v\n%s\noutput:\n%s", ex.line, err, ex.code, out)
		} else {
			t.Logf("README.md, the example at line %d ran", ex.line)
		}
		ran++
	}
	if ran < 8 {
		t.Errorf("ran %d examples of README.md; it has more than that", ran)
	}
}
