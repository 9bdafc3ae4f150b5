package llm

import (
	"regexp"
	"strings"
)

// The offline model's workspace intents, so a newcomer sees the agent's
// files with no key: "write a file notes.md with …" asks write_file,
// "add a line to notes.md: …" asks write_file to append, "read
// notes.md" asks read_file, and "show my files" asks ls. A file is
// named by a path with an extension, so "read me a story" is not taken
// for a file to read.
var (
	writeFileCue  = regexp.MustCompile(`(?is)^\s*(?:please\s+)?(?:write|create|make|save)\s+(?:a\s+|the\s+)?(?:new\s+)?file\s+(?:called\s+|named\s+)?([\w./-]+\.\w+)\s+(?:with|containing|saying)\s*:?\s*(.+?)\s*$`)
	appendFileCue = regexp.MustCompile(`(?is)^\s*(?:please\s+)?(?:add|append)\s+(?:a\s+line|a\s+note|this|text)?\s*(?:to|at\s+the\s+end\s+of)\s+([\w./-]+\.\w+)\s*:\s*(.+?)\s*$`)
	readFileCue   = regexp.MustCompile(`(?i)^\s*(?:please\s+)?(?:read|open|cat|print|show\s+me)\s+(?:the\s+)?(?:file\s+)?([\w./-]+\.\w+)\s*[.!?]?\s*$`)
	listFilesCue  = regexp.MustCompile(`(?i)^\s*(?:please\s+)?(?:show|list)\s+(?:me\s+)?(?:my|the|all)?\s*(?:workspace\s+)?files\b|\bwhat\s+files\s+(?:do\s+i\s+have|are\s+there)\b`)
)

// fileRequest returns the file tool a message asks for and its
// arguments, or "" when it asks for none.
func fileRequest(q string) (string, map[string]any) {
	if !mayNameFile(q) {
		return "", nil
	}
	if m := writeFileCue.FindStringSubmatch(q); m != nil {
		return "write_file", map[string]any{"path": m[1], "content": withNewline(m[2])}
	}
	if m := appendFileCue.FindStringSubmatch(q); m != nil {
		return "write_file", map[string]any{"path": m[1], "content": withNewline(m[2]), "append": true}
	}
	if m := readFileCue.FindStringSubmatch(q); m != nil {
		return "read_file", map[string]any{"path": m[1]}
	}
	if listFilesCue.MatchString(q) {
		return "ls", map[string]any{}
	}
	return "", nil
}

// mayNameFile is false for a message none of the file cues match, and
// cheap: each names a path with an extension or says "file".
func mayNameFile(q string) bool { return strings.Contains(q, ".") || mentions(q, "file") }

func withNewline(s string) string {
	return strings.TrimSuffix(s, "\n") + "\n"
}

// describeFiles words the result of a file tool. The agent hands a
// failed call's error over as plain text: the workspace's errors open
// with its name.
func describeFiles(r toolResult, value string) string {
	if strings.HasPrefix(value, "workspace: ") || strings.HasPrefix(value, "operators: ") {
		return "That did not work: " + value
	}
	switch r.name {
	case "ls":
		if strings.HasPrefix(value, "No files") {
			return value
		}
		return "Here are your files:\n" + value
	case "read_file":
		path, _ := r.args["path"].(string)
		// The numbered lines whole: value is trimmed, their indent too.
		return "Here is " + path + ":\n" + strings.TrimRight(r.content, "\n")
	}
	return value
}
