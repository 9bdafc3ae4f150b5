package mcp

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
)

// DefaultMaxMessageBytes is [ManagerConfig.MaxMessageBytes]'s default:
// 16 MiB.
const DefaultMaxMessageBytes = 16 << 20

// limitReader bounds what a server can make Trellis hold in memory. It
// passes a JSON-RPC stream through line by line — newline-delimited JSON
// over stdio, the lines of an SSE stream, or one JSON body — and replaces
// a line longer than max bytes with a JSON-RPC error answering the same
// request id (found by scanning the line while it is discarded), so that
// the call fails with a clear error and the connection stays up. A line
// too long that answers nothing is dropped. It holds at most one line of
// max bytes.
type limitReader struct {
	r      *bufio.Reader
	max    int
	line   []byte // the line being read, up to max bytes
	out    []byte // what Read hands out next
	err    error  // the underlying reader's, once out is drained
	onDrop func(size int, id json.RawMessage)
}

func newLimitReader(r io.Reader, max int, onDrop func(size int, id json.RawMessage)) *limitReader {
	return &limitReader{r: bufio.NewReaderSize(r, 64<<10), max: max, onDrop: onDrop}
}

func (l *limitReader) Read(p []byte) (int, error) {
	for len(l.out) == 0 {
		if l.err != nil {
			return 0, l.err
		}
		l.fill()
	}
	n := copy(p, l.out)
	l.out = l.out[n:]
	return n, nil
}

// fill reads the next line into out, or its replacement.
func (l *limitReader) fill() {
	l.line = l.line[:0]
	for {
		chunk, err := l.r.ReadSlice('\n')
		if len(l.line)+len(chunk) > l.max {
			l.out = l.overflow(chunk, err)
			return
		}
		l.line = append(l.line, chunk...)
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		l.out, l.err = l.line, err
		return
	}
}

// overflow discards the rest of a line that grew past max, scanning it for
// its request id, and returns what replaces it.
func (l *limitReader) overflow(chunk []byte, err error) []byte {
	var s idScanner
	size := len(l.line) + len(chunk)
	s.scan(l.line)
	s.scan(chunk)
	prefix := bytes.HasPrefix(l.line, []byte("data:")) || len(l.line) == 0 && bytes.HasPrefix(chunk, []byte("data:"))
	for errors.Is(err, bufio.ErrBufferFull) {
		chunk, err = l.r.ReadSlice('\n')
		size += len(chunk)
		s.scan(chunk)
	}
	l.err = err
	l.line = l.line[:0]
	id := s.id()
	if l.onDrop != nil {
		l.onDrop(size, id)
	}
	if id == nil {
		return nil
	}
	msg, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "error": map[string]any{
		"code": -32603, "message": fmt.Sprintf("the server's answer is more than the %d bytes allowed", l.max),
	}})
	if prefix {
		msg = append([]byte("data: "), msg...)
	}
	return append(msg, '\n')
}

// idScanner finds the top-level "id" of a JSON object fed to it in pieces,
// keeping only the few bytes it needs.
type idScanner struct {
	depth    int
	inString bool
	escaped  bool
	key      []byte // the current top-level string, up to 3 bytes
	keyLen   int
	afterKey bool // a top-level "id" key was read; its value comes next
	inValue  bool
	value    []byte // the id's raw value, up to 128 bytes
	done     bool
}

// stringByte reads byte c inside a JSON string, following escapes: end
// is the closing quote, plain a byte that stands for itself (neither a
// backslash nor the byte it escapes).
func (s *idScanner) stringByte(c byte) (end, plain bool) {
	switch {
	case s.escaped:
		s.escaped = false
	case c == '\\':
		s.escaped = true
	case c == '"':
		return true, false
	default:
		return false, true
	}
	return false, false
}

func (s *idScanner) scan(b []byte) {
	for _, c := range b {
		if s.done {
			return
		}
		if s.inValue {
			if s.inString {
				s.keep(c)
				if end, _ := s.stringByte(c); end {
					s.inString, s.done = false, true
				}
				continue
			}
			switch {
			case c == '"' && len(s.value) == 0:
				s.inString = true
				s.keep(c)
			case c == ',' || c == '}' || c == ' ' || c == '\n' || c == '\r' || c == '\t':
				s.done = len(s.value) > 0
			default:
				s.keep(c)
			}
			continue
		}
		if s.inString {
			end, plain := s.stringByte(c)
			switch {
			case end:
				s.inString = false
			case plain && s.depth == 1:
				s.keyLen++
				if len(s.key) < 3 {
					s.key = append(s.key, c)
				}
			}
			continue
		}
		switch c {
		case '"':
			s.inString, s.key, s.keyLen = true, s.key[:0], 0
		case '{', '[':
			s.depth++
		case '}', ']':
			s.depth--
		case ':':
			if s.depth == 1 && s.keyLen == 2 && string(s.key) == "id" {
				s.inValue = true
			}
		}
	}
}

func (s *idScanner) keep(c byte) {
	if len(s.value) < 128 {
		s.value = append(s.value, c)
	}
}

// id is the id found, nil if none (or not a valid JSON value).
func (s *idScanner) id() json.RawMessage {
	if !s.done || !json.Valid(s.value) || string(s.value) == "null" {
		return nil
	}
	return s.value
}

// limitTransport bounds every response body of an HTTP or SSE server (see
// limitReader).
type limitTransport struct {
	base   http.RoundTripper
	max    int
	onDrop func(size int, id json.RawMessage)
}

func (t *limitTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.base.RoundTrip(req)
	if err != nil || resp.Body == nil {
		return resp, err
	}
	resp.Body = &limitBody{Reader: newLimitReader(resp.Body, t.max, t.onDrop), Closer: resp.Body}
	resp.ContentLength = -1 // a replaced answer has another length
	resp.Header.Del("Content-Length")
	return resp, nil
}

// CloseIdleConnections closes the base transport's idle connections.
func (t *limitTransport) CloseIdleConnections() {
	if c, ok := t.base.(interface{ CloseIdleConnections() }); ok {
		c.CloseIdleConnections()
	}
}

type limitBody struct {
	io.Reader
	io.Closer
}
