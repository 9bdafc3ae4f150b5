package events

import "encoding/json"

// Citation is a numbered source an answer cites. A passage of an
// uploaded document (DocumentID set) is written as API.md's document
// citation, {"index", "document_id", "filename", "chunk", "start", "end",
// "text"}; any other source as {"number", "source", "title", "text"}.
type Citation struct {
	Number int
	Source string
	Title  string
	Text   string
	// DocumentID, Filename, Chunk, Start and End place a document's
	// passage: its chunk and character offsets [Start, End).
	DocumentID string
	Filename   string
	Chunk      int
	Start      int
	End        int
}

type sourceCitation struct {
	Number int    `json:"number"`
	Source string `json:"source"`
	Title  string `json:"title,omitempty"`
	Text   string `json:"text,omitempty"`
}

type documentCitation struct {
	Index      int    `json:"index"`
	DocumentID string `json:"document_id"`
	Filename   string `json:"filename"`
	Chunk      int    `json:"chunk"`
	Start      int    `json:"start"`
	End        int    `json:"end"`
	Text       string `json:"text"`
}

// MarshalJSON writes the citation in its API shape.
func (c Citation) MarshalJSON() ([]byte, error) {
	if c.DocumentID != "" {
		return json.Marshal(documentCitation{Index: c.Number, DocumentID: c.DocumentID, Filename: c.Filename,
			Chunk: c.Chunk, Start: c.Start, End: c.End, Text: c.Text})
	}
	return json.Marshal(sourceCitation{Number: c.Number, Source: c.Source, Title: c.Title, Text: c.Text})
}

// UnmarshalJSON reads either shape back.
func (c *Citation) UnmarshalJSON(b []byte) error {
	var d documentCitation
	if err := json.Unmarshal(b, &d); err != nil {
		return err
	}
	if d.DocumentID != "" {
		*c = Citation{Number: d.Index, DocumentID: d.DocumentID, Filename: d.Filename, Chunk: d.Chunk, Start: d.Start, End: d.End, Text: d.Text}
		return nil
	}
	var s sourceCitation
	if err := json.Unmarshal(b, &s); err != nil {
		return err
	}
	*c = Citation{Number: s.Number, Source: s.Source, Title: s.Title, Text: s.Text}
	return nil
}
