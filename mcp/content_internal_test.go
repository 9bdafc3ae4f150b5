package mcp

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"
	mcpgo "github.com/mark3labs/mcp-go/mcp"

	"github.com/trellis-ai/trellis/operators"
)

func b64(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }

func TestToResultMapsEveryContentType(t *testing.T) {
	r := &mcpgo.CallToolResult{Content: []mcpgo.Content{
		mcpgo.NewTextContent("hello"),
		mcpgo.NewImageContent(b64("PNGDATA"), "image/png"),
		mcpgo.NewImageContent("%%%", "image/png"),
		mcpgo.NewAudioContent(b64("RIFF"), "audio/wav"),
		mcpgo.NewResourceLink("file:///a.txt", "a.txt", "a file", "text/plain"),
		mcpgo.NewEmbeddedResource(mcpgo.TextResourceContents{URI: "doc://1", MIMEType: "text/markdown", Text: "# Title"}),
		mcpgo.NewEmbeddedResource(mcpgo.TextResourceContents{URI: "doc://2", MIMEType: "application/json; charset=utf-8", Text: `{"k":1}`}),
		mcpgo.NewEmbeddedResource(mcpgo.BlobResourceContents{URI: "img://3", MIMEType: "image/gif", Blob: b64("GIF89a")}),
		mcpgo.NewEmbeddedResource(mcpgo.BlobResourceContents{URI: "bin://4", MIMEType: "application/zip", Blob: b64("PK")}),
	}}
	res := toResult("srv", "tool", r, nil)
	if res.IsError() || len(res.Contents) != 9 {
		t.Fatalf("result = %+v", res)
	}
	want := []struct {
		typ  operators.OutputType
		text string
		mime string
		data string
	}{
		{operators.OutputText, "hello", "", ""},
		{operators.OutputImage, "", "image/png", "PNGDATA"},
		{operators.OutputText, "", "", ""}, // invalid base64: a note
		{OutputAudio, "[audio: audio/wav, 4 bytes]", "audio/wav", "RIFF"},
		{operators.OutputJSON, "", "", ""},
		{operators.OutputMarkdown, "# Title", "", ""},
		{operators.OutputJSON, "", "", ""},
		{operators.OutputImage, "", "image/gif", "GIF89a"},
		{operators.OutputText, "[resource bin://4: application/zip, 2 bytes]", "application/zip", "PK"},
	}
	for i, w := range want {
		c := res.Contents[i]
		if c.Type != w.typ || (w.text != "" && c.Text != w.text) || c.MIMEType != w.mime || string(c.Data) != w.data {
			t.Errorf("content %d = %+v, want %+v", i, c, w)
		}
	}
	var link map[string]any
	if err := json.Unmarshal(res.Contents[4].JSON, &link); err != nil || link["type"] != "resource_link" || link["uri"] != "file:///a.txt" {
		t.Errorf("link = %s", res.Contents[4].JSON)
	}
	if string(res.Contents[6].JSON) != `{"k":1}` {
		t.Errorf("json resource = %s", res.Contents[6].JSON)
	}
	if len(res.Chunks) != 2 || res.Chunks[0] != (operators.DataChunk{Source: "doc://1", Text: "# Title"}) {
		t.Errorf("chunks = %+v", res.Chunks)
	}
}

func TestToResultStructuredAndErrors(t *testing.T) {
	out, err := (&jsonschema.Schema{
		Type: "object", Properties: map[string]*jsonschema.Schema{"t": {Type: "number"}}, Required: []string{"t"},
	}).Resolve(nil)
	if err != nil {
		t.Fatal(err)
	}
	good := &mcpgo.CallToolResult{Content: []mcpgo.Content{mcpgo.NewTextContent(`{"t": 1.5}`), mcpgo.NewTextContent("note")},
		RawStructuredContent: json.RawMessage(`{"t":1.5}`)}
	res := toResult("srv", "w", good, out)
	if res.IsError() || len(res.Contents) != 2 || res.Contents[0].Text != "note" || string(res.Contents[1].JSON) != `{"t":1.5}` {
		t.Fatalf("structured = %+v (the repeated text block should be dropped)", res)
	}
	bad := &mcpgo.CallToolResult{Content: []mcpgo.Content{}, StructuredContent: map[string]any{"t": "hot"}}
	if res := toResult("srv", "w", bad, out); !res.IsError() || !errors.Is(res.Err, ErrOutputSchema) {
		t.Fatalf("bad structured = %+v", res)
	}
	failed := &mcpgo.CallToolResult{IsError: true, Content: []mcpgo.Content{mcpgo.NewTextContent("no such city"), mcpgo.NewTextContent("try another")}}
	res = toResult("srv", "w", failed, out)
	if !res.IsError() || res.Error != "no such city\ntry another" || !errors.Is(res.Err, ErrToolFailed) {
		t.Fatalf("isError = %+v", res)
	}
	if res := toResult("srv", "w", &mcpgo.CallToolResult{IsError: true}, nil); res.Error == "" {
		t.Fatal("an error result without text needs a message")
	}
}

func TestFromResult(t *testing.T) {
	r := fromResult(operators.Errorf("calculator: %s", "division by zero"))
	if !r.IsError || len(r.Content) != 1 || r.Content[0].(mcpgo.TextContent).Text != "calculator: division by zero" {
		t.Fatalf("error = %+v", r)
	}
	j, _ := operators.JSONContent(map[string]int{"n": 1})
	r = fromResult(operators.Result{Status: operators.StatusSuccess, Contents: []operators.Content{j}})
	if r.IsError || string(r.StructuredContent.(json.RawMessage)) != `{"n":1}` || r.Content[0].(mcpgo.TextContent).Text != `{"n":1}` {
		t.Fatalf("json = %+v", r)
	}
	r = fromResult(operators.Result{Status: operators.StatusSuccess,
		Contents: []operators.Content{
			operators.MarkdownContent("**hi**"), operators.ImageContent("image/png", []byte("PNG")),
			{Type: OutputAudio, MIMEType: "audio/wav", Data: []byte("RIFF")},
		},
		Chunks: []operators.DataChunk{{Source: "docs", Text: "**hi**"}, {Source: "https://x/y", Text: "cited"}},
	})
	if len(r.Content) != 4 || r.StructuredContent != nil {
		t.Fatalf("contents = %+v", r.Content)
	}
	if img := r.Content[1].(mcpgo.ImageContent); img.Data != b64("PNG") || img.MIMEType != "image/png" {
		t.Errorf("image = %+v", img)
	}
	if a := r.Content[2].(mcpgo.AudioContent); a.Data != b64("RIFF") {
		t.Errorf("audio = %+v", a)
	}
	if e := r.Content[3].(mcpgo.EmbeddedResource); e.Resource.(mcpgo.TextResourceContents).URI != "https://x/y" {
		t.Errorf("chunk = %+v (a chunk already shown is not repeated)", e)
	}
}
