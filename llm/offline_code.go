package llm

import (
	"regexp"
	"strings"
)

// The offline model's code intent: "run this code: 1+2", "execute the
// following JavaScript: …", "run my script:" and a fenced block ask the
// run_code tool to run what follows the colon. The colon is required, so
// that a question about running code is not taken for code to run.
var (
	codeCue   = regexp.MustCompile(`(?is)^\s*(?:please\s+)?(?:run|execute)\s+(?:this|the\s+following|my)(?:\s+(?:javascript|js))?(?:\s+(?:code|program|script|snippet))?\s*:\s*(.+?)\s*$`)
	codeFence = regexp.MustCompile("(?s)^```[A-Za-z]*\\s*\n?(.*?)\\s*```$")
)

// codeRequest returns the program a "run this code: …" message gives,
// without the fence around it, or "".
func codeRequest(q string) string {
	m := codeCue.FindStringSubmatch(q)
	if m == nil {
		return ""
	}
	code := m[1]
	if f := codeFence.FindStringSubmatch(code); f != nil {
		code = f[1]
	}
	return strings.TrimSpace(code)
}

// describeCode words the result of run_code. The agent hands a failed
// call's error over as plain text, which run_code's errors open with
// its name.
func describeCode(value string, isErr bool) string {
	if isErr || strings.HasPrefix(value, "run_code: ") {
		return "The code did not finish: " + value
	}
	return "I ran the code:\n" + value
}
