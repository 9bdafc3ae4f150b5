package pgstore

import (
	"context"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5/pgtype"

	"github.com/trellis-ai/trellis/store/internal/sqlstore"
)

// A chunk's tsvector is what to_tsvector('pg_catalog.english', text)
// makes of its text. Computed by the server, it is most of the cost of
// storing a document: PostgreSQL's default parser reads about 4–6 MB/s,
// where everything else ingest does runs at over 20. Yet a text repeats
// itself: a document of a million characters has a few thousand distinct
// pieces between white space. So the vector is built here, from what the
// server makes of each distinct piece alone: the text is cut at ASCII
// white space, which ends every token of the parser's but a tag's; the
// server is asked once per document what each distinct piece becomes,
// lexemes and positions, and how many positions it takes (a sentinel
// word after it counts them, stop words included); and each piece's
// lexemes are laid out after the positions of the pieces before it.
// Dictionaries, stop words, stemming and the parser's reading of each
// piece, its locale included, stay PostgreSQL's. A text with a tag
// ('<'), or one that would meet a tsvector's limits, gets an empty
// vector, which the chunks' trigger replaces with the server's own
// (migration 0007).

// chunkIndex is pgstore's sqlstore.ChunkIndex.
var chunkIndex = &sqlstore.ChunkIndex{Column: "tsv", Compute: chunkVectors}

// Limits of a tsvector that the parser applies silently: a position past
// maxPosition is stored as maxPosition, and a lexeme keeps at most
// maxPositions positions. A text that would meet either is left to the
// server.
const (
	maxPosition  = 1<<14 - 1
	maxPositions = 255
)

// sentinel follows each piece asked of the server, so the position the
// server gives it is one past the positions the piece takes.
const sentinel = "zzyzx"

// chunkVectors returns, for each text, its tsvector, or an empty one
// where the server must compute it. They go to the server in binary
// (pgx's TSVector): PostgreSQL's text input for tsvector reads about 18
// MB/s, which would give back much of what building them here saves.
func chunkVectors(ctx context.Context, q sqlstore.Querier, texts []string) ([]any, error) {
	// A piece that begins its text is read apart (see piece); few do.
	pieceIDs, firstIDs := map[string]int32{}, map[string]int32{}
	var pieces []piece
	intern := func(s string, first bool) int32 {
		ids := pieceIDs
		if first {
			ids = firstIDs
		}
		id, seen := ids[s]
		if !seen {
			id = int32(len(pieces))
			ids[s] = id
			pieces = append(pieces, piece{s, first})
		}
		return id
	}
	textPieces := make([][]int32, len(texts))
	for i, t := range texts {
		// A tag may hold white space ("<a href=x>"), and is not indexed.
		if strings.IndexByte(t, '<') >= 0 {
			continue
		}
		// ASCII white space bytes are never part of a longer UTF-8
		// sequence, so the text is cut bytewise.
		ids := make([]int32, 0, len(t)/6)
		start := -1
		for j := 0; j <= len(t); j++ {
			if j < len(t) && !isSpace(t[j]) {
				if start < 0 {
					start = j
				}
				continue
			}
			if start >= 0 {
				ids = append(ids, intern(t[start:j], start == 0))
				start = -1
			}
		}
		textPieces[i] = ids
	}
	out := make([]any, len(texts))
	for i := range out {
		out[i] = pgtype.TSVector{Valid: true}
	}
	if len(pieces) == 0 {
		return out, nil
	}
	read, lexemes, err := readPieces(ctx, q, pieces)
	if err != nil {
		return nil, err
	}
	positions := make([][]pgtype.TSVectorPosition, len(lexemes))
	var touched []int32
	for i, ids := range textPieces {
		if ids == nil {
			continue
		}
		touched = touched[:0]
		ok, base, total := true, 0, 0
		for _, id := range ids {
			r := read[id]
			if r.span < 0 || base+r.span > maxPosition {
				ok = false
				break
			}
			for _, e := range r.entries {
				if len(positions[e.lexeme]) == 0 {
					touched = append(touched, e.lexeme)
				}
				positions[e.lexeme] = append(positions[e.lexeme], pgtype.TSVectorPosition{Position: uint16(base + e.position)})
				total++
			}
			base += r.span
		}
		// One array holds the text's positions, each lexeme a slice of it.
		all := make([]pgtype.TSVectorPosition, 0, total)
		v := pgtype.TSVector{Lexemes: make([]pgtype.TSVectorLexeme, 0, len(touched)), Valid: true}
		for _, l := range touched {
			if len(positions[l]) > maxPositions {
				ok = false
			}
			if ok {
				all = append(all, positions[l]...)
				v.Lexemes = append(v.Lexemes, pgtype.TSVectorLexeme{Word: lexemes[l], Positions: all[len(all)-len(positions[l]):]})
			}
			positions[l] = positions[l][:0]
		}
		if ok {
			out[i] = v
		}
	}
	return out, nil
}

// reading is what the server made of one piece alone: its lexemes at
// positions counted from 1, in the order the server listed them, and the
// number of positions the piece takes (span), or -1 if the reply did not
// say.
type reading struct {
	entries []entry
	span    int
}

type entry struct {
	lexeme   int32 // index in readPieces' lexemes
	position int
}

// piece is text between white space, and whether it begins its text: the
// parser reads a few characters otherwise there ("~x" is a file at the
// start, a word after a space), so a piece is read where it stands.
type piece struct {
	text  string
	first bool
}

// readPieces asks the server what each piece becomes alone, at the
// piece's index; lexemes are the distinct lexemes the entries name.
func readPieces(ctx context.Context, q sqlstore.Querier, pieces []piece) ([]reading, []string, error) {
	texts, firsts := make([]string, len(pieces)), make([]bool, len(pieces))
	for i, p := range pieces {
		texts[i], firsts[i] = p.text, p.first
	}
	rows, err := q.Query(ctx, `SELECT w.i, l.lexeme, l.positions
        FROM unnest(?::text[], ?::boolean[]) WITH ORDINALITY AS w (piece, first, i),
             unnest(to_tsvector('pg_catalog.english',
                 CASE WHEN w.first THEN '' ELSE ' ' END || w.piece || ' `+sentinel+`')) AS l`, texts, firsts)
	if err != nil {
		return nil, nil, fmt.Errorf("read %d pieces: %w", len(pieces), err)
	}
	defer rows.Close()
	read := make([]reading, len(pieces))
	for i := range read {
		read[i].span = -1
	}
	lost := make([]bool, len(pieces))
	lexemeIDs := map[string]int32{}
	var lexemes []string
	var (
		i   int64
		lex string
		pos []int16
	)
	for rows.Next() {
		if err := rows.Scan(&i, &lex, &pos); err != nil {
			return nil, nil, fmt.Errorf("read %d pieces: %w", len(pieces), err)
		}
		r := &read[i-1]
		if lex == sentinel {
			// The sentinel is the last token: its last position. The
			// piece's own use of the word, if any, comes before it.
			r.span = int(pos[len(pos)-1]) - 1
			pos = pos[:len(pos)-1]
		}
		if len(pos) == 0 {
			continue
		}
		if len(pos) >= maxPositions {
			lost[i-1] = true // the server may have dropped some
			continue
		}
		id, seen := lexemeIDs[lex]
		if !seen {
			id = int32(len(lexemes))
			lexemeIDs[lex] = id
			lexemes = append(lexemes, lex)
		}
		for _, p := range pos {
			r.entries = append(r.entries, entry{lexeme: id, position: int(p)})
		}
	}
	if err := rows.Err(); err != nil {
		return nil, nil, fmt.Errorf("read %d pieces: %w", len(pieces), err)
	}
	// A position at the parser's limit may be a clamped one; a piece
	// that lost positions is not read whole.
	for k := range read {
		if read[k].span >= maxPosition-1 || lost[k] {
			read[k].span = -1
		}
	}
	return read, lexemes, nil
}

// isSpace reports the ASCII white space that ends any token of the
// parser's but a tag's, whatever the database's locale. Other white
// space (U+00A0 …) stays inside a piece, for the server to read.
func isSpace(c byte) bool {
	return c == ' ' || c == '\n' || c == '\t' || c == '\r' || c == '\f' || c == '\v'
}
