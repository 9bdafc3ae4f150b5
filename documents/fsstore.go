package documents

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// FileStorage is Storage in a directory of the local filesystem: the
// embedded default, under the data directory. An object is a file at its
// key's path below the root, written to a temporary file in the same
// directory and renamed into place, so a reader never sees a part and a
// crash leaves no half object. Several processes may share the directory
// only if it is one filesystem they all see (the service refuses a
// private one when it runs several processes on PostgreSQL).
type FileStorage struct {
	root string
}

var _ Storage = (*FileStorage)(nil)

// NewFileStorage returns the storage rooted at dir, creating it (0700) if
// needed.
func NewFileStorage(dir string) (*FileStorage, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("documents: file storage %s: %w", dir, err)
	}
	if err := os.MkdirAll(abs, 0o700); err != nil {
		return nil, fmt.Errorf("documents: file storage %s: %w", dir, err)
	}
	return &FileStorage{root: abs}, nil
}

// Root is the directory the objects live in.
func (s *FileStorage) Root() string { return s.root }

func (s *FileStorage) path(key string) (string, error) {
	if err := checkKey(key); err != nil {
		return "", err
	}
	return filepath.Join(s.root, filepath.FromSlash(key)), nil
}

// Put implements Storage.
func (s *FileStorage) Put(ctx context.Context, key string, data []byte) error {
	if err := s.put(ctx, key, data); err != nil {
		return fmt.Errorf("documents: put %s: %w", key, err)
	}
	return nil
}

func (s *FileStorage) put(ctx context.Context, key string, data []byte) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	p, err := s.path(key)
	if err != nil {
		return err
	}
	if len(data) == 0 {
		return ErrEmptyObject
	}
	dir := filepath.Dir(p)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	f, err := os.CreateTemp(dir, ".put-*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, p)
	}
	if err != nil {
		os.Remove(tmp)
	}
	return err
}

// Get implements Storage.
func (s *FileStorage) Get(ctx context.Context, key string) ([]byte, error) {
	p, err := s.path(key)
	if err == nil {
		err = ctx.Err()
	}
	var data []byte
	if err == nil {
		data, err = os.ReadFile(p)
	}
	if errors.Is(err, fs.ErrNotExist) {
		err = ErrNotExist
	}
	if err != nil {
		return nil, fmt.Errorf("documents: get %s: %w", key, err)
	}
	return data, nil
}

// Delete implements Storage. Directories left empty are removed, up to
// the root.
func (s *FileStorage) Delete(ctx context.Context, key string) error {
	p, err := s.path(key)
	if err == nil {
		err = ctx.Err()
	}
	if err == nil {
		err = os.Remove(p)
		if errors.Is(err, fs.ErrNotExist) {
			err = nil
		}
	}
	if err != nil {
		return fmt.Errorf("documents: delete %s: %w", key, err)
	}
	for dir := filepath.Dir(p); dir != s.root && strings.HasPrefix(dir, s.root); dir = filepath.Dir(dir) {
		if os.Remove(dir) != nil { // not empty, or gone: stop
			break
		}
	}
	return nil
}

// List implements Storage.
func (s *FileStorage) List(ctx context.Context, prefix string) ([]string, error) {
	if err := checkPrefix(prefix); err != nil {
		return nil, fmt.Errorf("documents: list %s: %w", prefix, err)
	}
	// Walk the deepest directory the prefix names whole.
	start := s.root
	if i := strings.LastIndex(prefix, "/"); i >= 0 {
		start = filepath.Join(s.root, filepath.FromSlash(prefix[:i]))
	}
	var keys []string
	err := filepath.WalkDir(start, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			return err
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		if d.IsDir() || strings.HasPrefix(d.Name(), ".put-") {
			return nil
		}
		rel, err := filepath.Rel(s.root, p)
		if err != nil {
			return err
		}
		if key := filepath.ToSlash(rel); strings.HasPrefix(key, prefix) {
			keys = append(keys, key)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("documents: list %s: %w", prefix, err)
	}
	slices.Sort(keys)
	return keys, nil
}
