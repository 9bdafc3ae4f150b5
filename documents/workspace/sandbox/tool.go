package sandbox

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/trellis-ai/trellis/operators"
)

// ToolName is the name of the tool [Tool] makes.
const ToolName = "run_code"

type toolIn struct {
	Code string `json:"code" jsonschema:"the JavaScript program; its console.log output and the value of its last expression are returned"`
}

// FilesFor gives a run_code call the file API its program gets; nil
// Files (and no error) for none.
type FilesFor func(ctx context.Context, call operators.Call) (Files, error)

// Tool is the run_code tool: it runs the program it is given under limits
// and returns what it printed and its final value. With files (the
// workspace's, see package workspace), a program reads and writes the
// conversation's files through the global files object; without, it sees
// no files at all, and the tool is read-only and idempotent: a program
// then touches nothing outside its own runtime, which ends with the call.
// writeOpts are the tool's options when its programs may write (with
// files), such as operators.RequiresApproval.
func Tool(limits Limits, files FilesFor, writeOpts ...operators.ToolOption) operators.Tool {
	l := limits.withDefaults()
	slots := make(chan struct{}, l.Concurrent)
	filesDoc, opts := "no files", []operators.ToolOption{operators.ReadOnly()}
	if files != nil {
		filesDoc, opts = "files only through files.list(dir), files.read(path) and files.write(path, text) over this conversation's workspace", writeOpts
	}
	return operators.NewTool(ToolName,
		fmt.Sprintf("Runs a JavaScript program (ES5 and most of ES2015+) in a sandbox and returns its console.log output and the value "+
			"of its last expression. Use it to compute, transform text or data, or check logic. The program has the "+
			"language's built-ins (Math, JSON, Date, RegExp, Map, Set, Promise …) and nothing else: no network, %s, no "+
			"require or import, no timers, no eval, no BigInt or typed arrays. Limits: %s of wall time, %d MiB of memory, %d KiB of output.",
			filesDoc, l.Time, l.Memory>>20, l.Output>>10),
		func(ctx context.Context, call operators.Call, in toolIn) (operators.Result, error) {
			var fs Files
			if files != nil {
				var err error
				if fs, err = files(ctx, call); err != nil {
					return operators.Result{}, fmt.Errorf("run_code: %w", err)
				}
			}
			if err := take(ctx, slots, l.Time); err != nil {
				return operators.Result{}, fmt.Errorf("run_code: %w", err)
			}
			defer func() { <-slots }() // a panic too, which the provider recovers
			res, err := Run(ctx, in.Code, l, fs)
			if err != nil {
				if res.Output != "" {
					return operators.Result{}, fmt.Errorf("run_code: %w\nOutput before it stopped:\n%s", err, res.Output)
				}
				return operators.Result{}, fmt.Errorf("run_code: %w", err)
			}
			return operators.TextResult(Text(res)), nil
		}, opts...)
}

// take waits for one of slots, at most wait and while ctx lasts.
func take(ctx context.Context, slots chan struct{}, wait time.Duration) error {
	select {
	case slots <- struct{}{}:
		return nil
	default:
	}
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case slots <- struct{}{}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return fmt.Errorf("%w: %d ran for the %s a call waits", ErrBusy, cap(slots), wait)
	}
}

// Text is a result as the tool shows it: the output, then the value after
// "=> ", then a note when either was cut at the limit.
func Text(r Result) string {
	var b strings.Builder
	b.WriteString(r.Output)
	if r.Value != "" {
		if r.Output != "" && !strings.HasSuffix(r.Output, "\n") {
			b.WriteByte('\n')
		}
		b.WriteString("=> " + r.Value)
	}
	if r.Truncated {
		b.WriteString("\n[cut at the output limit]")
	}
	if b.Len() == 0 {
		return "(no output, and the value is undefined)"
	}
	return strings.TrimSuffix(b.String(), "\n")
}
