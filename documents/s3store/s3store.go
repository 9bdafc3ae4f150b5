package s3store

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"

	"github.com/trellis-ai/trellis/documents"
)

// Config says where the bucket is. The zero value is not usable: Endpoint
// and Bucket are required.
type Config struct {
	// Endpoint is host[:port] of the S3 API, without a scheme
	// ("s3.amazonaws.com", "127.0.0.1:9000").
	Endpoint string
	// Bucket holds the objects; it must exist.
	Bucket string
	// AccessKey and SecretKey sign requests; both empty means anonymous.
	AccessKey, SecretKey string
	// Region of the bucket; empty lets the client ask.
	Region string
	// Insecure speaks plain HTTP instead of HTTPS (a local MinIO).
	Insecure bool
	// PathStyle addresses the bucket as a path (endpoint/bucket/key), as
	// MinIO and most S3-compatible servers want; false lets the client
	// choose (virtual hosts on AWS).
	PathStyle bool
	// Transport carries the requests; nil is minio-go's default.
	Transport http.RoundTripper
}

// Storage is documents.Storage in one bucket.
type Storage struct {
	client *minio.Client
	bucket string
}

var _ documents.Storage = (*Storage)(nil)

// New returns the storage of cfg's bucket. It makes no request: a bucket
// that does not exist or a wrong secret shows on the first call (see
// Check).
func New(cfg Config) (*Storage, error) {
	if cfg.Endpoint == "" || cfg.Bucket == "" {
		return nil, errors.New("s3store: an endpoint and a bucket are required")
	}
	opts := &minio.Options{
		Secure:    !cfg.Insecure,
		Region:    cfg.Region,
		Transport: cfg.Transport,
	}
	if cfg.AccessKey != "" || cfg.SecretKey != "" {
		opts.Creds = credentials.NewStaticV4(cfg.AccessKey, cfg.SecretKey, "")
	}
	if cfg.PathStyle {
		opts.BucketLookup = minio.BucketLookupPath
	}
	c, err := minio.New(cfg.Endpoint, opts)
	if err != nil {
		return nil, fmt.Errorf("s3store: %s: %w", cfg.Endpoint, err)
	}
	return &Storage{client: c, bucket: cfg.Bucket}, nil
}

// Check reports whether the bucket exists and the credentials reach it,
// for the service to say at start rather than on the first upload.
func (s *Storage) Check(ctx context.Context) error {
	ok, err := s.client.BucketExists(ctx, s.bucket)
	if err == nil && !ok {
		err = errors.New("no such bucket")
	}
	if err != nil {
		return fmt.Errorf("s3store: bucket %s: %w", s.bucket, err)
	}
	return nil
}

// Put implements documents.Storage. A single PUT replaces the object
// whole, so readers never see a part.
func (s *Storage) Put(ctx context.Context, key string, data []byte) error {
	if err := documents.CheckKey(key); err != nil {
		return fmt.Errorf("s3store: put %s: %w", key, err)
	}
	if len(data) == 0 {
		return fmt.Errorf("s3store: put %s: %w", key, documents.ErrEmptyObject)
	}
	_, err := s.client.PutObject(ctx, s.bucket, key, bytes.NewReader(data), int64(len(data)),
		minio.PutObjectOptions{ContentType: "application/octet-stream"})
	if err != nil {
		return fmt.Errorf("s3store: put %s: %w", key, err)
	}
	return nil
}

// Get implements documents.Storage.
func (s *Storage) Get(ctx context.Context, key string) ([]byte, error) {
	data, err := s.get(ctx, key)
	if err != nil {
		return nil, fmt.Errorf("s3store: get %s: %w", key, err)
	}
	return data, nil
}

func (s *Storage) get(ctx context.Context, key string) ([]byte, error) {
	if err := documents.CheckKey(key); err != nil {
		return nil, err
	}
	obj, err := s.client.GetObject(ctx, s.bucket, key, minio.GetObjectOptions{})
	if err != nil {
		return nil, notExist(err)
	}
	defer obj.Close()
	var buf bytes.Buffer
	if _, err := buf.ReadFrom(obj); err != nil {
		return nil, notExist(err)
	}
	return buf.Bytes(), nil
}

// notExist turns S3's NoSuchKey into documents.ErrNotExist.
func notExist(err error) error {
	if minio.ToErrorResponse(err).Code == minio.NoSuchKey {
		return fmt.Errorf("%w: %w", documents.ErrNotExist, err)
	}
	return err
}

// Delete implements documents.Storage; S3 answers a missing key as done.
func (s *Storage) Delete(ctx context.Context, key string) error {
	if err := documents.CheckKey(key); err != nil {
		return fmt.Errorf("s3store: delete %s: %w", key, err)
	}
	if err := s.client.RemoveObject(ctx, s.bucket, key, minio.RemoveObjectOptions{}); err != nil {
		return fmt.Errorf("s3store: delete %s: %w", key, err)
	}
	return nil
}

// List implements documents.Storage.
func (s *Storage) List(ctx context.Context, prefix string) ([]string, error) {
	if err := documents.CheckPrefix(prefix); err != nil {
		return nil, fmt.Errorf("s3store: list %s: %w", prefix, err)
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel() // stops the listing goroutine if we return early
	var keys []string
	for obj := range s.client.ListObjects(ctx, s.bucket, minio.ListObjectsOptions{Prefix: prefix, Recursive: true}) {
		if obj.Err != nil {
			return nil, fmt.Errorf("s3store: list %s: %w", prefix, obj.Err)
		}
		keys = append(keys, obj.Key)
	}
	slices.Sort(keys)
	return keys, nil
}

// Presign returns a URL that reads the object under key without
// credentials until ttl has passed (S3's query-string signature, at most
// 7 days). It checks nothing: a missing object answers 404 when fetched.
func (s *Storage) Presign(ctx context.Context, key string, ttl time.Duration) (string, error) {
	if key == "" {
		return "", documents.ErrBadKey
	}
	u, err := s.client.PresignedGetObject(ctx, s.bucket, key, ttl, nil)
	if err != nil {
		return "", fmt.Errorf("s3store: presign %s: %w", key, err)
	}
	return u.String(), nil
}
