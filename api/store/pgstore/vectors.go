package pgstore

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/jackc/pgx/v5/pgtype"

	"github.com/trellis-ai/trellis/api/store/internal/sqlstore"
)

// A chunk's tsvector is what to_tsvector('pg_catalog.english', text)
// makes of its text. Computed by the server, it is most of the cost of
// storing a document: PostgreSQL's default parser reads about 4–6 MB/s,
// where everything else ingest does runs at over 20. So for text in a
// subset of ASCII whose every word the parser provably reads alone,
// the vector is built here: the text is split into words, the server
// is asked once per batch for what each distinct word becomes (so the
// dictionaries, stop words and stemming stay PostgreSQL's), and the
// words' lexemes are laid out at the positions the parser would give
// them. Any other text gets an empty vector, which the chunks' trigger
// replaces with the server's own (migration 0007).

// chunkIndex is pgstore's sqlstore.ChunkIndex.
var chunkIndex = &sqlstore.ChunkIndex{Column: "tsv", Compute: chunkVectors}

// Limits of a tsvector that the parser applies silently: a position past
// maxPosition is stored as maxPosition, a lexeme keeps at most
// maxPositions positions, a word of maxWord bytes or more is skipped. A
// text that would meet any of them is left to the server.
const (
	maxPosition  = 1<<14 - 1
	maxPositions = 255
	maxWord      = 2047
)

// sentinel follows each word asked of the server, so the position the
// server gives it counts the tokens the word was read as: 2 when it was
// one token, whether or not that token was a stop word.
const sentinel = "zzyzx"

// chunkVectors returns, for each text, its tsvector, or an empty one
// where the server must compute it. They go to the server in binary
// (pgx's TSVector): PostgreSQL's text input for tsvector reads about 18
// MB/s, which would give back much of what building them here saves.
func chunkVectors(ctx context.Context, q sqlstore.Querier, texts []string) ([]any, error) {
	wordIDs := map[string]int32{}
	var words []string
	textWords := make([][]int32, len(texts))
	for i, t := range texts {
		ids, ok := splitWords(t, func(w string) int32 {
			id, seen := wordIDs[w]
			if !seen {
				id = int32(len(words))
				wordIDs[w] = id
				words = append(words, w)
			}
			return id
		})
		if ok && len(ids) <= maxPosition {
			textWords[i] = ids
		}
	}
	out := make([]any, len(texts))
	for i := range out {
		out[i] = pgtype.TSVector{Valid: true}
	}
	if len(words) == 0 {
		return out, nil
	}
	wordLexemes, known, lexemes, err := lexemesOf(ctx, q, words)
	if err != nil {
		return nil, err
	}
	positions := make([][]pgtype.TSVectorPosition, len(lexemes))
	var touched []int32
	for i, ids := range textWords {
		if ids == nil {
			continue
		}
		touched = touched[:0]
		ok, total := true, 0
		for p, w := range ids {
			if !known[w] {
				ok = false
				break
			}
			for _, l := range wordLexemes[w] {
				if len(positions[l]) == 0 {
					touched = append(touched, l)
				}
				positions[l] = append(positions[l], pgtype.TSVectorPosition{Position: uint16(p + 1)})
				total++
			}
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

// lexemesOf asks the server what each word becomes alone: wordLexemes
// holds, at a word's index, the indexes in lexemes of its lexemes (none
// for a stop word); known is false for a word the server read as more
// than one token.
func lexemesOf(ctx context.Context, q sqlstore.Querier, words []string) (wordLexemes [][]int32, known []bool, lexemes []string, err error) {
	rows, err := q.Query(ctx, `SELECT w.i, l.lexeme, l.positions
        FROM unnest(?::text[]) WITH ORDINALITY AS w (word, i),
             unnest(to_tsvector('pg_catalog.english', w.word || ' `+sentinel+`')) AS l`, words)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("lexemes of %d words: %w", len(words), err)
	}
	defer rows.Close()
	wordLexemes = make([][]int32, len(words))
	single := make([]bool, len(words)) // the sentinel came second
	broken := make([]bool, len(words)) // a lexeme of the word is past position 1
	lexemeIDs := map[string]int32{}
	for rows.Next() {
		var (
			i   int64
			lex string
			pos []int16
		)
		if err := rows.Scan(&i, &lex, &pos); err != nil {
			return nil, nil, nil, fmt.Errorf("lexemes of %d words: %w", len(words), err)
		}
		w := i - 1
		for _, p := range pos {
			switch {
			case lex == sentinel && p == 2:
				single[w] = true
			case p != 1:
				broken[w] = true
			default:
				id, seen := lexemeIDs[lex]
				if !seen {
					id = int32(len(lexemes))
					lexemeIDs[lex] = id
					lexemes = append(lexemes, lex)
				}
				wordLexemes[w] = append(wordLexemes[w], id)
			}
		}
	}
	if err := rows.Err(); err != nil {
		return nil, nil, nil, fmt.Errorf("lexemes of %d words: %w", len(words), err)
	}
	known = make([]bool, len(words))
	for w := range words {
		known[w] = single[w] && !broken[w]
	}
	return wordLexemes, known, lexemes, nil
}

// splitWords calls id for each word of text, in order, and returns the
// ids, or false when text is not one whose words the parser reads alone.
//
// A word is a run of ASCII letters and digits. Around words there may be
// only white space and the punctuation in separators, which the parser
// takes as nothing but a gap between words in any context — with two
// exceptions: '.' and ':' followed by anything but white space or
// closing punctuation, which begin hosts, files, versions and URLs
// ("e.g", "1.5", "a:b", and ".." alone a file). Anything else
// (other punctuation, such as the '-' of "-1" and "well-known" or the '/'
// of a path; a control byte; any byte outside ASCII) sends the whole
// text to the server. A word that the parser itself cuts in two ("1e5x"
// is 1e5 then x) is found when the server reads it alone.
func splitWords(text string, id func(word string) int32) ([]int32, bool) {
	ids := make([]int32, 0, len(text)/6)
	start := -1
	for i := 0; i <= len(text); i++ {
		var c byte
		if i < len(text) {
			c = text[i]
			if isAlnum(c) {
				if start < 0 {
					start = i
				}
				continue
			}
		}
		if start >= 0 {
			if i-start >= maxWord {
				return nil, false
			}
			ids = append(ids, id(text[start:i]))
			start = -1
		}
		if i == len(text) {
			break
		}
		switch {
		case c == ' ' || c == '\n' || c == '\t' || c == '\r':
		case (c == '.' || c == ':') && i+1 < len(text) && strings.IndexByte(closers, text[i+1]) < 0:
			return nil, false
		case strings.IndexByte(separators, c) >= 0:
		default:
			return nil, false
		}
	}
	return slices.Clip(ids), true
}

// separators is the punctuation splitWords passes over: what Markdown
// and prose put between words (the apostrophe too: "don't" is two
// words to the parser). closers are what may follow a '.' or ':';
// Nothing outside ASCII is among them: where the database's LC_CTYPE is
// C, the parser takes every such character for a letter, so even a
// typographic quote may join two words.
const (
	separators = `.,;:!?()[]"*#_'`
	closers    = " \n\t\r,;!?)]\"*'"
)

func isAlnum(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}
