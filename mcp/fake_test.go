package mcp_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	mcpgo "github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// The test binary doubles as the MCP servers the tests talk to over stdio:
// run with TRELLIS_MCP_FAKE=<mode>, it serves instead of testing.
//
//	stdio    the fake server (mcp-go, both protocol eras) on stdin/stdout
//	choke    a legacy-only server: it exits when the first message is not
//	         initialize (as some do on the server/discover probe)
//	silent   reads requests and never answers
//	garbage  answers every line with output that is not JSON-RPC
//	exit     writes a complaint on stderr and exits with status 3
//	huge     a server whose tool huge returns n bytes, and add
//
// TRELLIS_MCP_FAKE_LOG names a file the fake server appends events to
// (cancellations), for tests that watch it from the outside.
const fakeEnv = "TRELLIS_MCP_FAKE"

func runFake(mode string) int {
	logf := func(string) {}
	if p := os.Getenv("TRELLIS_MCP_FAKE_LOG"); p != "" {
		logf = func(s string) {
			f, err := os.OpenFile(p, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
			if err == nil {
				fmt.Fprintln(f, s)
				f.Close()
			}
		}
	}
	ctx := context.Background()
	switch mode {
	case "stdio":
		if err := server.NewStdioServer(newFakeServer(logf)).Listen(ctx, os.Stdin, os.Stdout); err != nil && err != io.EOF {
			fmt.Fprintln(os.Stderr, err)
		}
		return 0
	case "choke":
		in := bufio.NewReader(os.Stdin)
		first, err := in.ReadString('\n')
		if err != nil || !strings.Contains(first, `"method":"initialize"`) {
			fmt.Fprintln(os.Stderr, "unexpected first message; bye")
			return 1
		}
		_ = server.NewStdioServer(newFakeServer(logf)).Listen(ctx, io.MultiReader(strings.NewReader(first), in), os.Stdout)
		return 0
	case "huge":
		s := server.NewMCPServer("huge", "1.0.0", server.WithToolCapabilities(true))
		s.AddTool(mcpgo.NewTool("huge", mcpgo.WithDescription("Returns n bytes."), mcpgo.WithNumber("n", mcpgo.Required())),
			func(_ context.Context, req mcpgo.CallToolRequest) (*mcpgo.CallToolResult, error) {
				return mcpgo.NewToolResultText(strings.Repeat("x", int(req.GetFloat("n", 0)))), nil
			})
		s.AddTool(mcpgo.NewTool("add", mcpgo.WithNumber("a"), mcpgo.WithNumber("b")),
			func(_ context.Context, req mcpgo.CallToolRequest) (*mcpgo.CallToolResult, error) {
				return mcpgo.NewToolResultText(fmt.Sprint(req.GetFloat("a", 0) + req.GetFloat("b", 0))), nil
			})
		_ = server.NewStdioServer(s).Listen(ctx, os.Stdin, os.Stdout)
		return 0
	case "silent":
		_, _ = io.Copy(io.Discard, os.Stdin)
		return 0
	case "garbage":
		sc := bufio.NewScanner(os.Stdin)
		for sc.Scan() {
			fmt.Println("Welcome to the server! (this is not JSON-RPC)")
			fmt.Println(`{"hello": "world"}`)
		}
		return 0
	case "exit":
		fmt.Fprintln(os.Stderr, "fatal: FAKE_API_KEY is not set")
		return 3
	}
	fmt.Fprintln(os.Stderr, "unknown mode", mode)
	return 2
}

// newFakeServer is an mcp-go server with one tool per behaviour under test.
// It speaks 2026-07-28 and the session revisions; its elicitations use
// input requests, which mcp-go turns into elicitation/create for session
// clients. logf hears cancellations.
func newFakeServer(logf func(string)) *server.MCPServer {
	// Pages of three tools: listing them takes several requests.
	s := server.NewMCPServer("fake", "1.0.0", server.WithToolCapabilities(true), server.WithPaginationLimit(3))
	s.AddTool(mcpgo.NewTool("add", mcpgo.WithDescription("Adds two numbers."),
		mcpgo.WithNumber("a", mcpgo.Required()), mcpgo.WithNumber("b", mcpgo.Required()),
		mcpgo.WithReadOnlyHintAnnotation(true)),
		func(_ context.Context, req mcpgo.CallToolRequest) (*mcpgo.CallToolResult, error) {
			return mcpgo.NewToolResultText(fmt.Sprint(req.GetFloat("a", 0) + req.GetFloat("b", 0))), nil
		})
	s.AddTool(mcpgo.NewTool("slow", mcpgo.WithDescription("Counts steps, reporting progress."),
		mcpgo.WithNumber("steps", mcpgo.Required()), mcpgo.WithNumber("step_ms"),
		mcpgo.WithDestructiveHintAnnotation(false), mcpgo.WithReadOnlyHintAnnotation(false)),
		func(ctx context.Context, req mcpgo.CallToolRequest) (*mcpgo.CallToolResult, error) {
			steps, stepMS := int(req.GetFloat("steps", 3)), req.GetFloat("step_ms", 10)
			var token mcpgo.ProgressToken
			if req.Params.Meta != nil {
				token = req.Params.Meta.ProgressToken
			}
			for i := 1; i <= steps; i++ {
				select {
				case <-time.After(time.Duration(stepMS * float64(time.Millisecond))):
				case <-ctx.Done():
					logf("cancelled slow")
					return nil, ctx.Err()
				}
				if token != nil {
					_ = server.ServerFromContext(ctx).SendNotificationToClient(ctx, string(mcpgo.MethodNotificationProgress),
						map[string]any{"progressToken": token, "progress": i, "total": steps, "message": fmt.Sprintf("step %d", i)})
				}
			}
			// mcp-go queues notifications apart from responses; give the
			// last one time to go out before the result.
			time.Sleep(20 * time.Millisecond)
			return mcpgo.NewToolResultText(fmt.Sprintf("done %d steps", steps)), nil
		})
	s.AddTool(mcpgo.NewTool("ask", mcpgo.WithDescription("Asks the user who they are.")),
		func(_ context.Context, req mcpgo.CallToolRequest) (*mcpgo.CallToolResult, error) {
			if r := server.ElicitationResponse(req.Params.InputResponses, "who"); r != nil {
				name := ""
				if m, ok := r.Content.(map[string]any); ok {
					name, _ = m["name"].(string)
				}
				return mcpgo.NewToolResultText(fmt.Sprintf("action=%s name=%s", r.Action, name)), nil
			}
			return server.NewInputRequestBuilder("asked-who").Elicit("who", mcpgo.ElicitationParams{
				Message: "Who are you?",
				RequestedSchema: map[string]any{
					"type":       "object",
					"properties": map[string]any{"name": map[string]any{"type": "string"}},
					"required":   []string{"name"},
				},
			}).ToolResult(), nil
		})
	type weather struct {
		Temperature float64 `json:"temperature"`
	}
	s.AddTool(mcpgo.NewTool("structured", mcpgo.WithDescription("Returns structured weather."), mcpgo.WithOutputSchema[weather]()),
		func(context.Context, mcpgo.CallToolRequest) (*mcpgo.CallToolResult, error) {
			return mcpgo.NewToolResultStructured(weather{Temperature: 21.5}, `{"temperature":21.5}`), nil
		})
	s.AddTool(mcpgo.NewTool("badstructured", mcpgo.WithDescription("Returns structure that breaks its schema."), mcpgo.WithOutputSchema[weather]()),
		func(context.Context, mcpgo.CallToolRequest) (*mcpgo.CallToolResult, error) {
			return mcpgo.NewToolResultStructured(map[string]any{"temperature": "hot"}, "hot"), nil
		})
	s.AddTool(mcpgo.NewTool("fail", mcpgo.WithDescription("Always fails.")),
		func(context.Context, mcpgo.CallToolRequest) (*mcpgo.CallToolResult, error) {
			return mcpgo.NewToolResultError("the widget is broken"), nil
		})
	s.AddTool(mcpgo.NewTool("grow", mcpgo.WithDescription("Adds a tool named grown.")),
		func(context.Context, mcpgo.CallToolRequest) (*mcpgo.CallToolResult, error) {
			s.AddTool(mcpgo.NewTool("grown", mcpgo.WithDescription("Appeared later.")),
				func(context.Context, mcpgo.CallToolRequest) (*mcpgo.CallToolResult, error) {
					return mcpgo.NewToolResultText("I am new"), nil
				})
			return mcpgo.NewToolResultText("grew"), nil
		})
	s.AddTool(mcpgo.NewTool("odd.name/x", mcpgo.WithDescription("A name models cannot call.")),
		func(context.Context, mcpgo.CallToolRequest) (*mcpgo.CallToolResult, error) {
			return mcpgo.NewToolResultText("odd"), nil
		})
	return s
}

// jsonText is v as JSON, for messages.
func jsonText(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}
