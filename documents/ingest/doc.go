// Package ingest is the document service: it takes an upload (checks its
// size and type, stores the record, the file and a processing job, or
// nothing at all), processes it as a durable job (extract, chunk, index,
// summarise: uploading → chunking → summarizing → ready, or error with
// why), and serves what the API asks of documents (list, status, the
// original bytes, delete with the file, chunks, index rows and job).
// Extraction, in an upload and in a job alike, runs in a bounded number
// of slots (Config.MaxExtractions), so a burst of uploads costs a bounded
// amount of memory; an upload waits for a slot while its context lasts.
// A periodic job clears the uploads a killed process left in status
// uploading with no job to finish them (Config.StrandedAfter).
//
// It sits between documents (storage, extraction, chunking, summaries),
// store (the record and the index) and internal/jobs (the queue),
// which is why it is a package of its own: documents itself imports
// neither.
package ingest
