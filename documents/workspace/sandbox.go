package workspace

import (
	"context"
	"fmt"
	"slices"
	"unicode/utf8"

	"github.com/trellis-ai/trellis/documents/workspace/sandbox"
	"github.com/trellis-ai/trellis/operators"
)

// CodeTool is the run_code tool over w's files (SandboxFiles): its
// programs write through files.write, so it asks for approval, once for
// the whole program, when cfg asks for writes or edits (a program's
// write may overwrite a file). Programs cannot delete, so a delete's
// approval alone does not make it ask.
func (w *Workspaces) CodeTool(limits sandbox.Limits, cfg ToolConfig) operators.Tool {
	approve := cfg.Approve
	if approve == nil {
		approve = DefaultApprove
	}
	var opts []operators.ToolOption
	if slices.Contains(approve, ApproveWrite) || slices.Contains(approve, ApproveEdit) {
		opts = append(opts, operators.RequiresApproval())
	}
	return sandbox.Tool(limits, w.SandboxFiles, opts...)
}

// SandboxFiles is the file API run_code's programs get for the call
// (sandbox.FilesFor): the files of the call's conversation, read and
// written as the call's user. Writes make versions as write_file does,
// and put file.changed on the run's stream; they ask no approval of
// their own: the program is the call that was approved (see CodeTool),
// or not asked about.
func (w *Workspaces) SandboxFiles(ctx context.Context, call operators.Call) (sandbox.Files, error) {
	if call.UserID == "" {
		return nil, nil
	}
	s, err := w.ScopeOf(ctx, call.UserID, call.ConversationID, KindConversation)
	if err != nil {
		return nil, nil // no conversation: the program gets no files
	}
	return sandboxFiles{w: w, call: call, scope: s}, nil
}

type sandboxFiles struct {
	w     *Workspaces
	call  operators.Call
	scope Scope
}

// List implements sandbox.Files: the paths under dir, at most MaxList.
func (f sandboxFiles) List(ctx context.Context, dir string) ([]string, error) {
	files, _, err := f.w.List(ctx, f.call.UserID, f.scope, dir, "", MaxList)
	if err != nil {
		return nil, err
	}
	out := make([]string, len(files))
	for i, file := range files {
		out[i] = file.Path
	}
	return out, nil
}

// Read implements sandbox.Files: a text file's content.
func (f sandboxFiles) Read(ctx context.Context, path string) (string, error) {
	file, b, err := f.w.Read(ctx, f.call.UserID, f.scope, path)
	if err != nil {
		return "", err
	}
	if !utf8.Valid(b) {
		return "", fmt.Errorf("%s: %w", file.Path, ErrNotText)
	}
	return string(b), nil
}

// Write implements sandbox.Files.
func (f sandboxFiles) Write(ctx context.Context, path, content string) error {
	file, err := f.w.Write(WithConversation(ctx, f.call.ConversationID), f.call.UserID, f.scope, path, []byte(content))
	if err != nil {
		return err
	}
	changed(ctx, f.call, f.scope, file.Path, file.Version, ApproveWrite)
	return nil
}
