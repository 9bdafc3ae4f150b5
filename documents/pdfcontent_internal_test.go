package documents

import "testing"

// Moves between the pieces of a line part words only when they leave a
// word's gap past the text the line showed, measured by the font's
// widths: here every glyph is half the font size wide.
func TestPDFContentWordGaps(t *testing.T) {
	widths := map[int]float64{}
	for c := range 256 {
		widths[c] = 500
	}
	fonts := map[string]*pdfFont{"F1": {widths: widths}, "F2": {}}
	for _, tc := range []struct{ name, content, want string }{
		{"a kern inside a number", `BT /F1 10 Tf 0 0 Td (1) Tj 5.2 0 Td (18) Tj 10.1 0 Td ( seconds) Tj ET`, "118 seconds"},
		{"a word gap with no space glyph", `BT /F1 10 Tf (word) Tj 22.5 0 Td (next) Tj ET`, "word next"},
		{"a move left", `BT /F1 10 Tf (word) Tj 19 0 Td (s) Tj ET`, "words"},
		{"TJ kerns and gaps", `BT /F1 10 Tf [(ab) -30 (cd) -250 (ef) 40 (gh)] TJ ET`, "abcd efgh"},
		{"TJ moves count in the line's width", `BT /F1 10 Tf [(ab) -150 (cd)] TJ 22 0 Td (ef) Tj ET`, "abcdef"},
		{"character spacing widens the text", `BT /F1 10 Tf 1 Tc (ab) Tj 12.5 0 Td (cd) Tj ET`, "abcd"},
		{"Tm along one line", `BT /F1 10 Tf 2 0 0 2 100 700 Tm (ab) Tj 2 0 0 2 121 700 Tm (cd) Tj 2 0 0 2 146 700 Tm (ef) Tj ET`, "abcd ef"},
		{"a font without widths", `BT /F2 10 Tf (ab) Tj 0.5 0 Td (cd) Tj ET`, "ab cd"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := pdfContentText([]byte(tc.content), fonts); got != tc.want+"\n" {
				t.Fatalf("read %q, want %q", got, tc.want)
			}
		})
	}
}
