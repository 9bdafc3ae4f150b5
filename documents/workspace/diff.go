package workspace

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// Bounds of Diff.
const (
	// diffContext is how many unchanged lines surround a change.
	diffContext = 3
	// diffCells bounds the work of matching the changed middle line by
	// line (its lines before times its lines after); beyond it the
	// middle is shown as removed and added whole.
	diffCells = 1 << 22
	// MaxDiffBytes is the longest diff Diff returns; a longer one is cut
	// with a note.
	MaxDiffBytes = 64 << 10
)

// Diff is the unified diff that turns before into after, both text, as
// `diff -u` shows it, named path; a file that did not exist (existed
// false) is shown coming from /dev/null, one that no longer exists
// (exists false) going to it. "" when nothing changes.
func Diff(path string, before, after []byte, existed, exists bool) string {
	if string(before) == string(after) && existed == exists {
		return ""
	}
	if !utf8.Valid(before) || !utf8.Valid(after) {
		return fmt.Sprintf("Binary file %s changes (%d bytes before, %d after)\n", path, len(before), len(after))
	}
	a, b := splitLines(string(before)), splitLines(string(after))
	var out strings.Builder
	from, to := "a/"+path, "b/"+path
	if !existed {
		from = "/dev/null"
	}
	if !exists {
		to = "/dev/null"
	}
	fmt.Fprintf(&out, "--- %s\n+++ %s\n", from, to)
	ops := lineOps(a, b)
	for _, h := range hunks(ops) {
		fmt.Fprintf(&out, "@@ -%s +%s @@\n", span(h.aStart, h.aLen), span(h.bStart, h.bLen))
		for _, o := range ops[h.from:h.to] {
			out.WriteString(o.text(a, b))
			if out.Len() > MaxDiffBytes {
				return out.String()[:MaxDiffBytes] + "\n[the diff is longer: cut here]\n"
			}
		}
	}
	return out.String()
}

// splitLines splits s after each newline; a last line without one is
// marked as diff marks it.
func splitLines(s string) []string {
	if s == "" {
		return nil
	}
	lines := strings.SplitAfter(s, "\n")
	if lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	} else {
		lines[len(lines)-1] += "\n\\ No newline at end of file\n"
	}
	return lines
}

// lineOp is one line of the diff: kept (' '), removed ('-') or added
// ('+'), with its index in a or b.
type lineOp struct {
	kind byte
	i    int
}

func (o lineOp) text(a, b []string) string {
	if o.kind == '+' {
		return "+" + b[o.i]
	}
	return string(o.kind) + a[o.i]
}

// lineOps matches a and b: their common head and tail, and between
// them a longest common subsequence when it is small enough to compute.
func lineOps(a, b []string) []lineOp {
	head := 0
	for head < len(a) && head < len(b) && a[head] == b[head] {
		head++
	}
	tail := 0
	for tail < len(a)-head && tail < len(b)-head && a[len(a)-1-tail] == b[len(b)-1-tail] {
		tail++
	}
	ops := make([]lineOp, 0, len(a)+len(b))
	for i := range head {
		ops = append(ops, lineOp{' ', i})
	}
	am, bm := a[head:len(a)-tail], b[head:len(b)-tail]
	if len(am)*len(bm) <= diffCells {
		ops = append(ops, lcsOps(am, bm, head)...)
	} else {
		for i := range am {
			ops = append(ops, lineOp{'-', head + i})
		}
		for i := range bm {
			ops = append(ops, lineOp{'+', head + i})
		}
	}
	for i := range tail {
		ops = append(ops, lineOp{' ', len(a) - tail + i})
	}
	return ops
}

// lcsOps diffs a and b (offset into the whole) by a longest common
// subsequence, removals before additions within a change.
func lcsOps(a, b []string, offset int) []lineOp {
	n, m := len(a), len(b)
	// l[i][j] is the LCS length of a[i:] and b[j:].
	l := make([][]int32, n+1)
	for i := range l {
		l[i] = make([]int32, m+1)
	}
	for i := n - 1; i >= 0; i-- {
		for j := m - 1; j >= 0; j-- {
			if a[i] == b[j] {
				l[i][j] = l[i+1][j+1] + 1
			} else {
				l[i][j] = max(l[i+1][j], l[i][j+1])
			}
		}
	}
	var ops []lineOp
	i, j := 0, 0
	for i < n || j < m {
		switch {
		case i < n && j < m && a[i] == b[j]:
			ops = append(ops, lineOp{' ', offset + i})
			i++
			j++
		case j >= m || (i < n && l[i+1][j] >= l[i][j+1]):
			ops = append(ops, lineOp{'-', offset + i})
			i++
		default:
			ops = append(ops, lineOp{'+', offset + j})
			j++
		}
	}
	return ops
}

// hunk is a run of ops[from:to] shown together, and the lines of a and
// b it covers (starts from 1).
type hunk struct {
	from, to     int
	aStart, aLen int
	bStart, bLen int
}

// hunks groups the changes of ops with diffContext kept lines around
// each, merging groups that touch.
func hunks(ops []lineOp) []hunk {
	var out []hunk
	for k, o := range ops {
		if o.kind == ' ' {
			continue
		}
		from := max(0, k-diffContext)
		if len(out) > 0 && from <= out[len(out)-1].to {
			out[len(out)-1].to = min(len(ops), k+1+diffContext)
			continue
		}
		out = append(out, hunk{from: from, to: min(len(ops), k+1+diffContext)})
	}
	for h := range out {
		ai, bi := 0, 0 // lines of a and b before the hunk
		for _, o := range ops[:out[h].from] {
			if o.kind != '+' {
				ai++
			}
			if o.kind != '-' {
				bi++
			}
		}
		out[h].aStart, out[h].bStart = ai+1, bi+1
		for _, o := range ops[out[h].from:out[h].to] {
			if o.kind != '+' {
				out[h].aLen++
			}
			if o.kind != '-' {
				out[h].bLen++
			}
		}
	}
	return out
}

// span is a hunk header's range: start,len (diff writes start-1 for an
// empty range).
func span(start, n int) string {
	if n == 0 {
		start--
	}
	if n == 1 {
		return fmt.Sprint(start)
	}
	return fmt.Sprintf("%d,%d", start, n)
}
