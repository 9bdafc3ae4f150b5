package operators

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"
)

// OutputType names a kind of content a tool returns or sends to the user.
// The values are API.md's content_type vocabulary.
type OutputType string

const (
	OutputText     OutputType = "text"
	OutputMarkdown OutputType = "markdown"
	OutputHTML     OutputType = "html"
	OutputJSON     OutputType = "json"
	OutputImage    OutputType = "image"
	OutputWidget   OutputType = "widget"
)

// Annotations are hints about a tool's behaviour, as in MCP. They inform
// the [ApprovalPolicy] and the supervisor; they are not enforced.
type Annotations struct {
	ReadOnly    bool `json:"read_only,omitempty"`
	Destructive bool `json:"destructive,omitempty"`
	Idempotent  bool `json:"idempotent,omitempty"`
	OpenWorld   bool `json:"open_world,omitempty"`
}

// Capabilities say which [Messenger] features a tool uses while it runs.
type Capabilities struct {
	Progress       bool `json:"progress,omitempty"`
	Elicitation    bool `json:"elicitation,omitempty"`
	DirectResponse bool `json:"direct_response,omitempty"`
	Streaming      bool `json:"streaming,omitempty"`
}

// Spec describes a tool to the model, the API and the provider.
type Spec struct {
	// Name is unique within its source; letters, digits, '_' and '-'.
	Name        string `json:"name"`
	Description string `json:"description"`
	// InputSchema is the JSON Schema of the arguments object. Nil means
	// the tool takes no arguments (any object is accepted).
	InputSchema *jsonschema.Schema `json:"input_schema,omitempty"`
	// OutputTypes lists what the tool returns; empty means text.
	OutputTypes []OutputType `json:"output_types,omitempty"`
	Annotations Annotations  `json:"annotations"`
	// RequiresApproval asks for a human's yes before every call, whatever
	// the [ApprovalPolicy] says.
	RequiresApproval bool         `json:"requires_approval,omitempty"`
	Messaging        Capabilities `json:"messaging"`
}

// Tool is anything the provider can run. Execute receives arguments already
// validated against Spec().InputSchema. A returned error becomes an error
// [Result] the model reads; it never stops the run.
type Tool interface {
	Spec() Spec
	Execute(ctx context.Context, call Call, args json.RawMessage) (Result, error)
}

// Status is the outcome of a tool call.
type Status string

const (
	StatusSuccess Status = "success"
	StatusError   Status = "error"
)

// Content is one typed piece of a result or of a direct response.
type Content struct {
	Type OutputType `json:"type"`
	// Text holds text, markdown, html and widget markup.
	Text string `json:"text,omitempty"`
	// JSON holds json content and optional widget data.
	JSON json.RawMessage `json:"json,omitempty"`
	// MIMEType and Data hold an image (Data is base64 in JSON).
	MIMEType string `json:"mime_type,omitempty"`
	Data     []byte `json:"data,omitempty"`
	// WidgetType names the widget the client should render (e.g. "chart").
	WidgetType string `json:"widget_type,omitempty"`
}

// TextContent, MarkdownContent, HTMLContent, ImageContent and WidgetContent
// build a [Content] of their type.
func TextContent(s string) Content     { return Content{Type: OutputText, Text: s} }
func MarkdownContent(s string) Content { return Content{Type: OutputMarkdown, Text: s} }
func HTMLContent(s string) Content     { return Content{Type: OutputHTML, Text: s} }
func ImageContent(mimeType string, data []byte) Content {
	return Content{Type: OutputImage, MIMEType: mimeType, Data: data}
}
func WidgetContent(widgetType, markup string) Content {
	return Content{Type: OutputWidget, WidgetType: widgetType, Text: markup}
}

// JSONContent marshals v into a json [Content].
func JSONContent(v any) (Content, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return Content{}, fmt.Errorf("operators: json content: %w", err)
	}
	return Content{Type: OutputJSON, JSON: b}, nil
}

// String renders the content as the text a model or a client would see:
// images become a data: URL.
func (c Content) String() string {
	switch c.Type {
	case OutputJSON:
		return string(c.JSON)
	case OutputImage:
		return "data:" + c.MIMEType + ";base64," + base64.StdEncoding.EncodeToString(c.Data)
	case OutputWidget:
		if c.Text == "" {
			return string(c.JSON)
		}
		return c.Text
	default:
		return c.Text
	}
}

// DataChunk is a citable piece of source material a tool returned; the
// synthesize node numbers them as citations.
type DataChunk struct {
	Source string `json:"source"`
	Title  string `json:"title,omitempty"`
	Text   string `json:"text"`
	// Document is set when the chunk is a passage of an uploaded
	// document: it is then cited by document, chunk and offsets.
	Document *DocumentSpan `json:"document,omitempty"`
}

// DocumentSpan places a passage in an uploaded document: its chunk
// number and its character offsets [Start, End) in the extracted text.
type DocumentSpan struct {
	DocumentID string `json:"document_id"`
	Filename   string `json:"filename,omitempty"`
	Chunk      int    `json:"chunk"`
	Start      int    `json:"start"`
	End        int    `json:"end"`
}

// Result is what a tool call produced.
type Result struct {
	Status   Status      `json:"status"`
	Contents []Content   `json:"contents,omitempty"`
	Chunks   []DataChunk `json:"chunks,omitempty"`
	// Error is the message the model reads when Status is StatusError.
	Error string `json:"error,omitempty"`
	// DirectResponse is set by the provider when the tool sent content to
	// the user through [Messenger.Direct]; the agent may skip writing.
	DirectResponse bool `json:"direct_response,omitempty"`
	// Truncated is set by the provider when the result was larger than
	// [ProviderConfig.MaxResultBytes] and was cut; its last content says
	// so to the model.
	Truncated bool `json:"truncated,omitempty"`
	// Err keeps the Go error behind an error result for errors.Is; it is
	// not serialised.
	Err error `json:"-"`
}

// TextResult is a successful result with one text content.
func TextResult(s string) Result {
	return Result{Status: StatusSuccess, Contents: []Content{TextContent(s)}}
}

// ErrorResult is an error result whose message is err's text.
func ErrorResult(err error) Result {
	return Result{Status: StatusError, Error: err.Error(), Err: err}
}

// Errorf is an error result with a formatted message (wrap with %w to keep
// a sentinel in Result.Err).
func Errorf(format string, args ...any) Result {
	return ErrorResult(fmt.Errorf(format, args...))
}

// IsError reports whether the call failed.
func (r Result) IsError() bool { return r.Status == StatusError }

// Text is the result as the model reads it: the error message for a failed
// call, otherwise every content's text, one per line.
func (r Result) Text() string {
	if r.IsError() {
		return "error: " + r.Error
	}
	if len(r.Contents) == 1 {
		return r.Contents[0].String()
	}
	var b strings.Builder
	for i, c := range r.Contents {
		if i > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(c.String())
	}
	return b.String()
}
