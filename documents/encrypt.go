package documents

import (
	"bytes"
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
)

// KeySize is the size of an encryption key: AES-256.
const KeySize = 32

// sealedMagic begins every object Encrypted stores: the format's version,
// so a plain object read through Encrypted is refused, not decrypted into
// garbage.
var sealedMagic = []byte("TRLSENC1")

// Encrypted is Storage that seals every object with AES-256-GCM before
// handing it to the storage below, and opens it on the way back. An object
// is the magic, a random 96-bit nonce and the sealed bytes; the object's
// key is the additional data, so an object copied under another key does
// not open either. Keys and List are the storage below's, unchanged.
type Encrypted struct {
	under Storage
	aead  cipher.AEAD
}

var _ Storage = (*Encrypted)(nil)

// NewEncrypted returns under with encryption at rest under key, which must
// be KeySize bytes (see ParseKey).
func NewEncrypted(under Storage, key []byte) (*Encrypted, error) {
	if len(key) != KeySize {
		return nil, fmt.Errorf("documents: encryption key of %d bytes, want %d", len(key), KeySize)
	}
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, fmt.Errorf("documents: encryption key: %w", err)
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return nil, fmt.Errorf("documents: encryption key: %w", err)
	}
	return &Encrypted{under: under, aead: aead}, nil
}

// ParseKey reads an encryption key as configuration gives it: 64 hex
// digits or the standard base64 of 32 bytes.
func ParseKey(s string) ([]byte, error) {
	s = strings.TrimSpace(s)
	if b, err := hex.DecodeString(s); err == nil && len(b) == KeySize {
		return b, nil
	}
	if b, err := base64.StdEncoding.DecodeString(s); err == nil && len(b) == KeySize {
		return b, nil
	}
	return nil, errors.New("documents: an encryption key is 32 bytes as 64 hex digits or base64 (try: openssl rand -hex 32)")
}

// Put implements Storage.
func (e *Encrypted) Put(ctx context.Context, key string, data []byte) error {
	if err := checkKey(key); err != nil {
		return fmt.Errorf("documents: put %s: %w", key, err)
	}
	if len(data) == 0 {
		return fmt.Errorf("documents: put %s: %w", key, ErrEmptyObject)
	}
	n := len(sealedMagic) + e.aead.NonceSize()
	out := make([]byte, n, n+len(data)+e.aead.Overhead())
	copy(out, sealedMagic)
	nonce := out[len(sealedMagic):n]
	rand.Read(nonce) // never fails (crypto/rand)
	out = e.aead.Seal(out, nonce, data, []byte(key))
	return e.under.Put(ctx, key, out)
}

// Get implements Storage; an object that does not open is ErrDecrypt.
func (e *Encrypted) Get(ctx context.Context, key string) ([]byte, error) {
	sealed, err := e.under.Get(ctx, key)
	if err != nil {
		return nil, err
	}
	n := len(sealedMagic) + e.aead.NonceSize()
	if len(sealed) < n+e.aead.Overhead() || !bytes.Equal(sealed[:len(sealedMagic)], sealedMagic) {
		return nil, fmt.Errorf("documents: get %s: %w (not an encrypted object)", key, ErrDecrypt)
	}
	data, err := e.aead.Open(nil, sealed[len(sealedMagic):n], sealed[n:], []byte(key))
	if err != nil {
		return nil, fmt.Errorf("documents: get %s: %w", key, ErrDecrypt)
	}
	return data, nil
}

// Delete implements Storage.
func (e *Encrypted) Delete(ctx context.Context, key string) error { return e.under.Delete(ctx, key) }

// List implements Storage.
func (e *Encrypted) List(ctx context.Context, prefix string) ([]string, error) {
	return e.under.List(ctx, prefix)
}
