// Package documents owns what Trellis does with a file a user uploads into
// a conversation, below the record and the agent: where its bytes are kept
// (Storage: on the local filesystem, in an S3-compatible bucket through
// documents/s3store, in PostgreSQL through documents/pgfiles, optionally
// encrypted at rest with AES-256-GCM), how
// its text is read (Extract: plain text, Markdown, HTML and PDF, the type
// sniffed from the bytes, never taken from the client), how that text is
// cut into overlapping chunks that keep their offsets and pages (Chunk),
// and the extractive summaries the offline path gives (Extractive).
//
// # Reading PDFs
//
// pdfcpu (pure Go) parses the file, decrypts it and decodes its streams,
// every stream under one budget (Limits.MaxDecodedBytes), object streams
// included, so a file small on the wire cannot decode to gigabytes; the
// text operators of each page's content are read here, words parted where
// the text moves past a word's gap as the fonts' widths measure it (a
// kern or a printer's rounding inside a word is no space). A string is read through its font's ToUnicode
// CMap when the font has one: composite fonts (Type0 over a CIDFont, such
// as Identity-H with its two-byte codes, what office software writes) and
// simple fonts alike, the CMap preferred to a simple font's encoding. The
// CMap is parsed here (cmap.go): codespace ranges (codes of 1 to 4
// bytes), bfchar and bfrange in both forms, UTF-16BE destinations with
// surrogate pairs and ligatures; its stream decodes under the same budget,
// its entries are bounded, and ranges map arithmetically, never expanded.
// A CMap that cannot be read is not used: a simple font falls back to its
// encoding, and a composite font shows no text, rather than its codes read
// as WinAnsi, which would be garbage presented as text. Strings in fonts
// without ToUnicode are decoded as UTF-16 (with its byte order mark) or
// WinAnsi: right for the standard and simple fonts; composite fonts
// without one, Type3 fonts and text inside form XObjects are not read
// properly.
//
// It imports nothing of nodes or api: the record of documents and chunks
// (with their full-text index) lives in store, the processing jobs run
// on internal/jobs, and the HTTP endpoints are api's.
//
// # Keys
//
// Objects are laid out by tenant: Key names the user, the conversation and
// the document, so an object of one user's conversation cannot be reached
// through another's ids, and deleting a conversation's objects is deleting
// one prefix.
//
// # Errors
//
// Callers branch on sentinels, wrapped with what was being done: ErrNotExist
// (no such object), ErrDecrypt (the encryption key is wrong or the object
// was tampered with: never garbage), ErrUnsupported (a type that cannot be
// read; the message lists the supported ones, HTTP 415), ErrUnreadable (a
// file of a supported type that cannot be read: a broken or bomb-like PDF,
// text that is not UTF-8, HTTP 400) and ErrEmpty (no text at all).
package documents
