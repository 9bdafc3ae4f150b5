package workspace

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"unicode/utf8"

	"github.com/trellis-ai/trellis/store"
)

// Bounds of listing and searching.
const (
	// MaxList is the most files one List, Glob or Grep returns.
	MaxList = 1000
	// DefaultList is List's page when limit is 0.
	DefaultList = 200
	// grepBytes is the most bytes one Grep reads, over all files.
	grepBytes = 64 << 20
)

func listLimit(limit int) int {
	switch {
	case limit <= 0:
		return DefaultList
	case limit > MaxList:
		return MaxList
	}
	return limit
}

// List returns up to limit (DefaultList when 0, at most MaxList) files
// of the scope under the directory prefix ("" for all), in path order,
// after the path after; next is the path to pass as after for the next
// page, "" when there is none.
func (w *Workspaces) List(ctx context.Context, user string, s Scope, prefix string, after string, limit int) (files []File, next string, err error) {
	sc, err := w.access(ctx, user, s)
	if err != nil {
		return nil, "", err
	}
	dir, err := checkDir(prefix)
	if err != nil {
		return nil, "", err
	}
	limit = listLimit(limit)
	got, err := w.rec.WorkspaceFiles(ctx, sc.rec, dir, after, limit+1)
	if err != nil {
		return nil, "", w.fail(err)
	}
	if len(got) > limit {
		got = got[:limit]
		next = got[limit-1].Path
	}
	files = make([]File, len(got))
	for i, f := range got {
		files[i] = fileOf(f)
	}
	return files, next, nil
}

// Stat returns the file at path.
func (w *Workspaces) Stat(ctx context.Context, user string, s Scope, path string) (File, error) {
	sc, path, err := w.accessPath(ctx, user, s, path)
	if err != nil {
		return File{}, err
	}
	f, err := w.rec.WorkspaceFile(ctx, sc.rec, path)
	if err != nil {
		return File{}, w.fail(err)
	}
	return fileOf(f), nil
}

// accessPath is access and CheckPath.
func (w *Workspaces) accessPath(ctx context.Context, user string, s Scope, path string) (scope, string, error) {
	sc, err := w.access(ctx, user, s)
	if err != nil {
		return scope{}, "", err
	}
	path, err = CheckPath(path)
	return sc, path, err
}

// Read returns the file at path with its current bytes.
func (w *Workspaces) Read(ctx context.Context, user string, s Scope, path string) (File, []byte, error) {
	sc, path, err := w.accessPath(ctx, user, s, path)
	if err != nil {
		return File{}, nil, err
	}
	f, err := w.rec.WorkspaceFile(ctx, sc.rec, path)
	if err != nil {
		return File{}, nil, w.fail(err)
	}
	b, err := w.object(ctx, f.ObjectKey)
	if err != nil {
		return File{}, nil, err
	}
	return fileOf(f), b, nil
}

// ReadVersion returns one version of the file at path with its bytes.
func (w *Workspaces) ReadVersion(ctx context.Context, user string, s Scope, path string, version int) (Version, []byte, error) {
	sc, path, err := w.accessPath(ctx, user, s, path)
	if err != nil {
		return Version{}, nil, err
	}
	v, err := w.rec.FileVersion(ctx, sc.rec, path, version)
	if err != nil {
		return Version{}, nil, w.fail(err)
	}
	b, err := w.object(ctx, v.ObjectKey)
	if err != nil {
		return Version{}, nil, err
	}
	return versionOf(v), b, nil
}

// Write stores data as the file at path: its first version, or a new
// one that keeps the earlier ones.
func (w *Workspaces) Write(ctx context.Context, user string, s Scope, path string, data []byte) (File, error) {
	return w.WriteIf(ctx, user, s, path, data, 0)
}

// WriteIf is Write when the file is at version expect: ErrConflict
// otherwise. An expect of -1 asks that the file not exist; 0 accepts any.
func (w *Workspaces) WriteIf(ctx context.Context, user string, s Scope, path string, data []byte, expect int) (File, error) {
	sc, path, err := w.accessPath(ctx, user, s, path)
	if err != nil {
		return File{}, err
	}
	return w.put(ctx, sc, path, data, store.FileWrite, expect)
}

// Append adds data at the end of the file at path, creating it when
// there is none, as a new version (op edit).
func (w *Workspaces) Append(ctx context.Context, user string, s Scope, path string, data []byte) (File, error) {
	sc, path, err := w.accessPath(ctx, user, s, path)
	if err != nil {
		return File{}, err
	}
	for try := 1; ; try++ {
		var (
			old    []byte
			expect = store.ExpectNone
			op     = store.FileWrite
		)
		f, err := w.rec.WorkspaceFile(ctx, sc.rec, path)
		switch {
		case err == nil:
			if old, err = w.object(ctx, f.ObjectKey); err != nil {
				return File{}, err
			}
			expect, op = f.Version, store.FileEdit
		case !errors.Is(err, store.ErrNotFound):
			return File{}, w.fail(err)
		}
		nf, err := w.put(ctx, sc, path, append(old[:len(old):len(old)], data...), op, expect)
		if errors.Is(err, ErrConflict) && try < editTries {
			continue
		}
		return nf, err
	}
}

// editTries is how often Edit reads and writes again when the file
// changed between the two.
const editTries = 3

// Edit replaces old with new in the UTF-8 text file at path: the one
// occurrence of old (ErrNoMatch when there is none, ErrNotUnique when
// there are several), or every one with all. The result is a new
// version.
func (w *Workspaces) Edit(ctx context.Context, user string, s Scope, path, old, new string, all bool) (File, error) {
	sc, path, err := w.accessPath(ctx, user, s, path)
	if err != nil {
		return File{}, err
	}
	if old == "" {
		return File{}, fmt.Errorf("%w: the text to replace is empty", ErrInvalid)
	}
	for try := 1; ; try++ {
		f, err := w.rec.WorkspaceFile(ctx, sc.rec, path)
		if err != nil {
			return File{}, w.fail(err)
		}
		b, err := w.object(ctx, f.ObjectKey)
		if err != nil {
			return File{}, err
		}
		out, err := Replace(b, old, new, all)
		if err != nil {
			return File{}, fmt.Errorf("%s: %w", path, err)
		}
		nf, err := w.put(ctx, sc, path, out, store.FileEdit, f.Version)
		if errors.Is(err, ErrConflict) && try < editTries {
			continue
		}
		return nf, err
	}
}

// Replace is Edit's replacement on b: ErrNotText, ErrNoMatch or
// ErrNotUnique, or the new bytes.
func Replace(b []byte, old, new string, all bool) ([]byte, error) {
	if !utf8.Valid(b) {
		return nil, ErrNotText
	}
	switch n := bytes.Count(b, []byte(old)); {
	case n == 0:
		return nil, ErrNoMatch
	case n > 1 && !all:
		return nil, fmt.Errorf("%w (%d times): give more surrounding text to pick one, or replace all", ErrNotUnique, n)
	case all:
		return bytes.ReplaceAll(b, []byte(old), []byte(new)), nil
	}
	return bytes.Replace(b, []byte(old), []byte(new), 1), nil
}

// Delete deletes the file at path with its history: its versions' rows
// and objects go, so the bytes count against the quota no longer and a
// file written later at the path starts again at version 1. The record
// goes first; a crash before the objects go leaves objects no record
// names, which deleting the scope's owner removes.
func (w *Workspaces) Delete(ctx context.Context, user string, s Scope, path string) error {
	sc, path, err := w.accessPath(ctx, user, s, path)
	if err != nil {
		return err
	}
	keys, err := w.rec.DeleteFile(ctx, sc.rec, path)
	if err != nil {
		return w.fail(err)
	}
	for _, k := range keys {
		if err := w.files.Delete(ctx, k); err != nil {
			return fmt.Errorf("workspace: delete %s: %w", path, err)
		}
	}
	w.changed(ctx, Change{Scope: s, Path: path, Op: OpDelete})
	return nil
}

// Versions returns every version of the file at path, oldest first.
func (w *Workspaces) Versions(ctx context.Context, user string, s Scope, path string) ([]Version, error) {
	sc, path, err := w.accessPath(ctx, user, s, path)
	if err != nil {
		return nil, err
	}
	vs, err := w.rec.FileVersions(ctx, sc.rec, path)
	if err != nil {
		return nil, w.fail(err)
	}
	out := make([]Version, len(vs))
	for i, v := range vs {
		out[i] = versionOf(v)
	}
	return out, nil
}

// Restore makes version's bytes the file's current ones, as a new
// version (op restore): no version is ever changed or dropped.
func (w *Workspaces) Restore(ctx context.Context, user string, s Scope, path string, version int) (File, error) {
	sc, path, err := w.accessPath(ctx, user, s, path)
	if err != nil {
		return File{}, err
	}
	v, err := w.rec.FileVersion(ctx, sc.rec, path, version)
	if err != nil {
		return File{}, w.fail(err)
	}
	b, err := w.object(ctx, v.ObjectKey)
	if err != nil {
		return File{}, err
	}
	return w.put(ctx, sc, path, b, store.FileRestore, 0)
}

// all walks every file of the scope in path order, a page at a time,
// until fn returns false.
func (w *Workspaces) all(ctx context.Context, sc scope, fn func(f store.WorkspaceFile) (bool, error)) error {
	after := ""
	for {
		page, err := w.rec.WorkspaceFiles(ctx, sc.rec, "", after, MaxList)
		if err != nil {
			return w.fail(err)
		}
		for _, f := range page {
			more, err := fn(f)
			if err != nil || !more {
				return err
			}
		}
		if len(page) < MaxList {
			return nil
		}
		after = page[len(page)-1].Path
	}
}

// Glob returns up to limit (DefaultList when 0, at most MaxList) files
// whose paths match pattern (see globRegexp), in path order.
func (w *Workspaces) Glob(ctx context.Context, user string, s Scope, pattern string, limit int) ([]File, error) {
	sc, err := w.access(ctx, user, s)
	if err != nil {
		return nil, err
	}
	re, err := globRegexp(pattern)
	if err != nil {
		return nil, err
	}
	limit = listLimit(limit)
	out := []File{}
	err = w.all(ctx, sc, func(f store.WorkspaceFile) (bool, error) {
		if re.MatchString(f.Path) {
			out = append(out, fileOf(f))
		}
		return len(out) < limit, nil
	})
	return out, err
}

// Grep returns up to limit (DefaultList when 0, at most MaxList) lines
// that match the regular expression pattern (RE2 syntax), of the text
// files whose paths match pathGlob ("" for all), in path and line
// order. Files that are not UTF-8 text are skipped.
func (w *Workspaces) Grep(ctx context.Context, user string, s Scope, pattern, pathGlob string, limit int) ([]Match, error) {
	sc, err := w.access(ctx, user, s)
	if err != nil {
		return nil, err
	}
	re, err := regexp.Compile(pattern)
	if err != nil {
		return nil, fmt.Errorf("%w: pattern: %w", ErrInvalid, err)
	}
	var only *regexp.Regexp
	if pathGlob != "" {
		if only, err = globRegexp(pathGlob); err != nil {
			return nil, err
		}
	}
	limit = listLimit(limit)
	out := []Match{}
	var read int64
	err = w.all(ctx, sc, func(f store.WorkspaceFile) (bool, error) {
		if only != nil && !only.MatchString(f.Path) {
			return true, nil
		}
		if read += f.Size; read > grepBytes {
			return false, nil
		}
		b, err := w.object(ctx, f.ObjectKey)
		if err != nil {
			return false, err
		}
		if !utf8.Valid(b) {
			return true, nil
		}
		lines := bufio.NewScanner(bytes.NewReader(b))
		lines.Buffer(nil, len(b)+1)
		for n := 1; lines.Scan(); n++ {
			if line := lines.Text(); re.MatchString(line) {
				out = append(out, Match{Path: f.Path, Line: n, Text: strings.TrimSuffix(line, "\r")})
				if len(out) >= limit {
					return false, nil
				}
			}
		}
		return true, nil
	})
	return out, err
}
