package mcp

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"mime"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"
	mcpgo "github.com/mark3labs/mcp-go/mcp"

	"github.com/trellis-ai/trellis/operators"
)

// OutputAudio is the content type of audio a tool returned. The operators
// vocabulary has no audio type yet, so audio travels as a [operators.Content]
// of this type: MIMEType and Data hold the sound, Text a short description
// that is all the model sees.
const OutputAudio operators.OutputType = "audio"

// ErrToolFailed is in the Err of every result whose tool reported an error
// (isError), so callers can tell it from a failed call with errors.Is.
var ErrToolFailed = errors.New("mcp: tool reported an error")

// ErrOutputSchema: structured content that does not match the tool's
// declared output schema. The result is an error result the model reads.
var ErrOutputSchema = errors.New("mcp: structured content does not match the output schema")

// toResult maps an MCP tool result onto an operators result. Every content
// type is kept:
//
//   - text → text;
//   - image → image (decoded);
//   - audio → [OutputAudio] (decoded), described in Text;
//   - embedded resource → its text as text, markdown, html or json by MIME
//     type, and a citable DataChunk whose Source is the resource URI; a
//     binary resource is an image when its MIME type says so, otherwise a
//     text description carrying the bytes in Data;
//   - resource link → json (the link object);
//   - structured content → json, validated against output when the tool
//     declared an output schema; the text block that repeats it for older
//     clients is dropped.
//
// isError results become error results whose Error is the text the tool
// returned; the model sees it.
func toResult(server, tool string, r *mcpgo.CallToolResult, output *jsonschema.Resolved) operators.Result {
	var res operators.Result
	var structured json.RawMessage
	if raw := r.RawStructuredContent; len(raw) > 0 && string(raw) != "null" {
		structured = raw
	} else if r.StructuredContent != nil {
		structured, _ = json.Marshal(r.StructuredContent)
	}
	for _, c := range r.Content {
		if structured != nil && isRepeat(c, structured) {
			continue
		}
		res.Contents = append(res.Contents, mapContent(c, &res.Chunks)...)
	}
	if structured != nil {
		res.Contents = append(res.Contents, operators.Content{Type: operators.OutputJSON, JSON: structured})
	}
	if r.IsError {
		msg := strings.TrimSpace(textOf(r.Content))
		if msg == "" {
			msg = "the tool failed without saying why"
		}
		res.Status, res.Error = operators.StatusError, msg
		res.Err = fmt.Errorf("%w: %s.%s: %s", ErrToolFailed, server, tool, msg)
		return res
	}
	if structured != nil && output != nil {
		var v any
		err := json.Unmarshal(structured, &v)
		if err == nil {
			err = output.Validate(v)
		}
		if err != nil {
			res.Status = operators.StatusError
			res.Err = fmt.Errorf("%w: %s.%s: %v", ErrOutputSchema, server, tool, err)
			res.Error = res.Err.Error()
			return res
		}
	}
	res.Status = operators.StatusSuccess
	return res
}

// isRepeat reports whether c is a text block holding the same JSON as the
// structured content.
func isRepeat(c mcpgo.Content, structured json.RawMessage) bool {
	t, ok := c.(mcpgo.TextContent)
	if !ok {
		return false
	}
	var a, b any
	if json.Unmarshal([]byte(t.Text), &a) != nil || json.Unmarshal(structured, &b) != nil {
		return false
	}
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return bytes.Equal(x, y)
}

func textOf(cs []mcpgo.Content) string {
	var parts []string
	for _, c := range cs {
		if t, ok := c.(mcpgo.TextContent); ok {
			parts = append(parts, t.Text)
		}
	}
	return strings.Join(parts, "\n")
}

// mapContent maps one MCP content block; resources also add a chunk.
func mapContent(c mcpgo.Content, chunks *[]operators.DataChunk) []operators.Content {
	switch c := c.(type) {
	case mcpgo.TextContent:
		return []operators.Content{operators.TextContent(c.Text)}
	case mcpgo.ImageContent:
		data, err := base64.StdEncoding.DecodeString(c.Data)
		if err != nil {
			return []operators.Content{operators.TextContent(fmt.Sprintf("[image %s that is not valid base64: %v]", c.MIMEType, err))}
		}
		return []operators.Content{operators.ImageContent(c.MIMEType, data)}
	case mcpgo.AudioContent:
		data, err := base64.StdEncoding.DecodeString(c.Data)
		if err != nil {
			return []operators.Content{operators.TextContent(fmt.Sprintf("[audio %s that is not valid base64: %v]", c.MIMEType, err))}
		}
		return []operators.Content{{Type: OutputAudio, MIMEType: c.MIMEType, Data: data,
			Text: fmt.Sprintf("[audio: %s, %d bytes]", c.MIMEType, len(data))}}
	case mcpgo.ResourceLink:
		b, _ := json.Marshal(c)
		return []operators.Content{{Type: operators.OutputJSON, JSON: b}}
	case mcpgo.EmbeddedResource:
		return mapResource(c.Resource, chunks)
	case *mcpgo.TextContent:
		return mapContent(*c, chunks)
	case *mcpgo.ImageContent:
		return mapContent(*c, chunks)
	case *mcpgo.AudioContent:
		return mapContent(*c, chunks)
	case *mcpgo.ResourceLink:
		return mapContent(*c, chunks)
	case *mcpgo.EmbeddedResource:
		return mapContent(*c, chunks)
	default:
		b, err := json.Marshal(c)
		if err != nil {
			return []operators.Content{operators.TextContent(fmt.Sprintf("[content of type %T]", c))}
		}
		return []operators.Content{{Type: operators.OutputJSON, JSON: b}}
	}
}

func mapResource(rc mcpgo.ResourceContents, chunks *[]operators.DataChunk) []operators.Content {
	switch r := rc.(type) {
	case mcpgo.TextResourceContents:
		*chunks = append(*chunks, operators.DataChunk{Source: r.URI, Text: r.Text})
		typ := operators.OutputText
		switch mediaType(r.MIMEType) {
		case "text/markdown":
			typ = operators.OutputMarkdown
		case "text/html":
			typ = operators.OutputHTML
		case "application/json":
			if json.Valid([]byte(r.Text)) {
				return []operators.Content{{Type: operators.OutputJSON, JSON: json.RawMessage(r.Text)}}
			}
		}
		return []operators.Content{{Type: typ, Text: r.Text}}
	case mcpgo.BlobResourceContents:
		data, err := base64.StdEncoding.DecodeString(r.Blob)
		if err != nil {
			return []operators.Content{operators.TextContent(fmt.Sprintf("[resource %s that is not valid base64: %v]", r.URI, err))}
		}
		if strings.HasPrefix(mediaType(r.MIMEType), "image/") {
			return []operators.Content{operators.ImageContent(r.MIMEType, data)}
		}
		if strings.HasPrefix(mediaType(r.MIMEType), "audio/") {
			return []operators.Content{{Type: OutputAudio, MIMEType: r.MIMEType, Data: data,
				Text: fmt.Sprintf("[audio %s: %s, %d bytes]", r.URI, r.MIMEType, len(data))}}
		}
		return []operators.Content{{Type: operators.OutputText, MIMEType: r.MIMEType, Data: data,
			Text: fmt.Sprintf("[resource %s: %s, %d bytes]", r.URI, r.MIMEType, len(data))}}
	case *mcpgo.TextResourceContents:
		return mapResource(*r, chunks)
	case *mcpgo.BlobResourceContents:
		return mapResource(*r, chunks)
	default:
		return []operators.Content{operators.TextContent(fmt.Sprintf("[resource of type %T]", rc))}
	}
}

func mediaType(m string) string {
	t, _, err := mime.ParseMediaType(m)
	if err != nil {
		return strings.ToLower(m)
	}
	return t
}

// fromResult maps an operators result onto an MCP tool result, for
// Trellis' own MCP server. Error results become isError results carrying
// the message; a single JSON object content also becomes
// structuredContent; data chunks the contents do not already show are
// appended as embedded text resources.
func fromResult(r operators.Result) *mcpgo.CallToolResult {
	out := &mcpgo.CallToolResult{Content: []mcpgo.Content{}}
	if r.IsError() {
		out.IsError = true
		out.Content = append(out.Content, mcpgo.NewTextContent(r.Error))
		return out
	}
	var jsonObjects []json.RawMessage
	for _, c := range r.Contents {
		switch c.Type {
		case operators.OutputImage:
			out.Content = append(out.Content, mcpgo.NewImageContent(base64.StdEncoding.EncodeToString(c.Data), c.MIMEType))
		case OutputAudio:
			out.Content = append(out.Content, mcpgo.NewAudioContent(base64.StdEncoding.EncodeToString(c.Data), c.MIMEType))
		case operators.OutputJSON:
			if t := bytes.TrimSpace(c.JSON); len(t) > 0 && t[0] == '{' {
				jsonObjects = append(jsonObjects, c.JSON)
			}
			out.Content = append(out.Content, mcpgo.NewTextContent(string(c.JSON)))
		default:
			out.Content = append(out.Content, mcpgo.NewTextContent(c.String()))
		}
	}
	if len(jsonObjects) == 1 && len(r.Contents) == 1 {
		out.StructuredContent = jsonObjects[0]
	}
	shown := r.Text()
	for _, ch := range r.Chunks {
		if strings.Contains(shown, ch.Text) {
			continue
		}
		uri := ch.Source
		if !strings.Contains(uri, ":") {
			uri = "trellis://source/" + uri
		}
		out.Content = append(out.Content, mcpgo.NewEmbeddedResource(mcpgo.TextResourceContents{URI: uri, MIMEType: "text/plain", Text: ch.Text}))
	}
	if len(out.Content) == 0 {
		out.Content = append(out.Content, mcpgo.NewTextContent(""))
	}
	return out
}
