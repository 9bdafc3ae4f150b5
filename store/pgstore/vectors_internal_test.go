package pgstore

import (
	"fmt"
	"math/rand/v2"
	"os"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgtype"

	"github.com/trellis-ai/trellis/internal/pgtest"
	"github.com/trellis-ai/trellis/store"
)

// vectorCorpus is text the client-side vectors are held against the
// server's: Markdown and prose as documents have it, the parser's
// corners, and random strings over an alphabet weighted toward them.
func vectorCorpus(t *testing.T) []string {
	var md strings.Builder
	for s := range 3 {
		fmt.Fprintf(&md, "## Section %d\n\n", s)
		for k := range 8 {
			fmt.Fprintf(&md, "Sentence %d of paragraph %d discusses item %d (in detail), with numbers like %d; **running** runs ran: \"quoted\" #tag x_y. ", k, s, s*k, s+k)
		}
		md.WriteString("\n\n")
	}
	texts := []string{
		md.String(),
		"The well-known real-time e-mail system's users don't read it\u2014they \u201cskim\u201d it\u2026 See https://example.com/a/b?x=1 or write to ops@example.com; v1.2.3 costs $5.50 (3.5% off) on 2024-01-02, and/or ~/notes.txt.",
		"Caf\u00e9 na\u00efve r\u00e9sum\u00e9 \u6771\u4eac 10\u00a0km \u00bd \u2460 Stra\u00dfe \u0130stanbul",
		"Running RUNS ran runner, the THE The of and: 007 0x1F 3rd abc123 1e5 2e e5 1E10 1e5x 12e3e4 1e5a",
		"end.. x. e.g. ..a b765fz.. a.:b x:y a_b -1 +1 x+1 x-1 -x --y a--b a-b-c 1-2 a1-b2 x.y.z 1.2.3.4 http: ftp://a",
		"&amp; &#38; &x a&b a;b",                   // entities
		strings.Repeat("word ", 300),               // a lexeme past 255 positions
		strings.Repeat("x", 2100) + " after",       // a token the parser skips
		"<b>bold</b> <a href=\"x y\">link</a> a<b", // tags: left to the server
		"", " \n ", "the of and",
	}
	data, err := os.ReadFile("../../documents/testdata/handbook.md")
	if err != nil {
		t.Fatal(err)
	}
	texts = append(texts, string(data))
	const alphabet = "abcdeEXYZz0123456789 \n\t.,;:!?()[]\"*#_-+/@&'~$%=^`{}|\\\u00e9\u2019\u201c\u2014\u00a0\u6771"
	words, all := []rune("abcdefghijklmnopqrstuvwxyz0123456789  "), []rune(alphabet)
	r := rand.New(rand.NewPCG(1, 2))
	for range 4000 {
		b := make([]rune, r.IntN(60))
		for i := range b {
			// Mostly letters, digits and spaces, so words form.
			if r.IntN(3) > 0 {
				b[i] = words[r.IntN(len(words))]
			} else {
				b[i] = all[r.IntN(len(all))]
			}
		}
		texts = append(texts, string(b))
	}
	return texts
}

// TestChunkVectorsAreTheServers holds every vector built in the client
// against to_tsvector of the same text on the real server: they must be
// equal, lexemes, positions and all. Every text must get one but those
// with a tag and those the server finds no lexeme in.
func TestChunkVectorsAreTheServers(t *testing.T) {
	pool := pgtest.New(t)
	texts := vectorCorpus(t)
	got, err := chunkVectors(t.Context(), querier{pool, &db{pool: pool}}, texts)
	if err != nil {
		t.Fatal(err)
	}
	vectors := make([]pgtype.TSVector, len(texts))
	for i, v := range got {
		if vectors[i] = v.(pgtype.TSVector); !vectors[i].Valid {
			t.Fatalf("text %d: an invalid vector (NULL)", i)
		}
	}
	rows, err := pool.Query(t.Context(), `SELECT x.t, x.v::text, to_tsvector('pg_catalog.english', x.t)::text
        FROM unnest($1::tsvector[], $2::text[]) AS x (v, t)
        WHERE x.v IS DISTINCT FROM to_tsvector('pg_catalog.english', x.t)`, vectors, texts)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	left := 0
	for rows.Next() {
		var text, mine, theirs string
		if err := rows.Scan(&text, &mine, &theirs); err != nil {
			t.Fatal(err)
		}
		switch {
		case mine != "":
			t.Errorf("text %q:\nclient %s\nserver %s", text, mine, theirs)
		case !strings.Contains(text, "<") && !strings.Contains(text, "word word"):
			t.Errorf("text %q was left to the server", text)
		default:
			left++
		}
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	t.Logf("%d of %d texts left to the server", left, len(texts))
}

// TestChunksIndexedEitherWay stores chunks of both kinds through the
// store: one whose vector the client builds, one the trigger computes,
// and an update of a chunk's text, which the trigger recomputes. Each
// chunk's stored vector is the server's, and a search finds both.
func TestChunksIndexedEitherWay(t *testing.T) {
	pool := pgtest.New(t)
	s, err := New(t.Context(), pool)
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	c, err := s.CreateConversation(ctx, store.NewConversation{UserID: "u"})
	if err != nil {
		t.Fatal(err)
	}
	d, err := s.CreateDocument(ctx, store.NewDocument{UserID: "u", ConversationID: c.ID, Filename: "a.md", ContentType: "text/markdown", SizeBytes: 1})
	if err != nil {
		t.Fatal(err)
	}
	texts := []string{"The harbour keeps its boats in winter.", "<p>Le caf\u00e9 du port ferme \u00e0 minuit; the lighthouse stays lit.</p>"}
	if err := s.PutChunks(ctx, d.ID, []store.NewChunk{
		{Index: 0, Start: 0, End: 38, Text: texts[0]},
		{Index: 1, Start: 38, End: 104, Text: texts[1]},
	}, 0); err != nil {
		t.Fatal(err)
	}
	if _, err := s.FinishDocument(ctx, d.ID, "s"); err != nil {
		t.Fatal(err)
	}
	check := func() {
		t.Helper()
		var wrong, empty int
		if err := pool.QueryRow(ctx, `SELECT count(*) FILTER (WHERE tsv <> to_tsvector('pg_catalog.english', text)),
                count(*) FILTER (WHERE tsv = ''::tsvector) FROM chunks`).Scan(&wrong, &empty); err != nil {
			t.Fatal(err)
		}
		if wrong != 0 || empty != 0 {
			t.Errorf("%d chunks with a vector not the server's, %d with none", wrong, empty)
		}
	}
	check()
	for _, q := range []string{"boats", "lighthouse"} {
		hits, err := s.SearchChunks(ctx, store.ChunkQuery{UserID: "u", ConversationID: c.ID, Query: q})
		if err != nil {
			t.Fatal(err)
		}
		if len(hits) != 1 {
			t.Errorf("search %q: %d hits, want 1", q, len(hits))
		}
	}
	if _, err := pool.Exec(ctx, `UPDATE chunks SET text = 'Only gulls remain.' WHERE idx = 0`); err != nil {
		t.Fatal(err)
	}
	check()
}
