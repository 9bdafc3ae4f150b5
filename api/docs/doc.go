// Package docs is the native API's documents endpoints over the
// document service (documents/ingest): the multipart upload (POST
// /api/v1/documents, read to one byte past the size limit, with its own
// body limit, UploadLimit), the list, status, content and deletion of a
// conversation's documents, and the document.status notices written on
// a conversation's open streams (Watch) as uploads are processed, here
// or in another process. The document service's errors get their
// API.md statuses here (document_too_large, unsupported_document_type,
// …); every other error is answered as the native API answers it
// (Config.Error). A chat request scoped to documents is checked here
// (Check). Package api mounts it when it is given a document service.
package docs
