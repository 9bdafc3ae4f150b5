package workspace

import (
	"fmt"
	"regexp"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Bounds of a path.
const (
	// MaxPathBytes is the longest path, in bytes.
	MaxPathBytes = 512
	// MaxPathDepth is the most segments of a path.
	MaxPathDepth = 32
)

// CheckPath returns path without a leading "./", or ErrBadPath: a path is valid UTF-8,
// relative (no leading slash), of non-empty segments none of which is
// "." or "..", at most MaxPathBytes long and MaxPathDepth deep, without
// control characters, backslashes or U+10FFFF (which the record uses to
// bound a prefix). A trailing slash is refused: a path names a file.
func CheckPath(path string) (string, error) {
	path = strings.TrimPrefix(path, "./")
	switch {
	case path == "":
		return "", fmt.Errorf("%w: empty", ErrBadPath)
	case len(path) > MaxPathBytes:
		return "", fmt.Errorf("%w: longer than %d bytes", ErrBadPath, MaxPathBytes)
	case !utf8.ValidString(path):
		return "", fmt.Errorf("%w: not UTF-8", ErrBadPath)
	case strings.HasPrefix(path, "/"):
		return "", fmt.Errorf("%w: %q is absolute; paths are relative to the workspace", ErrBadPath, path)
	}
	for _, r := range path {
		if unicode.IsControl(r) || r == '\\' || r == utf8.MaxRune || r == utf8.RuneError {
			return "", fmt.Errorf("%w: %q holds a control character, a backslash or an invalid rune", ErrBadPath, path)
		}
	}
	depth := 0
	for seg := range strings.SplitSeq(path, "/") {
		depth++
		switch seg {
		case "":
			return "", fmt.Errorf("%w: %q has an empty segment", ErrBadPath, path)
		case ".", "..":
			return "", fmt.Errorf("%w: %q has a %q segment", ErrBadPath, path, seg)
		}
	}
	if depth > MaxPathDepth {
		return "", fmt.Errorf("%w: deeper than %d", ErrBadPath, MaxPathDepth)
	}
	return path, nil
}

// checkDir returns a directory prefix for listing: "" (everything) or a
// valid path with a trailing slash.
func checkDir(dir string) (string, error) {
	dir = strings.Trim(strings.TrimPrefix(dir, "./"), "/")
	if dir == "" || dir == "." {
		return "", nil
	}
	p, err := CheckPath(dir)
	if err != nil {
		return "", err
	}
	return p + "/", nil
}

// globRegexp compiles a glob over slash-separated paths: * matches
// within a segment, ** any number of segments, ? one character, [...] a
// class; a pattern without a slash matches a file's base name at any
// depth, as a shell's "**/pattern" would.
func globRegexp(pattern string) (*regexp.Regexp, error) {
	pattern = strings.TrimPrefix(pattern, "./")
	if pattern == "" || len(pattern) > MaxPathBytes*2 || !utf8.ValidString(pattern) {
		return nil, fmt.Errorf("%w: glob %q", ErrInvalid, pattern)
	}
	if !strings.Contains(pattern, "/") && pattern != "**" {
		pattern = "**/" + pattern
	}
	var b strings.Builder
	b.WriteString("^")
	for i := 0; i < len(pattern); {
		switch {
		case strings.HasPrefix(pattern[i:], "**/"):
			b.WriteString("(?:.*/)?")
			i += 3
		case strings.HasPrefix(pattern[i:], "**"):
			b.WriteString(".*")
			i += 2
		case pattern[i] == '*':
			b.WriteString("[^/]*")
			i++
		case pattern[i] == '?':
			b.WriteString("[^/]")
			i++
		case pattern[i] == '[':
			end := strings.IndexByte(pattern[i+1:], ']')
			if end < 0 {
				return nil, fmt.Errorf("%w: glob %q has an unclosed [", ErrInvalid, pattern)
			}
			class := pattern[i+1 : i+1+end]
			if strings.HasPrefix(class, "!") {
				class = "^" + class[1:]
			}
			b.WriteString("[" + strings.ReplaceAll(class, `\`, `\\`) + "]")
			i += end + 2
		default:
			r, size := utf8.DecodeRuneInString(pattern[i:])
			b.WriteString(regexp.QuoteMeta(string(r)))
			i += size
		}
	}
	b.WriteString("$")
	re, err := regexp.Compile(b.String())
	if err != nil {
		return nil, fmt.Errorf("%w: glob %q: %w", ErrInvalid, pattern, err)
	}
	return re, nil
}
