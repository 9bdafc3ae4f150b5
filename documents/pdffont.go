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
