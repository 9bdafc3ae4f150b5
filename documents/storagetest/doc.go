// Package storagetest is the conformance suite of documents.Storage: every
// backend (the filesystem, S3, PostgreSQL, each with and without
// encryption) runs it.
package storagetest
