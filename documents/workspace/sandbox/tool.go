package sandbox

import (
	"context"
	"fmt"
	"strings"

	"github.com/trellis-ai/trellis/operators"
)

// ToolName is the name of the tool [Tool] makes.
const ToolName = "run_code"

type toolIn struct {
	Code string `json:"code" jsonschema:"the JavaScript program; its console.log output and the value of its last expression are returned"`
}

// Tool is the run_code tool: it runs the program it is given under limits
// and returns what it printed and its final value. It is given no file
// API: the workspace that would back one does not exist yet, so programs
// see no files at all.
//
// It is read-only and idempotent: a program touches nothing outside its
// own runtime, which ends with the call.
func Tool(limits Limits) operators.Tool {
	l := limits.withDefaults()
	return operators.NewTool(ToolName,
		fmt.Sprintf("Runs a JavaScript program (ES5 and most of ES2015+) in a sandbox and returns its console.log output and the value "+
			"of its last expression. Use it to compute, transform text or data, or check logic. The program has the "+
			"language's built-ins (Math, JSON, Date, RegExp, Map, Set, Promise …) and nothing else: no network, no files, no "+
			"require or import, no timers, no eval, no BigInt or typed arrays. Limits: %s of wall time, %d MiB of memory, %d KiB of output.",
			l.Time, l.Memory>>20, l.Output>>10),
		func(ctx context.Context, _ operators.Call, in toolIn) (operators.Result, error) {
			res, err := Run(ctx, in.Code, l, nil)
			if err != nil {
				if res.Output != "" {
					return operators.Result{}, fmt.Errorf("run_code: %w\nOutput before it stopped:\n%s", err, res.Output)
				}
				return operators.Result{}, fmt.Errorf("run_code: %w", err)
			}
			return operators.TextResult(Text(res)), nil
		}, operators.ReadOnly())
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
