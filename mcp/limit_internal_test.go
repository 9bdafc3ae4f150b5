package mcp

import (
	"bytes"
	"encoding/json"
	"io"
	"strings"
	"testing"
)

func readLimited(t testing.TB, in string, max int) (string, []json.RawMessage) {
	t.Helper()
	var dropped []json.RawMessage
	out, err := io.ReadAll(newLimitReader(strings.NewReader(in), max, func(_ int, id json.RawMessage) { dropped = append(dropped, id) }))
	if err != nil {
		t.Fatal(err)
	}
	return string(out), dropped
}

func TestLimitReader(t *testing.T) {
	big := strings.Repeat("x", 200)
	refusal := func(id string) string {
		return `{"error":{"code":-32603,"message":"the server's answer is more than the 100 bytes allowed"},"id":` + id + `,"jsonrpc":"2.0"}` + "\n"
	}
	for _, tc := range []struct{ name, in, want string }{
		{"small lines pass", "{\"id\":1}\n{\"id\":2}\n", "{\"id\":1}\n{\"id\":2}\n"},
		{"id first", `{"jsonrpc":"2.0","id":7,"result":"` + big + "\"}\n{\"id\":8}\n", refusal("7") + "{\"id\":8}\n"},
		{"id last, after a nested id", `{"result":{"id":99,"text":"` + big + `"},"jsonrpc":"2.0","id":"a\"b"}` + "\n", refusal(`"a\"b"`)},
		{"id key inside a string", `{"result":"\"id\":5 ` + big + `","id":6}` + "\n", refusal("6")},
		{"sse data line", `data: {"jsonrpc":"2.0","id":3,"result":"` + big + "\"}\n\n", "data: " + refusal("3") + "\n"},
		{"json body without newline", `{"jsonrpc":"2.0","id":4,"result":"` + big + `"}`, refusal("4")},
		{"notification dropped", `{"jsonrpc":"2.0","method":"x","params":"` + big + "\"}\n{\"id\":1}\n", "{\"id\":1}\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got, _ := readLimited(t, tc.in, 100); got != tc.want {
				t.Errorf("got  %q\nwant %q", got, tc.want)
			}
		})
	}
}

// TestLimitReaderHoldsOneLine: a line far longer than the reader's buffer
// is discarded in pieces, never held whole.
func TestLimitReaderHoldsOneLine(t *testing.T) {
	huge := `{"id":1,"result":"` + strings.Repeat("y", 10<<20) + "\"}\n"
	l := newLimitReader(strings.NewReader(huge), 1000, nil)
	out, err := io.ReadAll(l)
	if err != nil || !bytes.Contains(out, []byte(`"id":1`)) || cap(l.line) > 1<<17 {
		t.Fatalf("out %q, err %v, line buffer %d bytes", out, err, cap(l.line))
	}
}

func FuzzLimitReader(f *testing.F) {
	f.Add("{\"id\":1}\n", 10)
	f.Add(`data: {"jsonrpc":"2.0","id":3,"result":"xxxxxxxxxxxxxxxxxxxxxx"}`+"\n", 20)
	f.Add(`{"a":[{"id":[1,{"id":2}]}],"id":"\\\"","b":"`+"\n", 5)
	f.Fuzz(func(t *testing.T, in string, max int) {
		if max <= 0 || max > 1<<16 {
			return
		}
		out, _ := readLimited(t, in, max)
		long := false
		for line := range strings.Lines(in) {
			long = long || len(line) > max
		}
		if !long && out != in {
			t.Fatalf("lines within the limit changed: %q → %q", in, out)
		}
		for line := range strings.Lines(out) {
			if len(line) > max && !strings.Contains(line, "bytes allowed") {
				t.Fatalf("a line of %d bytes passed a limit of %d", len(line), max)
			}
		}
	})
}
