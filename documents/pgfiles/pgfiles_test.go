package pgfiles_test

import (
	"bytes"
	"errors"
	"testing"

	"github.com/trellis-ai/trellis/documents"
	"github.com/trellis-ai/trellis/documents/pgfiles"
	"github.com/trellis-ai/trellis/documents/storagetest"
	"github.com/trellis-ai/trellis/internal/pgtest"
)

func newStorage(t *testing.T) *pgfiles.Storage {
	s, err := pgfiles.New(t.Context(), pgtest.New(t))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestStorage(t *testing.T) {
	storagetest.Run(t, func(t *testing.T) documents.Storage { return newStorage(t) })
}

func TestEncryptedStorage(t *testing.T) {
	storagetest.Run(t, func(t *testing.T) documents.Storage {
		enc, err := documents.NewEncrypted(newStorage(t), bytes.Repeat([]byte{7}, documents.KeySize))
		if err != nil {
			t.Fatal(err)
		}
		return enc
	})
}

// A prefix is matched as text, not as a LIKE pattern: the '%' of a
// path-escaped id and an id's '_' match only themselves.
func TestListPrefixIsLiteral(t *testing.T) {
	s, ctx := newStorage(t), t.Context()
	keys := []string{
		documents.Key{User: "a b", Conversation: "c_1", Document: "d", Name: documents.Original}.String(),
		documents.Key{User: "a b", Conversation: "cx1", Document: "d", Name: documents.Original}.String(),
		documents.Key{User: "a%20b", Conversation: "c_1", Document: "d", Name: documents.Original}.String(),
		documents.Key{User: "aX20b", Conversation: "c_1", Document: "d", Name: documents.Original}.String(),
	}
	for _, k := range keys {
		if err := s.Put(ctx, k, []byte(k)); err != nil {
			t.Fatal(err)
		}
	}
	prefix, err := documents.ConversationPrefix("a b", "c_1")
	if err != nil {
		t.Fatal(err)
	}
	got, err := s.List(ctx, prefix)
	if err != nil || len(got) != 1 || got[0] != keys[0] {
		t.Fatalf("List(%s) = %v, %v; want only %s", prefix, got, err, keys[0])
	}
}

// Several processes open the same database at once: each migrates or
// finds the table migrated, and each reads what another stored.
func TestTwoStoragesShareOneTable(t *testing.T) {
	pool := pgtest.New(t)
	ctx := t.Context()
	a, err := pgfiles.New(ctx, pool)
	if err != nil {
		t.Fatal(err)
	}
	b, err := pgfiles.New(ctx, pool)
	if err != nil {
		t.Fatal(err)
	}
	key := documents.Key{User: "u", Conversation: "c", Document: "d", Name: documents.Original}.String()
	if err := a.Put(ctx, key, []byte("shared")); err != nil {
		t.Fatal(err)
	}
	if got, err := b.Get(ctx, key); err != nil || string(got) != "shared" {
		t.Fatalf("the other storage reads %q, %v", got, err)
	}
	if err := b.Delete(ctx, key); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Get(ctx, key); !errors.Is(err, documents.ErrNotExist) {
		t.Fatalf("after the other deleted it: %v", err)
	}
}
