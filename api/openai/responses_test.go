package openai_test

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/trellis-ai/trellis/api/apitest"
	"github.com/trellis-ai/trellis/api/middleware"
	"github.com/trellis-ai/trellis/store"
)

const bobKey = "key-bob"

// withBob adds a second user, bob.
func withBob(c *apitest.Config) {
	c.API.Keys = map[middleware.APIKey]string{aliceKey: "alice", bobKey: "bob"}
}

type responseObject struct {
	ID                 string  `json:"id"`
	Object             string  `json:"object"`
	Status             string  `json:"status"`
	PreviousResponseID *string `json:"previous_response_id"`
	Store              bool    `json:"store"`
	Output             []struct {
		ID      string `json:"id"`
		Type    string `json:"type"`
		Status  string `json:"status"`
		Role    string `json:"role"`
		Content []struct {
			Type string `json:"type"`
			Text string `json:"text"`
		} `json:"content"`
		CallID    string `json:"call_id"`
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	} `json:"output"`
	Usage struct {
		InputTokens  int `json:"input_tokens"`
		OutputTokens int `json:"output_tokens"`
		TotalTokens  int `json:"total_tokens"`
	} `json:"usage"`
	Error struct {
		Message string `json:"message"`
		Type    string `json:"type"`
		Param   string `json:"param"`
		Code    string `json:"code"`
	} `json:"error"`
}

// text is the response's output text, its messages' joined.
func (r responseObject) text() string {
	var b strings.Builder
	for _, it := range r.Output {
		if it.Type == "message" {
			for _, c := range it.Content {
				b.WriteString(c.Text)
			}
		}
	}
	return b.String()
}

// do sends a request as key's user; the caller closes the body.
func (s *server) do(ctx context.Context, t *testing.T, key, method, path, body string) *http.Response {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, method, s.url+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

// post sends a Responses request as key's user and decodes the answer,
// whatever its status.
func (s *server) post(t *testing.T, key, body string) (int, responseObject, http.Header) {
	t.Helper()
	resp := s.do(t.Context(), t, key, http.MethodPost, "/v1/responses", body)
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	var r responseObject
	if err := json.Unmarshal(raw, &r); err != nil {
		t.Fatalf("%d: %v: %s", resp.StatusCode, err, raw)
	}
	return resp.StatusCode, r, resp.Header
}

// A response continued with previous_response_id is the next turn of
// the same conversation; another user's response id is not found, and
// changes nothing.
func TestResponsesContinueTheConversation(t *testing.T) {
	for _, b := range backends {
		t.Run(b, func(t *testing.T) { responsesContinueTheConversation(t, newServerOn(t, b, withBob)) })
	}
}

func responsesContinueTheConversation(t *testing.T, s *server) {
	code, first, h := s.post(t, aliceKey, `{"model": "trellis-test", "input": "hello there", "instructions": "Be brief."}`)
	if code != http.StatusOK || first.Object != "response" || !strings.HasPrefix(first.ID, "resp_") || first.Status != "completed" ||
		first.text() != "Hello from Trellis." || !sums(first.Usage.InputTokens, first.Usage.OutputTokens, first.Usage.TotalTokens) {
		t.Fatalf("first: %d %+v", code, first)
	}
	conv := h.Get("X-Trellis-Conversation-Id")

	code, second, h := s.post(t, aliceKey, `{"model": "trellis-test", "input": [{"role": "user", "content": [{"type": "input_text", "text": "what is 2+2?"}]}], "previous_response_id": "`+first.ID+`"}`)
	if code != http.StatusOK || second.text() != "2+2 is 4." || second.PreviousResponseID == nil || *second.PreviousResponseID != first.ID {
		t.Fatalf("second: %d %+v", code, second)
	}
	if got := h.Get("X-Trellis-Conversation-Id"); got != conv {
		t.Errorf("the second response is in conversation %s, not %s", got, conv)
	}
	// Trellis' calculator ran inside the response: no item shows it.
	for _, it := range second.Output {
		if it.Type != "message" {
			t.Errorf("second: an output item of type %s", it.Type)
		}
	}
	page, err := s.store.ListRuns(t.Context(), "alice", conv, store.RunQuery{})
	if err != nil || len(page.Runs) != 2 {
		t.Fatalf("the conversation's runs: %+v, %v", page.Runs, err)
	}

	// An older response of the conversation is refused: Trellis goes on
	// from the end.
	if code, r, _ := s.post(t, aliceKey, `{"model": "trellis-test", "input": "hello there", "previous_response_id": "`+first.ID+`"}`); code != http.StatusBadRequest ||
		r.Error.Param != "previous_response_id" {
		t.Errorf("an older previous response: %d %+v", code, r.Error)
	}
	for _, id := range []string{second.ID, "resp_nope", "nope"} {
		code, r, _ := s.post(t, bobKey, `{"model": "trellis-test", "input": "hello there", "previous_response_id": "`+id+`"}`)
		if code != http.StatusNotFound || r.Error.Code != "previous_response_not_found" || r.Error.Param != "previous_response_id" {
			t.Errorf("bob continuing %s: %d %+v", id, code, r.Error)
		}
	}
	if page, err := s.store.ListRuns(t.Context(), "alice", conv, store.RunQuery{}); err != nil || len(page.Runs) != 2 {
		t.Errorf("after the refusals, the conversation's runs: %+v, %v", page.Runs, err)
	}
}

// store: false keeps nothing: the conversation is gone once the
// response is answered, and its id is not found.
func TestResponsesStoreFalse(t *testing.T) {
	for _, b := range backends {
		t.Run(b, func(t *testing.T) { responsesStoreFalse(t, newServerOn(t, b)) })
	}
}

func responsesStoreFalse(t *testing.T, s *server) {
	code, r, h := s.post(t, aliceKey, `{"model": "trellis-test", "input": "hello there", "store": false}`)
	if code != http.StatusOK || r.text() != "Hello from Trellis." || r.Store {
		t.Fatalf("%d %+v", code, r)
	}
	if _, err := s.store.GetConversation(t.Context(), "alice", h.Get("X-Trellis-Conversation-Id")); err == nil {
		t.Error("the conversation of a response made with store: false is kept")
	}
	if code, r, _ := s.post(t, aliceKey, `{"model": "trellis-test", "input": "hello there", "previous_response_id": "`+r.ID+`"}`); code != http.StatusNotFound {
		t.Errorf("continuing it: %d %+v", code, r.Error)
	}
	if code, r, _ := s.post(t, aliceKey, `{"model": "trellis-test", "input": "hello", "store": false, "previous_response_id": "resp_x"}`); code != http.StatusBadRequest ||
		r.Error.Param != "store" {
		t.Errorf("store: false with previous_response_id: %d %+v", code, r.Error)
	}
}

// Client mistakes are 400s in OpenAI's shape, naming the parameter, and
// start nothing, on either backend; the server's message limit holds
// here too.
func TestResponsesClientMistakes(t *testing.T) {
	for _, b := range backends {
		t.Run(b, func(t *testing.T) {
			responsesClientMistakes(t, newServerOn(t, b, func(c *apitest.Config) { c.Runs.MaxMessageRunes = 20 }))
		})
	}
}

func responsesClientMistakes(t *testing.T, s *server) {
	for _, tc := range []struct{ body, param string }{
		{`{"model": "trellis-test"}`, "input"},
		{`{"model": "trellis-test", "input": []}`, "input"},
		{`{"model": "trellis-test", "input": " "}`, "input"},
		{`{"model": "trellis-test", "input": [{"role": "user", "content": "hi"}, {"role": "tool", "content": "x"}]}`, "input[1].role"},
		{`{"input": "hi"}`, "model"},
		{`{"model": "trellis-test", "input": [{"role": "assistant", "content": "hi"}]}`, "input"},
		{`{"model": "trellis-test", "input": [{"role": "user", "content": [{"type": "input_image", "image_url": "http://x/y.png"}]}]}`, "input[0].content"},
		{`{"model": "trellis-test", "input": [{"type": "web_search_call"}]}`, "input[0].type"},
		{`{"model": "trellis-test", "input": [{"type": "mcp_approval_response", "approval_request_id": "a", "approve": true}]}`, "input[0].type"},
		{`{"model": "trellis-test", "input": "hi", "tools": [{"type": "function", "name": "a b"}]}`, "tools[0].name"},
		{`{"model": "trellis-test", "input": "hi", "tools": [{"type": "web_search"}]}`, "tools[0].type"},
		{`{"model": "trellis-test", "input": "hi", "tool_choice": "required"}`, "tool_choice"},
		{`{"model": "trellis-test", "input": "hi", "background": true}`, "background"},
		{`{"model": "trellis-test", "input": "hi", "conversation": "conv_1"}`, "conversation"},
		{`{"model": "trellis-test", "input": [{"type": "function_call_output", "output": "x"}]}`, "input[0].call_id"},
		{`{"model": "trellis-test", "input": "` + strings.Repeat("x", 21) + `"}`, ""},
	} {
		code, r, _ := s.post(t, aliceKey, tc.body)
		if code != http.StatusBadRequest || r.Error.Type != "invalid_request_error" || r.Error.Param != tc.param || r.Error.Message == "" {
			t.Errorf("%s: %d %+v", tc.body, code, r.Error)
		}
	}
	if code, r, _ := s.post(t, aliceKey, `{"model": "no-such-model", "input": "hi"}`); code != http.StatusNotFound || r.Error.Code != "model_not_found" {
		t.Errorf("unknown model: %d %+v", code, r.Error)
	}
	page, err := s.store.ListConversations(t.Context(), "alice", store.Page{})
	if err != nil || len(page.Conversations) != 0 {
		t.Errorf("refused requests made conversations: %+v, %v", page.Conversations, err)
	}
}

// TestResponsesClient drives /v1/responses with the real openai
// client: create and stream (with their events in the protocol's
// order), previous_response_id, a thinking model's reasoning item, the
// function round trip (whole and streamed), an approval-gated Trellis
// tool shown as an approval request without running, and client
// mistakes raised as the client's typed errors.
func TestResponsesClient(t *testing.T) {
	node := nodeBin(t)
	s := newServer(t)
	var r responsesReport
	s.runClient(t, node, "testdata/responses.mjs", &r)
	checkWholeAndStreamed(t, r)

	if c := r.Continue.Response; r.Continue.OutputText != "2+2 is 4." || c.PreviousResponseID == nil || *c.PreviousResponseID != r.Create.Response.ID {
		t.Errorf("continue: %+v", r.Continue)
	}
	const thought = "The user asks me to think; an answer will do.\n\nKeep it short."
	if rs := r.Reasoning; rs.Reasoning != thought || rs.Text != "Thought it over." || len(rs.Final.Output) != 2 ||
		rs.Final.Output[0].Type != "reasoning" || rs.Final.Output[0].Content[0].Text != thought || rs.Final.Output[1].Type != "message" {
		t.Errorf("reasoning: %+v", rs)
	}

	// The function round trip: the first response ends with the call,
	// the second, from its output, answers.
	for name, rt := range map[string]roundTrip{"whole": r.FunctionCall, "streamed": r.FunctionCallStream} {
		if f := rt.First.Output; len(f) != 1 || f[0].Type != "function_call" || f[0].Status != "completed" || f[0].Name != "get_weather" ||
			f[0].Arguments != `{"city":"Oslo"}` || f[0].CallID == "" || rt.First.Status != "completed" {
			t.Errorf("%s function call: %+v", name, rt.First)
		}
		if rt.OutputText != "It is sunny in Oslo." || rt.Second.PreviousResponseID == nil || *rt.Second.PreviousResponseID != rt.First.ID {
			t.Errorf("%s function call's answer: %+v", name, rt)
		}
	}
	if got := strings.Join(r.FunctionCallStream.Types, " "); !strings.HasPrefix(got, "response.created response.in_progress") ||
		!strings.HasSuffix(got, "response.completed") {
		t.Errorf("the streamed round trip's events: %s", got)
	}

	// Approval: the response ends at once with the request, and the tool
	// has not run.
	for name, a := range map[string]responseObject{"whole": r.Approval.Response, "streamed": r.ApprovalStream.Final} {
		if len(a.Output) != 1 || a.Output[0].Type != "mcp_approval_request" || a.Output[0].Name != "delete_file" ||
			!strings.Contains(a.Output[0].Arguments, "/tmp/") || a.Output[0].ID == "" || a.Status != "completed" {
			t.Errorf("%s approval: %+v", name, a)
		}
	}
	if a := r.Approval; a.Retrieved.ID != a.Response.ID || len(a.Retrieved.Output) != 1 || a.Retrieved.Output[0].ID != a.Response.Output[0].ID ||
		a.Cancelled.ID != a.Response.ID || a.Cancelled.Status != "cancelled" {
		t.Errorf("approval retrieved and cancelled: %+v", a)
	}
	if r.Approval.MS > 5000 || r.ApprovalStream.MS > 5000 {
		t.Errorf("approvals took %d and %d ms", r.Approval.MS, r.ApprovalStream.MS)
	}
	select {
	case p := <-s.deleted:
		t.Errorf("delete_file ran for %s without approval", p)
	default:
	}

	for name, f := range map[string]failure{"noInput": r.NoInput, "badItem": r.BadItem, "streamError": r.StreamError} {
		if f.Thrown == nil || f.Status != 400 || f.Error.Type != "invalid_request_error" || f.Error.Param == "" {
			t.Errorf("%s: %+v, want a 400 invalid_request_error naming the param", name, f)
		}
	}
	if f := r.UnknownModel; f.Status != 404 || f.Error.Code != "model_not_found" {
		t.Errorf("unknown model: %+v", f)
	}
	if f := r.UnknownPrevious; f.Status != 404 || f.Error.Code != "previous_response_not_found" {
		t.Errorf("unknown previous response: %+v", f)
	}
}

type streamedResponse struct {
	Types     []string       `json:"types"`
	Text      string         `json:"text"`
	Reasoning string         `json:"reasoning"`
	Final     responseObject `json:"final"`
	MS        int            `json:"ms"`
}

type roundTrip struct {
	First      responseObject `json:"first"`
	Second     responseObject `json:"second"`
	Types      []string       `json:"types"`
	OutputText string         `json:"outputText"`
}

type responsesReport struct {
	Create struct {
		Response     responseObject `json:"response"`
		OutputText   string         `json:"outputText"`
		Conversation string         `json:"conversation"`
	} `json:"create"`
	Stream   streamedResponse `json:"stream"`
	Continue struct {
		Response   responseObject `json:"response"`
		OutputText string         `json:"outputText"`
	} `json:"continue"`
	Reasoning          streamedResponse `json:"reasoning"`
	FunctionCall       roundTrip        `json:"functionCall"`
	FunctionCallStream roundTrip        `json:"functionCallStream"`
	Approval           struct {
		Response  responseObject `json:"response"`
		Retrieved responseObject `json:"retrieved"`
		Cancelled responseObject `json:"cancelled"`
		MS        int            `json:"ms"`
	} `json:"approval"`
	ApprovalStream  streamedResponse `json:"approvalStream"`
	NoInput         failure          `json:"noInput"`
	BadItem         failure          `json:"badItem"`
	UnknownModel    failure          `json:"unknownModel"`
	UnknownPrevious failure          `json:"unknownPrevious"`
	StreamError     failure          `json:"streamError"`
}

// checkWholeAndStreamed judges the report's create and stream: the
// answer, whole and as the protocol's events in their order.
func checkWholeAndStreamed(t *testing.T, r responsesReport) {
	t.Helper()
	c := r.Create.Response
	if c.Object != "response" || !strings.HasPrefix(c.ID, "resp_") || c.Status != "completed" || r.Create.OutputText != "Hello from Trellis." ||
		!sums(c.Usage.InputTokens, c.Usage.OutputTokens, c.Usage.TotalTokens) || r.Create.Conversation == "" {
		t.Errorf("create: %+v", r.Create)
	}
	// The text comes in one delta or more, as the run's chunks were
	// batched.
	events := regexp.MustCompile(`^response\.created response\.in_progress response\.output_item\.added response\.content_part\.added ` +
		`(response\.output_text\.delta )+response\.output_text\.done response\.content_part\.done response\.output_item\.done response\.completed$`)
	if got := strings.Join(r.Stream.Types, " "); !events.MatchString(got) || r.Stream.Text != "Hello from Trellis." ||
		r.Stream.Final.Status != "completed" || r.Stream.Final.text() != "Hello from Trellis." {
		t.Errorf("stream: %s: %+v", got, r.Stream)
	}
}

// call sends a request as key's user and decodes the answer into out.
func (s *server) call(t *testing.T, key, method, path, body string, out any) int {
	t.Helper()
	resp := s.do(t.Context(), t, key, method, path, body)
	defer resp.Body.Close()
	if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
		t.Fatalf("%s %s: %d: %v", method, path, resp.StatusCode, err)
	}
	return resp.StatusCode
}

// An approval shows as an mcp_approval_request item and is answered
// through the native API; the run goes on, and GET /v1/responses/{id}
// shows the response as it ended. Cancel ends a response that waits.
// Another user's response is not found.
func TestResponsesApprovalGetAndCancel(t *testing.T) {
	for _, b := range backends {
		t.Run(b, func(t *testing.T) { responsesApprovalGetAndCancel(t, newServerOn(t, b, withBob)) })
	}
}

func responsesApprovalGetAndCancel(t *testing.T, s *server) {
	code, r, _ := s.post(t, aliceKey, `{"model": "trellis-test", "input": "please delete /tmp/a.txt"}`)
	if code != http.StatusOK || len(r.Output) != 1 || r.Output[0].Type != "mcp_approval_request" {
		t.Fatalf("%d %+v", code, r)
	}
	var got responseObject
	if code := s.call(t, aliceKey, http.MethodGet, "/v1/responses/"+r.ID, "", &got); code != http.StatusOK || got.ID != r.ID ||
		len(got.Output) != 1 || got.Output[0].ID != r.Output[0].ID || got.Status != "completed" {
		t.Errorf("GET while it waits: %d %+v", code, got)
	}
	for _, path := range []string{"/v1/responses/" + r.ID, "/v1/responses/" + r.ID + "/cancel"} {
		method := http.MethodGet
		if strings.HasSuffix(path, "/cancel") {
			method = http.MethodPost
		}
		var e responseObject
		if code := s.call(t, bobKey, method, path, "", &e); code != http.StatusNotFound || e.Error.Code != "response_not_found" {
			t.Errorf("bob: %s %s: %d %+v", method, path, code, e.Error)
		}
	}

	// A new message on a conversation that waits is refused, and the
	// approval still waits.
	start := time.Now()
	if code, b, _ := s.post(t, aliceKey, `{"model": "trellis-test", "input": "hello there", "previous_response_id": "`+r.ID+`"}`); code != http.StatusBadRequest ||
		b.Error.Code != "conversation_busy" || time.Since(start) > 5*time.Second {
		t.Errorf("a message while the approval waits: %d %+v in %s", code, b.Error, time.Since(start))
	}

	var answered map[string]any
	if code := s.call(t, aliceKey, http.MethodPost, "/api/v1/approvals/"+r.Output[0].ID, `{"decision": "approve"}`, &answered); code != http.StatusOK {
		t.Fatalf("approving: %d %v", code, answered)
	}
	select {
	case p := <-s.deleted:
		if p != "/tmp/a.txt" {
			t.Errorf("delete_file ran for %s", p)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the approved tool did not run")
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		got = responseObject{}
		s.call(t, aliceKey, http.MethodGet, "/v1/responses/"+r.ID, "", &got)
		if got.Status == "completed" && got.text() != "" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the approved response did not end with an answer: %+v", got)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if len(got.Output) != 2 || got.Output[0].Type != "mcp_approval_request" || got.Output[1].Type != "message" {
		t.Errorf("the approved response: %+v", got)
	}

	// Cancel: a response that waits for an approval ends cancelled, and
	// its tool never runs.
	code, w, _ := s.post(t, aliceKey, `{"model": "trellis-test", "input": "please delete /tmp/b.txt"}`)
	if code != http.StatusOK || len(w.Output) != 1 || w.Output[0].Type != "mcp_approval_request" {
		t.Fatalf("%d %+v", code, w)
	}
	var c responseObject
	if code := s.call(t, aliceKey, http.MethodPost, "/v1/responses/"+w.ID+"/cancel", "", &c); code != http.StatusOK || c.Status != "cancelled" || c.ID != w.ID {
		t.Errorf("cancel: %d %+v", code, c)
	}
	c = responseObject{}
	if code := s.call(t, aliceKey, http.MethodPost, "/v1/responses/"+w.ID+"/cancel", "", &c); code != http.StatusBadRequest || c.Error.Code != "response_not_cancellable" {
		t.Errorf("cancelling again: %d %+v", code, c.Error)
	}
	if code := s.call(t, aliceKey, http.MethodGet, "/v1/responses/"+w.ID, "", &c); code != http.StatusOK || c.Status != "cancelled" {
		t.Errorf("GET the cancelled response: %d %+v", code, c)
	}
	select {
	case p := <-s.deleted:
		t.Errorf("delete_file ran for %s after the cancel", p)
	case <-time.After(200 * time.Millisecond):
	}
}

type sseEvent struct {
	Type     string `json:"type"`
	Delta    string `json:"delta"`
	Code     string `json:"code"`
	Message  string `json:"message"`
	Response struct {
		ID     string `json:"id"`
		Status string `json:"status"`
		Error  *struct {
			Code    string `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	} `json:"response"`
}

// stream posts a streamed Responses request and hands each event to
// each, in order, until the stream ends; it returns the events.
func (s *server) stream(t *testing.T, body string, each func(sseEvent)) []sseEvent {
	t.Helper()
	resp := s.do(t.Context(), t, aliceKey, http.MethodPost, "/v1/responses", body)
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("%d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	var evs []sseEvent
	sc := bufio.NewScanner(resp.Body)
	name := ""
	for sc.Scan() {
		line := sc.Text()
		if n, ok := strings.CutPrefix(line, "event: "); ok {
			name = n
			continue
		}
		data, ok := strings.CutPrefix(line, "data: ")
		if !ok {
			continue
		}
		var e sseEvent
		if err := json.Unmarshal([]byte(data), &e); err != nil || e.Type != name {
			t.Fatalf("event %s: %v: %s", name, err, data)
		}
		evs = append(evs, e)
		if each != nil {
			each(e)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return evs
}

// A run that fails fails the response: whole, a 500 in OpenAI's shape;
// streamed, response.failed with the error. A streamed response
// cancelled mid-answer ends with response.incomplete, cancelled.
func TestResponsesFailedAndCancelledStreams(t *testing.T) {
	s := newServer(t)
	code, r, _ := s.post(t, aliceKey, `{"model": "trellis-test", "input": "please fail now"}`)
	if code != http.StatusInternalServerError || r.Error.Type != "server_error" || r.Error.Message == "" {
		t.Errorf("whole: %d %+v", code, r.Error)
	}
	evs := s.stream(t, `{"model": "trellis-test", "input": "please fail now", "stream": true}`, nil)
	if last := evs[len(evs)-1]; last.Type != "response.failed" || last.Response.Status != "failed" || last.Response.Error == nil ||
		last.Response.Error.Code != "server_error" || evs[0].Type != "response.created" {
		t.Errorf("streamed: %+v", evs)
	}

	cancelled, id := false, ""
	evs = s.stream(t, `{"model": "trellis-test", "input": "answer slowly please", "stream": true}`, func(e sseEvent) {
		if e.Type == "response.created" {
			id = e.Response.ID
		}
		if e.Type == "response.output_text.delta" && !cancelled {
			cancelled = true
			var going responseObject
			if code := s.call(t, aliceKey, http.MethodGet, "/v1/responses/"+id, "", &going); code != http.StatusOK || going.Status != "in_progress" {
				t.Errorf("GET while it streams: %d %+v", code, going)
			}
			var c responseObject
			if code := s.call(t, aliceKey, http.MethodPost, "/v1/responses/"+id+"/cancel", "", &c); code != http.StatusOK || c.Status != "cancelled" {
				t.Errorf("cancel: %d %+v", code, c)
			}
		}
	})
	if last := evs[len(evs)-1]; !cancelled || last.Type != "response.incomplete" || last.Response.Status != "cancelled" {
		t.Errorf("cancelled stream: %+v", evs)
	}
}

// A client that aborts a streamed response cancels its run; a response
// that continues it is answered at once.
func TestResponsesAbortThenContinue(t *testing.T) {
	s := newServer(t)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	resp := s.do(ctx, t, aliceKey, http.MethodPost, "/v1/responses", `{"model": "trellis-test", "input": "answer slowly please", "stream": true}`)
	conv := resp.Header.Get("X-Trellis-Conversation-Id")
	var id string
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		var e sseEvent
		if data, ok := strings.CutPrefix(sc.Text(), "data: "); ok && json.Unmarshal([]byte(data), &e) == nil {
			if e.Type == "response.created" {
				id = e.Response.ID
			}
			if e.Type == "response.output_text.delta" {
				break
			}
		}
	}
	cancel()
	resp.Body.Close()

	start := time.Now()
	code, r, _ := s.post(t, aliceKey, `{"model": "trellis-test", "input": "hello there", "previous_response_id": "`+id+`"}`)
	if code != http.StatusOK || r.text() != "Hello from Trellis." || time.Since(start) > 5*time.Second {
		t.Errorf("continuing the aborted response: %d %+v in %s", code, r, time.Since(start))
	}
	page, err := s.store.ListRuns(t.Context(), "alice", conv, store.RunQuery{})
	if err != nil || len(page.Runs) != 2 || page.Runs[0].Status != store.RunCancelled {
		t.Errorf("the conversation's runs: %+v, %v", page.Runs, err)
	}
}

// Without previous_response_id, an input list is the whole
// conversation: a function call and its output after the user's message
// go on from there, in a new conversation.
func TestResponsesStatelessFunctionOutput(t *testing.T) {
	for _, b := range backends {
		t.Run(b, func(t *testing.T) { responsesStatelessFunctionOutput(t, newServerOn(t, b)) })
	}
}

func responsesStatelessFunctionOutput(t *testing.T, s *server) {
	code, r, _ := s.post(t, aliceKey, `{"model": "trellis-test", "tools": [{"type": "function", "name": "get_weather", "parameters": {"type": "object"}}],
		"input": [{"role": "developer", "content": "Be brief."}, {"role": "user", "content": "what is the weather in Oslo?"},
			{"type": "function_call", "call_id": "c1", "name": "get_weather", "arguments": "{\"city\":\"Oslo\"}"},
			{"type": "function_call_output", "call_id": "c1", "output": "sunny"}]}`)
	if code != http.StatusOK || r.text() != "It is sunny in Oslo." || len(r.Output) != 1 {
		t.Errorf("%d %+v", code, r)
	}
	// The outputs of a response that called no function answer nothing.
	_, first, _ := s.post(t, aliceKey, `{"model": "trellis-test", "input": "hello there"}`)
	for _, input := range []string{
		`[{"type": "function_call_output", "call_id": "c1", "output": "sunny"}]`,
		`[{"type": "function_call_output", "call_id": "c1", "output": "sunny"}, {"role": "user", "content": "and now?"}]`,
	} {
		code, e, _ := s.post(t, aliceKey, `{"model": "trellis-test", "previous_response_id": "`+first.ID+`", "input": `+input+`}`)
		if code != http.StatusBadRequest || e.Error.Param != "input" {
			t.Errorf("%s: %d %+v", input, code, e.Error)
		}
	}

	// Outputs must answer the previous response's calls, each once.
	const tools = `"tools": [{"type": "function", "name": "get_weather", "parameters": {"type": "object"}}]`
	_, call, h := s.post(t, aliceKey, `{"model": "trellis-test", "input": "what is the weather in Oslo?", `+tools+`}`)
	if len(call.Output) != 1 || call.Output[0].Type != "function_call" {
		t.Fatalf("the call: %+v", call)
	}
	id := call.Output[0].CallID
	out := func(id, text string) string {
		return `{"type": "function_call_output", "call_id": "` + id + `", "output": "` + text + `"}`
	}
	for _, tc := range []struct{ input, param string }{
		{"[" + out("nope", "sunny") + "]", "input[0].call_id"},
		{"[" + out(id, "sunny") + ", " + out(id, "rainy") + "]", "input[1].call_id"},
	} {
		code, e, _ := s.post(t, aliceKey, `{"model": "trellis-test", "previous_response_id": "`+call.ID+`", "input": `+tc.input+`, `+tools+`}`)
		if code != http.StatusBadRequest || e.Error.Param != tc.param {
			t.Errorf("%s: %d %+v", tc.input, code, e.Error)
		}
	}
	code, answer, _ := s.post(t, aliceKey, `{"model": "trellis-test", "previous_response_id": "`+call.ID+`", "input": [`+out(id, "sunny")+`], `+tools+`}`)
	if code != http.StatusOK || answer.text() != "It is sunny in Oslo." {
		t.Fatalf("the answer: %d %+v", code, answer)
	}
	// The answer's run is the turn's version the conversation reads as;
	// the call's is superseded by it.
	page, err := s.store.ListRuns(t.Context(), "alice", h.Get("X-Trellis-Conversation-Id"), store.RunQuery{})
	if err != nil || len(page.Runs) != 2 {
		t.Fatalf("the conversation has %d runs: %v", len(page.Runs), err)
	}
	if first, second := page.Runs[0].Run, page.Runs[1].Run; "resp_"+first.ID != call.ID || !first.Superseded ||
		"resp_"+second.ID != answer.ID || second.Superseded {
		t.Errorf("the runs: %s superseded %t, %s superseded %t", first.ID, first.Superseded, second.ID, second.Superseded)
	}
}
