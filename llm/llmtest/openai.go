// Package llmtest provides test helpers for code that talks to language
// models over the wire: an in-test HTTP server speaking OpenAI's
// chat-completions protocol, streamed (SSE, with tool-call deltas split
// across chunks and a final usage chunk) and not, and a [ReplayServer]
// that replays any provider's recorded answers byte for byte.
//
// Point a model at it with llm.ModelConfig{Provider: llm.ProviderOpenAI,
// BaseURL: srv.BaseURL()}, or openai.WithBaseURL(srv.BaseURL()).
package llmtest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// Response is one scripted answer of the server.
type Response struct {
	// Status is the HTTP status; 0 means 200. A non-2xx status sends
	// ErrorMessage in OpenAI's error body.
	Status int
	// Header is added to the response (e.g. "Retry-After": "1").
	Header map[string]string
	// ErrorMessage is the error body's message for a non-2xx status.
	ErrorMessage string
	// Text is the assistant's content. Streamed, it is sent in Chunks when
	// given (their concatenation must be Text, or Text may be empty), else
	// word by word.
	Text   string
	Chunks []string
	// ToolCalls are returned in the message (non-streamed) or as deltas:
	// the first carries index, id, type and name, the arguments follow in
	// pieces of ArgChunk bytes (0 means 8) with only the index set.
	ToolCalls []ToolCall
	ArgChunk  int
	// Reasoning is the model's reasoning, as DeepSeek's API and vLLM send
	// it: streamed, one reasoning_content delta per piece before the
	// content; whole, the message's reasoning_content, joined.
	Reasoning []string
	// Usage is reported in the response (non-streamed) or in a last chunk
	// with empty choices when the request asked for include_usage. nil
	// means {PromptTokens: 10, CompletionTokens: 5}.
	Usage *Usage
	// FinishReason defaults to "stop", or "tool_calls" with tool calls.
	FinishReason string
	// BreakAfterChunks, when > 0, cuts the stream (closes the connection)
	// after that many content chunks, to test mid-stream failures.
	BreakAfterChunks int
}

// ToolCall is a tool call in a Response.
type ToolCall struct {
	ID        string // "" means "call_<n>"
	Name      string
	Arguments string // JSON text
}

// Usage mirrors OpenAI's usage object.
type Usage struct {
	PromptTokens     int
	CompletionTokens int
	CachedTokens     int
	ReasoningTokens  int
}

// Request is a request the server received, decoded.
type Request struct {
	Model               string           `json:"model"`
	Messages            []Message        `json:"messages"`
	Tools               []map[string]any `json:"tools"`
	Stream              bool             `json:"stream"`
	StreamOptions       *StreamOptions   `json:"stream_options"`
	Temperature         *float64         `json:"temperature"`
	MaxTokens           int              `json:"max_tokens"`
	MaxCompletionTokens int              `json:"max_completion_tokens"`
	// Raw is the undecoded body.
	Raw json.RawMessage `json:"-"`
}

// StreamOptions is the request's stream_options.
type StreamOptions struct {
	IncludeUsage bool `json:"include_usage"`
}

// Message is one message of a Request.
type Message struct {
	Role       string          `json:"role"`
	Content    json.RawMessage `json:"content"`
	ToolCallID string          `json:"tool_call_id"`
	ToolCalls  []struct {
		ID       string `json:"id"`
		Type     string `json:"type"`
		Function struct {
			Name      string `json:"name"`
			Arguments string `json:"arguments"`
		} `json:"function"`
	} `json:"tool_calls"`
}

// Text returns the message content as text: a string content, or the
// text parts of a multi-part content joined.
func (m Message) Text() string {
	var s string
	if json.Unmarshal(m.Content, &s) == nil {
		return s
	}
	var parts []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	_ = json.Unmarshal(m.Content, &parts)
	var b strings.Builder
	for _, p := range parts {
		b.WriteString(p.Text)
	}
	return b.String()
}

// Handler answers one request; it may inspect the request and the number n
// (1-based) of requests received so far.
type Handler func(req Request, n int) Response

// OpenAIServer is a fake OpenAI chat-completions server.
type OpenAIServer struct {
	srv     *httptest.Server
	t       testing.TB
	handler Handler

	mu   sync.Mutex
	reqs []Request
}

// NewOpenAIServer starts a server that answers the i-th request with
// responses[i]. A request past the end fails the test and gets a 500. The
// server is closed when the test ends.
func NewOpenAIServer(t testing.TB, responses ...Response) *OpenAIServer {
	t.Helper()
	return NewOpenAIServerFunc(t, func(_ Request, n int) Response {
		if n > len(responses) {
			t.Errorf("llmtest: request %d but only %d responses scripted", n, len(responses))
			return Response{Status: http.StatusInternalServerError, ErrorMessage: "llmtest: no more scripted responses"}
		}
		return responses[n-1]
	})
}

// NewOpenAIServerFunc starts a server whose answers come from h.
func NewOpenAIServerFunc(t testing.TB, h Handler) *OpenAIServer {
	t.Helper()
	s := &OpenAIServer{t: t, handler: h}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/chat/completions", s.serve)
	s.srv = httptest.NewServer(mux)
	t.Cleanup(s.Close)
	return s
}

// BaseURL is the server's OpenAI base URL, ending in /v1.
func (s *OpenAIServer) BaseURL() string { return s.srv.URL + "/v1" }

// Client is an HTTP client for the server.
func (s *OpenAIServer) Client() *http.Client { return s.srv.Client() }

// Close shuts the server down; it is also done at test cleanup.
func (s *OpenAIServer) Close() {
	s.srv.CloseClientConnections()
	s.srv.Close()
}

// Requests returns the requests received so far.
func (s *OpenAIServer) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.reqs...)
}

func (s *OpenAIServer) serve(w http.ResponseWriter, r *http.Request) {
	var req Request
	dec := json.NewDecoder(r.Body)
	var raw json.RawMessage
	if err := dec.Decode(&raw); err != nil || json.Unmarshal(raw, &req) != nil {
		writeError(w, http.StatusBadRequest, "llmtest: bad request body")
		return
	}
	req.Raw = raw
	s.mu.Lock()
	s.reqs = append(s.reqs, req)
	n := len(s.reqs)
	s.mu.Unlock()

	resp := s.handler(req, n)
	for k, v := range resp.Header {
		w.Header().Set(k, v)
	}
	if resp.Status != 0 && resp.Status != http.StatusOK {
		writeError(w, resp.Status, resp.ErrorMessage)
		return
	}
	if req.Stream {
		s.stream(w, req, resp)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(completion(req, resp))
}

func writeError(w http.ResponseWriter, status int, msg string) {
	if msg == "" {
		msg = http.StatusText(status)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]any{"error": map[string]any{"message": msg, "type": "llmtest_error"}})
}

func (r Response) usage() Usage {
	if r.Usage != nil {
		return *r.Usage
	}
	return Usage{PromptTokens: 10, CompletionTokens: 5}
}

func (r Response) finish() string {
	switch {
	case r.FinishReason != "":
		return r.FinishReason
	case len(r.ToolCalls) > 0:
		return "tool_calls"
	}
	return "stop"
}

func callID(tc ToolCall, i int) string {
	if tc.ID != "" {
		return tc.ID
	}
	return "call_" + strconv.Itoa(i+1)
}

func usageJSON(u Usage) map[string]any {
	return map[string]any{
		"prompt_tokens":             u.PromptTokens,
		"completion_tokens":         u.CompletionTokens,
		"total_tokens":              u.PromptTokens + u.CompletionTokens,
		"prompt_tokens_details":     map[string]any{"cached_tokens": u.CachedTokens},
		"completion_tokens_details": map[string]any{"reasoning_tokens": u.ReasoningTokens},
	}
}

func completion(req Request, r Response) map[string]any {
	msg := map[string]any{"role": "assistant", "content": r.Text}
	if len(r.Reasoning) > 0 {
		msg["reasoning_content"] = strings.Join(r.Reasoning, "")
	}
	if len(r.ToolCalls) > 0 {
		var calls []map[string]any
		for i, tc := range r.ToolCalls {
			calls = append(calls, map[string]any{
				"id": callID(tc, i), "type": "function",
				"function": map[string]any{"name": tc.Name, "arguments": tc.Arguments},
			})
		}
		msg["tool_calls"] = calls
	}
	return map[string]any{
		"id": "chatcmpl-llmtest", "object": "chat.completion", "created": 1700000000, "model": req.Model,
		"choices": []map[string]any{{"index": 0, "message": msg, "finish_reason": r.finish()}},
		"usage":   usageJSON(r.usage()),
	}
}

func (s *OpenAIServer) stream(w http.ResponseWriter, req Request, r Response) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	rc := http.NewResponseController(w)
	send := func(v any) {
		b, _ := json.Marshal(v)
		fmt.Fprintf(w, "data: %s\n\n", b)
		_ = rc.Flush()
	}
	chunk := func(delta map[string]any, finish any) map[string]any {
		return map[string]any{
			"id": "chatcmpl-llmtest", "object": "chat.completion.chunk", "created": 1700000000, "model": req.Model,
			"choices": []map[string]any{{"index": 0, "delta": delta, "finish_reason": finish}},
		}
	}
	send(chunk(map[string]any{"role": "assistant", "content": ""}, nil))
	for _, p := range r.Reasoning {
		send(chunk(map[string]any{"reasoning_content": p}, nil))
	}
	pieces := r.Chunks
	if len(pieces) == 0 && r.Text != "" {
		pieces = strings.SplitAfter(r.Text, " ")
	}
	for i, p := range pieces {
		if r.BreakAfterChunks > 0 && i == r.BreakAfterChunks {
			// Abort the connection mid-stream, as a dropped upstream would.
			panic(http.ErrAbortHandler)
		}
		send(chunk(map[string]any{"content": p}, nil))
	}
	argChunk := r.ArgChunk
	if argChunk <= 0 {
		argChunk = 8
	}
	for i, tc := range r.ToolCalls {
		send(chunk(map[string]any{"tool_calls": []map[string]any{{
			"index": i, "id": callID(tc, i), "type": "function",
			"function": map[string]any{"name": tc.Name, "arguments": ""},
		}}}, nil))
		for a := tc.Arguments; a != ""; {
			n := min(argChunk, len(a))
			send(chunk(map[string]any{"tool_calls": []map[string]any{{
				"index": i, "function": map[string]any{"arguments": a[:n]},
			}}}, nil))
			a = a[n:]
		}
	}
	send(chunk(map[string]any{}, r.finish()))
	if req.StreamOptions != nil && req.StreamOptions.IncludeUsage {
		send(map[string]any{
			"id": "chatcmpl-llmtest", "object": "chat.completion.chunk", "created": 1700000000, "model": req.Model,
			"choices": []any{}, "usage": usageJSON(r.usage()),
		})
	}
	fmt.Fprint(w, "data: [DONE]\n\n")
	_ = rc.Flush()
}
