package workspace

import (
	"context"
	"errors"
	"time"
)

// presigner is a documents.Storage that links to an object for a client
// to fetch without credentials (s3store.Storage). documents.Encrypted is
// none: its objects are sealed, and a link would give the sealed bytes.
type presigner interface {
	Presign(ctx context.Context, key string, ttl time.Duration) (string, error)
}

// PresignRead returns a URL of the file store that reads version of the
// file at path without credentials until ttl has passed, once user's
// access is checked (ErrNotFound). It returns an error matching
// errors.ErrUnsupported when the store cannot make one (not a bucket, or
// encrypted by Trellis), or the version is empty and has no object.
func (w *Workspaces) PresignRead(ctx context.Context, user string, s Scope, path string, version int, ttl time.Duration) (string, error) {
	ps, ok := w.files.(presigner)
	if !ok {
		return "", errors.ErrUnsupported
	}
	sc, path, err := w.accessPath(ctx, user, s, path)
	if err != nil {
		return "", err
	}
	v, err := w.rec.FileVersion(ctx, sc.rec, path, version)
	if err != nil {
		return "", w.fail(err)
	}
	if v.ObjectKey == "" {
		return "", errors.ErrUnsupported
	}
	return ps.Presign(ctx, v.ObjectKey, ttl)
}
