package workspace_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/trellis-ai/trellis/documents/doctools"
	"github.com/trellis-ai/trellis/documents/ingest"
	"github.com/trellis-ai/trellis/documents/ingest/ingesttest"
	"github.com/trellis-ai/trellis/documents/workspace"
	"github.com/trellis-ai/trellis/internal/jobs"
	"github.com/trellis-ai/trellis/operators"
	"github.com/trellis-ai/trellis/store"
)

// TestIndexFile: on both records, index_file makes a workspace file a
// document of the conversation through the upload path, search_documents
// finds its text and cites it by name, read_file reads the document by
// its id, and another user's file or document is not found.
func TestIndexFile(t *testing.T) {
	for _, backend := range ingesttest.Backends {
		t.Run(backend, func(t *testing.T) {
			rig := ingesttest.New(t, backend, ingest.Config{}, jobs.Config{})
			rec, ok := rig.Store.(workspaceRecord)
			if !ok {
				t.Fatalf("%T keeps no workspaces", rig.Store)
			}
			w := workspace.New(rec, rig.Files, workspace.Limits{})
			local := operators.NewRegistry()
			local.MustAdd(w.Tools(workspace.ToolConfig{Index: func(ctx context.Context, user, conv, name string, data []byte) (store.Document, error) {
				return rig.Svc.Upload(ctx, ingest.Upload{UserID: user, ConversationID: conv, Filename: name, Data: data})
			}, Document: rig.Svc.Content})...)
			local.MustAdd(doctools.New(doctools.Config{Store: rig.Store.(doctools.Store)})...)
			env := toolEnv{w: w, rec: rec, provider: operators.NewProvider(operators.ProviderConfig{Local: local}), msgs: &emitter{}}
			c := env.conv(t, "alice")
			env.ok(t, "alice", c, "write_file", `{"path":"notes/plan.md","content":"The quarterly zeppelin budget is forty crowns.\n"}`)
			out := env.ok(t, "alice", c, "index_file", `{"path":"notes/plan.md"}`)
			if !strings.Contains(out, `"plan.md"`) || !strings.Contains(out, "version 1") {
				t.Errorf("index_file said %q", out)
			}
			docs, err := rig.Svc.All(t.Context(), "alice", c)
			if err != nil || len(docs) != 1 {
				t.Fatalf("documents %v, %v", docs, err)
			}
			ingesttest.WaitStatus(t, rig.Svc, docs[0], store.DocReady)
			var found struct {
				Results []struct {
					DocumentID string `json:"document_id"`
					Filename   string `json:"filename"`
					Text       string `json:"text"`
				} `json:"results"`
			}
			res := env.ok(t, "alice", c, "search_documents", `{"query":"zeppelin budget"}`)
			if err := json.Unmarshal([]byte(res), &found); err != nil {
				t.Fatalf("search result %q: %v", res, err)
			}
			got := found.Results
			if len(got) == 0 || got[0].DocumentID != docs[0].ID || got[0].Filename != "plan.md" || !strings.Contains(got[0].Text, "zeppelin") {
				t.Errorf("search found %+v", got)
			}
			if got := env.ok(t, "alice", c, "read_file", `{"document_id":"`+docs[0].ID+`"}`); !strings.Contains(got, "1\tThe quarterly zeppelin budget") {
				t.Errorf("the document read as a file: %q", got)
			}
			b := env.conv(t, "bob")
			if res := env.call(t, "bob", b, "index_file", `{"path":"notes/plan.md"}`); !res.IsError() {
				t.Errorf("bob indexed a file of his own that does not exist: %s", res.Text())
			}
			if res := env.call(t, "bob", c, "index_file", `{"path":"notes/plan.md"}`); !res.IsError() {
				t.Errorf("bob indexed alice's file: %s", res.Text())
			}
			if res := env.call(t, "bob", b, "read_file", `{"document_id":"`+docs[0].ID+`"}`); !res.IsError() {
				t.Errorf("bob read alice's document: %s", res.Text())
			}
			if res := env.call(t, "bob", c, "read_file", `{"document_id":"`+docs[0].ID+`"}`); !res.IsError() {
				t.Errorf("bob read alice's document in her conversation: %s", res.Text())
			}
			if docs, _ := rig.Svc.All(t.Context(), "bob", b); len(docs) != 0 {
				t.Errorf("bob has documents %v", docs)
			}
		})
	}
}
