package documents

import (
	"errors"

	"github.com/pdfcpu/pdfcpu/pkg/filter"
	"github.com/pdfcpu/pdfcpu/pkg/pdfcpu/model"
	"github.com/pdfcpu/pdfcpu/pkg/pdfcpu/types"
)

// pdfFont is what the text reader needs of a font: how its strings turn
// into text.
type pdfFont struct {
	// cmap is the font's ToUnicode CMap; nil when it has none, or one
	// that could not be used.
	cmap *toUnicode
	// composite: a Type0 font, whose codes are CIDs (of 1 to 4 bytes) and
	// mean nothing as WinAnsi.
	composite bool
	// fixed is the code length the font's encoding fixes: 2 for
	// Identity-H and Identity-V; 0 when the CMap's codespace tells.
	fixed int
	// broken: the font has a ToUnicode that could not be read.
	broken bool
	// widths are the glyphs' advances by code, in thousandths of the
	// font size (the font's Widths, or its descendant's W), with
	// defaultWidth for the codes they do not list; nil when the font
	// does not say them, or says them for codes this reader cannot
	// split (a composite font with a CMap other than Identity).
	widths       map[int]float64
	defaultWidth float64
}

// maxWidths bounds the widths kept of one font: a W array may list
// every CID of a large font, and no string needs more than this many
// distinct codes to be measured well.
const maxWidths = 1 << 16

// advance is how far showing s moves the text position, in thousandths
// of the font size, how many codes it shows (which character spacing
// moves) and how many of them are the single byte 32 (which word spacing
// also moves); ok is false when the font does not say its widths.
func (f *pdfFont) advance(s string) (width float64, codes, spaces int, ok bool) {
	if f == nil || f.widths == nil {
		return 0, 0, 0, false
	}
	n := 1
	if f.composite {
		n = 2
	}
	for i := 0; i+n <= len(s); i += n {
		code := int(s[i])
		if n == 2 {
			code = code<<8 | int(s[i+1])
		} else if code == ' ' {
			spaces++
		}
		w, found := f.widths[code]
		if !found {
			w = f.defaultWidth
		}
		width += w
		codes++
	}
	return width, codes, spaces, true
}

// readWidths reads the glyph widths of font dictionary d into f: a
// simple font's FirstChar and Widths (with its descriptor's MissingWidth
// for the rest), or a composite font's descendant's W and DW when its
// codes are CIDs (Identity-H or -V). A font that says none is left
// without: the text reader then cannot measure its strings.
func readWidths(pctx *model.Context, d types.Dict, f *pdfFont) {
	if st := d.NameEntry("Subtype"); st != nil && *st == "Type3" {
		return // widths in glyph space, through its FontMatrix
	}
	if f.composite {
		if f.fixed != 2 {
			return
		}
		arr, err := pctx.DereferenceArray(d["DescendantFonts"])
		if err != nil || len(arr) == 0 {
			return
		}
		cid, err := pctx.DereferenceDict(arr[0])
		if err != nil || cid == nil {
			return
		}
		f.widths, f.defaultWidth = map[int]float64{}, 1000
		if dw, err := pctx.DereferenceNumber(cid["DW"]); err == nil && cid["DW"] != nil {
			f.defaultWidth = dw
		}
		w, _ := pctx.DereferenceArray(cid["W"])
		for i := 0; i+1 < len(w) && len(f.widths) < maxWidths; {
			first, err := pctx.DereferenceNumber(w[i])
			if err != nil {
				return
			}
			if list, err := pctx.DereferenceArray(w[i+1]); err == nil && list != nil {
				for j, o := range list {
					if v, err := pctx.DereferenceNumber(o); err == nil && len(f.widths) < maxWidths {
						f.widths[int(first)+j] = v
					}
				}
				i += 2
				continue
			}
			if i+2 >= len(w) {
				return
			}
			last, err1 := pctx.DereferenceNumber(w[i+1])
			v, err2 := pctx.DereferenceNumber(w[i+2])
			if err1 != nil || err2 != nil {
				return
			}
			for c := int(first); c <= int(last) && len(f.widths) < maxWidths; c++ {
				f.widths[c] = v
			}
			i += 3
		}
		return
	}
	w, err := pctx.DereferenceArray(d["Widths"])
	if err != nil || len(w) == 0 {
		return
	}
	first := 0
	if fc, err := pctx.DereferenceNumber(d["FirstChar"]); err == nil && d["FirstChar"] != nil {
		first = int(fc)
	}
	f.widths = map[int]float64{}
	if fd, err := pctx.DereferenceDict(d["FontDescriptor"]); err == nil && fd != nil && fd["MissingWidth"] != nil {
		f.defaultWidth, _ = pctx.DereferenceNumber(fd["MissingWidth"])
	}
	for j, o := range w {
		if j >= 256 {
			break
		}
		if v, err := pctx.DereferenceNumber(o); err == nil {
			f.widths[first+j] = v
		}
	}
}

// text turns a string the font shows into text. Through the ToUnicode
// CMap when there is one: a simple font's codes it does not map read as
// the simple encoding would, a composite font's are dropped. A composite
// font whose ToUnicode is broken shows no text at all: its codes read as
// WinAnsi would be garbage. A font without ToUnicode reads as ever
// (decodePDFString).
func (f *pdfFont) text(s string) string {
	switch {
	case f == nil:
		return decodePDFString(s)
	case f.cmap != nil && f.composite:
		return f.cmap.decode(s, f.fixed, nil)
	case f.cmap != nil:
		return f.cmap.decode(s, f.fixed, decodeWinAnsi)
	case f.composite && f.broken:
		return ""
	}
	return decodePDFString(s)
}

// pageFonts answers the fonts of a page's resources by their resource
// names (without the slash), reading each font's ToUnicode stream within
// what is left of budget and taking what it decoded from budget. Fonts
// already read for another page come from seen (by object number). Only a
// stream that decodes past the budget is an error; a font that cannot be
// read otherwise is left out (read as a font without ToUnicode), and a
// ToUnicode that does not parse marks its font broken.
func pageFonts(pctx *model.Context, page types.Dict, inherited *model.InheritedPageAttrs, budget *int64, seen map[int]*pdfFont) (map[string]*pdfFont, error) {
	var res types.Dict
	if o, ok := page.Find("Resources"); ok && o != nil {
		res, _ = pctx.DereferenceDict(o)
	}
	if res == nil && inherited != nil {
		res = inherited.Resources
	}
	if res == nil {
		return nil, nil
	}
	o, ok := res.Find("Font")
	if !ok || o == nil {
		return nil, nil
	}
	fd, err := pctx.DereferenceDict(o)
	if err != nil || fd == nil {
		return nil, nil
	}
	fonts := map[string]*pdfFont{}
	for name, o := range fd {
		if ir, ok := o.(types.IndirectRef); ok {
			if f, ok := seen[ir.ObjectNumber.Value()]; ok {
				fonts[name] = f
				continue
			}
		}
		f, err := readFont(pctx, o, budget)
		if err != nil {
			return nil, err
		}
		if f == nil {
			continue
		}
		if ir, ok := o.(types.IndirectRef); ok && len(seen) < 4096 {
			seen[ir.ObjectNumber.Value()] = f
		}
		fonts[name] = f
	}
	return fonts, nil
}

// readFont reads one font dictionary; nil when it is not one.
func readFont(pctx *model.Context, o types.Object, budget *int64) (*pdfFont, error) {
	d, err := pctx.DereferenceDict(o)
	if err != nil || d == nil {
		return nil, nil
	}
	f := &pdfFont{}
	if st := d.NameEntry("Subtype"); st != nil && *st == "Type0" {
		f.composite = true
		if enc := d.NameEntry("Encoding"); enc != nil && (*enc == "Identity-H" || *enc == "Identity-V") {
			f.fixed = 2
		}
	}
	readWidths(pctx, d, f)
	tu, ok := d.Find("ToUnicode")
	if !ok || tu == nil {
		return f, nil
	}
	sd, _, err := pctx.DereferenceStreamDict(tu)
	if err != nil || sd == nil {
		// /ToUnicode /Identity-H and the like, or a dangling reference:
		// a ToUnicode there is, but not one to read.
		f.broken = true
		return f, nil
	}
	if *budget <= 0 {
		return nil, filter.ErrDecodeLimitExceeded
	}
	if err := sd.DecodeWithLimit(*budget); err != nil {
		if errors.Is(err, filter.ErrDecodeLimitExceeded) {
			return nil, err
		}
		f.broken = true
		return f, nil
	}
	if *budget -= int64(len(sd.Content)); *budget < 0 {
		return nil, filter.ErrDecodeLimitExceeded
	}
	cm, err := parseToUnicode(sd.Content)
	if err != nil {
		f.broken = true
		return f, nil
	}
	f.cmap = cm
	return f, nil
}
