package workspace

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/trellis-ai/trellis/events"
	"github.com/trellis-ai/trellis/operators"
	"github.com/trellis-ai/trellis/store"
)

// Names of the file tools.
const (
	ToolLs     = "ls"
	ToolRead   = "read_file"
	ToolWrite  = "write_file"
	ToolEdit   = "edit_file"
	ToolDelete = "delete_file"
	ToolGlob   = "glob"
	ToolGrep   = "grep"
	ToolIndex  = "index_file"
)

// Operations an approval may be asked for (ToolConfig.Approve).
const (
	ApproveWrite  = "write"
	ApproveEdit   = "edit"
	ApproveDelete = "delete"
)

// approveOps are the operations ToolConfig.Approve may name.
var approveOps = []string{ApproveWrite, ApproveEdit, ApproveDelete}

// ParseApprove reads the operations that need approval, as the flag
// gives them: comma-separated write, edit and delete; "" or "none" for
// none.
func ParseApprove(s string) ([]string, error) {
	if s == "" || s == "none" {
		return nil, nil
	}
	var out []string
	for op := range strings.SplitSeq(s, ",") {
		op = strings.TrimSpace(op)
		if !slices.Contains(approveOps, op) {
			return nil, fmt.Errorf("workspace: approve %q: not write, edit or delete", op)
		}
		if !slices.Contains(out, op) {
			out = append(out, op)
		}
	}
	return out, nil
}

// ToolConfig is how Tools makes the tools.
type ToolConfig struct {
	// Approve lists the operations (ApproveWrite, ApproveEdit,
	// ApproveDelete) whose tools need a person's yes before they run.
	// nil is DefaultApprove; empty (not nil) asks for none.
	Approve []string
	// Index, when set, adds a text file to the documents of the
	// conversation (the documents' upload path, ingest.Service.Upload),
	// under the filename given, and returns the document; Tools then
	// offers index_file.
	Index func(ctx context.Context, user, conversation, filename string, data []byte) (store.Document, error)
	// Document, when set, reads a document of the conversation as it was
	// uploaded (ingest.Service.Content); read_file then takes a
	// document_id in place of a path.
	Document func(ctx context.Context, user, conversation, id string) (store.Document, []byte, error)
}

// DefaultApprove is ToolConfig.Approve's default: a delete asks.
var DefaultApprove = []string{ApproveDelete}

// Lines read_file returns by default, and the longest line it shows
// whole.
const (
	DefaultReadLines = 2000
	maxLineRunes     = 2000
)

// Tools returns the agent's file tools over w: ls, read_file,
// write_file, edit_file, delete_file, glob and grep. They act for the
// call's user, in the scope the call names (its conversation's by
// default; "user"; or "project", the conversation's project), and fail
// for a call with no user. Those that change a file show the change as a
// unified diff to its approval (operators.Previewer) and put
// file.changed on the run's stream.
func (w *Workspaces) Tools(cfg ToolConfig) []operators.Tool {
	approve := cfg.Approve
	if approve == nil {
		approve = DefaultApprove
	}
	asks := func(op string) []operators.ToolOption {
		if slices.Contains(approve, op) {
			return []operators.ToolOption{operators.RequiresApproval()}
		}
		return nil
	}
	t := tools{w: w, document: cfg.Document}
	out := []operators.Tool{
		t.ls(), t.read(),
		previewed(t.write(asks(ApproveWrite)...), t.previewWrite),
		previewed(t.edit(asks(ApproveEdit)...), t.previewEdit),
		previewed(t.delete(asks(ApproveDelete)...), t.previewDelete),
		t.glob(), t.grep(),
	}
	if cfg.Index != nil {
		out = append(out, t.index(cfg.Index))
	}
	return out
}

type tools struct {
	w        *Workspaces
	document func(ctx context.Context, user, conversation, id string) (store.Document, []byte, error)
}

// scopeDescription is the scope argument's description.
const scopeDescription = `whose files: "conversation" (this conversation's, the default), "user" (yours, in every conversation) or "project" (the project this conversation is attached to, shared with its members)`

// scopeArg is the scope argument every tool takes.
type scopeArg struct {
	Scope string `json:"scope,omitempty" jsonschema:"whose files: conversation (default), user or project"`
}

// scopeName is the scope a tool's input names ("" for the default).
func (a scopeArg) scopeName() string { return a.Scope }

// scoped is a file tool whose fn runs in the scope the call names,
// resolved (and its access checked) first.
func scoped[In interface{ scopeName() string }](t tools, name, description string,
	fn func(ctx context.Context, call operators.Call, s Scope, in In) (operators.Result, error), opts ...operators.ToolOption) operators.Tool {
	return operators.NewTool(name, description, func(ctx context.Context, call operators.Call, in In) (operators.Result, error) {
		s, err := t.resolve(ctx, call, in.scopeName())
		if err != nil {
			return operators.Result{}, err
		}
		return fn(ctx, call, s, in)
	}, append(opts, operators.WithSchema(withScope))...)
}

// resolve is the scope the call means.
func (t tools) resolve(ctx context.Context, call operators.Call, kind string) (Scope, error) {
	if call.UserID == "" {
		return Scope{}, errors.New("the workspace belongs to a user, and this call has none")
	}
	k := Kind(kind)
	if kind != "" {
		var err error
		if k, err = ParseKind(kind); err != nil {
			return Scope{}, err
		}
	}
	return t.w.ScopeOf(ctx, call.UserID, call.ConversationID, k)
}

// changed tells the run's stream of a change.
func changed(ctx context.Context, call operators.Call, s Scope, path string, version int, op string) {
	_ = call.Emit(ctx, &events.FileChanged{Scope: string(s.Kind), ScopeID: s.ID, Path: path, Version: version, Op: op})
}

// withScope is the tools' common schema edit: scope is one of three.
func withScope(s *jsonschema.Schema) {
	if p := s.Properties["scope"]; p != nil {
		p.Description = scopeDescription
		p.Enum = []any{string(KindConversation), string(KindUser), string(KindProject)}
	}
}

type lsIn struct {
	Path  string `json:"path,omitempty" jsonschema:"the directory to list, relative to the workspace; the whole workspace when absent"`
	After string `json:"after,omitempty" jsonschema:"list after this path: the next page, as the previous one said"`
	scopeArg
}

func (t tools) ls() operators.Tool {
	return scoped(t, ToolLs,
		"Lists the files of the workspace (the files you keep while you work), under a directory or all: each file's path, size and version.",
		func(ctx context.Context, call operators.Call, s Scope, in lsIn) (operators.Result, error) {
			files, next, err := t.w.List(ctx, call.UserID, s, in.Path, in.After, 0)
			if err != nil {
				return operators.Result{}, err
			}
			if len(files) == 0 {
				return operators.TextResult(fmt.Sprintf("No files in the %s workspace%s.", s.Kind, under(in.Path))), nil
			}
			var b strings.Builder
			for _, f := range files {
				fmt.Fprintf(&b, "%s\t%d bytes\tversion %d\n", f.Path, f.Size, f.Version)
			}
			if next != "" {
				fmt.Fprintf(&b, "(more files: call ls with after=%q)\n", next)
			}
			return operators.TextResult(strings.TrimSuffix(b.String(), "\n")), nil
		}, operators.ReadOnly())
}

func under(dir string) string {
	if dir == "" {
		return ""
	}
	return " under " + dir
}

type readIn struct {
	Path       string `json:"path,omitempty" jsonschema:"the file's path, relative to the workspace"`
	DocumentID string `json:"document_id,omitempty" jsonschema:"in place of path: a document of this conversation (an id from list_documents), read as a file"`
	Offset     int    `json:"offset,omitempty" jsonschema:"the line to start after (0: from the first line)"`
	Limit      int    `json:"limit,omitempty" jsonschema:"the most lines to return; default 2000"`
	scopeArg
}

func (t tools) read() operators.Tool {
	return operators.NewTool(ToolRead,
		"Reads a text file of the workspace, with numbered lines (cat -n style); offset and limit read a part of a long file. "+
			"Given a document_id in place of a path, it reads a text document of this conversation as it was uploaded (or indexed with index_file).",
		func(ctx context.Context, call operators.Call, in readIn) (operators.Result, error) {
			if in.DocumentID != "" {
				return t.readDocument(ctx, call, in)
			}
			_, f, b, err := t.readText(ctx, call, in.Scope, in.Path)
			if err != nil {
				return operators.Result{}, err
			}
			if len(b) == 0 {
				return operators.TextResult(fmt.Sprintf("(%s is empty)", f.Path)), nil
			}
			return operators.TextResult(NumberLines(string(b), in.Offset, in.Limit)), nil
		}, operators.ReadOnly(), operators.WithSchema(withScope))
}

// NumberLines is read_file's text: the lines of s after offset, at most
// limit (DefaultReadLines when not positive), each after its number
// (cat -n style), with a line longer than 2,000 characters cut.
func NumberLines(s string, offset, limit int) string {
	if limit <= 0 {
		limit = DefaultReadLines
	}
	offset = max(offset, 0)
	lines := strings.Split(strings.TrimSuffix(s, "\n"), "\n")
	if offset >= len(lines) {
		return fmt.Sprintf("(the file has %d lines; offset %d is past its end)", len(lines), offset)
	}
	end := min(len(lines), offset+limit)
	var b strings.Builder
	for i, line := range lines[offset:end] {
		if utf8.RuneCountInString(line) > maxLineRunes {
			line = string([]rune(line)[:maxLineRunes]) + " [line cut]"
		}
		fmt.Fprintf(&b, "%6d\t%s\n", offset+i+1, line)
	}
	if end < len(lines) {
		fmt.Fprintf(&b, "(%d more lines: read with offset=%d)\n", len(lines)-end, end)
	}
	return strings.TrimSuffix(b.String(), "\n")
}

type writeIn struct {
	Path    string `json:"path" jsonschema:"the file's path, relative to the workspace; directories need no creating"`
	Content string `json:"content" jsonschema:"the file's whole new content, or with append what to add at its end"`
	Append  bool   `json:"append,omitempty" jsonschema:"add content at the end of the file (creating it if need be) instead of replacing it"`
	scopeArg
}

func (t tools) write(opts ...operators.ToolOption) operators.Tool {
	return scoped(t, ToolWrite,
		"Writes a file of the workspace: creates it, or replaces its whole content (the earlier version is kept and can be restored), "+
			"or with append adds to its end. To change part of a file, use edit_file.",
		func(ctx context.Context, call operators.Call, s Scope, in writeIn) (operators.Result, error) {
			write, op, verb := t.w.Write, ApproveWrite, "Wrote"
			if in.Append {
				write, op, verb = t.w.Append, ApproveEdit, "Appended to"
			}
			f, err := write(WithConversation(ctx, call.ConversationID), call.UserID, s, in.Path, []byte(in.Content))
			if err != nil {
				return operators.Result{}, err
			}
			if f.Version == 1 {
				op = ApproveWrite
			}
			changed(ctx, call, s, f.Path, f.Version, op)
			return operators.TextResult(fmt.Sprintf("%s %s (%d bytes, version %d) in the %s workspace.", verb, f.Path, f.Size, f.Version, s.Kind)), nil
		}, opts...)
}

type editIn struct {
	Path       string `json:"path" jsonschema:"the file's path, relative to the workspace"`
	OldString  string `json:"old_string" jsonschema:"the exact text to replace, as it is in the file (whitespace included); it must occur once unless replace_all"`
	NewString  string `json:"new_string" jsonschema:"the text to put in its place"`
	ReplaceAll bool   `json:"replace_all,omitempty" jsonschema:"replace every occurrence, not only the one"`
	scopeArg
}

func (t tools) edit(opts ...operators.ToolOption) operators.Tool {
	return scoped(t, ToolEdit,
		"Edits a text file of the workspace by exact string replacement: old_string must occur exactly once (give more surrounding text "+
			"to make it unique) unless replace_all. The earlier version is kept.",
		func(ctx context.Context, call operators.Call, s Scope, in editIn) (operators.Result, error) {
			f, err := t.w.Edit(WithConversation(ctx, call.ConversationID), call.UserID, s, in.Path, in.OldString, in.NewString, in.ReplaceAll)
			if err != nil {
				return operators.Result{}, err
			}
			changed(ctx, call, s, f.Path, f.Version, ApproveEdit)
			return operators.TextResult(fmt.Sprintf("Edited %s (%d bytes, version %d).", f.Path, f.Size, f.Version)), nil
		}, opts...)
}

type deleteIn struct {
	Path string `json:"path" jsonschema:"the file's path, relative to the workspace"`
	scopeArg
}

func (t tools) delete(opts ...operators.ToolOption) operators.Tool {
	return scoped(t, ToolDelete,
		"Deletes a file of the workspace, with its earlier versions.",
		func(ctx context.Context, call operators.Call, s Scope, in deleteIn) (operators.Result, error) {
			path, err := CheckPath(in.Path)
			if err != nil {
				return operators.Result{}, err
			}
			if err := t.w.Delete(WithConversation(ctx, call.ConversationID), call.UserID, s, path); err != nil {
				return operators.Result{}, err
			}
			changed(ctx, call, s, path, 0, OpDelete)
			return operators.TextResult(fmt.Sprintf("Deleted %s.", path)), nil
		}, append(opts, operators.Destructive())...)
}

type globIn struct {
	Pattern string `json:"pattern" jsonschema:"a glob over paths: * within a directory, ** across directories, ? one character; a pattern without / matches file names at any depth"`
	scopeArg
}

func (t tools) glob() operators.Tool {
	return scoped(t, ToolGlob,
		"Finds the files of the workspace whose paths match a glob pattern (*.md, notes/**/*.txt).",
		func(ctx context.Context, call operators.Call, s Scope, in globIn) (operators.Result, error) {
			files, err := t.w.Glob(ctx, call.UserID, s, in.Pattern, 0)
			if err != nil {
				return operators.Result{}, err
			}
			if len(files) == 0 {
				return operators.TextResult("No file matches " + in.Pattern + "."), nil
			}
			paths := make([]string, len(files))
			for i, f := range files {
				paths[i] = f.Path
			}
			return operators.TextResult(strings.Join(paths, "\n")), nil
		}, operators.ReadOnly())
}

type grepIn struct {
	Pattern string `json:"pattern" jsonschema:"a regular expression (RE2 syntax) to look for, line by line"`
	Glob    string `json:"glob,omitempty" jsonschema:"search only the files whose paths match this glob"`
	scopeArg
}

func (t tools) grep() operators.Tool {
	return scoped(t, ToolGrep,
		"Searches the text files of the workspace for lines matching a regular expression; returns path:line: text.",
		func(ctx context.Context, call operators.Call, s Scope, in grepIn) (operators.Result, error) {
			ms, err := t.w.Grep(ctx, call.UserID, s, in.Pattern, in.Glob, 0)
			if err != nil {
				return operators.Result{}, err
			}
			if len(ms) == 0 {
				return operators.TextResult("No line matches."), nil
			}
			var b strings.Builder
			for _, m := range ms {
				fmt.Fprintf(&b, "%s:%d: %s\n", m.Path, m.Line, m.Text)
			}
			return operators.TextResult(strings.TrimSuffix(b.String(), "\n")), nil
		}, operators.ReadOnly())
}

// previewTool is a tool whose calls show their change to an approval.
type previewTool struct {
	operators.Tool
	preview func(ctx context.Context, call operators.Call, args json.RawMessage) (string, error)
}

var _ operators.Previewer = previewTool{}

func previewed(t operators.Tool, preview func(ctx context.Context, call operators.Call, args json.RawMessage) (string, error)) operators.Tool {
	return previewTool{Tool: t, preview: preview}
}

// Preview implements operators.Previewer.
func (p previewTool) Preview(ctx context.Context, call operators.Call, args json.RawMessage) (string, error) {
	return p.preview(ctx, call, args)
}

// target is the arguments of a call that changes a file: the file's
// path and its scope.
type target interface{ target() (scope, path string) }

func (in *writeIn) target() (string, string)  { return in.Scope, in.Path }
func (in *editIn) target() (string, string)   { return in.Scope, in.Path }
func (in *deleteIn) target() (string, string) { return in.Scope, in.Path }

// current decodes a call's arguments into in and reads the file the call
// would change: its checked path, its bytes and whether it exists.
func (t tools) current(ctx context.Context, call operators.Call, args json.RawMessage, in target) (string, []byte, bool, error) {
	if err := json.Unmarshal(args, in); err != nil {
		return "", nil, false, err
	}
	scope, path := in.target()
	s, err := t.resolve(ctx, call, scope)
	if err != nil {
		return "", nil, false, err
	}
	if path, err = CheckPath(path); err != nil {
		return "", nil, false, err
	}
	// A scope the caller may not use shows no preview, rather than
	// one of a file that does not exist.
	if _, err := t.w.access(ctx, call.UserID, s); err != nil {
		return "", nil, false, err
	}
	_, b, err := t.w.Read(ctx, call.UserID, s, path)
	if errors.Is(err, ErrNotFound) {
		return path, nil, false, nil
	}
	return path, b, err == nil, err
}

func (t tools) previewWrite(ctx context.Context, call operators.Call, args json.RawMessage) (string, error) {
	var in writeIn
	path, before, existed, err := t.current(ctx, call, args, &in)
	if err != nil {
		return "", err
	}
	after := []byte(in.Content)
	if in.Append {
		after = append(before[:len(before):len(before)], after...)
	}
	return Diff(path, before, after, existed, true), nil
}

func (t tools) previewEdit(ctx context.Context, call operators.Call, args json.RawMessage) (string, error) {
	var in editIn
	path, before, existed, err := t.current(ctx, call, args, &in)
	if err != nil || !existed {
		return "", err
	}
	after, err := Replace(before, in.OldString, in.NewString, in.ReplaceAll)
	if err != nil {
		return "", err
	}
	return Diff(path, before, after, true, true), nil
}

func (t tools) previewDelete(ctx context.Context, call operators.Call, args json.RawMessage) (string, error) {
	var in deleteIn
	path, before, existed, err := t.current(ctx, call, args, &in)
	if err != nil || !existed {
		return "", err
	}
	return Diff(path, before, nil, true, false), nil
}

type indexIn struct {
	Path string `json:"path" jsonschema:"the text file's path, relative to the workspace"`
	scopeArg
}

// index is index_file: the file's current version becomes a document of
// the call's conversation, named by its file name, so search_documents finds
// it and its passages cite it. The document is a copy: later writes to
// the file do not change it.
func (t tools) index(add func(ctx context.Context, user, conversation, filename string, data []byte) (store.Document, error)) operators.Tool {
	return operators.NewTool(ToolIndex,
		"Adds a text file of the workspace to this conversation's documents, as a copy of its current version named by its file name, "+
			"so search_documents finds its passages and they cite it. Later changes to the file are not in the document; index it again for them.",
		func(ctx context.Context, call operators.Call, in indexIn) (operators.Result, error) {
			if call.ConversationID == "" {
				return operators.Result{}, errors.New("documents belong to a conversation, and this call has none")
			}
			s, f, b, err := t.readText(ctx, call, in.Scope, in.Path)
			if err != nil {
				return operators.Result{}, err
			}
			d, err := add(ctx, call.UserID, call.ConversationID, f.Path, b)
			if err != nil {
				return operators.Result{}, fmt.Errorf("index %s: %w", f.Path, err)
			}
			return operators.TextResult(fmt.Sprintf("%s (version %d of the %s scope) is document %s, %q; it is searchable once processed.",
				f.Path, f.Version, s.Kind, d.ID, d.Filename)), nil
		}, operators.WithSchema(withScope))
}

// readText reads a text file in the scope a call names (read_file,
// index_file): the scope, the file and its bytes, or ErrNotText.
func (t tools) readText(ctx context.Context, call operators.Call, scope, path string) (Scope, File, []byte, error) {
	s, err := t.resolve(ctx, call, scope)
	if err != nil {
		return Scope{}, File{}, nil, err
	}
	f, b, err := t.w.Read(ctx, call.UserID, s, path)
	if err != nil {
		return Scope{}, File{}, nil, err
	}
	if !utf8.Valid(b) {
		return Scope{}, File{}, nil, fmt.Errorf("%s is %d bytes of binary data, not text: %w", f.Path, f.Size, ErrNotText)
	}
	return s, f, b, nil
}

// readDocument is read_file of a document: its uploaded bytes, numbered
// as a file's, when they are text.
func (t tools) readDocument(ctx context.Context, call operators.Call, in readIn) (operators.Result, error) {
	switch {
	case t.document == nil:
		return operators.Result{}, errors.New("documents are off: read_file takes a path")
	case in.Path != "" || in.Scope != "":
		return operators.Result{}, errors.New("give a document_id or a path (with its scope), not both")
	case call.UserID == "" || call.ConversationID == "":
		return operators.Result{}, errors.New("documents belong to a user's conversation, and this call has none")
	}
	d, b, err := t.document(ctx, call.UserID, call.ConversationID, in.DocumentID)
	if err != nil {
		return operators.Result{}, err
	}
	if !utf8.Valid(b) {
		return operators.Result{}, fmt.Errorf("document %s (%s) is not text as uploaded; load_document reads its text: %w", d.ID, d.Filename, ErrNotText)
	}
	if len(b) == 0 {
		return operators.TextResult(fmt.Sprintf("(%s is empty)", d.Filename)), nil
	}
	return operators.TextResult(NumberLines(string(b), in.Offset, in.Limit)), nil
}
