package s3store_test

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3mem"

	"github.com/trellis-ai/trellis/documents"
	"github.com/trellis-ai/trellis/documents/s3store"
	"github.com/trellis-ai/trellis/documents/storagetest"
)

// fakeS3 is an in-process S3 server (gofakes3 over memory) for the test;
// every call returns a fresh bucket on it.
type fakeS3 struct {
	srv     *httptest.Server
	backend *s3mem.Backend
	n       atomic.Int64
}

func newFakeS3(t *testing.T) *fakeS3 {
	backend := s3mem.New()
	srv := httptest.NewServer(gofakes3.New(backend).Server())
	t.Cleanup(srv.Close)
	return &fakeS3{srv: srv, backend: backend}
}

func (f *fakeS3) storage(t *testing.T) *s3store.Storage {
	bucket := fmt.Sprintf("bucket-%d", f.n.Add(1))
	if err := f.backend.CreateBucket(bucket); err != nil {
		t.Fatal(err)
	}
	s, err := s3store.New(s3store.Config{
		Endpoint:  strings.TrimPrefix(f.srv.URL, "http://"),
		Bucket:    bucket,
		AccessKey: "key",
		SecretKey: "secret",
		Region:    "us-east-1",
		Insecure:  true,
		PathStyle: true,
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Check(t.Context()); err != nil {
		t.Fatal(err)
	}
	return s
}

func TestStorage(t *testing.T) {
	f := newFakeS3(t)
	storagetest.Run(t, func(t *testing.T) documents.Storage { return f.storage(t) })
}

func TestEncryptedStorage(t *testing.T) {
	f := newFakeS3(t)
	key := bytes.Repeat([]byte{3}, documents.KeySize)
	storagetest.Run(t, func(t *testing.T) documents.Storage {
		e, err := documents.NewEncrypted(f.storage(t), key)
		if err != nil {
			t.Fatal(err)
		}
		return e
	})
}

// Through S3 too, the wrong key and a tampered object are ErrDecrypt.
func TestEncryptedRefuses(t *testing.T) {
	ctx := t.Context()
	under := newFakeS3(t).storage(t)
	enc, _ := documents.NewEncrypted(under, bytes.Repeat([]byte{3}, documents.KeySize))
	wrong, _ := documents.NewEncrypted(under, bytes.Repeat([]byte{4}, documents.KeySize))
	key := documents.Key{User: "u", Conversation: "c", Document: "d", Name: documents.Original}.String()
	if err := enc.Put(ctx, key, []byte("secret text")); err != nil {
		t.Fatal(err)
	}
	if _, err := wrong.Get(ctx, key); !errors.Is(err, documents.ErrDecrypt) {
		t.Errorf("wrong key: %v, want ErrDecrypt", err)
	}
	sealed, err := under.Get(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	sealed[len(sealed)-1] ^= 0x80
	if err := under.Put(ctx, key, sealed); err != nil {
		t.Fatal(err)
	}
	if _, err := enc.Get(ctx, key); !errors.Is(err, documents.ErrDecrypt) {
		t.Errorf("tampered: %v, want ErrDecrypt", err)
	}
}

func TestCheckMissingBucket(t *testing.T) {
	f := newFakeS3(t)
	s, err := s3store.New(s3store.Config{Endpoint: strings.TrimPrefix(f.srv.URL, "http://"), Bucket: "nope",
		AccessKey: "k", SecretKey: "s", Region: "us-east-1", Insecure: true, PathStyle: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Check(t.Context()); err == nil {
		t.Fatal("Check of a missing bucket passed")
	}
}

// TestPresign: the presigned URL reads the object with no credentials
// of the client's, and says how long it lasts.
func TestPresign(t *testing.T) {
	s := newFakeS3(t).storage(t)
	key := "user/u/workspace/notes.md"
	if err := s.Put(t.Context(), key, []byte("hello")); err != nil {
		t.Fatal(err)
	}
	u, err := s.Presign(t.Context(), key, 5*time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(u, "X-Amz-Expires=300") || !strings.Contains(u, "X-Amz-Signature=") {
		t.Errorf("the URL %s is not presigned for 300 s", u)
	}
	resp, err := http.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK || string(body) != "hello" {
		t.Errorf("GET the presigned URL = %d %q, want 200 hello", resp.StatusCode, body)
	}
	if _, err := s.Presign(t.Context(), "", time.Minute); !errors.Is(err, documents.ErrBadKey) {
		t.Errorf("Presign of an empty key = %v, want ErrBadKey", err)
	}
}
