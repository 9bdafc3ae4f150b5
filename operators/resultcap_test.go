package operators_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/trellis-ai/trellis/operators"
)

type emptyIn struct{}

// bigProvider offers one local tool "big" returning res, under a cap of
// limit bytes.
func bigProvider(t *testing.T, limit int, res operators.Result) *operators.Provider {
	t.Helper()
	local := operators.NewRegistry()
	local.MustAdd(operators.NewTool("big", "Returns a lot.", func(context.Context, operators.Call, emptyIn) (operators.Result, error) {
		return res, nil
	}))
	return operators.NewProvider(operators.ProviderConfig{Local: local, MaxResultBytes: limit})
}

// TestHugeResultIsCut: a 3 MiB text result is cut to the default 1 MiB at
// a character boundary; the model reads a note saying so, and the result
// says it was truncated.
func TestHugeResultIsCut(t *testing.T) {
	huge := strings.Repeat("é", 3<<19) // 3 MiB of two-byte characters
	p := bigProvider(t, 0, operators.TextResult("x"+huge))
	res := p.Execute(t.Context(), "big", nil, operators.Call{})
	if res.IsError() || !res.Truncated {
		t.Fatalf("result: error %q, truncated %v", res.Error, res.Truncated)
	}
	text := res.Text()
	want := "\n[truncated: the result was 3145729 bytes; the first 1048575 are shown]"
	if !strings.HasSuffix(text, want) {
		t.Fatalf("result ends %q, want %q", text[len(text)-100:], want)
	}
	if kept := strings.TrimSuffix(text, want); len(kept) != 1048575 || !utf8.ValidString(kept) || !strings.HasPrefix(kept, "xé") {
		t.Fatalf("kept %d bytes (valid UTF-8: %v)", len(kept), utf8.ValidString(kept))
	}
	b, err := json.Marshal(res)
	if err != nil || !strings.Contains(string(b), `"truncated":true`) || len(b) > 1<<20+1024 {
		t.Fatalf("stored result: %d bytes, %v", len(b), err)
	}
}

func TestResultCap(t *testing.T) {
	img := operators.ImageContent("image/png", make([]byte, 300)) // 400 bytes as base64
	jsonC, _ := operators.JSONContent(map[string]string{"k": strings.Repeat("v", 50)})
	for _, tc := range []struct {
		name      string
		limit     int
		res       operators.Result
		want      []operators.Content
		truncated bool
	}{
		{"fits", 100, operators.TextResult("small"), []operators.Content{operators.TextContent("small")}, false},
		{"no cap", -1, operators.TextResult(strings.Repeat("a", 2<<20)), []operators.Content{operators.TextContent(strings.Repeat("a", 2<<20))}, false},
		{"image dropped", 100, operators.Result{Contents: []operators.Content{operators.TextContent("look:"), img, operators.TextContent("after")}},
			[]operators.Content{operators.TextContent("look:"), operators.TextContent("[truncated: the result was 410 bytes; the first 5 are shown]")}, true},
		{"json becomes cut text", 10, operators.Result{Contents: []operators.Content{jsonC}},
			[]operators.Content{operators.TextContent(`{"k":"vvvv`), operators.TextContent("[truncated: the result was 58 bytes; the first 10 are shown]")}, true},
		{"markdown cut at a character", 3, operators.Result{Contents: []operators.Content{operators.MarkdownContent("**é**")}},
			[]operators.Content{operators.MarkdownContent("**"), operators.TextContent("[truncated: the result was 6 bytes; the first 2 are shown]")}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := bigProvider(t, tc.limit, tc.res).Execute(t.Context(), "big", nil, operators.Call{})
			got, _ := json.Marshal(res.Contents)
			want, _ := json.Marshal(tc.want)
			if string(got) != string(want) || res.Truncated != tc.truncated {
				t.Errorf("contents %.200s (truncated %v)\nwant %.200s (truncated %v)", got, res.Truncated, want, tc.truncated)
			}
		})
	}
}

// TestHugeErrorIsCut: an error message counts too.
func TestHugeErrorIsCut(t *testing.T) {
	p := bigProvider(t, 10, operators.Result{Status: operators.StatusError, Error: strings.Repeat("e", 100)})
	res := p.Execute(t.Context(), "big", nil, operators.Call{})
	if !res.IsError() || !res.Truncated || res.Error != "eeeeeeeeee\n[truncated: the result was 100 bytes; the first 10 are shown]" {
		t.Fatalf("result = %q (truncated %v)", res.Error, res.Truncated)
	}
}

// TestChunksCountTowardsTheCap: data chunks are kept while they fit, and
// the note reaches the model even when only chunks were cut.
func TestChunksCountTowardsTheCap(t *testing.T) {
	p := bigProvider(t, 12, operators.Result{Contents: []operators.Content{operators.TextContent("found")},
		Chunks: []operators.DataChunk{{Source: "a", Text: "alpha"}, {Source: "b", Text: "beta"}}})
	res := p.Execute(t.Context(), "big", nil, operators.Call{})
	if !res.Truncated || len(res.Chunks) != 2 || res.Chunks[1].Text != "be" ||
		res.Text() != "found\n[truncated: the result was 14 bytes; the first 12 are shown]" {
		t.Fatalf("result = %q, chunks %+v", res.Text(), res.Chunks)
	}
}
