package storetest

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/trellis-ai/trellis/internal/testcheck"
	"github.com/trellis-ai/trellis/store"
)

func newDocument(t *testing.T, s Record, c store.Conversation, name string) store.Document {
	t.Helper()
	return must(s.CreateDocument(t.Context(), store.NewDocument{UserID: c.UserID, ConversationID: c.ID,
		Filename: name, ContentType: "text/markdown", SizeBytes: 1234}))(t)
}

// putText chunks a document's paragraphs, one chunk each, and makes it
// ready.
func putText(t *testing.T, s Record, d store.Document, paragraphs ...string) {
	t.Helper()
	var cs []store.NewChunk
	at := 0
	for i, p := range paragraphs {
		n := len([]rune(p))
		cs = append(cs, store.NewChunk{Index: i, Start: at, End: at + n, Text: p})
		at += n
	}
	if err := s.PutChunks(t.Context(), d.ID, cs, 0); err != nil {
		t.Fatal(err)
	}
	must(s.FinishDocument(t.Context(), d.ID, "summary of "+d.Filename))(t)
}

func testDocumentLifecycle(t *testing.T, s Record) {
	ctx := t.Context()
	c := newConversation(t, s, alice)
	d := newDocument(t, s, c, "notes.md")
	if d.Status != store.DocUploading || d.ConversationID != c.ID || d.UserID != alice || d.ID == "" {
		t.Fatalf("created %+v", d)
	}
	if got := must(s.GetDocument(ctx, alice, c.ID, d.ID))(t); got.Filename != "notes.md" || got.SizeBytes != 1234 || got.ContentType != "text/markdown" {
		t.Fatalf("GetDocument = %+v", got)
	}
	for _, st := range []store.DocumentStatus{store.DocChunking, store.DocSummarizing} {
		if got := must(s.SetDocumentStatus(ctx, d.ID, st, "ignored"))(t); got.Status != st || got.Error != "" {
			t.Fatalf("SetDocumentStatus(%s) = %+v", st, got)
		}
	}
	chunks := []store.NewChunk{
		{Index: 0, Start: 0, End: 11, Page: 1, LastPage: 1, Text: "alpha beta."},
		{Index: 1, Start: 6, End: 20, Page: 1, LastPage: 2, Text: "beta. gamma ü"},
	}
	if err := s.PutChunks(ctx, d.ID, chunks, 42); err != nil {
		t.Fatal(err)
	}
	if err := s.SetChunkSummaries(ctx, d.ID, map[int]string{1: "about gamma"}); err != nil {
		t.Fatal(err)
	}
	wantErr(t, "SetChunkSummaries of a missing chunk", s.SetChunkSummaries(ctx, d.ID, map[int]string{0: "changed", 7: "x"}), store.ErrNotFound)
	done := must(s.FinishDocument(ctx, d.ID, "a summary"))(t)
	if done.Status != store.DocReady || done.Summary != "a summary" || done.Chunks != 2 || done.OmittedChars != 42 {
		t.Fatalf("FinishDocument = %+v", done)
	}
	all := must(s.DocumentChunks(ctx, alice, d.ID, nil))(t)
	if len(all) != 2 || all[1].Text != "beta. gamma ü" || all[1].Summary != "about gamma" || all[0].Summary != "" || all[1].LastPage != 2 || all[0].Start != 0 || all[1].Start != 6 || all[1].End != 20 {
		t.Fatalf("DocumentChunks = %+v", all)
	}
	one := must(s.DocumentChunks(ctx, alice, d.ID, []int{1, 9}))(t)
	if len(one) != 1 || one[0].Index != 1 {
		t.Fatalf("DocumentChunks([1, 9]) = %+v", one)
	}
	failed := must(s.SetDocumentStatus(ctx, d.ID, store.DocError, "summary failed: model down"))(t)
	if failed.Status != store.DocError || failed.Error != "summary failed: model down" {
		t.Fatalf("error status: %+v", failed)
	}
	other := newDocument(t, s, c, "second.txt")
	list := allDocuments(t, s, alice, c.ID)
	if len(list) != 2 || list[0].ID != d.ID || list[1].ID != other.ID {
		t.Fatalf("ListDocuments = %+v", list)
	}
	if got := must(s.LookupDocument(ctx, d.ID))(t); got.ID != d.ID || got.UserID != alice {
		t.Fatalf("LookupDocument = %+v", got)
	}
	empty := newConversation(t, s, alice)
	if got := allDocuments(t, s, alice, empty.ID); got == nil || len(got) != 0 {
		t.Fatalf("ListDocuments of an empty conversation = %#v", got)
	}
	gone := must(s.DeleteDocument(ctx, alice, c.ID, d.ID))(t)
	if gone.ID != d.ID {
		t.Fatalf("DeleteDocument returned %+v", gone)
	}
	wantErrs(t, " after delete", map[string]error{
		"GetDocument":       second(s.GetDocument(ctx, alice, c.ID, d.ID)),
		"DeleteDocument":    second(s.DeleteDocument(ctx, alice, c.ID, d.ID)),
		"LookupDocument":    second(s.LookupDocument(ctx, d.ID)),
		"DocumentChunks":    second(s.DocumentChunks(ctx, alice, d.ID, nil)),
		"SetStatus":         second(s.SetDocumentStatus(ctx, d.ID, store.DocReady, "")),
		"FinishDocument":    second(s.FinishDocument(ctx, d.ID, "")),
		"PutChunks":         s.PutChunks(ctx, d.ID, chunks, 0),
		"SetChunkSummaries": s.SetChunkSummaries(ctx, d.ID, map[int]string{0: "x"}),
	}, store.ErrNotFound)
}

func testDocumentInNewConversation(t *testing.T, s Record) {
	ctx := t.Context()
	d := must(s.CreateDocument(ctx, store.NewDocument{UserID: alice, Filename: "report.pdf", ContentType: "application/pdf", SizeBytes: 9}))(t)
	c := must(s.GetConversation(ctx, alice, d.ConversationID))(t)
	if c.Title != "report.pdf" {
		t.Fatalf("new conversation %+v", c)
	}
	if got := allDocuments(t, s, alice, c.ID); len(got) != 1 || got[0].ID != d.ID {
		t.Fatalf("ListDocuments = %+v", got)
	}
}

func testDocumentLimit(t *testing.T, s Record) {
	ctx := t.Context()
	c := newConversation(t, s, alice)
	nd := store.NewDocument{UserID: alice, ConversationID: c.ID, Filename: "a.txt", ContentType: "text/plain", MaxPerConversation: 2}
	must(s.CreateDocument(ctx, nd))(t)
	must(s.CreateDocument(ctx, nd))(t)
	_, err := s.CreateDocument(ctx, nd)
	wantErr(t, "third document of two", err, store.ErrTooMany)
	if got := allDocuments(t, s, alice, c.ID); len(got) != 2 {
		t.Fatalf("%d documents after a refusal", len(got))
	}
	// Another conversation has room of its own.
	nd.ConversationID = newConversation(t, s, alice).ID
	must(s.CreateDocument(ctx, nd))(t)
}

func testDocumentLimitConcurrent(t *testing.T, s Record) {
	c := newConversation(t, s, alice)
	ok := len(testcheck.Race(t, "create", 8, store.ErrTooMany, func(i int) error {
		_, err := s.CreateDocument(t.Context(), store.NewDocument{UserID: alice, ConversationID: c.ID,
			Filename: fmt.Sprintf("f%d.txt", i), ContentType: "text/plain", MaxPerConversation: 5})
		return err
	}))
	if got := allDocuments(t, s, alice, c.ID); ok != 5 || len(got) != 5 {
		t.Fatalf("%d creates succeeded, %d documents stored; want 5 and 5", ok, len(got))
	}
}

func testDocumentOtherUsers(t *testing.T, s Record) {
	ctx := t.Context()
	c := newConversation(t, s, alice)
	d := newDocument(t, s, c, "secret.md")
	putText(t, s, d, "the vault combination is swordfish")
	wantErrs(t, " of another user's", map[string]error{
		"GetDocument":                         second(s.GetDocument(ctx, bob, c.ID, d.ID)),
		"ListDocuments":                       second(s.ListDocuments(ctx, bob, c.ID, store.Page{})),
		"DeleteDocument":                      second(s.DeleteDocument(ctx, bob, c.ID, d.ID)),
		"DocumentChunks":                      second(s.DocumentChunks(ctx, bob, d.ID, nil)),
		"CreateDocument":                      second(s.CreateDocument(ctx, store.NewDocument{UserID: bob, ConversationID: c.ID, Filename: "x", ContentType: "text/plain"})),
		"GetDocument of another conversation": second(s.GetDocument(ctx, alice, newConversation(t, s, alice).ID, d.ID)),
	}, store.ErrNotFound)
	for _, q := range []store.ChunkQuery{
		{UserID: bob, Query: "swordfish"},
		{UserID: bob, ConversationID: c.ID, Query: "swordfish"},
		{UserID: bob, DocumentIDs: []string{d.ID}, Query: "swordfish"},
	} {
		if hits := must(s.SearchChunks(ctx, q))(t); len(hits) != 0 {
			t.Errorf("bob's search %+v found alice's chunks: %+v", q, hits)
		}
	}
	if got := must(s.GetDocument(ctx, alice, c.ID, d.ID))(t); got.Status != store.DocReady {
		t.Fatalf("alice's document after bob's tries: %+v", got)
	}
}

func testSearchChunks(t *testing.T, s Record) {
	ctx := t.Context()
	c := newConversation(t, s, alice)
	d := newDocument(t, s, c, "office.md")
	putText(t, s, d,
		"The kitchen has a coffee machine called Bertha.",
		"The office plant is named Gerald and is watered on Tuesdays.",
		"Plants in the lobby are plastic. Nobody waters them.",
		"Parking is behind the building.")
	hits := must(s.SearchChunks(ctx, store.ChunkQuery{UserID: alice, ConversationID: c.ID, Query: "What is the office plant named?"}))(t)
	if len(hits) < 2 {
		t.Fatalf("hits %+v", hits)
	}
	best := hits[0]
	if best.Index != 1 || best.DocumentID != d.ID || best.Filename != "office.md" || !strings.Contains(best.Text, "Gerald") {
		t.Fatalf("best hit %+v, want chunk 1 (Gerald)", best)
	}
	if best.Start != len([]rune("The kitchen has a coffee machine called Bertha.")) {
		t.Fatalf("best hit starts at %d", best.Start)
	}
	// Stemming: "plants" finds "plant" and "watered" finds "waters".
	got := map[int]bool{}
	for _, h := range must(s.SearchChunks(ctx, store.ChunkQuery{UserID: alice, Query: "watering"}))(t) {
		got[h.Index] = true
	}
	if !got[1] || !got[2] || len(got) != 2 {
		t.Fatalf("\"watering\" found chunks %v, want 1 and 2", got)
	}
	for i := 1; i < len(hits); i++ {
		if hits[i].Score > hits[i-1].Score {
			t.Fatalf("hits not ranked: %v then %v", hits[i-1].Score, hits[i].Score)
		}
	}
	for _, q := range []string{"", "?!", "zebra unicorn", "a"} {
		if hits := must(s.SearchChunks(ctx, store.ChunkQuery{UserID: alice, Query: q}))(t); len(hits) != 0 {
			t.Errorf("search %q found %+v", q, hits)
		}
	}
	// Words that look like query syntax are only words.
	for _, q := range []string{`"office" OR plant*`, "plant & !office | (", "NEAR(office plant)", "office:plant -x"} {
		if _, err := s.SearchChunks(ctx, store.ChunkQuery{UserID: alice, Query: q}); err != nil {
			t.Errorf("search %q: %v", q, err)
		}
	}
	if hits := must(s.SearchChunks(ctx, store.ChunkQuery{UserID: alice, Query: "the", Limit: 1}))(t); len(hits) > 1 {
		t.Errorf("limit 1 gave %d hits", len(hits))
	}
	_, err := s.SearchChunks(ctx, store.ChunkQuery{UserID: alice, Query: "x", Limit: -1})
	wantErr(t, "negative limit", err, store.ErrInvalid)
	_, err = s.SearchChunks(ctx, store.ChunkQuery{Query: "x"})
	wantErr(t, "no user", err, store.ErrInvalid)
}

func testSearchScope(t *testing.T, s Record) {
	ctx := t.Context()
	c1, c2 := newConversation(t, s, alice), newConversation(t, s, alice)
	d1 := newDocument(t, s, c1, "one.md")
	d2 := newDocument(t, s, c1, "two.md")
	d3 := newDocument(t, s, c2, "three.md")
	for _, d := range []store.Document{d1, d2, d3} {
		putText(t, s, d, "lighthouse keeper notes from "+d.Filename)
	}
	ids := func(q store.ChunkQuery) []string {
		var out []string
		for _, h := range must(s.SearchChunks(ctx, q))(t) {
			out = append(out, h.DocumentID)
		}
		slices.Sort(out)
		return out
	}
	sorted := func(v ...string) []string { slices.Sort(v); return v }
	for _, tc := range []struct {
		name string
		q    store.ChunkQuery
		want []string
	}{
		{"user", store.ChunkQuery{UserID: alice, Query: "lighthouse"}, sorted(d1.ID, d2.ID, d3.ID)},
		{"conversation", store.ChunkQuery{UserID: alice, ConversationID: c1.ID, Query: "lighthouse"}, sorted(d1.ID, d2.ID)},
		{"documents", store.ChunkQuery{UserID: alice, DocumentIDs: []string{d2.ID, d3.ID}, Query: "lighthouse"}, sorted(d2.ID, d3.ID)},
		{"conversation and documents", store.ChunkQuery{UserID: alice, ConversationID: c1.ID, DocumentIDs: []string{d2.ID, d3.ID}, Query: "lighthouse"}, []string{d2.ID}},
		{"unknown document", store.ChunkQuery{UserID: alice, DocumentIDs: []string{"nope"}, Query: "lighthouse"}, nil},
	} {
		if got := ids(tc.q); !slices.Equal(got, tc.want) {
			t.Errorf("%s: documents %v, want %v", tc.name, got, tc.want)
		}
	}
}

func testPutChunksAgain(t *testing.T, s Record) {
	ctx := t.Context()
	c := newConversation(t, s, alice)
	d := newDocument(t, s, c, "twice.md")
	putText(t, s, d, "first version mentions albatross", "second chunk")
	putText(t, s, d, "second version mentions pelican")
	if got := must(s.DocumentChunks(ctx, alice, d.ID, nil))(t); len(got) != 1 || !strings.Contains(got[0].Text, "pelican") {
		t.Fatalf("chunks after a second PutChunks: %+v", got)
	}
	if hits := must(s.SearchChunks(ctx, store.ChunkQuery{UserID: alice, Query: "albatross"}))(t); len(hits) != 0 {
		t.Fatalf("replaced chunks still found: %+v", hits)
	}
	if hits := must(s.SearchChunks(ctx, store.ChunkQuery{UserID: alice, Query: "pelican"}))(t); len(hits) != 1 {
		t.Fatalf("pelican found %d times", len(hits))
	}
	if got := must(s.GetDocument(ctx, alice, c.ID, d.ID))(t); got.Chunks != 1 {
		t.Fatalf("chunk count %d", got.Chunks)
	}
}

// No document joins a conversation being deleted: its files are gone
// or going, and a row added now would name a file no delete removes.
func testDocumentRefusedWhileDeleting(t *testing.T, s Record) {
	ctx := t.Context()
	c := newConversation(t, s, alice)
	newDocument(t, s, c, "before.md")
	if err := s.BeginDelete(ctx, alice, c.ID); err != nil {
		t.Fatal(err)
	}
	wantErr(t, "CreateDocument while deleting", second(s.CreateDocument(ctx, store.NewDocument{UserID: alice, ConversationID: c.ID,
		Filename: "late.md", ContentType: "text/markdown", SizeBytes: 1})), store.ErrNotFound)
	if got := must(s.ListDocuments(ctx, alice, c.ID, store.Page{}))(t); len(got.Documents) != 1 {
		t.Errorf("documents while deleting: %d, want the one before", len(got.Documents))
	}
}

func testDocumentDeleteCascades(t *testing.T, s Record) {
	ctx := t.Context()
	c, kept := newConversation(t, s, alice), newConversation(t, s, alice)
	d := newDocument(t, s, c, "gone.md")
	putText(t, s, d, "the password is marmalade")
	k := newDocument(t, s, kept, "kept.md")
	putText(t, s, k, "marmalade on toast")
	must(s.DeleteDocument(ctx, alice, c.ID, d.ID))(t)
	hits := must(s.SearchChunks(ctx, store.ChunkQuery{UserID: alice, Query: "marmalade"}))(t)
	if len(hits) != 1 || hits[0].DocumentID != k.ID {
		t.Fatalf("after DeleteDocument: %+v", hits)
	}
	d2 := newDocument(t, s, c, "again.md")
	putText(t, s, d2, "marmalade again")
	if err := s.DeleteConversation(ctx, alice, c.ID); err != nil {
		t.Fatal(err)
	}
	wantErrs(t, " after DeleteConversation", map[string]error{
		"LookupDocument": second(s.LookupDocument(ctx, d2.ID)),
		"DocumentChunks": second(s.DocumentChunks(ctx, alice, d2.ID, nil)),
		"ListDocuments":  second(s.ListDocuments(ctx, alice, c.ID, store.Page{})),
	}, store.ErrNotFound)
	hits = must(s.SearchChunks(ctx, store.ChunkQuery{UserID: alice, Query: "marmalade"}))(t)
	if len(hits) != 1 || hits[0].DocumentID != k.ID {
		t.Fatalf("after DeleteConversation: %+v", hits)
	}
	// New chunks take the freed places in the index without ghosts.
	d3 := newDocument(t, s, kept, "new.md")
	putText(t, s, d3, "quince jelly")
	if hits := must(s.SearchChunks(ctx, store.ChunkQuery{UserID: alice, Query: "marmalade password"}))(t); len(hits) != 1 {
		t.Fatalf("ghost hits: %+v", hits)
	}
}

func testDocumentInvalid(t *testing.T, s Record) {
	ctx := t.Context()
	c := newConversation(t, s, alice)
	d := newDocument(t, s, c, "ok.md")
	putText(t, s, d, "original text")
	for name, nd := range map[string]store.NewDocument{
		"no user":         {ConversationID: c.ID, Filename: "a", ContentType: "text/plain"},
		"no file name":    {UserID: alice, ConversationID: c.ID, ContentType: "text/plain"},
		"no type":         {UserID: alice, ConversationID: c.ID, Filename: "a"},
		"NUL in the name": {UserID: alice, ConversationID: c.ID, Filename: "a\x00b", ContentType: "text/plain"},
		"negative size":   {UserID: alice, ConversationID: c.ID, Filename: "a", ContentType: "text/plain", SizeBytes: -1},
	} {
		_, err := s.CreateDocument(ctx, nd)
		wantErr(t, name, err, store.ErrInvalid)
	}
	_, err := s.SetDocumentStatus(ctx, d.ID, "done", "")
	wantErr(t, "unknown status", err, store.ErrInvalid)
	wantErr(t, "NUL in a chunk", s.PutChunks(ctx, d.ID, []store.NewChunk{{Text: "a\x00b"}}, 0), store.ErrInvalid)
	if got := allDocuments(t, s, alice, c.ID); len(got) != 1 || got[0].Status != store.DocReady {
		t.Fatalf("documents after invalid calls: %+v", got)
	}
	if got := must(s.DocumentChunks(ctx, alice, d.ID, nil))(t); len(got) != 1 || got[0].Text != "original text" {
		t.Fatalf("chunks after invalid calls: %+v", got)
	}
}

// BenchmarkSearchChunks measures SearchChunks over 10,000 chunks of about
// 4,000 characters (200 documents of 50, one user, 10 conversations), of
// words drawn from a Zipf distribution over a vocabulary of 5,000. Each
// query is three words, searched across all the user's documents (user:
// the widest scope, 10,000 chunks) and across one conversation's
// (conversation: 1,000 chunks); each reports the latency's p50 and p99 in
// milliseconds. settle, when not nil, runs after the load and before the
// searches: PostgreSQL's ANALYZE, say, which autovacuum would run after
// such a load (without statistics the planner walks the GIN index once
// per document).
func BenchmarkSearchChunks(b *testing.B, s Record, settle func()) {
	ctx := b.Context()
	rng := rand.New(rand.NewPCG(1, 2))
	vocab := make([]string, 5000)
	for i := range vocab {
		vocab[i] = fmt.Sprintf("%s%d", []string{"lumen", "quartz", "harbor", "ember", "tundra", "violet", "cobalt", "meadow"}[i%8], i)
	}
	zipf := rand.NewZipf(rng, 1.1, 2, uint64(len(vocab)-1))
	words := func(n int) string {
		var sb strings.Builder
		for sb.Len() < n {
			sb.WriteString(vocab[zipf.Uint64()])
			if rng.IntN(12) == 0 {
				sb.WriteString(". ")
			} else {
				sb.WriteByte(' ')
			}
		}
		return sb.String()
	}
	user := "bench-user"
	var firstConv string
	for conv := range 10 {
		c, err := s.CreateConversation(ctx, store.NewConversation{UserID: user})
		if err != nil {
			b.Fatal(err)
		}
		if firstConv == "" {
			firstConv = c.ID
		}
		for range 20 {
			d, err := s.CreateDocument(ctx, store.NewDocument{UserID: user, ConversationID: c.ID, Filename: fmt.Sprintf("doc-%d.md", conv), ContentType: "text/markdown"})
			if err != nil {
				b.Fatal(err)
			}
			chunks := make([]store.NewChunk, 50)
			for i := range chunks {
				chunks[i] = store.NewChunk{Index: i, Start: i * 3500, End: i*3500 + 4000, Text: words(4000)}
			}
			if err := s.PutChunks(ctx, d.ID, chunks, 0); err != nil {
				b.Fatal(err)
			}
		}
	}
	if settle != nil {
		settle()
	}
	for _, scope := range []struct {
		name string
		conv string
	}{{"user", ""}, {"conversation", firstConv}} {
		b.Run(scope.name, func(b *testing.B) {
			var lat []time.Duration
			for b.Loop() {
				q := vocab[zipf.Uint64()] + " " + vocab[rng.IntN(len(vocab))] + " " + vocab[zipf.Uint64()]
				start := time.Now()
				if _, err := s.SearchChunks(ctx, store.ChunkQuery{UserID: user, ConversationID: scope.conv, Query: q}); err != nil {
					b.Fatal(err)
				}
				lat = append(lat, time.Since(start))
			}
			sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
			ms := func(p float64) float64 { return float64(lat[int(p*float64(len(lat)-1))]) / float64(time.Millisecond) }
			b.ReportMetric(ms(0.50), "p50-ms")
			b.ReportMetric(ms(0.99), "p99-ms")
		})
	}
}

// testStrandedUploads: the uploads left in status uploading before a
// time are listed oldest first, across users, up to the limit; a
// document processing took on is not.
func testStrandedUploads(t *testing.T, s Record) {
	ctx := t.Context()
	a, b := newConversation(t, s, alice), newConversation(t, s, bob)
	d1 := newDocument(t, s, a, "one.md")
	d2 := newDocument(t, s, b, "two.md")
	d3 := newDocument(t, s, a, "three.md")
	if _, err := s.SetDocumentStatus(ctx, d3.ID, store.DocChunking, ""); err != nil {
		t.Fatal(err)
	}
	later := time.Now().Add(time.Minute)
	got := must(s.StrandedUploads(ctx, later, 10))(t)
	if ids := docIDs(got); !slices.Equal(ids, []string{d1.ID, d2.ID}) {
		t.Errorf("stranded = %v, want %v", ids, []string{d1.ID, d2.ID})
	}
	if got := must(s.StrandedUploads(ctx, later, 1))(t); len(got) != 1 || got[0].ID != d1.ID {
		t.Errorf("limit 1: %v", docIDs(got))
	}
	if got := must(s.StrandedUploads(ctx, d1.CreatedAt, 10))(t); len(got) != 0 {
		t.Errorf("before the first upload: %v", docIDs(got))
	}
	if _, err := s.StrandedUploads(ctx, later, 0); !errors.Is(err, store.ErrInvalid) {
		t.Errorf("limit 0: %v, want ErrInvalid", err)
	}
}

func docIDs(ds []store.Document) []string {
	out := make([]string, len(ds))
	for i, d := range ds {
		out[i] = d.ID
	}
	return out
}
