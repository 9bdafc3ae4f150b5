package nodes_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/trellis-ai/trellis/events"
	"github.com/trellis-ai/trellis/nodes"
)

// The conversation's document summaries reach the state; the request's
// document ids reach the tools; passages of documents are cited in
// API.md's document shape, beside other sources in theirs.
func TestDocumentsSummariesScopeAndCitations(t *testing.T) {
	var asked []string
	h := newHarness(t, `{"steps": [
		{"match": {"node": "supervisor", "tool_result": false}, "reply": {"tool_calls": [
			{"id": "p1", "name": "passages", "args": {"q": "launch"}},
			{"id": "s1", "name": "search", "args": {"q": "go"}}]}},
		{"match": {"node": "reflect"}, "reply": {"tool_calls": [{"name": "assess", "args": {"assessment": "satisfied"}}]}},
		{"match": {"node": "write", "tool_result": true}, "reply": {"text": "Launch is on 3 May [1], says the plan; Go is new [3]."}}
	]}`, nodes.Options{
		Documents: nodes.DocumentSourceFunc(func(ctx context.Context, user, conv string, ids []string) ([]nodes.DataSummary, error) {
			asked = append([]string{user, conv}, ids...)
			return []nodes.DataSummary{{DocumentID: "d1", Title: "plan.md", Status: "ready", Summary: "The launch plan."}}, nil
		}),
	})
	r := collect(h.agent.Run(t.Context(), "c1", nodes.Input{Message: "when is the launch?", UserID: "u1", DocumentIDs: []string{"d1"}}))
	if r.err != nil {
		t.Fatal(r.err)
	}
	if len(asked) != 3 || asked[0] != "u1" || asked[1] != "c1" || asked[2] != "d1" {
		t.Errorf("summaries asked for %v", asked)
	}
	s := h.state(t, "c1")
	if len(s.DataSummaries) != 1 || s.DataSummaries[0].Status != "ready" {
		t.Errorf("summaries %+v", s.DataSummaries)
	}
	if len(s.ToolResults) != 2 || s.ToolResults[0].Content != `scope ["d1"]` {
		t.Errorf("tool results %+v", s.ToolResults)
	}
	if len(s.DataChunks) != 4 || s.DataChunks[0].Document == nil || s.DataChunks[0].Document.Chunk != 2 || s.DataChunks[2].Document != nil {
		t.Errorf("chunks %+v", s.DataChunks)
	}
	done := last[*events.ResponseDone](r)
	b, err := json.Marshal(done.Citations)
	if err != nil {
		t.Fatal(err)
	}
	want := `[{"index":1,"document_id":"d1","filename":"plan.md","chunk":2,"start":40,"end":59,"text":"Launch is on 3 May."},` +
		`{"number":3,"source":"https://go.dev/doc/go1.26","title":"Go 1.26 release notes","text":"Go 1.26 adds new(expr)."}]`
	if string(b) != want {
		t.Errorf("citations\n got %s\nwant %s", b, want)
	}
	var back []events.Citation
	if err := json.Unmarshal(b, &back); err != nil || len(back) != 2 || back[0] != done.Citations[0] || back[1] != done.Citations[1] {
		t.Errorf("citations read back %+v, %v", back, err)
	}
	if len(s.Citations) != 2 || s.Citations[0] != done.Citations[0] {
		t.Errorf("stored citations %+v", s.Citations)
	}
	h.allConsumed(t)
}
