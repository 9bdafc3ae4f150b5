package workspace_test

import (
	"bytes"
	"fmt"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3mem"

	"github.com/trellis-ai/trellis/documents"
	"github.com/trellis-ai/trellis/documents/pgfiles"
	"github.com/trellis-ai/trellis/documents/s3store"
	"github.com/trellis-ai/trellis/documents/workspace/workspacetest"
	"github.com/trellis-ai/trellis/internal/pgtest"
	"github.com/trellis-ai/trellis/store/pgstore"
	"github.com/trellis-ai/trellis/store/sqlitestore"
	"github.com/trellis-ai/trellis/store/sqlitestore/sqlitetest"
)

func sqliteRecord(t testing.TB) workspacetest.Record {
	s, err := sqlitestore.Open(t.Context(), sqlitetest.Fresh(t, filepath.Join(t.TempDir(), "chat.db")))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func pgRecord(t testing.TB) workspacetest.Record {
	s, err := pgstore.New(t.Context(), pgtest.New(t))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func fsFiles(t testing.TB) documents.Storage {
	s, err := documents.NewFileStorage(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func encrypted(t testing.TB, under documents.Storage) documents.Storage {
	s, err := documents.NewEncrypted(under, bytes.Repeat([]byte{7}, documents.KeySize))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func pgFiles(t testing.TB) documents.Storage {
	s, err := pgfiles.New(t.Context(), pgtest.New(t))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// fakeS3 is an in-process S3 server (gofakes3 over memory), as the
// document storage's tests use; each call makes a fresh bucket on it.
type fakeS3 struct {
	url     string
	backend *s3mem.Backend
	n       atomic.Int64
}

func newFakeS3(t testing.TB) *fakeS3 {
	backend := s3mem.New()
	srv := httptest.NewServer(gofakes3.New(backend).Server())
	t.Cleanup(srv.Close)
	return &fakeS3{url: srv.URL, backend: backend}
}

func (f *fakeS3) storage(t testing.TB) documents.Storage {
	bucket := fmt.Sprintf("bucket-%d", f.n.Add(1))
	if err := f.backend.CreateBucket(bucket); err != nil {
		t.Fatal(err)
	}
	s, err := s3store.New(s3store.Config{Endpoint: strings.TrimPrefix(f.url, "http://"), Bucket: bucket, AccessKey: "key", SecretKey: "secret",
		Region: "us-east-1", Insecure: true, PathStyle: true})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// Every file store under every record.
func TestConformance(t *testing.T) {
	s3 := newFakeS3(t)
	files := map[string]func(t testing.TB) documents.Storage{
		"fs":           fsFiles,
		"fs-encrypted": func(t testing.TB) documents.Storage { return encrypted(t, fsFiles(t)) },
		"s3":           s3.storage,
		"pgfiles":      pgFiles,
	}
	records := map[string]func(t testing.TB) workspacetest.Record{"sqlite": sqliteRecord, "postgres": pgRecord}
	for _, rn := range []string{"sqlite", "postgres"} {
		for _, fn := range []string{"fs", "fs-encrypted", "s3", "pgfiles"} {
			t.Run(rn+"/"+fn, func(t *testing.T) {
				workspacetest.Run(t, func(t *testing.T) workspacetest.Env {
					return workspacetest.Env{Record: records[rn](t), Files: files[fn](t)}
				})
			})
		}
	}
}
