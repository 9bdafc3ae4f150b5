package mcp

import (
	"encoding/json"
	"errors"
	"slices"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"
	mcpgo "github.com/mark3labs/mcp-go/mcp"

	"github.com/trellis-ai/trellis/operators"
)

// FuzzToolEntries feeds a server's tool listing, as mcp-go decodes it:
// the tools offered are the allowed ones the server listed, each under a
// name of 1 to 64 letters, digits, '_' and '-' that no other takes; a
// tool read-only is never destructive; a schema read is an object's
// unless it says otherwise, and resolves or not without panicking.
func FuzzToolEntries(f *testing.F) {
	for _, seed := range []string{
		`[{"name":"search","description":"find","inputSchema":{"type":"object","properties":{"q":{"type":"string"}},"required":["q"]}}]`,
		`[{"name":"a.b","inputSchema":{}},{"name":"a_b","inputSchema":{}},{"name":"a_b_2","inputSchema":{}},{"name":"a/b","inputSchema":{}}]`,
		`[{"name":"","inputSchema":{"type":"object"}},{"name":"_","inputSchema":{"type":"object"}}]`,
		`[{"name":"xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx1"},{"name":"xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx2"}]`,
		`[{"name":"ro","annotations":{"readOnlyHint":true,"destructiveHint":true}},{"name":"rw","annotations":{"idempotentHint":true}}]`,
		`[{"name":"t","inputSchema":{"type":"object","properties":{"n":{"$ref":"#/$defs/x"}},"$defs":{"x":{"type":"integer"}}},"outputSchema":{"type":"object","required":["ok"]}}]`,
		`[{"name":"t","inputSchema":{"$ref":"#/nowhere"},"outputSchema":{"type":7}}]`,
		`[{"name":"t","inputSchema":{"type":["object","null"],"pattern":"("}}]`,
		`[{"name":"caf\u00e9 \ud83d\ude00"}]`,
	} {
		f.Add([]byte(seed), false)
	}
	f.Add([]byte(`[{"name":"search"},{"name":"delete"}]`), true)
	f.Fuzz(func(t *testing.T, listing []byte, allowSome bool) {
		var tools []mcpgo.Tool
		if json.Unmarshal(listing, &tools) != nil {
			return
		}
		cfg := ServerConfig{}
		if allowSome {
			cfg.AllowedTools = []string{"search", "a.b"}
		}
		listed := make([]string, len(tools))
		for i, tool := range tools {
			listed[i] = tool.Name
		}
		entries, _ := toolEntries(cfg, tools)
		names := map[string]bool{}
		for _, e := range entries {
			switch {
			case !slices.Contains(listed, e.mcpName):
				t.Fatalf("%s: offered %q, which the server did not list", listing, e.mcpName)
			case cfg.AllowedTools != nil && !slices.Contains(cfg.AllowedTools, e.mcpName):
				t.Fatalf("%s: offered %q, which is not allowed", listing, e.mcpName)
			case len(e.name) == 0 || len(e.name) > 64 || safeName(e.name) != e.name:
				t.Fatalf("%s: tool %q offered as %q", listing, e.mcpName, e.name)
			case names[e.name]:
				t.Fatalf("%s: two tools offered as %q", listing, e.name)
			case e.spec.Name != e.name:
				t.Fatalf("%s: tool %q's spec is named %q", listing, e.name, e.spec.Name)
			case e.spec.Annotations.ReadOnly && e.spec.Annotations.Destructive:
				t.Fatalf("%s: tool %q is read-only and destructive", listing, e.name)
			}
			names[e.name] = true
			if s := e.spec.InputSchema; s != nil {
				if s.Type == "" && len(s.Types) == 0 {
					t.Fatalf("%s: tool %q's input schema has no type", listing, e.name)
				}
				if rs, err := s.Resolve(nil); err == nil {
					_ = rs.Validate(map[string]any{"q": "x", "n": 1.0})
				}
			}
		}
		if cfg.AllowedTools == nil && len(entries) != len(tools) {
			t.Fatalf("%s: %d tools listed, %d offered", listing, len(tools), len(entries))
		}
	})
}

// FuzzToResult feeds a tool call's result as a server sends it, as
// mcp-go decodes it: the result is a success or an error; an error wraps
// ErrToolFailed (the server said isError, and its text is the error's)
// or ErrOutputSchema; a success's structured content is what the tool's
// output schema allows, and its JSON contents are JSON.
func FuzzToResult(f *testing.F) {
	for _, seed := range []string{
		`{"content":[{"type":"text","text":"hello"}]}`,
		`{"content":[{"type":"text","text":"disk full"}],"isError":true}`,
		`{"content":[],"isError":true}`,
		`{"content":[{"type":"text","text":"{\"n\":1}"}],"structuredContent":{"n":1}}`,
		`{"content":[],"structuredContent":{"n":"one"}}`,
		`{"content":[],"structuredContent":[1,2]}`,
		`{"content":[{"type":"image","data":"UE5H","mimeType":"image/png"},{"type":"audio","data":"%%%","mimeType":"audio/wav"}]}`,
		`{"content":[{"type":"resource","resource":{"uri":"doc://1","mimeType":"application/json; charset=utf-8","text":"{\"k\":1}"}}]}`,
		`{"content":[{"type":"resource","resource":{"uri":"bin://4","mimeType":"image/gif","blob":"R0lGODlh"}}]}`,
		`{"content":[{"type":"resource","resource":{"uri":"x","mimeType":";;;","text":"not json"}}]}`,
		`{"content":[{"type":"resource_link","uri":"file:///a.txt","name":"a.txt"}]}`,
		`{"content":[{"type":"mystery","x":1}]}`,
	} {
		f.Add([]byte(seed))
	}
	var schema jsonschema.Schema
	if err := json.Unmarshal([]byte(`{"type":"object","properties":{"n":{"type":"integer"}},"required":["n"]}`), &schema); err != nil {
		f.Fatal(err)
	}
	output, err := schema.Resolve(nil)
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		raw := json.RawMessage(body)
		r, err := mcpgo.ParseCallToolResult(&raw)
		if err != nil {
			return
		}
		for _, out := range []*jsonschema.Resolved{nil, output} {
			res := toResult("srv", "tool", r, out)
			switch res.Status {
			case operators.StatusError:
				if res.Error == "" || (!errors.Is(res.Err, ErrToolFailed) && !errors.Is(res.Err, ErrOutputSchema)) {
					t.Fatalf("%s: an error result %q, %v", body, res.Error, res.Err)
				}
				if r.IsError != errors.Is(res.Err, ErrToolFailed) {
					t.Fatalf("%s: isError %v, but the result's error is %v", body, r.IsError, res.Err)
				}
			case operators.StatusSuccess:
				if r.IsError || res.Err != nil {
					t.Fatalf("%s: a success of a result with isError %v, error %v", body, r.IsError, res.Err)
				}
				for _, c := range res.Contents {
					if c.Type == operators.OutputJSON && !json.Valid(c.JSON) {
						t.Fatalf("%s: JSON content %q is not JSON", body, c.JSON)
					}
				}
				if out != nil && (len(r.RawStructuredContent) > 0 && string(r.RawStructuredContent) != "null" || r.StructuredContent != nil) {
					last := res.Contents[len(res.Contents)-1]
					var v any
					if last.Type != operators.OutputJSON || json.Unmarshal(last.JSON, &v) != nil || out.Validate(v) != nil {
						t.Fatalf("%s: a success whose structured content %s the output schema refuses", body, last.JSON)
					}
				}
			default:
				t.Fatalf("%s: status %q", body, res.Status)
			}
		}
	})
}
