package a2a_test

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
	"go.uber.org/goleak"

	"github.com/trellis-ai/trellis/api"
	"github.com/trellis-ai/trellis/api/apitest"
	"github.com/trellis-ai/trellis/api/middleware"
	"github.com/trellis-ai/trellis/llm"
	"github.com/trellis-ai/trellis/operators"
	"github.com/trellis-ai/trellis/runs"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m, goleak.IgnoreAnyFunction("database/sql.(*DB).connectionOpener"))
}

const (
	aliceKey = "key-alice"
	bobKey   = "key-bob"
)

type pathIn struct {
	Path string `json:"path" jsonschema:"the file to delete"`
}

// backends are the databases the tests run on.
var backends = []string{"sqlite", "postgres"}

// server is the whole API on a real TCP listener over the backend
// named, with the scripted model of testdata/agent.json, delete_file,
// which needs approval and reports every call on deleted, and ask, which
// asks the user's name and reports the answer on answered.
type server struct {
	url     string
	deleted chan string
	// answered reports what the ask tool heard.
	answered chan string
}

func newServer(t *testing.T, backend string) *server {
	t.Helper()
	st, saver := apitest.Stores(t, backend)
	script, err := llm.LoadScript("testdata/agent.json")
	if err != nil {
		t.Fatal(err)
	}
	models, err := llm.NewRegistry(llm.Config{
		Models:     []llm.ModelConfig{{ID: "scripted", Provider: llm.ProviderScripted, Instance: llm.NewScripted(script), ToolCalling: true}},
		Resilience: llm.ResilienceConfig{Disabled: true},
	})
	if err != nil {
		t.Fatal(err)
	}
	s := &server{deleted: make(chan string, 16), answered: make(chan string, 16)}
	local := operators.NewRegistry()
	tools := operators.NewProvider(operators.ProviderConfig{Local: local})
	local.MustAdd(operators.Builtins(operators.BuiltinConfig{Info: operators.SelfInfo{Name: "Trellis", Version: "test"}, Tools: tools})...)
	local.MustAdd(operators.NewTool("delete_file", "Deletes a file.", func(ctx context.Context, c operators.Call, in pathIn) (operators.Result, error) {
		s.deleted <- in.Path
		return operators.TextResult("deleted " + in.Path), nil
	}, operators.RequiresApproval()))
	nameSchema := &jsonschema.Schema{Type: "object", Properties: map[string]*jsonschema.Schema{
		"name": {Type: "string", MinLength: jsonschema.Ptr(1)}}, Required: []string{"name"}}
	local.MustAdd(operators.NewTool("ask", "Asks the user for their name.", func(ctx context.Context, c operators.Call, _ struct{}) (operators.Result, error) {
		resp, err := c.Elicit(ctx, "What is your name?", nameSchema)
		if err != nil {
			return operators.Result{}, err
		}
		var v struct{ Name string }
		_ = json.Unmarshal(resp.Content, &v)
		s.answered <- string(resp.Action) + " " + v.Name
		return operators.TextResult("hello " + v.Name), nil
	}))
	srv, err := apitest.New(apitest.Config{
		Runs: runs.Config{Models: models, Tools: tools, Checkpointer: saver},
		API: api.Config{Store: st, Keys: map[middleware.APIKey]string{aliceKey: "alice", bobKey: "bob"},
			Limits: api.Limits{RatePerMinute: -1}},
	})
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

// nodeModules checks that the pinned SDK is installed (npm ci --prefix
// api/a2a/testdata, as .ci/run does). Without node the test is skipped,
// except in CI, where it fails.
func nodeModules(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("node"); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("node is not installed: " + err.Error())
		}
		t.Skip("node is not installed: " + err.Error())
	}
	if _, err := os.Stat(filepath.Join("testdata", "node_modules", "@a2a-js", "sdk")); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("the pinned SDK is not installed; run npm ci --prefix api/a2a/testdata: " + err.Error())
		}
		t.Skip("the pinned SDK is not installed; run npm ci --prefix api/a2a/testdata: " + err.Error())
	}
}

// Report is what testdata/client.mjs prints.
type Report struct {
	Card struct {
		Name       string `json:"name"`
		Interfaces []struct {
			URL, Binding, Version string
		} `json:"interfaces"`
		Streaming bool     `json:"streaming"`
		Skills    []string `json:"skills"`
		Schemes   []string `json:"schemes"`
	} `json:"card"`
	Send, Get, Asked, Approved, Cancelled   TaskSummary
	Stream, StreamedAsk, Rejected           Stream
	CancelAgain, Unknown, Finished, Unclear Attempt
	List                                    struct {
		States []string `json:"states"`
		Next   string   `json:"next"`
		Total  int      `json:"total"`
	}
}

// TaskSummary is a task as client.mjs prints it.
type TaskSummary struct {
	ID, ContextID, State, StatusText, Answer string
	StatusData                               []json.RawMessage
	History                                  []string
}

// Stream is a stream as client.mjs prints it.
type Stream struct {
	Kinds, States  []string
	Answer, TaskID string
	First          *TaskSummary
	Error          *Failure
}

// Attempt is a call that may fail.
type Attempt struct {
	Result json.RawMessage
	Error  *Failure
}

// Failure is an error the client threw: its class and message.
type Failure struct {
	Name    string
	Code    int
	Message string
}

// runClient runs client.mjs against url as alice.
func runClient(t *testing.T, url string) Report {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "node", "client.mjs", url, aliceKey)
	cmd.Dir = "testdata"
	var out, errOut strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		t.Fatalf("client.mjs: %v\n%s%s", err, errOut.String(), out.String())
	}
	var r Report
	if err := json.Unmarshal([]byte(out.String()), &r); err != nil {
		t.Fatalf("client.mjs printed %q: %v", out.String(), err)
	}
	return r
}

// TestSDK drives the server with the real @a2a-js/sdk client: the
// client made from the agent card, a task sent and waited for, one
// streamed with a tool call, GetTask, an approval answered approve by
// the task's next message (waited for) and one answered reject
// (streamed), a waiting task cancelled, ListTasks, and the client's
// mistakes as the SDK's typed errors.
func TestSDK(t *testing.T) {
	nodeModules(t)
	for _, backend := range backends {
		t.Run(backend, func(t *testing.T) {
			s := newServer(t, backend)
			r := runClient(t, s.url)
			if r.Card.Name != "Trellis" || len(r.Card.Interfaces) != 1 || r.Card.Interfaces[0].URL != s.url+"/a2a" ||
				r.Card.Interfaces[0].Binding != "JSONRPC" || r.Card.Interfaces[0].Version != "1.0" || !r.Card.Streaming {
				t.Errorf("card = %+v", r.Card)
			}
			if !strings.Contains(strings.Join(r.Card.Skills, ","), "delete_file") || strings.Join(r.Card.Schemes, ",") != "apiKey,bearer" {
				t.Errorf("card skills %v, schemes %v", r.Card.Skills, r.Card.Schemes)
			}
			if r.Send.State != "TASK_STATE_COMPLETED" || r.Send.Answer != "Hello from Trellis." || r.Send.ContextID == "" ||
				len(r.Send.History) != 1 || r.Send.History[0] != "Hello" {
				t.Errorf("send = %+v", r.Send)
			}
			if r.Get.ID != r.Send.ID || r.Get.State != "TASK_STATE_COMPLETED" || r.Get.Answer != "Hello from Trellis." {
				t.Errorf("get = %+v, sent %+v", r.Get, r.Send)
			}
			st := r.Stream
			if st.Error != nil || st.First == nil || st.First.ContextID != r.Send.ContextID || st.Kinds[0] != "task" ||
				st.Answer != "2+2 is 4." || last(st.States) != "TASK_STATE_COMPLETED" || !strings.Contains(strings.Join(st.Kinds, ","), "artifactUpdate") {
				t.Errorf("stream = %+v", st)
			}
			if r.Asked.State != "TASK_STATE_INPUT_REQUIRED" || !strings.Contains(r.Asked.StatusText, "delete_file") ||
				!strings.Contains(r.Asked.StatusText, "approve") || len(r.Asked.StatusData) != 1 {
				t.Errorf("asked = %+v", r.Asked)
			}
			if r.Approved.ID != r.Asked.ID || r.Approved.State != "TASK_STATE_COMPLETED" || r.Approved.Answer == "" {
				t.Errorf("approved = %+v", r.Approved)
			}
			select {
			case p := <-s.deleted:
				if p != "/tmp/a.txt" {
					t.Errorf("deleted %q", p)
				}
			default:
				t.Error("the approved call did not run")
			}
			if last(r.StreamedAsk.States) != "TASK_STATE_INPUT_REQUIRED" || r.StreamedAsk.Error != nil {
				t.Errorf("streamed ask = %+v", r.StreamedAsk)
			}
			if r.Rejected.Error != nil || r.Rejected.TaskID != r.StreamedAsk.TaskID || last(r.Rejected.States) != "TASK_STATE_COMPLETED" {
				t.Errorf("rejected = %+v", r.Rejected)
			}
			if r.Cancelled.State != "TASK_STATE_CANCELED" {
				t.Errorf("cancelled = %+v", r.Cancelled)
			}
			select {
			case p := <-s.deleted:
				t.Errorf("a rejected or cancelled call ran: %s", p)
			default:
			}
			if e := r.CancelAgain.Error; e == nil || e.Code != -32002 {
				t.Errorf("cancel again = %+v", r.CancelAgain.Error)
			}
			if len(r.List.States) != 3 || r.List.States[0] != "TASK_STATE_INPUT_REQUIRED" && r.List.States[0] != "TASK_STATE_CANCELED" ||
				r.List.Next == "" || r.List.Total != 5 {
				t.Errorf("list = %+v", r.List)
			}
			if e := r.Unknown.Error; e == nil || e.Code != -32001 {
				t.Errorf("unknown task = %+v", r.Unknown.Error)
			}
			if e := r.Finished.Error; e == nil || e.Code != -32004 {
				t.Errorf("message to a finished task = %+v", r.Finished.Error)
			}
			if e := r.Unclear.Error; e == nil || e.Code != -32602 || !strings.Contains(e.Message, "approve") {
				t.Errorf("an unclear answer = %+v", r.Unclear.Error)
			}
		})
	}
}

func last(s []string) string {
	if len(s) == 0 {
		return ""
	}
	return s[len(s)-1]
}

// rpc posts a JSON-RPC body as key and returns the status and the
// decoded response.
func rpc(t *testing.T, url, key, body string, header ...string) (int, rpcResponse) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, url+"/a2a", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	var out rpcResponse
	if err := json.Unmarshal(data, &out); err != nil {
		t.Fatalf("%s: %s", err, data)
	}
	return resp.StatusCode, out
}

type rpcResponse struct {
	ID     json.RawMessage `json:"id"`
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

// TestIsolationAndMistakes checks on both backends that another user's
// task and context are not found, and that each client mistake is a
// JSON-RPC error with its code and a 4xx status, which changes nothing.
func TestIsolationAndMistakes(t *testing.T) {
	for _, backend := range backends {
		t.Run(backend, func(t *testing.T) {
			s := newServer(t, backend)
			status, sent := rpc(t, s.url, aliceKey, `{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":{"messageId":"m1","role":"ROLE_USER","parts":[{"text":"Hello"}]}}}`,
				"A2A-Version", "1.0")
			var res struct {
				Task struct {
					ID        string `json:"id"`
					ContextID string `json:"contextId"`
					Status    struct {
						State string `json:"state"`
					} `json:"status"`
				} `json:"task"`
			}
			if status != http.StatusOK || sent.Error != nil || json.Unmarshal(sent.Result, &res) != nil || res.Task.Status.State != "TASK_STATE_COMPLETED" {
				t.Fatalf("send: %d %s %+v", status, sent.Result, sent.Error)
			}
			task, ctxID := res.Task.ID, res.Task.ContextID
			for _, c := range []struct {
				name, key, body string
				header          []string
				status, code    int
			}{
				{"bob's GetTask of alice's task", bobKey, `{"jsonrpc":"2.0","id":2,"method":"GetTask","params":{"id":"` + task + `"}}`, nil, 404, -32001},
				{"bob's CancelTask of alice's task", bobKey, `{"jsonrpc":"2.0","id":2,"method":"CancelTask","params":{"id":"` + task + `"}}`, nil, 404, -32001},
				{"bob's message to alice's task", bobKey, `{"jsonrpc":"2.0","id":2,"method":"SendMessage","params":{"message":{"messageId":"m","role":"ROLE_USER","taskId":"` + task + `","parts":[{"text":"approve"}]}}}`, nil, 404, -32001},
				{"bob's message in alice's context", bobKey, `{"jsonrpc":"2.0","id":2,"method":"SendMessage","params":{"message":{"messageId":"m","role":"ROLE_USER","contextId":"` + ctxID + `","parts":[{"text":"hi"}]}}}`, nil, 404, -32001},
				{"bob's ListTasks of alice's context", bobKey, `{"jsonrpc":"2.0","id":2,"method":"ListTasks","params":{"contextId":"` + ctxID + `"}}`, nil, 404, -32001},
				{"bob's SubscribeToTask of alice's task", bobKey, `{"jsonrpc":"2.0","id":2,"method":"SubscribeToTask","params":{"id":"` + task + `"}}`, nil, 404, -32001},
				{"not JSON", aliceKey, `{"jsonrpc":`, nil, 400, -32700},
				{"a batch", aliceKey, `[{"jsonrpc":"2.0","id":1,"method":"GetTask"}]`, nil, 400, -32600},
				{"no id", aliceKey, `{"jsonrpc":"2.0","method":"GetTask","params":{"id":"x"}}`, nil, 400, -32600},
				{"no jsonrpc", aliceKey, `{"id":1,"method":"GetTask","params":{"id":"x"}}`, nil, 400, -32600},
				{"an unknown method", aliceKey, `{"jsonrpc":"2.0","id":1,"method":"Teleport"}`, nil, 404, -32601},
				{"a v0.3 method", aliceKey, `{"jsonrpc":"2.0","id":1,"method":"message/send","params":{}}`, nil, 400, -32009},
				{"a v0.3 version", aliceKey, `{"jsonrpc":"2.0","id":1,"method":"GetTask","params":{"id":"x"}}`, []string{"A2A-Version", "0.3"}, 400, -32009},
				{"push notifications", aliceKey, `{"jsonrpc":"2.0","id":1,"method":"CreateTaskPushNotificationConfig","params":{}}`, nil, 400, -32003},
				{"no params", aliceKey, `{"jsonrpc":"2.0","id":1,"method":"SendMessage"}`, nil, 400, -32602},
				{"no message", aliceKey, `{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{}}`, nil, 400, -32602},
				{"the agent's role", aliceKey, `{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":{"messageId":"m","role":"ROLE_AGENT","parts":[{"text":"hi"}]}}}`, nil, 400, -32602},
				{"a file part", aliceKey, `{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":{"messageId":"m","role":"ROLE_USER","parts":[{"url":"https://example.com/a.pdf"}]}}}`, nil, 400, -32005},
				{"a message to a finished task", aliceKey, `{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":{"messageId":"m","role":"ROLE_USER","taskId":"` + task + `","parts":[{"text":"more"}]}}}`, nil, 400, -32004},
				{"cancel of a finished task", aliceKey, `{"jsonrpc":"2.0","id":1,"method":"CancelTask","params":{"id":"` + task + `"}}`, nil, 400, -32002},
				{"subscribe to a finished task", aliceKey, `{"jsonrpc":"2.0","id":1,"method":"SubscribeToTask","params":{"id":"` + task + `"}}`, nil, 400, -32004},
				{"ListTasks without a context", aliceKey, `{"jsonrpc":"2.0","id":1,"method":"ListTasks","params":{}}`, nil, 400, -32602},
				{"a page too large", aliceKey, `{"jsonrpc":"2.0","id":1,"method":"ListTasks","params":{"contextId":"` + ctxID + `","pageSize":1000}}`, nil, 400, -32602},
				{"a page token of nobody's", aliceKey, `{"jsonrpc":"2.0","id":1,"method":"ListTasks","params":{"contextId":"` + ctxID + `","pageToken":"x"}}`, nil, 400, -32602},
			} {
				status, got := rpc(t, s.url, c.key, c.body, c.header...)
				if status != c.status || got.Error == nil || got.Error.Code != c.code {
					t.Errorf("%s: %d %+v, want %d with code %d", c.name, status, got.Error, c.status, c.code)
				}
			}
			// Nothing of it changed alice's context: one task, as it was.
			status, listed := rpc(t, s.url, aliceKey, `{"jsonrpc":"2.0","id":"l","method":"ListTasks","params":{"contextId":"`+ctxID+`"}}`)
			var l struct {
				Tasks []struct {
					ID     string `json:"id"`
					Status struct {
						State string `json:"state"`
					} `json:"status"`
				} `json:"tasks"`
			}
			if status != http.StatusOK || json.Unmarshal(listed.Result, &l) != nil || len(l.Tasks) != 1 || l.Tasks[0].ID != task ||
				l.Tasks[0].Status.State != "TASK_STATE_COMPLETED" || string(listed.ID) != `"l"` {
				t.Errorf("alice's tasks after the mistakes: %d %s", status, listed.Result)
			}
			// returnImmediately: submitted at once, the run goes on and is
			// polled to its end.
			status, quick := rpc(t, s.url, aliceKey, `{"jsonrpc":"2.0","id":3,"method":"SendMessage","params":{"message":{"messageId":"m3","role":"ROLE_USER","parts":[{"text":"Hi"}]},"configuration":{"returnImmediately":true}}}`)
			if status != http.StatusOK || json.Unmarshal(quick.Result, &res) != nil || res.Task.Status.State != "TASK_STATE_SUBMITTED" {
				t.Fatalf("returnImmediately: %d %s", status, quick.Result)
			}
			deadline := time.Now().Add(10 * time.Second)
			for {
				_, got := rpc(t, s.url, aliceKey, `{"jsonrpc":"2.0","id":4,"method":"GetTask","params":{"id":"`+res.Task.ID+`"}}`)
				var tk struct {
					Status struct {
						State string `json:"state"`
					} `json:"status"`
				}
				if json.Unmarshal(got.Result, &tk) == nil && tk.Status.State == "TASK_STATE_COMPLETED" {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("the task sent with returnImmediately did not complete: %s", got.Result)
				}
				time.Sleep(50 * time.Millisecond)
			}
			// Without credentials: 401, the card public.
			req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, s.url+"/a2a", strings.NewReader(`{}`))
			if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != http.StatusUnauthorized {
				t.Errorf("no credentials: %v %v", resp, err)
			} else {
				resp.Body.Close()
			}
			if resp, err := http.Get(s.url + "/.well-known/agent-card.json"); err != nil || resp.StatusCode != http.StatusOK {
				t.Errorf("card: %v %v", resp, err)
			} else {
				resp.Body.Close()
			}
		})
	}
}

// rpcTask is a Task as a raw JSON-RPC answer holds it.
type rpcTask struct {
	ID        string `json:"id"`
	ContextID string `json:"contextId"`
	Status    struct {
		State   string `json:"state"`
		Message *struct {
			Parts []struct {
				Text string `json:"text"`
			} `json:"parts"`
		} `json:"message"`
	} `json:"status"`
	Artifacts []struct {
		Parts []struct {
			Text string `json:"text"`
		} `json:"parts"`
	} `json:"artifacts"`
}

// TestClarification checks on both backends that a clarifying question
// is an input-required task whose status message asks it, that the
// task's next message answers it as the context's next task, after
// which the asking task has completed (its question kept) and takes no
// more messages.
func TestClarification(t *testing.T) {
	for _, backend := range backends {
		t.Run(backend, func(t *testing.T) {
			s := newServer(t, backend)
			send := func(body string) rpcTask {
				t.Helper()
				status, got := rpc(t, s.url, aliceKey, body)
				var res struct {
					Task rpcTask `json:"task"`
				}
				if status != http.StatusOK || got.Error != nil || json.Unmarshal(got.Result, &res) != nil {
					t.Fatalf("send: %d %s %+v", status, got.Result, got.Error)
				}
				return res.Task
			}
			asked := send(`{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":{"messageId":"m1","role":"ROLE_USER","parts":[{"text":"is it raining somewhere?"}]}}}`)
			if asked.Status.State != "TASK_STATE_INPUT_REQUIRED" || asked.Status.Message == nil || asked.Status.Message.Parts[0].Text != "In which city?" {
				t.Fatalf("asked = %+v", asked)
			}
			answered := send(`{"jsonrpc":"2.0","id":2,"method":"SendMessage","params":{"message":{"messageId":"m2","role":"ROLE_USER","taskId":"` + asked.ID + `","parts":[{"text":"Oslo"}]}}}`)
			if answered.ContextID != asked.ContextID || answered.ID == asked.ID || answered.Status.State != "TASK_STATE_COMPLETED" ||
				len(answered.Artifacts) != 1 || answered.Artifacts[0].Parts[0].Text != "Hello from Trellis." {
				t.Fatalf("answered = %+v, asked %+v", answered, asked)
			}
			_, listed := rpc(t, s.url, aliceKey, `{"jsonrpc":"2.0","id":3,"method":"ListTasks","params":{"contextId":"`+asked.ContextID+`"}}`)
			var l struct {
				Tasks []rpcTask `json:"tasks"`
			}
			if json.Unmarshal(listed.Result, &l) != nil || len(l.Tasks) != 2 || l.Tasks[0].ID != answered.ID || l.Tasks[1].ID != asked.ID {
				t.Errorf("listed %s", listed.Result)
			}
			for _, tk := range l.Tasks {
				if tk.Status.State != "TASK_STATE_COMPLETED" {
					t.Errorf("listed %s: the asking task has not completed", listed.Result)
				}
			}
			// The asking task has ended, its question kept: GetTask shows
			// it completed, and it takes no more messages.
			_, got := rpc(t, s.url, aliceKey, `{"jsonrpc":"2.0","id":4,"method":"GetTask","params":{"id":"`+asked.ID+`"}}`)
			var again rpcTask
			if json.Unmarshal(got.Result, &again) != nil || again.Status.State != "TASK_STATE_COMPLETED" || again.Status.Message == nil ||
				again.Status.Message.Parts[0].Text != "In which city?" {
				t.Errorf("the asking task after its answer: %s", got.Result)
			}
			status, more := rpc(t, s.url, aliceKey, `{"jsonrpc":"2.0","id":5,"method":"SendMessage","params":{"message":{"messageId":"m3","role":"ROLE_USER","taskId":"`+asked.ID+`","parts":[{"text":"Bergen"}]}}}`)
			if status != http.StatusBadRequest || more.Error == nil || more.Error.Code != -32004 {
				t.Errorf("a second answer to the asking task: %d %+v", status, more.Error)
			}
		})
	}
}

// TestElicitation checks on both backends that a tool's question is an
// input-required task asking it, that an answer that does not fit its
// schema is refused and answers nothing, that a data part answers it,
// and that "decline" declines it.
func TestElicitation(t *testing.T) {
	for _, backend := range backends {
		t.Run(backend, func(t *testing.T) {
			s := newServer(t, backend)
			send := func(body string) (int, rpcResponse, rpcTask) {
				t.Helper()
				status, got := rpc(t, s.url, aliceKey, body)
				var res struct {
					Task rpcTask `json:"task"`
				}
				if got.Error == nil && json.Unmarshal(got.Result, &res) != nil {
					t.Fatalf("send: %d %s", status, got.Result)
				}
				return status, got, res.Task
			}
			ask := `{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":{"messageId":"m1","role":"ROLE_USER","parts":[{"text":"ask me"}]}}}`
			_, _, asked := send(ask)
			if asked.Status.State != "TASK_STATE_INPUT_REQUIRED" || asked.Status.Message == nil ||
				!strings.Contains(asked.Status.Message.Parts[0].Text, "What is your name?") {
				t.Fatalf("asked = %+v", asked)
			}
			answer := func(part string) string {
				return `{"jsonrpc":"2.0","id":2,"method":"SendMessage","params":{"message":{"messageId":"m2","role":"ROLE_USER","taskId":"` + asked.ID + `","parts":[` + part + `]}}}`
			}
			if status, got, _ := send(answer(`{"data":{"name":""}}`)); status/100 != 4 || got.Error == nil {
				t.Errorf("an answer outside the schema: %d %+v", status, got.Error)
			}
			if status, got, _ := send(answer(`{"text":"who knows"}`)); status != http.StatusBadRequest || got.Error == nil || got.Error.Code != -32602 {
				t.Errorf("text that answers nothing: %d %+v", status, got.Error)
			}
			select {
			case a := <-s.answered:
				t.Fatalf("a refused answer reached the tool: %s", a)
			default:
			}
			_, _, done := send(answer(`{"data":{"name":"Ada"}}`))
			if done.ID != asked.ID || done.Status.State != "TASK_STATE_COMPLETED" {
				t.Errorf("answered = %+v", done)
			}
			if a := <-s.answered; a != "accept Ada" {
				t.Errorf("the tool heard %q", a)
			}
			_, _, again := send(strings.Replace(ask, `"m1"`, `"m3"`, 1))
			_, _, declined := send(strings.Replace(answer(`{"text":"decline"}`), asked.ID, again.ID, 1))
			if declined.Status.State != "TASK_STATE_COMPLETED" {
				t.Errorf("declined = %+v", declined)
			}
			if a := <-s.answered; a != "decline " {
				t.Errorf("the tool heard %q", a)
			}
		})
	}
}

// subscribe posts SubscribeToTask for id and returns the stream's
// results, each one StreamResponse's JSON.
func subscribe(t *testing.T, url, id string) []map[string]json.RawMessage {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, url+"/a2a",
		strings.NewReader(`{"jsonrpc":"2.0","id":9,"method":"SubscribeToTask","params":{"id":"`+id+`"}}`))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+aliceKey)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		t.Fatalf("SubscribeToTask: %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	var out []map[string]json.RawMessage
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		data, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok {
			continue
		}
		var r struct {
			ID     json.RawMessage            `json:"id"`
			Result map[string]json.RawMessage `json:"result"`
		}
		if err := json.Unmarshal([]byte(data), &r); err != nil || string(r.ID) != "9" || len(r.Result) != 1 {
			t.Fatalf("a frame %s: %v", data, err)
		}
		out = append(out, r.Result)
	}
	return out
}

// TestSubscribe checks on both backends that SubscribeToTask streams a
// working task from its start (its answer whole) to its end, and sends a
// task that waits for input as it stands.
func TestSubscribe(t *testing.T) {
	for _, backend := range backends {
		t.Run(backend, func(t *testing.T) {
			s := newServer(t, backend)
			_, started := rpc(t, s.url, aliceKey, `{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":{"messageId":"m1","role":"ROLE_USER","parts":[{"text":"answer slowly"}]},"configuration":{"returnImmediately":true}}}`)
			var res struct {
				Task rpcTask `json:"task"`
			}
			if started.Error != nil || json.Unmarshal(started.Result, &res) != nil {
				t.Fatalf("send: %s %+v", started.Result, started.Error)
			}
			frames := subscribe(t, s.url, res.Task.ID)
			var answer, lastState string
			for _, f := range frames {
				if a, ok := f["artifactUpdate"]; ok {
					var u struct {
						Artifact struct {
							Parts []struct{ Text string }
						}
						Append bool
					}
					_ = json.Unmarshal(a, &u)
					if !u.Append {
						answer = ""
					}
					answer += u.Artifact.Parts[0].Text
				}
				if st, ok := f["statusUpdate"]; ok {
					var u struct{ Status struct{ State string } }
					_ = json.Unmarshal(st, &u)
					lastState = u.Status.State
				}
			}
			if _, ok := frames[0]["task"]; !ok || lastState != "TASK_STATE_COMPLETED" ||
				answer != "one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen" {
				t.Errorf("frames %d, first %v, answer %q, last state %s", len(frames), frames[0], answer, lastState)
			}
			_, asked := rpc(t, s.url, aliceKey, `{"jsonrpc":"2.0","id":2,"method":"SendMessage","params":{"message":{"messageId":"m2","role":"ROLE_USER","parts":[{"text":"please delete it"}]}}}`)
			if json.Unmarshal(asked.Result, &res) != nil || res.Task.Status.State != "TASK_STATE_INPUT_REQUIRED" {
				t.Fatalf("asked: %s", asked.Result)
			}
			frames = subscribe(t, s.url, res.Task.ID)
			var tk rpcTask
			if len(frames) != 1 || json.Unmarshal(frames[0]["task"], &tk) != nil || tk.Status.State != "TASK_STATE_INPUT_REQUIRED" {
				t.Errorf("a waiting task's stream: %v", frames)
			}
		})
	}
}
