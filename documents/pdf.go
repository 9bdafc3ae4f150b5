package documents

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/pdfcpu/pdfcpu/pkg/api"
	"github.com/pdfcpu/pdfcpu/pkg/filter"
	"github.com/pdfcpu/pdfcpu/pkg/pdfcpu"
	"github.com/pdfcpu/pdfcpu/pkg/pdfcpu/model"
	"github.com/pdfcpu/pdfcpu/pkg/pdfcpu/types"
)

// pdfcpuOnce keeps pdfcpu from its configuration directory: by default it
// writes a configuration file and fonts under the user's config dir on
// first use. Trellis never wants that, so this is set once, before any
// PDF is read.
var pdfcpuOnce sync.Once

// pdfText returns the text of each page of a PDF. pdfcpu parses the file,
// decrypts and decodes its streams (each within lim); content streams'
// text operators are read by pdfContentText, through the page's fonts and
// their ToUnicode CMaps (pageFonts). A file that does not parse,
// or whose streams decode past the limit, is ErrUnreadable.
func pdfText(ctx context.Context, data []byte, lim Limits) (pages []string, err error) {
	pdfcpuOnce.Do(api.DisableConfigDir)
	defer func() {
		// pdfcpu guards its entry points, but a hostile file must not be
		// able to take the process down through a path it missed.
		if r := recover(); r != nil {
			pages, err = nil, fmt.Errorf("%w: the PDF is malformed (%v)", ErrUnreadable, r)
		}
	}()
	conf := model.NewDefaultConfiguration()
	conf.ValidationMode = model.ValidationRelaxed
	conf.Limits.MaxDecodeBytes = lim.decoded()
	conf.Limits.MaxStreamBytes = lim.decoded()
	pctx, err := pdfcpu.ReadWithContext(ctx, bytes.NewReader(data), conf)
	if err != nil {
		return nil, unreadable(ctx, err)
	}
	if err := pctx.EnsurePageCount(); err != nil {
		return nil, unreadable(ctx, err)
	}
	if pctx.PageCount > lim.pages() {
		return nil, fmt.Errorf("%w: the PDF has %d pages, more than %d", ErrUnreadable, pctx.PageCount, lim.pages())
	}
	budget := lim.decoded()
	if err := objectStreams(ctx, pctx, &budget); err != nil {
		if errors.Is(err, filter.ErrDecodeLimitExceeded) {
			return nil, fmt.Errorf("%w: the PDF's object streams decode to more than %d bytes", ErrUnreadable, lim.decoded())
		}
		return nil, unreadable(ctx, err)
	}
	seen := map[int]*pdfFont{} // fonts read, by object number
	for n := 1; n <= pctx.PageCount; n++ {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		content, fonts, err := pageContent(pctx, n, &budget, seen)
		if err != nil {
			if errors.Is(err, filter.ErrDecodeLimitExceeded) || budget < 0 {
				return nil, fmt.Errorf("%w: the PDF's pages decode to more than %d bytes", ErrUnreadable, lim.decoded())
			}
			return nil, unreadable(ctx, fmt.Errorf("page %d: %w", n, err))
		}
		pages = append(pages, pdfContentText(content, fonts))
	}
	return pages, nil
}

// objectStreams takes what the file's object streams decode to from
// budget, decoding each once under what is left of it. pdfcpu decodes an
// object stream when an object in it is first read, each under the
// per-stream limit only: a file of many small streams, each under it,
// could decode to many times the budget in all. Measured here first, a
// file whose streams do not fit is refused before pdfcpu decodes any; one
// that fits is decoded again by pdfcpu as it reads, within the same
// total (the copy decoded here is dropped at once, so one stream at a
// time is held twice at most).
func objectStreams(ctx context.Context, pctx *model.Context, budget *int64) error {
	for _, e := range pctx.Table {
		if e == nil {
			continue
		}
		osd, ok := e.Object.(types.ObjectStreamDict)
		if !ok {
			continue
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		if *budget <= 0 {
			return filter.ErrDecodeLimitExceeded
		}
		sd := osd.StreamDict
		if err := sd.DecodeWithLimit(*budget); err != nil {
			return err
		}
		if *budget -= int64(len(sd.Content)); *budget < 0 {
			return filter.ErrDecodeLimitExceeded
		}
	}
	return nil
}

// unreadable wraps a pdfcpu error as ErrUnreadable, unless ctx ended.
func unreadable(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	return fmt.Errorf("%w: the PDF cannot be parsed: %v", ErrUnreadable, err)
}

// pageContent decodes page n's content streams, and its fonts'
// ToUnicode streams (see pageFonts), within what is left of budget, and
// takes what it decoded from budget. pdfcpu's own page content reader
// decodes under a fixed 512 MiB bound, so the streams are decoded here,
// each under the budget left.
func pageContent(pctx *model.Context, n int, budget *int64, seen map[int]*pdfFont) ([]byte, map[string]*pdfFont, error) {
	d, _, inherited, err := pctx.PageDict(n, false)
	if err != nil {
		return nil, nil, err
	}
	if d == nil {
		return nil, nil, errors.New("no page dictionary")
	}
	o, found := d.Find("Contents")
	if !found || o == nil {
		return nil, nil, nil // a page with nothing on it
	}
	o, err = pctx.Dereference(o)
	if err != nil || o == nil {
		return nil, nil, err
	}
	var streams []*types.StreamDict
	switch o := o.(type) {
	case types.StreamDict:
		streams = append(streams, &o)
	case types.Array:
		for _, el := range o {
			sd, _, err := pctx.DereferenceStreamDict(el)
			if err != nil {
				return nil, nil, err
			}
			if sd != nil {
				streams = append(streams, sd)
			}
		}
	default:
		return nil, nil, errors.New("page contents are not a stream")
	}
	var out []byte
	for _, sd := range streams {
		if *budget <= 0 {
			return nil, nil, filter.ErrDecodeLimitExceeded
		}
		if err := sd.DecodeWithLimit(*budget); err != nil {
			return nil, nil, err
		}
		if *budget -= int64(len(sd.Content)); *budget < 0 {
			return nil, nil, filter.ErrDecodeLimitExceeded
		}
		out = append(out, sd.Content...)
		out = append(out, '\n')
	}
	fonts, err := pageFonts(pctx, d, inherited, budget, seen)
	if err != nil {
		return nil, nil, err
	}
	return out, fonts, nil
}
