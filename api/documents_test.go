package api_test

import (
	"bytes"
	"context"
	"io"
	"mime/multipart"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/trellis-ai/trellis/api/apitest"
	"github.com/trellis-ai/trellis/documents"
	"github.com/trellis-ai/trellis/documents/ingest"
	"github.com/trellis-ai/trellis/internal/jobs"
	"github.com/trellis-ai/trellis/internal/pdfmake"
	"github.com/trellis-ai/trellis/store"
)

// docEnv is a server with the document service on e's database, its
// files in a directory of the test's and its queue started.
type docEnv struct {
	*env
	files *documents.FileStorage
}

// newDocEnv's configure, when given, configures the server further.
func newDocEnv(t *testing.T, b backend, icfg ingest.Config, configure ...func(*apitest.Config)) *docEnv {
	t.Helper()
	files, err := documents.NewFileStorage(filepath.Join(t.TempDir(), "files"))
	if err != nil {
		t.Fatal(err)
	}
	data := newStorage(t, b)
	var queue *jobs.Queue
	e := newEnv(t, envOptions{backend: b, data: data, configure: func(cfg *apitest.Config) {
		icfg.Store, icfg.Files = cfg.API.Store.(ingest.Record), files
		svc, err := ingest.New(icfg)
		if err != nil {
			t.Fatal(err)
		}
		ws := jobs.NewWorkers()
		svc.Register(ws)
		jcfg := jobs.Config{PollInterval: 50 * time.Millisecond}
		switch b {
		case postgresBackend:
			pool, err := pgxpool.New(t.Context(), data.dsn)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(pool.Close)
			queue, err = jobs.Postgres(t.Context(), pool, ws, jcfg)
		default:
			queue, err = jobs.SQLite(t.Context(), filepath.Join(filepath.Dir(data.path), "jobs.db"), ws, jcfg)
		}
		if err != nil {
			t.Fatal(err)
		}
		svc.Attach(queue)
		cfg.API.Documents = svc
		cfg.Runs.DeleteFiles = svc.DeleteConversationFiles
		for _, c := range configure {
			c(cfg)
		}
	}})
	if err := queue.Start(context.WithoutCancel(t.Context())); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		queue.Stop(ctx)
		queue.Close()
	})
	return &docEnv{env: e, files: files}
}

// upload posts a file (and conversation_id when not "") as key's user.
func (e *docEnv) upload(key, conversationID, name string, data []byte) (int, []byte) {
	e.t.Helper()
	var body bytes.Buffer
	mw := multipart.NewWriter(&body)
	if conversationID != "" {
		mw.WriteField("conversation_id", conversationID)
	}
	fw, _ := mw.CreateFormFile("file", name)
	fw.Write(data)
	mw.Close()
	return e.doAs(key, http.MethodPost, "/api/v1/documents", body.Bytes(), "Content-Type", mw.FormDataContentType())
}

type uploaded struct {
	DocumentID     string `json:"document_id"`
	ConversationID string `json:"conversation_id"`
	Filename       string `json:"filename"`
	ContentType    string `json:"content_type"`
	SizeBytes      int64  `json:"size_bytes"`
	Status         string `json:"status"`
}

type listed struct {
	Documents []struct {
		uploaded
		Error   string `json:"error"`
		Summary string `json:"summary"`
		Chunks  int    `json:"chunks"`
	} `json:"documents"`
}

func (e *docEnv) waitReady(key string, d uploaded) {
	e.t.Helper()
	waitFor(e.t, "document "+d.Filename+" ready", func() bool {
		code, body := e.doAs(key, http.MethodGet, "/api/v1/documents/"+d.ConversationID+"/"+d.DocumentID+"/status", nil)
		if code != http.StatusOK {
			e.t.Fatalf("status: %d %s", code, body)
		}
		st := jsonOf[map[string]string](e.t, body)
		if st["status"] == "error" {
			e.t.Fatalf("processing failed: %s", st["error"])
		}
		return st["status"] == "ready"
	})
}

func TestDocuments(t *testing.T) {
	md, err := os.ReadFile("../documents/testdata/handbook.md")
	if err != nil {
		t.Fatal(err)
	}
	pdf, err := os.ReadFile("../documents/testdata/handbook.pdf")
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range backends {
		t.Run(string(b), func(t *testing.T) {
			e := newDocEnv(t, b, ingest.Config{})
			code, body := e.upload(aliceKey, "", "handbook.md", md)
			if code != http.StatusAccepted {
				t.Fatalf("upload: %d %s", code, body)
			}
			d := jsonOf[uploaded](t, body)
			if d.DocumentID == "" || d.ConversationID == "" || d.Filename != "handbook.md" || d.ContentType != "text/markdown" ||
				d.SizeBytes != int64(len(md)) || d.Status != "uploading" {
				t.Fatalf("upload answered %+v", d)
			}
			code, body = e.upload(aliceKey, d.ConversationID, "handbook.pdf", pdf)
			if code != http.StatusAccepted {
				t.Fatalf("pdf upload: %d %s", code, body)
			}
			p := jsonOf[uploaded](t, body)
			e.waitReady(aliceKey, d)
			e.waitReady(aliceKey, p)

			code, body = e.do(http.MethodGet, "/api/v1/documents/"+d.ConversationID, nil)
			l := jsonOf[listed](t, body)
			if code != http.StatusOK || len(l.Documents) != 2 || l.Documents[0].DocumentID != d.DocumentID ||
				l.Documents[0].Chunks != 1 || !strings.HasPrefix(l.Documents[0].Summary, "Sections: Field guide") ||
				l.Documents[1].ContentType != "application/pdf" {
				t.Fatalf("list: %d %s", code, body)
			}

			resp, err := e.ts.Client().Do(e.request(http.MethodGet, "/api/v1/documents/"+d.ConversationID+"/"+d.DocumentID+"/content", nil, aliceKey))
			if err != nil {
				t.Fatal(err)
			}
			got, _ := readAll(resp)
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK || !bytes.Equal(got, md) || resp.Header.Get("Content-Type") != "text/markdown; charset=utf-8" {
				t.Fatalf("content: %d %q %s", resp.StatusCode, resp.Header.Get("Content-Type"), got)
			}

			// Another user's ids are unknown.
			for _, path := range []string{
				"/api/v1/documents/" + d.ConversationID,
				"/api/v1/documents/" + d.ConversationID + "/" + d.DocumentID + "/status",
				"/api/v1/documents/" + d.ConversationID + "/" + d.DocumentID + "/content",
			} {
				code, body := e.doAs(bobKey, http.MethodGet, path, nil)
				wantError(t, code, body, http.StatusNotFound)
			}
			code, body = e.doAs(bobKey, http.MethodDelete, "/api/v1/documents/"+d.ConversationID+"/"+d.DocumentID, nil)
			wantError(t, code, body, http.StatusNotFound)
			code, body = e.upload(bobKey, d.ConversationID, "x.txt", []byte("hi"))
			wantError(t, code, body, http.StatusNotFound)

			code, _ = e.do(http.MethodDelete, "/api/v1/documents/"+d.ConversationID+"/"+d.DocumentID, nil)
			if code != http.StatusNoContent {
				t.Fatalf("delete: %d", code)
			}
			code, body = e.do(http.MethodGet, "/api/v1/documents/"+d.ConversationID+"/"+d.DocumentID+"/status", nil)
			wantError(t, code, body, http.StatusNotFound)
			if keys, _ := e.files.List(t.Context(), ""); len(keys) != 1 {
				t.Fatalf("files after deleting one document: %v", keys)
			}
			code, _ = e.do(http.MethodDelete, "/api/v1/conversations/"+d.ConversationID, nil)
			if code != http.StatusNoContent {
				t.Fatalf("delete conversation: %d", code)
			}
			if keys, _ := e.files.List(t.Context(), ""); len(keys) != 0 {
				t.Fatalf("files after deleting the conversation: %v", keys)
			}
		})
	}
}

// Bad uploads get a clear 4xx and store nothing.
func TestDocumentUploadRefused(t *testing.T) {
	e := newDocEnv(t, sqliteBackend, ingest.Config{MaxBytes: 200_000, MaxPerConversation: 1})
	code, body := e.upload(aliceKey, "", "first.txt", []byte("the first document"))
	if code != http.StatusAccepted {
		t.Fatalf("upload: %d %s", code, body)
	}
	conv := jsonOf[uploaded](t, body).ConversationID
	other := jsonOf[struct {
		ConversationID string `json:"conversation_id"`
	}](t, must2(e.do(http.MethodPost, "/api/v1/chat/sync", map[string]string{"message": "hello"}))).ConversationID
	bomb := pdfmake.Make([]pdfmake.Page{{"boom"}}, pdfmake.Options{Flate: true, Padding: 40 << 20})
	for _, tc := range []struct {
		name, conv, file string
		data             []byte
		status           int
		code, says       string
	}{
		{"empty", other, "e.txt", nil, http.StatusBadRequest, "empty_document", ""},
		{"too big", other, "big.txt", bytes.Repeat([]byte("x"), 200_001), http.StatusRequestEntityTooLarge, "document_too_large", "200000 bytes"},
		// Past the body limit too: the answer still says the document
		// limit, not the body's (which counts multipart framing).
		{"far too big", other, "huge.txt", bytes.Repeat([]byte("x"), 2<<20), http.StatusRequestEntityTooLarge, "document_too_large", "200000 bytes"},
		{"wrong type", other, "a.zip", []byte("PK\x03\x04\x14\x00\x00\x00\x08\x00rest"), http.StatusUnsupportedMediaType, "unsupported_document_type", "application/pdf"},
		{"claims to be a pdf", other, "fake.pdf", []byte("\x00\x01\x02\x03\x04 binary"), http.StatusBadRequest, "unreadable_document", "named fake.pdf but is not a PDF"},
		{"binary", other, "blob.bin", []byte("\x00\x01\x02\x03\x04 binary"), http.StatusUnsupportedMediaType, "unsupported_document_type", "text/markdown"},
		{"broken pdf", other, "broken.pdf", []byte("%PDF-1.7\nnothing here"), http.StatusBadRequest, "unreadable_document", "PDF"},
		{"bomb", other, "bomb.pdf", bomb, http.StatusBadRequest, "unreadable_document", "decode to more than"},
		{"over the per-conversation limit", conv, "second.txt", []byte("second"), http.StatusConflict, "too_many_documents", ""},
		{"unknown conversation", "nope", "x.txt", []byte("x"), http.StatusNotFound, "not_found", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, body := e.upload(aliceKey, tc.conv, tc.file, tc.data)
			wantError(t, code, body, tc.status)
			if tc.code != "" && !strings.Contains(string(body), `"code":"`+tc.code+`"`) {
				t.Errorf("body %s, want code %s", body, tc.code)
			}
			if !strings.Contains(string(body), tc.says) {
				t.Errorf("body %s does not say %q", body, tc.says)
			}
		})
	}
	t.Run("far too big without a length", func(t *testing.T) {
		// A chunked body is refused as it is read, with the same answer.
		var b bytes.Buffer
		mw := multipart.NewWriter(&b)
		fw, _ := mw.CreateFormFile("file", "huge.txt")
		fw.Write(bytes.Repeat([]byte("x"), 2<<20))
		mw.Close()
		req := e.request(http.MethodPost, "/api/v1/documents", []byte{}, aliceKey, "Content-Type", mw.FormDataContentType())
		req.Body, req.ContentLength = io.NopCloser(&b), -1
		resp, err := e.ts.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := readAll(resp)
		resp.Body.Close()
		wantError(t, resp.StatusCode, body, http.StatusRequestEntityTooLarge)
		if !strings.Contains(string(body), `"code":"document_too_large"`) || !strings.Contains(string(body), "200000 bytes") {
			t.Errorf("body %s, want document_too_large saying 200000 bytes", body)
		}
	})
	for name, req := range map[string]*http.Request{
		"not multipart": e.request(http.MethodPost, "/api/v1/documents", map[string]string{"file": "x"}, aliceKey),
		"no file part": func() *http.Request {
			var b bytes.Buffer
			mw := multipart.NewWriter(&b)
			mw.WriteField("conversation_id", other)
			mw.Close()
			return e.request(http.MethodPost, "/api/v1/documents", b.Bytes(), aliceKey, "Content-Type", mw.FormDataContentType())
		}(),
	} {
		resp, err := e.ts.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := readAll(resp)
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnsupportedMediaType && resp.StatusCode != http.StatusBadRequest {
			t.Errorf("%s: %d %s", name, resp.StatusCode, b)
		}
	}
	if keys, _ := e.files.List(t.Context(), ""); len(keys) != 1 {
		t.Fatalf("files after refusals: %v", keys)
	}
	for _, c := range []string{conv, other} {
		code, body := e.do(http.MethodGet, "/api/v1/documents/"+c, nil)
		want := map[string]int{conv: 1, other: 0}[c]
		if l := jsonOf[listed](t, body); code != http.StatusOK || len(l.Documents) != want {
			t.Fatalf("documents of %s after refusals: %d %s", c, code, body)
		}
	}
	code, body = e.do(http.MethodGet, "/api/v1/conversations", nil)
	if n := strings.Count(string(body), `"id"`); code != http.StatusOK || n != 2 {
		t.Fatalf("%d conversations after refusals (a refused upload made one?): %s", n, body)
	}
}

func must2(code int, body []byte) []byte { return body }

// A chat request's document_ids must be the user's documents in that
// conversation: any other id answers 404 before a run starts, and
// nothing is stored.
func TestChatDocumentIDs(t *testing.T) {
	md, err := os.ReadFile("../documents/testdata/handbook.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range backends {
		t.Run(string(b), func(t *testing.T) {
			e := newDocEnv(t, b, ingest.Config{})
			code, body := e.upload(aliceKey, "", "handbook.md", md)
			if code != http.StatusAccepted {
				t.Fatalf("upload: %d %s", code, body)
			}
			d := jsonOf[uploaded](t, body)
			code, body = e.upload(bobKey, "", "bob.md", md)
			if code != http.StatusAccepted {
				t.Fatalf("upload: %d %s", code, body)
			}
			other := jsonOf[uploaded](t, body)
			code, body = e.upload(aliceKey, "", "elsewhere.md", md)
			if code != http.StatusAccepted {
				t.Fatalf("upload: %d %s", code, body)
			}
			elsewhere := jsonOf[uploaded](t, body)
			for name, req := range map[string]map[string]any{
				"bob's document":                  {"conversation_id": d.ConversationID, "document_ids": []string{other.DocumentID}},
				"another conversation's":          {"conversation_id": d.ConversationID, "document_ids": []string{d.DocumentID, elsewhere.DocumentID}},
				"an unknown id":                   {"conversation_id": d.ConversationID, "document_ids": []string{"nope"}},
				"a new conversation":              {"document_ids": []string{d.DocumentID}},
				"bob's conversation and document": {"conversation_id": other.ConversationID, "document_ids": []string{other.DocumentID}},
			} {
				req["message"] = "hello"
				for _, path := range []string{"/api/v1/chat/sync", "/api/v1/chat"} {
					if code, body := e.do(http.MethodPost, path, req); code != http.StatusNotFound || !strings.Contains(string(body), "not_found") {
						t.Errorf("%s, %s: %d %s", name, path, code, body)
					}
				}
			}
			page, err := e.store.ListConversations(t.Context(), "alice", store.Page{})
			if err != nil || len(page.Conversations) != 2 {
				t.Fatalf("alice's conversations: %+v, %v", page, err)
			}
			for _, c := range page.Conversations {
				rs, err := e.store.ListRuns(t.Context(), "alice", c.ID, store.RunQuery{})
				if err != nil || len(rs.Runs) != 0 || c.Status != store.StatusIdle {
					t.Errorf("conversation %+v, runs %+v, %v", c, rs.Runs, err)
				}
			}
			code, body = e.do(http.MethodPost, "/api/v1/chat/sync", map[string]any{"message": "hello",
				"conversation_id": d.ConversationID, "document_ids": []string{d.DocumentID}})
			if code != http.StatusOK {
				t.Fatalf("scoped chat: %d %s", code, body)
			}
		})
	}
}

// A document's status changes reach the conversation's open streams as
// document.status, with no id: the run's events keep their seqs, and a
// stream left mid-way leaves nothing running.
func TestDocumentStatusOnStream(t *testing.T) {
	md, err := os.ReadFile("../documents/testdata/handbook.md")
	if err != nil {
		t.Fatal(err)
	}
	order := map[string]int{"uploading": 0, "chunking": 1, "summarizing": 2, "ready": 3}
	for _, b := range backends {
		t.Run(string(b), func(t *testing.T) {
			noLeaks(t)
			e := newDocEnv(t, b, ingest.Config{})
			s := e.chat(map[string]any{"message": "wait for it"})
			conv, runID := s.header("X-Conversation-ID"), s.header("X-Run-ID")
			<-e.tools.waiting
			s.until("tool.start")
			// A second stream of the conversation, left before the
			// document is ready.
			left := e.open(e.request(http.MethodGet, "/api/v1/conversations/"+conv+"/stream", nil, aliceKey))

			code, body := e.upload(aliceKey, conv, "handbook.md", md)
			if code != http.StatusAccepted {
				t.Fatalf("upload: %d %s", code, body)
			}
			d := jsonOf[uploaded](t, body)

			docEvent := func(ev event, last int) int {
				t.Helper()
				if ev.str("document_id") != d.DocumentID || ev.str("conversation_id") != conv || ev.str("type") != "document.status" ||
					ev.Data["seq"] != nil || ev.Data["run_id"] != nil || ev.str("ts") == "" {
					t.Fatalf("document.status: %s", ev.Raw)
				}
				n, ok := order[ev.str("status")]
				if !ok || n < last {
					t.Fatalf("document.status %q after %d: %s", ev.str("status"), last, ev.Raw)
				}
				return n
			}
			docEvent(left.until("document.status"), 0)
			left.close() // a disconnect mid-way

			// This process's changes come each as it is stored.
			var statuses []string
			for last := -1; last != order["ready"]; {
				ev := s.until("document.status")
				last = docEvent(ev, last)
				statuses = append(statuses, ev.str("status"))
				if ev.LastID == "" || ev.LastID == d.DocumentID {
					t.Fatalf("Last-Event-ID after document.status: %q", ev.LastID)
				}
			}
			if got := strings.Join(statuses, " "); got != "uploading chunking summarizing ready" {
				t.Errorf("statuses on the stream: %s", got)
			}
			// A change another process stores comes by reading the
			// record.
			if _, err := e.store.(store.Documents).SetDocumentStatus(t.Context(), d.DocumentID, store.DocError, "changed elsewhere"); err != nil {
				t.Fatal(err)
			}
			if ev := s.until("document.status"); ev.str("status") != "error" || ev.str("error") != "changed elsewhere" {
				t.Fatalf("after a change elsewhere: %s", ev.Raw)
			}
			// With nothing left in processing the stream reads the record
			// less often, but a change stored elsewhere still comes.
			time.Sleep(400 * time.Millisecond) // a read that finds every document settled
			if _, err := e.store.(store.Documents).SetDocumentStatus(t.Context(), d.DocumentID, store.DocReady, ""); err != nil {
				t.Fatal(err)
			}
			if ev := s.until("document.status"); ev.str("status") != "ready" {
				t.Fatalf("after a second change elsewhere: %s", ev.Raw)
			}

			close(e.tools.release)
			evs := s.all()
			var run []event
			for _, ev := range evs {
				if ev.Type != "document.status" {
					run = append(run, ev)
				}
			}
			checkRun(t, run, 1, runID, conv)
			if ty := run[len(run)-1].Type; ty != "run.completed" {
				t.Fatalf("the run ended with %s", ty)
			}
		})
	}
}
