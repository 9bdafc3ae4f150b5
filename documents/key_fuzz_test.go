package documents_test

import (
	"bytes"
	"encoding/base64"
	"encoding/hex"
	"strings"
	"testing"

	"github.com/trellis-ai/trellis/documents"
)

// FuzzParseKey feeds TRELLIS_DOCUMENTS_KEY as an operator may write it:
// a key read is KeySize bytes, which written as hex (either case) or as
// base64, with spaces around, reads the same; a refusal never quotes
// the secret.
func FuzzParseKey(f *testing.F) {
	for _, seed := range []string{
		strings.Repeat("0f", 32), strings.Repeat("AB", 32), " " + strings.Repeat("0f", 32) + "\n",
		"AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=", "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8",
		"AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh9=", "AAECAwQFBgcICQoLDA0O\nDxAREhMUFRYXGBkaGxwdHh8=",
		"", "short", strings.Repeat("0f", 16), strings.Repeat("zz", 32), strings.Repeat("0f", 33),
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, s string) {
		k, err := documents.ParseKey(s)
		if err != nil {
			if k != nil {
				t.Fatalf("ParseKey(%q) = %x and %v", s, k, err)
			}
			if secret := strings.TrimSpace(s); len(secret) >= 8 && strings.Contains(err.Error(), secret) {
				t.Fatalf("ParseKey(%q)'s error quotes the secret: %v", s, err)
			}
			return
		}
		if len(k) != documents.KeySize {
			t.Fatalf("ParseKey(%q) = %d bytes", s, len(k))
		}
		for _, again := range []string{hex.EncodeToString(k), strings.ToUpper(hex.EncodeToString(k)), " " + base64.StdEncoding.EncodeToString(k) + "\n"} {
			if k2, err := documents.ParseKey(again); err != nil || !bytes.Equal(k2, k) {
				t.Fatalf("ParseKey(%q) = %x; written as %q, %x, %v", s, k, again, k2, err)
			}
		}
	})
}
