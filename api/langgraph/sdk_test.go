package langgraph_test

import (
	"context"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/trellis-ai/trellis/api"
	"github.com/trellis-ai/trellis/api/apitest"
	"github.com/trellis-ai/trellis/api/middleware"
	"github.com/trellis-ai/trellis/graph/checkpoint/sqlite"
	"github.com/trellis-ai/trellis/llm"
	"github.com/trellis-ai/trellis/operators"
	"github.com/trellis-ai/trellis/runs"
	"github.com/trellis-ai/trellis/store/sqlitestore"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const (
	aliceKey = "key-alice"
	bobKey   = "key-bob"
)

// server is the whole Trellis server (api.New, SQLite store and
// checkpointer, the scripted model replaying testdata/agent.json) on a
// loopback TCP listener, with API keys for alice and bob; it returns the
// LangGraph SDK's apiUrl.
func server(t *testing.T) string {
	t.Helper()
	ctx := context.Background()
	dir := t.TempDir()
	st, err := sqlitestore.Open(ctx, filepath.Join(dir, "trellis.db"))
	if err != nil {
		t.Fatal(err)
	}
	saver, err := sqlite.Open(ctx, filepath.Join(dir, "checkpoints.db"))
	if err != nil {
		st.Close()
		t.Fatal(err)
	}
	sc, err := llm.LoadScript(filepath.Join("testdata", "agent.json"))
	if err != nil {
		t.Fatal(err)
	}
	models, err := llm.NewRegistry(llm.Config{
		// It thinks where its script says so.
		Models:     []llm.ModelConfig{{ID: "scripted", Provider: llm.ProviderScripted, Instance: llm.NewScripted(sc), ToolCalling: true, Thinking: true}},
		Resilience: llm.ResilienceConfig{Disabled: true},
	})
	if err != nil {
		t.Fatal(err)
	}
	local := operators.NewRegistry()
	tools := operators.NewProvider(operators.ProviderConfig{Local: local, Approval: operators.ApprovalPolicy{Tools: []string{"calculator"}}})
	local.MustAdd(operators.Builtins(operators.BuiltinConfig{Info: operators.SelfInfo{Name: "Trellis", Version: "test"}, Tools: tools})...)
	local.MustAdd(
		operators.NewTool("lookup", "Looks a topic up.", func(ctx context.Context, c operators.Call, in lookupIn) (operators.Result, error) {
			return operators.TextResult(in.Topic + " is a typed state graph for Go"), nil
		}),
		operators.NewTool("delete_file", "Deletes a file.", func(ctx context.Context, c operators.Call, in pathIn) (operators.Result, error) {
			t.Errorf("delete_file ran on %s, though its approval was rejected", in.Path)
			return operators.TextResult("deleted " + in.Path), nil
		}, operators.RequiresApproval()),
	)
	srv, err := apitest.New(apitest.Config{
		Runs: runs.Config{Checkpointer: saver, Models: models, Tools: tools},
		API: api.Config{Store: st, Keys: map[middleware.APIKey]string{aliceKey: "alice", bobKey: "bob"},
			Limits: api.Limits{RatePerMinute: -1}},
	})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(srv.Handler())
	t.Cleanup(func() {
		sctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
		defer cancel()
		if err := srv.Shutdown(sctx); err != nil {
			t.Errorf("shutdown: %v", err)
		}
		ts.CloseClientConnections()
		ts.Close()
		saver.Close()
		st.Close()
	})
	return ts.URL + "/langgraph"
}

type lookupIn struct {
	Topic string `json:"topic" jsonschema:"what to look up"`
}

type pathIn struct {
	Path string `json:"path" jsonschema:"the file to delete"`
}

// nodeModules checks that the pinned SDK is installed (npm ci --prefix
// api/langgraph/testdata, as .ci/run does). Without node the test is
// skipped, except in CI, where it fails.
func nodeModules(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("node"); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("node is not installed: " + err.Error())
		}
		t.Skip("node is not installed: " + err.Error())
	}
	if _, err := os.Stat(filepath.Join("testdata", "node_modules", "@langchain", "langgraph-sdk")); err != nil {
		t.Fatal("the pinned SDK is not installed; run npm ci --prefix api/langgraph/testdata: " + err.Error())
	}
}

// TestSDK runs each scenario of testdata/sdk.mjs, the real LangGraph SDK
// (Client) against the real server: a chat streamed in every mode with
// threads, state, history, runs and join; a tool call; an approval
// approved and one rejected through command.resume.decisions; a thinking
// model's reasoning as reasoning content blocks; a cancel
// mid-stream and the next message; multitask strategies (enqueue as a
// pending run, rollback); a rejoin with Last-Event-ID; another
// user's thread and client mistakes answered 4xx.
func TestSDK(t *testing.T) {
	nodeModules(t)
	url := server(t)
	for _, name := range []string{"chat", "tool", "approve", "edit", "reject", "cancel", "multitask", "rejoin", "disconnect", "usestream", "reasoning", "mistakes"} {
		t.Run(name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
			defer cancel()
			cmd := exec.CommandContext(ctx, "node", "sdk.mjs", name)
			cmd.Dir = "testdata"
			cmd.Env = append(os.Environ(), "LANGGRAPH_URL="+url, "KEY_ALICE="+aliceKey, "KEY_BOB="+bobKey)
			var out, errOut strings.Builder
			cmd.Stdout, cmd.Stderr = &out, &errOut
			if err := cmd.Run(); err != nil {
				t.Fatalf("scenario %s: %v\n%s%s", name, err, errOut.String(), out.String())
			}
			t.Logf("%s: %s", name, strings.TrimSpace(out.String()))
		})
	}
}
