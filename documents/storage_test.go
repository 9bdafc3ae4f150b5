package documents_test

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/trellis-ai/trellis/documents"
	"github.com/trellis-ai/trellis/documents/storagetest"
)

func newFile(t *testing.T) documents.Storage {
	s, err := documents.NewFileStorage(filepath.Join(t.TempDir(), "files"))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func testKey(t *testing.T) []byte {
	k, err := documents.ParseKey(strings.Repeat("ab", 32))
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func TestFileStorage(t *testing.T) { storagetest.Run(t, newFile) }

func TestEncryptedFileStorage(t *testing.T) {
	storagetest.Run(t, func(t *testing.T) documents.Storage {
		e, err := documents.NewEncrypted(newFile(t), testKey(t))
		if err != nil {
			t.Fatal(err)
		}
		return e
	})
}

// The file storage keeps objects where their keys say, and deleting the
// last object of a document leaves no empty directories behind.
func TestFileStorageLayout(t *testing.T) {
	root := filepath.Join(t.TempDir(), "files")
	s, err := documents.NewFileStorage(root)
	if err != nil {
		t.Fatal(err)
	}
	key := documents.Key{User: "u/1", Conversation: "c", Document: "d", Name: documents.Original}.String()
	if key != "user/u%2F1/conversation/c/document/d/original" {
		t.Fatalf("key = %s", key)
	}
	if err := s.Put(t.Context(), key, []byte("x")); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "user", "u%2F1", "conversation", "c", "document", "d", "original")); err != nil {
		t.Fatal(err)
	}
	if err := s.Delete(t.Context(), key); err != nil {
		t.Fatal(err)
	}
	if entries, _ := os.ReadDir(root); len(entries) != 0 {
		t.Fatalf("left behind: %v", entries)
	}
}

// Wrong key, tampered bytes, an object moved to another key and a plain
// object are ErrDecrypt, never garbage; the stored bytes are not the plain
// ones.
func TestEncryptedRefuses(t *testing.T) {
	ctx := t.Context()
	under := newFile(t)
	enc, err := documents.NewEncrypted(under, testKey(t))
	if err != nil {
		t.Fatal(err)
	}
	other, err := documents.NewEncrypted(under, bytes.Repeat([]byte{7}, documents.KeySize))
	if err != nil {
		t.Fatal(err)
	}
	key := documents.Key{User: "u", Conversation: "c", Document: "d", Name: documents.Original}.String()
	secret := []byte("the launch code is 0000")
	if err := enc.Put(ctx, key, secret); err != nil {
		t.Fatal(err)
	}
	sealed, err := under.Get(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(sealed, secret) {
		t.Fatal("the stored object holds the plain text")
	}
	if _, err := other.Get(ctx, key); !errors.Is(err, documents.ErrDecrypt) {
		t.Errorf("wrong key: %v, want ErrDecrypt", err)
	}
	for i := range sealed {
		tampered := bytes.Clone(sealed)
		tampered[i] ^= 1
		if err := under.Put(ctx, key, tampered); err != nil {
			t.Fatal(err)
		}
		if got, err := enc.Get(ctx, key); !errors.Is(err, documents.ErrDecrypt) {
			t.Fatalf("byte %d flipped: %q, %v, want ErrDecrypt", i, got, err)
		}
	}
	moved := documents.Key{User: "u2", Conversation: "c", Document: "d", Name: documents.Original}.String()
	if err := under.Put(ctx, moved, sealed); err != nil {
		t.Fatal(err)
	}
	if _, err := enc.Get(ctx, moved); !errors.Is(err, documents.ErrDecrypt) {
		t.Errorf("object moved to another key: %v, want ErrDecrypt", err)
	}
	if err := under.Put(ctx, key, secret); err != nil {
		t.Fatal(err)
	}
	if _, err := enc.Get(ctx, key); !errors.Is(err, documents.ErrDecrypt) {
		t.Errorf("plain object: %v, want ErrDecrypt", err)
	}
}

func TestParseKey(t *testing.T) {
	for _, s := range []string{strings.Repeat("0f", 32), "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8="} {
		if k, err := documents.ParseKey(s); err != nil || len(k) != documents.KeySize {
			t.Errorf("ParseKey(%s) = %d bytes, %v", s, len(k), err)
		}
	}
	for _, s := range []string{"", "short", strings.Repeat("0f", 16), strings.Repeat("zz", 32)} {
		if _, err := documents.ParseKey(s); err == nil {
			t.Errorf("ParseKey(%q) accepted", s)
		}
	}
}
