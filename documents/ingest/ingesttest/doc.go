// Package ingesttest builds the document service for tests on a real
// backend — its store, file storage and job queue, started — so that the
// tests of ingest and of the packages over it send documents through the
// real upload and job path.
package ingesttest
