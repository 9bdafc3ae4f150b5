// Package doctools is the agent's document tools: list_documents,
// search_documents and load_document, local tools over the record of a
// conversation's documents (their rows, chunks and full-text index in
// store). Each call sees only the documents of its own conversation
// and user; another user's document, or another conversation's, reads as
// unknown.
//
// The tools live apart from package documents, which knows nothing of
// the record, as documents/ingest does: they read the store's types.
package doctools
