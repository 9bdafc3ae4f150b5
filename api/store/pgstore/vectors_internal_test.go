package pgstore

import (
	"fmt"
	"math/rand/v2"
	"os"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgtype"

	"github.com/trellis-ai/trellis/api/store"
	"github.com/trellis-ai/trellis/internal/pgtest"
)

// vectorCorpus is text the client-side vectors are held against the
// server's: prose and Markdown as documents have it, the parser's
// corners, and random strings over an alphabet weighted toward them.
// safe counts its leading texts that must take the client's path.
func vectorCorpus(t *testing.T) (texts []string, safe int) {
	var md strings.Builder
	for s := range 3 {
		fmt.Fprintf(&md, "## Section %d\n\n", s)
		for k := range 8 {
			fmt.Fprintf(&md, "Sentence %d of paragraph %d discusses item %d (in detail), with numbers like %d; **running** runs ran: \"quoted\" #tag x_y. ", k, s, s*k, s+k)
		}
		md.WriteString("\n\n")
	}
	texts = append(texts,
		md.String(),
		"Running RUNS ran runner, the THE The of and: 007 0x1F 3rd abc123 1e5 2e e5 1E10",
		"end. x. y.\t(a)[b]*c*#d_e!f?g;h,i: j.) k.\" l:* m.",
		strings.Repeat("word ", 255),
		"Sentence",
		"It's the user's first try: don't stop. 'quoted' ''twice''",
	)
	safe = len(texts)
	texts = append(texts,
		"1e5x 12e3e4 1e5a",            // the parser cuts these words in two
		strings.Repeat("word ", 256),  // a lexeme past 255 positions
		strings.Repeat("x", maxWord),  // a word the parser skips
		"e.g. 1.5 v1.2.3 a:b ..a x.y", // hosts, files, versions
		"b765fz..", "end.. x", "a.:b", // '..' alone is a file
		"well-known -1 +1 x+1 a/b a@b", // hyphens, signs, paths, emails
		"don't <b>bold</b> &amp; ~x $5 50% a=b a^b `c` {d} a|b \\n",
		"café naïve 東京 résumé",
		"It’s “first” — typeset", // one word to the parser where LC_CTYPE is C
		"", " \n ", "the of and",
	)
	if data, err := os.ReadFile("../../../documents/testdata/handbook.md"); err == nil {
		for s := string(data); s != ""; {
			n := min(len(s), 4000)
			texts = append(texts, s[:n])
			s = s[n:]
		}
	} else {
		t.Fatal(err)
	}
	const alphabet = "abcdeEXYZz0123456789    \n\t.,;:!?()[]\"*#_-+/@&<>'~$%=^`{}|\\é’“—"
	r := rand.New(rand.NewPCG(1, 2))
	words, all := []rune("abcdefghijklmnopqrstuvwxyz0123456789  "), []rune(alphabet)
	for n := range 4000 {
		// Mostly letters, digits and spaces, so words form; half the
		// texts draw their other characters from the separators only.
		others := all
		if n%2 == 0 {
			others = []rune(" \n\t" + separators)
		}
		b := make([]rune, r.IntN(60))
		for i := range b {
			if r.IntN(3) > 0 {
				b[i] = words[r.IntN(len(words))]
			} else {
				b[i] = others[r.IntN(len(others))]
			}
		}
		texts = append(texts, string(b))
	}
	return texts, safe
}

// TestChunkVectorsAreTheServers holds every vector built in the client
// against to_tsvector of the same text on the real server: they must be
// equal, lexemes, positions and all. Texts the client cannot read as the
// server does must be left to it.
func TestChunkVectorsAreTheServers(t *testing.T) {
	pool := pgtest.New(t)
	texts, safe := vectorCorpus(t)
	got, err := chunkVectors(t.Context(), querier{pool, &db{pool: pool}}, texts)
	if err != nil {
		t.Fatal(err)
	}
	var (
		vectors []pgtype.TSVector
		of      []string
		built   int
	)
	for i, v := range got {
		tv := v.(pgtype.TSVector)
		if !tv.Valid {
			t.Fatalf("text %d: an invalid vector (NULL)", i)
		}
		if len(tv.Lexemes) == 0 {
			if i < safe {
				t.Errorf("text %d was left to the server: %q", i, texts[i])
			}
			continue
		}
		built++
		vectors, of = append(vectors, tv), append(of, texts[i])
	}
	if built < len(texts)/4 {
		t.Errorf("only %d of %d texts got a vector built in the client", built, len(texts))
	}
	rows, err := pool.Query(t.Context(), `SELECT x.t, x.v::text, to_tsvector('pg_catalog.english', x.t)::text
        FROM unnest($1::tsvector[], $2::text[]) AS x (v, t)
        WHERE x.v IS DISTINCT FROM to_tsvector('pg_catalog.english', x.t)`, vectors, of)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	for rows.Next() {
		var text, mine, theirs string
		if err := rows.Scan(&text, &mine, &theirs); err != nil {
			t.Fatal(err)
		}
		t.Errorf("text %q:\nclient %s\nserver %s", text, mine, theirs)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	t.Logf("%d of %d texts had their vector built in the client", built, len(texts))
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
	texts := []string{"The harbour keeps its boats in winter.", "Le café du port ferme à minuit; the lighthouse stays lit."}
	if err := s.PutChunks(ctx, d.ID, []store.NewChunk{
		{Index: 0, Start: 0, End: 38, Text: texts[0]},
		{Index: 1, Start: 38, End: 95, Text: texts[1]},
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
