-- Uploads whose process died between the record and the file or the
-- processing job stay in status uploading; document processing finds
-- them by this index (StrandedUploads) and clears them.
CREATE INDEX documents_uploading ON documents (created_at, id) WHERE status = 'uploading';
