package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/trellis-ai/trellis/internal/sqlopen"
)

// dbDescriptors counts the descriptors process pid holds open on the
// SQLite files of dir: the database, its WAL and its shared memory.
func dbDescriptors(t *testing.T, pid int, dir string) int {
	t.Helper()
	fds := fmt.Sprintf("/proc/%d/fd", pid)
	entries, err := os.ReadDir(fds)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, e := range entries {
		target, err := os.Readlink(filepath.Join(fds, e.Name()))
		if err == nil && strings.HasPrefix(target, dir+string(filepath.Separator)) && strings.Contains(target, ".db") {
			n++
		}
	}
	return n
}

// TestSQLiteDescriptorsBounded: bursts of 120 streamed chats at once
// never hold more than a bounded number of descriptors to the database
// files (a process with the common limit of 1,024 survives any burst),
// after each burst what is left is the pools' idle connections, whatever
// the burst's size, and once the process is quiet for the pools' idle
// time (a second here, a minute in service) the count comes back near
// where it started.
func TestSQLiteDescriptorsBounded(t *testing.T) {
	t.Parallel()
	testDescriptorsBounded(t, "1s")
}

// testDescriptorsBounded runs the bursts with the pools' idle time set to
// idle.
func testDescriptorsBounded(t *testing.T, idle string) {
	if testing.Short() {
		t.Skip("bursts of 120 streamed chats")
	}
	if _, err := os.Stat("/proc/self/fd"); err != nil {
		t.Skip("no /proc: cannot count descriptors")
	}
	dir := t.TempDir()
	c := startServe(t, "TRELLIS_DATA_DIR="+dir, "TRELLIS_RATE_PER_MINUTE=-1", "TRELLIS_MAX_RUNS_PER_USER=-1",
		"TRELLIS_LOG_LEVEL=warn", "TRELLIS_APPROVAL_TOOLS=", childIdleTime+"="+idle)
	pid := c.cmd.Process.Pid
	baseline := dbDescriptors(t, pid, dir)
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 120}, Timeout: 2 * time.Minute}
	chat := func(i int) error {
		body := fmt.Sprintf(`{"message": "hello number %d"}`, i)
		req, err := http.NewRequestWithContext(context.Background(), http.MethodPost, c.url+"/api/v1/chat", bytes.NewBufferString(body))
		if err != nil {
			return err
		}
		req.Header.Set("Content-Type", "application/json")
		resp, err := client.Do(req)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		data, err := io.ReadAll(resp.Body)
		if err != nil {
			return err
		}
		if resp.StatusCode != http.StatusOK || !bytes.Contains(data, []byte("event: run.completed")) {
			return fmt.Errorf("chat %d: %d %.200s", i, resp.StatusCode, data)
		}
		return nil
	}
	// Two pools (the store's trellis.db and the agent's checkpoints.db),
	// each of at most MaxOpenConns connections holding the database and
	// its WAL, and one shared-memory descriptor per file: whatever the
	// burst, far below 1,024.
	const burst, limit = 120, 2 * (2*sqlopen.MaxOpenConns + 1)
	// nearBaseline is what a quiet process may hold beyond its start: a
	// connection (the database and its WAL) of each pool in use.
	const nearBaseline = 4
	peak := baseline
	for round := range 3 {
		stop := make(chan struct{})
		sampled := make(chan int)
		go func() {
			most := 0
			tick := time.NewTicker(5 * time.Millisecond)
			defer tick.Stop()
			for {
				most = max(most, dbDescriptors(t, pid, dir))
				select {
				case <-stop:
					sampled <- most
					return
				case <-tick.C:
				}
			}
		}()
		var wg sync.WaitGroup
		errs := make(chan error, burst)
		for i := range burst {
			wg.Go(func() {
				if err := chat(round*burst + i); err != nil {
					errs <- err
				}
			})
		}
		wg.Wait()
		close(stop)
		most := <-sampled
		close(errs)
		for err := range errs {
			t.Fatal(err)
		}
		peak = max(peak, most)
		after := dbDescriptors(t, pid, dir)
		t.Logf("burst %d: %d descriptors to the database files at start, %d at most during the burst, %d after", round+1, baseline, most, after)
		if most > limit {
			t.Errorf("burst %d: %d descriptors at once, want at most %d", round+1, most, limit)
		}
		if after > limit {
			t.Errorf("burst %d: %d descriptors left after the burst, %d at start", round+1, after, baseline)
		}
		// The background loops (the job queue's, the webhooks') use a
		// connection now and then, so near, not at, the start.
		quiet := time.Now()
		for after = dbDescriptors(t, pid, dir); after > baseline+nearBaseline; after = dbDescriptors(t, pid, dir) {
			if time.Since(quiet) > time.Minute {
				t.Fatalf("burst %d: %d descriptors to the database files a minute after it, %d at start", round+1, after, baseline)
			}
			time.Sleep(50 * time.Millisecond)
		}
		t.Logf("burst %d: %d descriptors %v after it", round+1, after, time.Since(quiet).Round(time.Millisecond))
	}
	client.CloseIdleConnections()
}
