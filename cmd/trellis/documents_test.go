package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3mem"
)

// uploadTo posts a document to a trellis serve process.
func uploadTo(t *testing.T, c *child, conversationID, name string, data []byte) map[string]any {
	t.Helper()
	var body bytes.Buffer
	mw := multipart.NewWriter(&body)
	if conversationID != "" {
		mw.WriteField("conversation_id", conversationID)
	}
	fw, _ := mw.CreateFormFile("file", name)
	fw.Write(data)
	mw.Close()
	resp, err := http.Post(c.url+"/api/v1/documents", mw.FormDataContentType(), &body)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusAccepted {
		t.Fatalf("upload %s: %d %s", name, resp.StatusCode, b)
	}
	var out map[string]any
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

func getJSON(t *testing.T, c *child, path string) (int, map[string]any) {
	t.Helper()
	resp := c.do(http.MethodGet, path, nil)
	b, _ := io.ReadAll(resp.Body)
	var out map[string]any
	json.Unmarshal(b, &out)
	return resp.StatusCode, out
}

// Documents through trellis serve, on SQLite (files encrypted at rest)
// and on PostgreSQL (a directory declared shared): the Markdown and the
// PDF of testdata are uploaded, processed as jobs to ready, listed,
// downloaded and deleted with their files.
func TestServeDocuments(t *testing.T) {
	t.Parallel()
	md, err := os.ReadFile("../../documents/testdata/handbook.md")
	if err != nil {
		t.Fatal(err)
	}
	pdf, err := os.ReadFile("../../documents/testdata/handbook.pdf")
	if err != nil {
		t.Fatal(err)
	}
	for _, backend := range []string{"sqlite", "postgres"} {
		t.Run(backend, func(t *testing.T) {
			dir := t.TempDir()
			files := filepath.Join(dir, "docs")
			env := []string{"TRELLIS_DATA_DIR=" + dir, "TRELLIS_DOCUMENTS_DIR=" + files}
			if backend == "postgres" {
				env = append(env, "DATABASE_URL="+pgDSN(t), "TRELLIS_DOCUMENTS_SHARED=true")
			} else {
				env = append(env, "TRELLIS_DOCUMENTS_KEY="+strings.Repeat("5a", 32))
			}
			c := startServe(t, env...)
			if !strings.Contains(c.logs.String()+c.startLine, "documents files "+files) || !strings.Contains(c.startLine, "extractive summaries") {
				t.Fatalf("the start line does not tell the documents' files and summaries: %q", c.startLine)
			}
			d := uploadTo(t, c, "", "handbook.md", md)
			conv := d["conversation_id"].(string)
			p := uploadTo(t, c, conv, "handbook.pdf", pdf)
			for _, doc := range []map[string]any{d, p} {
				deadline := time.Now().Add(30 * time.Second)
				for {
					code, st := getJSON(t, c, "/api/v1/documents/"+conv+"/"+doc["document_id"].(string)+"/status")
					if code != http.StatusOK || st["status"] == "error" {
						t.Fatalf("status: %d %v", code, st)
					}
					if st["status"] == "ready" {
						break
					}
					if time.Now().After(deadline) {
						t.Fatalf("%s not ready: %v", doc["filename"], st)
					}
					time.Sleep(50 * time.Millisecond)
				}
			}
			code, list := getJSON(t, c, "/api/v1/documents/"+conv)
			docs, _ := list["documents"].([]any)
			if code != http.StatusOK || len(docs) != 2 {
				t.Fatalf("list: %d %v", code, list)
			}
			if s, _ := docs[1].(map[string]any)["summary"].(string); !strings.Contains(s, "Staff handbook") {
				t.Fatalf("the PDF's summary: %q", s)
			}
			resp := c.do(http.MethodGet, "/api/v1/documents/"+conv+"/"+p["document_id"].(string)+"/content", nil)
			got, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != http.StatusOK || !bytes.Equal(got, pdf) || resp.Header.Get("Content-Type") != "application/pdf" {
				t.Fatalf("content: %d %s, %d bytes", resp.StatusCode, resp.Header.Get("Content-Type"), len(got))
			}
			if backend == "sqlite" {
				// Encrypted at rest: no stored file holds the Markdown.
				filepath.WalkDir(files, func(path string, e fs.DirEntry, err error) error {
					if err == nil && !e.IsDir() {
						if b, _ := os.ReadFile(path); bytes.Contains(b, []byte("Bertha")) {
							t.Errorf("%s holds the plain text", path)
						}
					}
					return nil
				})
			}
			if resp := c.do(http.MethodDelete, "/api/v1/conversations/"+conv, nil); resp.StatusCode != http.StatusNoContent {
				t.Fatalf("delete conversation: %d", resp.StatusCode)
			}
			n := 0
			filepath.WalkDir(files, func(path string, e fs.DirEntry, err error) error {
				if err == nil && !e.IsDir() {
					n++
				}
				return nil
			})
			if n != 0 {
				t.Fatalf("%d files left after deleting the conversation", n)
			}
		})
	}
}

func TestParseDocuments(t *testing.T) {
	t.Parallel()
	env := func(kv ...string) func(string) string {
		m := map[string]string{"HOME": "/home/ada"}
		for i := 0; i+1 < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return func(k string) string { return m[k] }
	}
	c, err := parseServe(nil, env(), io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	d := c.documents
	if d.dir != "/home/ada/.local/share/trellis/documents" || d.maxBytes != 1_000_000 || d.maxPerConv != 5 || d.shared || d.s3 != nil || d.key != nil {
		t.Errorf("defaults: %+v", d)
	}
	if d.maxExtractions != runtime.GOMAXPROCS(0) {
		t.Errorf("default extractions at once: %d", d.maxExtractions)
	}
	c, err = parseServe([]string{"--max-documents", "3", "--max-extractions", "7"}, env("TRELLIS_DOCUMENTS_KEY", strings.Repeat("ab", 32),
		"TRELLIS_DOCUMENTS_S3_ENDPOINT", "127.0.0.1:9000", "TRELLIS_DOCUMENTS_S3_BUCKET", "docs", "TRELLIS_DOCUMENTS_S3_PATH_STYLE", "true",
		"TRELLIS_DOCUMENTS_SHARED", "true", "TRELLIS_MAX_DOCUMENT_BYTES", "2000000"), io.Discard)
	d = c.documents
	if err != nil || d.maxPerConv != 3 || d.maxExtractions != 7 || d.maxBytes != 2_000_000 || !d.shared || len(d.key) != 32 || d.s3 == nil || !d.s3.PathStyle || d.s3.Bucket != "docs" {
		t.Errorf("set: %+v %v", d, err)
	}
	for _, bad := range [][]string{
		{"TRELLIS_DOCUMENTS_KEY", "short"},
		{"TRELLIS_DOCUMENTS_S3_ENDPOINT", "127.0.0.1:9000"}, // no bucket
		{"TRELLIS_DOCUMENTS_S3_ENDPOINT", "x", "TRELLIS_DOCUMENTS_S3_BUCKET", "b", "TRELLIS_DOCUMENTS_S3_INSECURE", "maybe"},
		{"TRELLIS_MAX_DOCUMENT_BYTES", "0"},
		{"TRELLIS_MAX_DOCUMENTS", "many"},
		{"TRELLIS_MAX_EXTRACTIONS", "0"},
		{"TRELLIS_DOCUMENTS_SHARED", "sort of"},
	} {
		if _, err := parseServe(nil, env(bad...), io.Discard); err == nil {
			t.Errorf("%v accepted", bad)
		}
	}
}

// waitReady polls a document's status on c until it is ready.
func waitReady(t *testing.T, c *child, conv, id string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		code, st := getJSON(t, c, "/api/v1/documents/"+conv+"/"+id+"/status")
		if code != http.StatusOK || st["status"] == "error" {
			t.Fatalf("status: %d %v", code, st)
		}
		if st["status"] == "ready" {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s not ready: %v", id, st)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// On PostgreSQL with no document setting, files go into the database:
// two processes on one database, each with a private data directory,
// read the documents the other stored (uploaded on one, listed, loaded
// and deleted on the other), encrypted at rest when a key is set, and
// the start line says where the files live.
func TestServeDocumentsInPostgresByDefault(t *testing.T) {
	t.Parallel()
	dsn := pgDSN(t)
	key := "TRELLIS_DOCUMENTS_KEY=" + strings.Repeat("3c", 32)
	a := startServe(t, "TRELLIS_DATA_DIR="+t.TempDir(), "DATABASE_URL="+dsn, key)
	b := startServe(t, "TRELLIS_DATA_DIR="+t.TempDir(), "DATABASE_URL="+dsn, key)
	for _, c := range []*child{a, b} {
		if !strings.Contains(c.startLine, "documents postgres table document_files encrypted") {
			t.Fatalf("the start line does not say the files are in the database: %q", c.startLine)
		}
	}
	pdf, err := os.ReadFile("../../documents/testdata/handbook.pdf")
	if err != nil {
		t.Fatal(err)
	}
	d := uploadTo(t, a, "", "notes.md", []byte("# Notes\n\nThe vault code is 4711."))
	conv := d["conversation_id"].(string)
	p := uploadTo(t, b, conv, "handbook.pdf", pdf)
	for _, doc := range []map[string]any{d, p} {
		for _, c := range []*child{a, b} {
			waitReady(t, c, conv, doc["document_id"].(string))
		}
	}
	for _, c := range []*child{a, b} {
		code, list := getJSON(t, c, "/api/v1/documents/"+conv)
		if docs, _ := list["documents"].([]any); code != http.StatusOK || len(docs) != 2 {
			t.Fatalf("list: %d %v", code, list)
		}
	}
	for _, load := range []struct {
		c    *child
		id   string
		want []byte
	}{{b, d["document_id"].(string), []byte("The vault code is 4711.")}, {a, p["document_id"].(string), pdf}} {
		resp := load.c.do(http.MethodGet, "/api/v1/documents/"+conv+"/"+load.id+"/content", nil)
		got, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusOK || !bytes.Contains(got, load.want) {
			t.Fatalf("content of %s from the other process: %d, %d bytes", load.id, resp.StatusCode, len(got))
		}
	}
	db, err := pgx.Connect(t.Context(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close(context.Background())
	var n int
	var plain bool
	if err := db.QueryRow(t.Context(), `SELECT count(*), coalesce(bool_or(position('4711'::bytea in data) > 0), false) FROM document_files`).Scan(&n, &plain); err != nil {
		t.Fatal(err)
	}
	if n != 2 || plain {
		t.Fatalf("document_files: %d rows (want 2), plain text stored: %v", n, plain)
	}
	if resp := b.do(http.MethodDelete, "/api/v1/conversations/"+conv, nil); resp.StatusCode != http.StatusNoContent {
		t.Fatalf("delete conversation: %d", resp.StatusCode)
	}
	if err := db.QueryRow(t.Context(), `SELECT count(*) FROM document_files`).Scan(&n); err != nil || n != 0 {
		t.Fatalf("%d files left after deleting the conversation (%v)", n, err)
	}
}

// With TRELLIS_DOCUMENTS_S3_*, serve keeps documents in the bucket (here
// an in-process S3 server), encrypted with TRELLIS_DOCUMENTS_KEY.
func TestServeDocumentsInS3(t *testing.T) {
	t.Parallel()
	backend := s3mem.New()
	if err := backend.CreateBucket("trellis-docs"); err != nil {
		t.Fatal(err)
	}
	s3 := httptest.NewServer(gofakes3.New(backend).Server())
	defer s3.Close()
	c := startServe(t, "TRELLIS_DATA_DIR="+t.TempDir(),
		"TRELLIS_DOCUMENTS_S3_ENDPOINT="+strings.TrimPrefix(s3.URL, "http://"), "TRELLIS_DOCUMENTS_S3_BUCKET=trellis-docs",
		"TRELLIS_DOCUMENTS_S3_ACCESS_KEY=k", "TRELLIS_DOCUMENTS_S3_SECRET_KEY=s", "TRELLIS_DOCUMENTS_S3_REGION=us-east-1",
		"TRELLIS_DOCUMENTS_S3_INSECURE=true", "TRELLIS_DOCUMENTS_S3_PATH_STYLE=true",
		"TRELLIS_DOCUMENTS_KEY="+strings.Repeat("0f", 32))
	if !strings.Contains(c.startLine, "documents s3 ") || !strings.Contains(c.startLine, "/trellis-docs encrypted") {
		t.Fatalf("start line %q", c.startLine)
	}
	d := uploadTo(t, c, "", "notes.md", []byte("# Notes\n\nThe vault code is 4711."))
	conv, id := d["conversation_id"].(string), d["document_id"].(string)
	deadline := time.Now().Add(30 * time.Second)
	for {
		_, st := getJSON(t, c, "/api/v1/documents/"+conv+"/"+id+"/status")
		if st["status"] == "ready" {
			break
		}
		if st["status"] == "error" || time.Now().After(deadline) {
			t.Fatalf("status %v", st)
		}
		time.Sleep(50 * time.Millisecond)
	}
	objs, err := backend.ListBucket("trellis-docs", nil, gofakes3.ListBucketPage{})
	if err != nil || len(objs.Contents) != 1 || !strings.HasSuffix(objs.Contents[0].Key, "/document/"+id+"/original") {
		t.Fatalf("bucket: %+v, %v", objs, err)
	}
	obj, err := backend.GetObject("trellis-docs", objs.Contents[0].Key, nil)
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := io.ReadAll(obj.Contents)
	obj.Contents.Close()
	if bytes.Contains(raw, []byte("4711")) {
		t.Fatal("the bucket holds the plain text")
	}
	resp := c.do(http.MethodGet, "/api/v1/documents/"+conv+"/"+id+"/content", nil)
	if got, _ := io.ReadAll(resp.Body); !bytes.Contains(got, []byte("4711")) {
		t.Fatalf("content %q", got)
	}
}

// docScript has the supervisor search the conversation's documents for a
// question about the coffee machine, then answer.
const docScript = `{"steps": [
  {"name": "a question about the coffee machine searches the documents", "match": {"node": "supervisor", "contains": "coffee machine", "tool_result": false},
   "reply": {"tool_calls": [{"name": "search_documents", "args": {"query": "coffee machine descaling"}}]}, "repeat": true},
  {"name": "reflect is satisfied", "match": {"node": "reflect"}, "reply": {"json": {"assessment": "satisfied"}}, "repeat": true},
  {"name": "then the supervisor answers", "match": {"node": "supervisor"}, "reply": {"json": {"action": "ANSWER"}}, "repeat": true},
  {"name": "write answers", "match": {"node": "write"}, "reply": {"text": "Bertha, every second Friday."}, "repeat": true}
]}`

// The agent searches an uploaded document through trellis serve: a
// Markdown file is uploaded and processed to ready, and a question in its
// conversation makes the scripted supervisor call search_documents, whose
// result holds the passage with its document id and character offsets.
func TestServeAgentSearchesDocuments(t *testing.T) {
	t.Parallel()
	md, err := os.ReadFile("../../documents/testdata/handbook.md")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	script := filepath.Join(dir, "docs.json")
	if err := os.WriteFile(script, []byte(docScript), 0o600); err != nil {
		t.Fatal(err)
	}
	c := startServe(t, "TRELLIS_DATA_DIR="+dir, "TRELLIS_DOCUMENTS_DIR="+filepath.Join(dir, "docs"), "TRELLIS_MODEL=scripted:"+script)
	d := uploadTo(t, c, "", "handbook.md", md)
	conv, id := d["conversation_id"].(string), d["document_id"].(string)
	deadline := time.Now().Add(30 * time.Second)
	for {
		code, st := getJSON(t, c, "/api/v1/documents/"+conv+"/"+id+"/status")
		if code != http.StatusOK || st["status"] == "error" {
			t.Fatalf("status: %d %v", code, st)
		}
		if st["status"] == "ready" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("not ready: %v", st)
		}
		time.Sleep(50 * time.Millisecond)
	}
	resp := c.do(http.MethodPost, "/api/v1/chat", map[string]any{"message": "when does the coffee machine need descaling?", "conversation_id": conv})
	var result string
	seen := sseEvents(t, resp, func(e event) bool { return e.typ == "run.completed" || e.typ == "run.failed" })
	for _, e := range seen {
		if e.typ == "tool.complete" {
			if name, _ := e.data["tool"].(string); name != "" && name != "search_documents" {
				t.Fatalf("tool.complete of %q: %v", name, e.data)
			}
			result, _ = e.data["result"].(string)
		}
	}
	var got struct {
		Results []struct {
			DocumentID string `json:"document_id"`
			Filename   string `json:"filename"`
			Chunk      int    `json:"chunk"`
			Start, End int
			Text       string `json:"text"`
		} `json:"results"`
	}
	if err := json.Unmarshal([]byte(result), &got); err != nil || len(got.Results) == 0 {
		t.Fatalf("tool.complete result %q: %v\nevents %v", result, err, seen)
	}
	h := got.Results[0]
	want := "The coffee machine on the third floor is called Bertha."
	if h.DocumentID != id || h.Filename != "handbook.md" || !strings.Contains(h.Text, want) || h.End <= h.Start ||
		h.End-h.Start != len([]rune(h.Text)) {
		t.Fatalf("passage %+v", h)
	}
	if i := strings.Index(string(md), want); i < h.Start || i+len(want) > h.End {
		t.Fatalf("the passage at [%d, %d) does not hold offset %d of the file", h.Start, h.End, i)
	}
}

// waitDocReady polls a document's status on a serve process until ready.
func waitDocReady(t *testing.T, c *child, conv string, doc map[string]any) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		code, st := getJSON(t, c, "/api/v1/documents/"+conv+"/"+doc["document_id"].(string)+"/status")
		if code != http.StatusOK || st["status"] == "error" {
			t.Fatalf("status: %d %v", code, st)
		}
		if st["status"] == "ready" {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s not ready: %v", doc["filename"], st)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// askDocuments sends a chat message and returns its events up to the end
// of the run, the names of the tools it completed and its response.done.
func askDocuments(t *testing.T, c *child, body map[string]any) (tools []string, done map[string]any, seen []event) {
	t.Helper()
	resp := c.do(http.MethodPost, "/api/v1/chat", body)
	seen = sseEvents(t, resp, func(e event) bool { return e.typ == "run.completed" || e.typ == "run.failed" })
	for _, e := range seen {
		switch e.typ {
		case "tool.complete":
			name, _ := e.data["tool"].(string)
			tools = append(tools, name)
		case "response.done":
			done = e.data
		}
	}
	if done == nil {
		t.Fatalf("no response.done: %v", seen)
	}
	return tools, done, seen
}

// docCitation is API.md's document citation.
type docCitation struct {
	Index      int    `json:"index"`
	DocumentID string `json:"document_id"`
	Filename   string `json:"filename"`
	Chunk      int    `json:"chunk"`
	Start      int    `json:"start"`
	End        int    `json:"end"`
	Text       string `json:"text"`
}

func citationsOf(t *testing.T, done map[string]any) []docCitation {
	t.Helper()
	b, _ := json.Marshal(done["citations"])
	var out []docCitation
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatalf("citations %s: %v", b, err)
	}
	return out
}

// citeScript answers a question about the office plant (only in the PDF)
// and one about the coffee machine (only in the Markdown) from
// search_documents, citing the first passage.
const citeScript = `{"steps": [
  {"match": {"node": "supervisor", "contains": "office plant", "tool_result": false},
   "reply": {"tool_calls": [{"name": "search_documents", "args": {"query": "office plant named"}}]}, "repeat": true},
  {"match": {"node": "supervisor", "contains": "coffee machine", "tool_result": false},
   "reply": {"tool_calls": [{"name": "search_documents", "args": {"query": "coffee machine descaling"}}]}, "repeat": true},
  {"match": {"node": "reflect"}, "reply": {"json": {"assessment": "satisfied"}}, "repeat": true},
  {"match": {"node": "write", "contains": "office plant"}, "reply": {"text": "The office plant is named Gerald [1]."}, "repeat": true},
  {"match": {"node": "write", "contains": "coffee machine"}, "reply": {"text": "Bertha needs descaling every second Friday [1]."}, "repeat": true}
]}`

// The agent answers from uploaded documents with numbered citations,
// through trellis serve on SQLite and PostgreSQL: a Markdown file and a
// PDF are processed to ready; a question scoped to the PDF by the chat's
// document_ids, and one about the Markdown file, each make the scripted
// supervisor call search_documents, and response.done cites the passage
// by document, chunk and character offsets.
func TestServeAgentCitesDocuments(t *testing.T) {
	t.Parallel()
	md, err := os.ReadFile("../../documents/testdata/handbook.md")
	if err != nil {
		t.Fatal(err)
	}
	pdf, err := os.ReadFile("../../documents/testdata/handbook.pdf")
	if err != nil {
		t.Fatal(err)
	}
	for _, backend := range []string{"sqlite", "postgres"} {
		t.Run(backend, func(t *testing.T) {
			dir := t.TempDir()
			script := filepath.Join(dir, "cite.json")
			if err := os.WriteFile(script, []byte(citeScript), 0o600); err != nil {
				t.Fatal(err)
			}
			env := []string{"TRELLIS_DATA_DIR=" + dir, "TRELLIS_DOCUMENTS_DIR=" + filepath.Join(dir, "docs"), "TRELLIS_MODEL=scripted:" + script}
			if backend == "postgres" {
				env = append(env, "DATABASE_URL="+pgDSN(t), "TRELLIS_DOCUMENTS_SHARED=true")
			}
			c := startServe(t, env...)
			d := uploadTo(t, c, "", "handbook.md", md)
			conv := d["conversation_id"].(string)
			p := uploadTo(t, c, conv, "handbook.pdf", pdf)
			waitDocReady(t, c, conv, d)
			waitDocReady(t, c, conv, p)
			pdfID, mdID := p["document_id"].(string), d["document_id"].(string)

			// Scoped to the PDF: only its passages come back.
			tools, done, seen := askDocuments(t, c, map[string]any{"message": "what is the office plant named?", "conversation_id": conv,
				"document_ids": []string{pdfID}})
			cites := citationsOf(t, done)
			if len(tools) != 1 || tools[0] != "search_documents" || len(cites) != 1 {
				t.Fatalf("tools %v, citations %v\nevents %v", tools, done["citations"], seen)
			}
			for _, e := range seen {
				if e.typ == "tool.complete" && strings.Contains(fmt.Sprint(e.data["result"]), mdID) {
					t.Errorf("a search scoped to the PDF returned the Markdown file: %v", e.data["result"])
				}
			}
			ct := cites[0]
			if done["content"] != "The office plant is named Gerald [1]." || ct.Index != 1 || ct.DocumentID != pdfID || ct.Filename != "handbook.pdf" ||
				!strings.Contains(ct.Text, "The office plant is named Gerald.") || ct.End-ct.Start != len([]rune(ct.Text)) {
				t.Fatalf("response.done %v", done)
			}

			tools, done, seen = askDocuments(t, c, map[string]any{"message": "when does the coffee machine need descaling?", "conversation_id": conv})
			cites = citationsOf(t, done)
			if len(tools) != 1 || tools[0] != "search_documents" || len(cites) != 1 {
				t.Fatalf("tools %v, citations %v\nevents %v", tools, done["citations"], seen)
			}
			ct = cites[0]
			want := "The coffee machine on the third floor is called Bertha."
			if ct.Index != 1 || ct.DocumentID != mdID || ct.Filename != "handbook.md" || ct.Chunk != 0 || !strings.Contains(ct.Text, want) ||
				ct.End-ct.Start != len([]rune(ct.Text)) {
				t.Fatalf("citation %+v", ct)
			}
			if i := strings.Index(string(md), want); i < ct.Start || i+len(want) > ct.End {
				t.Fatalf("the citation at [%d, %d) does not hold offset %d of the file", ct.Start, ct.End, i)
			}
			// The answer is stored with its citations.
			code, conversation := getJSON(t, c, "/api/v1/conversations/"+conv)
			if b, _ := json.Marshal(conversation["messages"]); code != http.StatusOK || !strings.Contains(string(b), `"document_id":"`+mdID+`"`) {
				t.Fatalf("conversation: %d %s", code, b)
			}

			// A document that is not in the conversation: 404, no run.
			resp := c.do(http.MethodPost, "/api/v1/chat/sync", map[string]any{"message": "what is the office plant named?", "conversation_id": conv,
				"document_ids": []string{"nope"}})
			if resp.StatusCode != http.StatusNotFound {
				t.Fatalf("an unknown document id: %d", resp.StatusCode)
			}
		})
	}
}

// With no model configured, the offline model answers a question about an
// uploaded document: it searches the documents and quotes the passage
// with its numbered citation.
func TestServeOfflineAnswersFromDocuments(t *testing.T) {
	t.Parallel()
	md, err := os.ReadFile("../../documents/testdata/handbook.md")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	// The offline model searches the documents because the supervisor's
	// prompt lists them; the list loads within the context budget, which
	// a loaded machine can overrun at its default of 100 ms (CI did once).
	c := startServe(t, "TRELLIS_DATA_DIR="+dir, "TRELLIS_DOCUMENTS_DIR="+filepath.Join(dir, "docs"), "TRELLIS_MODEL=offline",
		"TRELLIS_COGNITION_BUDGET=5s")
	d := uploadTo(t, c, "", "handbook.md", md)
	conv := d["conversation_id"].(string)
	waitDocReady(t, c, conv, d)
	tools, done, seen := askDocuments(t, c, map[string]any{"message": "When does the coffee machine need descaling?", "conversation_id": conv})
	cites := citationsOf(t, done)
	content, _ := done["content"].(string)
	if len(tools) != 1 || tools[0] != "search_documents" || len(cites) != 1 {
		t.Fatalf("tools %v, response.done %v\nevents %v", tools, done, seen)
	}
	if !strings.Contains(content, "From handbook.md: “The coffee machine on the third floor is called Bertha. She needs descaling every second Friday") ||
		!strings.HasSuffix(content, "[1]") {
		t.Fatalf("answer %q", content)
	}
	if ct := cites[0]; ct.Index != 1 || ct.DocumentID != d["document_id"] || ct.Filename != "handbook.md" || !strings.Contains(ct.Text, "Bertha") {
		t.Fatalf("citation %+v", ct)
	}
}

// A 20 MB upload to serve with the default limits is told the document
// limit it can act on, with the code the README promises, not the body
// limit (the document limit plus the multipart framing).
func TestServeRefusesOversizedDocument(t *testing.T) {
	t.Parallel()
	c := startServe(t, "TRELLIS_DATA_DIR="+t.TempDir())
	var body bytes.Buffer
	mw := multipart.NewWriter(&body)
	fw, _ := mw.CreateFormFile("file", "big.txt")
	fw.Write(bytes.Repeat([]byte("twenty megabytes "), 20_000_000/17))
	mw.Close()
	resp, err := http.Post(c.url+"/api/v1/documents", mw.FormDataContentType(), &body)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var e struct {
		Error struct{ Code, Message string }
	}
	if err := json.NewDecoder(resp.Body).Decode(&e); err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusRequestEntityTooLarge || e.Error.Code != "document_too_large" ||
		e.Error.Message != "the file is larger than 1000000 bytes, the most a document may be" {
		t.Fatalf("a 20 MB upload: %d %+v", resp.StatusCode, e.Error)
	}
}
