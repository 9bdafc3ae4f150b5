package operators

import (
	"encoding/base64"
	"fmt"

	"github.com/trellis-ai/trellis/internal/textcut"
)

// DefaultMaxResultBytes is the size a tool result is cut to when
// [ProviderConfig.MaxResultBytes] is zero: 1 MiB.
const DefaultMaxResultBytes = 1 << 20

// capResult cuts res to at most limit bytes of content (limit <= 0: no
// cap). A result is measured as it is stored and sent: text, markdown,
// html and widget markup by their bytes, JSON by its encoding, images and
// other binary content by their base64 size, data chunks by their text,
// and an error by its message. Contents and chunks are kept in order while
// they fit; the one that does not is cut at a UTF-8 boundary if it is text
// (JSON that is cut becomes text, since it no longer parses) or dropped
// otherwise, and the rest are dropped. A text content saying how much was
// kept ends the contents, so the model reads it, and Truncated is set, so
// the client sees it.
func capResult(res Result, limit int) Result {
	if limit <= 0 {
		return res
	}
	if len(res.Error) > limit {
		res.Error = textcut.Head(res.Error, limit) + "\n" + truncationNote(len(res.Error), limit)
		res.Truncated = true
	}
	total := sizeOf(res.Contents, res.Chunks)
	if total <= limit {
		return res
	}
	kept := 0
	contents := make([]Content, 0, len(res.Contents)+1)
	for _, c := range res.Contents {
		left := limit - kept
		if left <= 0 {
			break
		}
		if n := contentSize(c); n <= left {
			contents = append(contents, c)
			kept += n
			continue
		}
		switch {
		case c.Type == OutputImage, c.Data != nil:
			// A part of an image (or of audio) is none: drop it.
		case c.Type == OutputJSON, c.Type == OutputWidget && c.Text == "":
			// Cut JSON no longer parses: keep it as text.
			contents = append(contents, TextContent(textcut.Head(string(c.JSON), left)))
		default:
			c.Text, c.JSON = textcut.Head(c.Text, left), nil
			contents = append(contents, c)
		}
		kept = limit
	}
	var chunks []DataChunk
	for _, ch := range res.Chunks {
		left := limit - kept
		if left <= 0 {
			break
		}
		ch.Text = textcut.Head(ch.Text, left)
		chunks = append(chunks, ch)
		kept += len(ch.Text)
	}
	res.Contents = append(contents, TextContent(truncationNote(total, sizeOf(contents, chunks))))
	res.Chunks = chunks
	res.Truncated = true
	return res
}

func sizeOf(contents []Content, chunks []DataChunk) int {
	n := 0
	for _, c := range contents {
		n += contentSize(c)
	}
	for _, ch := range chunks {
		n += len(ch.Text)
	}
	return n
}

// truncationNote is the marker the model and the client read.
func truncationNote(was, shown int) string {
	return fmt.Sprintf("[truncated: the result was %d bytes; the first %d are shown]", was, shown)
}

// contentSize is what c weighs as stored and sent.
func contentSize(c Content) int {
	n := len(c.Text) + len(c.JSON)
	if c.Data != nil {
		n += base64.StdEncoding.EncodedLen(len(c.Data))
	}
	return n
}
