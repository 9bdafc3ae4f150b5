// Package s3store is documents.Storage in a bucket of an S3-compatible
// object store (AWS S3, MinIO, Ceph, R2 …) through minio-go. Keys are the
// documents keys as they are; the bucket must exist.
// Presign links to an object for a client to fetch without credentials.
package s3store
