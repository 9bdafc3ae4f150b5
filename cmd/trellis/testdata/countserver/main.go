// Command countserver is a small stdio MCP server for the crash tests of
// trellis serve. Each of its tools appends a line to the file named by
// COUNT_FILE when it takes effect, so a test counts how often a side
// effect really happened, across any number of restarts of Trellis:
//
//   - write {note}: appends "write <note>". The tests list it in
//     requireApproval: it must never run without a human's yes.
//   - log {note}: appends "log <note>"; it needs no approval.
//   - ask_name: asks the user's name (a 2026-07-28 input request) and
//     appends "ask <name>" once answered; a tool that asks before it
//     acts, as that revision expects.
//   - charge {note}: appends "charge <note> <key>", key being the
//     idempotency key the call's _meta carries, then, while the file
//     named by HOLD_FILE exists, waits (a minute at most): a call a test
//     kills Trellis in the middle of, its side effect done. Not
//     annotated, so neither read-only nor idempotent.
//   - stamp {note}: the same as charge, appending "stamp <note> <key>",
//     annotated idempotent.
package main

import (
	"context"
	"fmt"
	"io"
	"log"
	"os"
	"time"

	mcpgo "github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

func main() {
	path := os.Getenv("COUNT_FILE")
	if path == "" {
		log.Fatal("countserver: COUNT_FILE is not set")
	}
	record := func(line string) error {
		f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
		if err != nil {
			return err
		}
		if _, err := fmt.Fprintln(f, line); err != nil {
			f.Close()
			return err
		}
		return f.Close() // written before the answer goes out
	}
	s := server.NewMCPServer("countserver", "1.0.0", server.WithToolCapabilities(false))
	s.AddTool(mcpgo.NewTool("write", mcpgo.WithDescription("Writes a note."),
		mcpgo.WithString("note", mcpgo.Required()), mcpgo.WithDestructiveHintAnnotation(true)),
		func(_ context.Context, req mcpgo.CallToolRequest) (*mcpgo.CallToolResult, error) {
			note := req.GetString("note", "")
			if err := record("write " + note); err != nil {
				return mcpgo.NewToolResultError(err.Error()), nil
			}
			return mcpgo.NewToolResultText("wrote " + note), nil
		})
	s.AddTool(mcpgo.NewTool("log", mcpgo.WithDescription("Logs a note."), mcpgo.WithString("note", mcpgo.Required())),
		func(_ context.Context, req mcpgo.CallToolRequest) (*mcpgo.CallToolResult, error) {
			note := req.GetString("note", "")
			if err := record("log " + note); err != nil {
				return mcpgo.NewToolResultError(err.Error()), nil
			}
			return mcpgo.NewToolResultText("logged " + note), nil
		})
	held := func(verb string) server.ToolHandlerFunc {
		return func(ctx context.Context, req mcpgo.CallToolRequest) (*mcpgo.CallToolResult, error) {
			note, key := req.GetString("note", ""), ""
			if m := req.Params.Meta; m != nil {
				key, _ = m.AdditionalFields["trellis/idempotency_key"].(string)
			}
			if err := record(verb + " " + note + " " + key); err != nil {
				return mcpgo.NewToolResultError(err.Error()), nil
			}
			hold := os.Getenv("HOLD_FILE")
			for deadline := time.Now().Add(time.Minute); hold != "" && time.Now().Before(deadline); {
				if _, err := os.Stat(hold); err != nil {
					break
				}
				select {
				case <-ctx.Done():
					return nil, ctx.Err()
				case <-time.After(10 * time.Millisecond):
				}
			}
			return mcpgo.NewToolResultText(verb + " done: " + note), nil
		}
	}
	s.AddTool(mcpgo.NewTool("charge", mcpgo.WithDescription("Charges a card."), mcpgo.WithString("note", mcpgo.Required())),
		held("charge"))
	s.AddTool(mcpgo.NewTool("stamp", mcpgo.WithDescription("Stamps a record."), mcpgo.WithString("note", mcpgo.Required()),
		mcpgo.WithIdempotentHintAnnotation(true)), held("stamp"))
	s.AddTool(mcpgo.NewTool("ask_name", mcpgo.WithDescription("Greets the user by name, asking it first.")),
		func(_ context.Context, req mcpgo.CallToolRequest) (*mcpgo.CallToolResult, error) {
			r := server.ElicitationResponse(req.Params.InputResponses, "name")
			if r == nil {
				return server.NewInputRequestBuilder("asked").Elicit("name", mcpgo.ElicitationParams{
					Message: "What is your name?",
					RequestedSchema: map[string]any{
						"type":       "object",
						"properties": map[string]any{"name": map[string]any{"type": "string", "minLength": 1}},
						"required":   []string{"name"},
					},
				}).ToolResult(), nil
			}
			name := ""
			if m, ok := r.Content.(map[string]any); ok {
				name, _ = m["name"].(string)
			}
			if r.Action != mcpgo.ElicitationResponseActionAccept || name == "" {
				return mcpgo.NewToolResultText("the user would not say (" + string(r.Action) + ")"), nil
			}
			if err := record("ask " + name); err != nil {
				return mcpgo.NewToolResultError(err.Error()), nil
			}
			return mcpgo.NewToolResultText("hello " + name), nil
		})
	if err := server.NewStdioServer(s).Listen(context.Background(), os.Stdin, os.Stdout); err != nil && err != io.EOF {
		log.Fatal(err)
	}
}
