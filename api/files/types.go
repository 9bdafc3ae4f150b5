package files

import (
	"path"
	"strings"
	"unicode/utf8"
)

// types are the content types of the extensions a workspace usually
// holds, the same on every host (mime.TypeByExtension reads the host's
// tables).
var types = map[string]string{
	".md": "text/markdown; charset=utf-8", ".markdown": "text/markdown; charset=utf-8",
	".txt": "text/plain; charset=utf-8", ".log": "text/plain; charset=utf-8",
	".csv": "text/csv; charset=utf-8", ".tsv": "text/tab-separated-values; charset=utf-8",
	".json": "application/json", ".jsonl": "application/jsonl",
	".html": "text/html; charset=utf-8", ".htm": "text/html; charset=utf-8",
	".css": "text/css; charset=utf-8", ".js": "text/javascript; charset=utf-8", ".mjs": "text/javascript; charset=utf-8",
	".ts": "text/plain; charset=utf-8", ".xml": "application/xml", ".svg": "image/svg+xml",
	".yaml": "application/yaml", ".yml": "application/yaml", ".toml": "application/toml",
	".go": "text/plain; charset=utf-8", ".py": "text/x-python; charset=utf-8", ".sh": "text/plain; charset=utf-8",
	".sql": "application/sql", ".pdf": "application/pdf",
	".png": "image/png", ".jpg": "image/jpeg", ".jpeg": "image/jpeg", ".gif": "image/gif", ".webp": "image/webp",
	".zip": "application/zip", ".gz": "application/gzip", ".wasm": "application/wasm",
}

// contentType is the type of a file by its extension; an unknown one is
// plain text when data is UTF-8, else bytes.
func contentType(p string, data []byte) string {
	if t, ok := types[strings.ToLower(path.Ext(p))]; ok {
		return t
	}
	if utf8.Valid(data) {
		return "text/plain; charset=utf-8"
	}
	return "application/octet-stream"
}
