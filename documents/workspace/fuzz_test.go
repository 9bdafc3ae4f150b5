package workspace_test

import (
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"github.com/trellis-ai/trellis/documents"
	"github.com/trellis-ai/trellis/documents/workspace"
)

// FuzzCheckPath: a path CheckPath accepts is relative, UTF-8, of
// non-empty segments none of which climbs, within the bounds, and makes
// an object key no backend refuses; checking it again changes nothing.
func FuzzCheckPath(f *testing.F) {
	for _, s := range []string{"notes.md", "./a/b.txt", "/etc/passwd", "a/../b", "a//b", "ü/é.md", "a\\b", "\x00", "..", ".", "a/", "\U0010FFFF"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, path string) {
		p, err := workspace.CheckPath(path)
		if err != nil {
			return
		}
		if !utf8.ValidString(p) || strings.HasPrefix(p, "/") || len(p) > workspace.MaxPathBytes || strings.Count(p, "/")+1 > workspace.MaxPathDepth {
			t.Fatalf("accepted %q as %q", path, p)
		}
		for _, seg := range strings.Split(p, "/") {
			if seg == "" || seg == "." || seg == ".." {
				t.Fatalf("accepted %q with segment %q", path, seg)
			}
		}
		for _, r := range p {
			if unicode.IsControl(r) || r == '\\' {
				t.Fatalf("accepted %q with %U", path, r)
			}
		}
		if again, err := workspace.CheckPath(p); err != nil || again != p {
			t.Fatalf("checked again: %q %v", again, err)
		}
		if err := documents.CheckKey("user/u/workspace/" + p); err != nil {
			t.Fatalf("accepted %q, which no object key may hold: %v", path, err)
		}
	})
}
