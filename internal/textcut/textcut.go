package textcut

import "unicode/utf8"

// Head is the longest start of s of at most n bytes that ends on a
// character boundary; s itself when it fits.
func Head(s string, n int) string {
	if n >= len(s) {
		return s
	}
	n = max(n, 0)
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// Tail is the longest end of s of at most n bytes that starts on a
// character boundary; s itself when it fits.
func Tail(s string, n int) string {
	if n >= len(s) {
		return s
	}
	i := len(s) - max(n, 0)
	for i < len(s) && !utf8.RuneStart(s[i]) {
		i++
	}
	return s[i:]
}
