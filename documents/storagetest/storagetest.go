package storagetest

import (
	"bytes"
	"errors"
	"slices"
	"sync"
	"testing"

	"github.com/trellis-ai/trellis/documents"
)

// Run tests the storage newStorage returns; each call must give an empty
// storage of its own.
func Run(t *testing.T, newStorage func(t *testing.T) documents.Storage) {
	t.Run("RoundTrip", func(t *testing.T) {
		t.Parallel()
		s, ctx := newStorage(t), t.Context()
		key := documents.Key{User: "u1", Conversation: "c1", Document: "d1", Name: documents.Original}.String()
		for _, data := range [][]byte{[]byte("hello, world"), bytes.Repeat([]byte{0, 1, 2, 255}, 70000)} {
			if err := s.Put(ctx, key, data); err != nil {
				t.Fatal(err)
			}
			got, err := s.Get(ctx, key)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, data) {
				t.Fatalf("Get returned %d bytes, want the %d put", len(got), len(data))
			}
		}
	})
	t.Run("Missing", func(t *testing.T) {
		t.Parallel()
		s, ctx := newStorage(t), t.Context()
		if _, err := s.Get(ctx, "user/u/conversation/c/document/nope/original"); !errors.Is(err, documents.ErrNotExist) {
			t.Fatalf("Get of a missing key: %v, want ErrNotExist", err)
		}
		if err := s.Delete(ctx, "user/u/conversation/c/document/nope/original"); err != nil {
			t.Fatalf("Delete of a missing key: %v", err)
		}
		keys, err := s.List(ctx, "user/u/")
		if err != nil || len(keys) != 0 {
			t.Fatalf("List of an empty storage: %v, %v", keys, err)
		}
	})
	t.Run("BadKeys", func(t *testing.T) {
		t.Parallel()
		s, ctx := newStorage(t), t.Context()
		for _, key := range []string{"", "/abs", "a/../b", "a//b", "../up", "a/./b", "a\x00b"} {
			if err := s.Put(ctx, key, []byte("x")); !errors.Is(err, documents.ErrBadKey) {
				t.Errorf("Put(%q): %v, want ErrBadKey", key, err)
			}
		}
		if _, err := s.List(ctx, "../"); !errors.Is(err, documents.ErrBadKey) {
			t.Errorf("List(../): %v, want ErrBadKey", err)
		}
		if err := s.Put(ctx, "user/u/x", nil); !errors.Is(err, documents.ErrEmptyObject) {
			t.Errorf("Put of no bytes: %v, want ErrEmptyObject", err)
		}
	})
	t.Run("ListAndDeletePrefix", func(t *testing.T) {
		t.Parallel()
		s, ctx := newStorage(t), t.Context()
		var want []string
		for _, c := range []string{"c1", "c2"} {
			for _, d := range []string{"d1", "d2", "d3"} {
				k := documents.Key{User: "u", Conversation: c, Document: d, Name: documents.Original}.String()
				if err := s.Put(ctx, k, []byte(k)); err != nil {
					t.Fatal(err)
				}
				if c == "c1" {
					want = append(want, k)
				}
			}
		}
		// Another user's objects with a prefix-sharing id stay apart.
		other := documents.Key{User: "u2", Conversation: "c1", Document: "d1", Name: documents.Original}.String()
		if err := s.Put(ctx, other, []byte("x")); err != nil {
			t.Fatal(err)
		}
		prefix, err := documents.ConversationPrefix("u", "c1")
		if err != nil {
			t.Fatal(err)
		}
		got, err := s.List(ctx, prefix)
		if err != nil {
			t.Fatal(err)
		}
		slices.Sort(want)
		if !slices.Equal(got, want) {
			t.Fatalf("List(%s) = %v, want %v", prefix, got, want)
		}
		if err := documents.DeletePrefix(ctx, s, prefix); err != nil {
			t.Fatal(err)
		}
		if got, _ := s.List(ctx, prefix); len(got) != 0 {
			t.Fatalf("after DeletePrefix: %v", got)
		}
		rest, err := s.List(ctx, "user/")
		if err != nil || len(rest) != 4 {
			t.Fatalf("the other conversation's and user's objects: %v, %v (want 4)", rest, err)
		}
	})
	t.Run("Concurrent", func(t *testing.T) {
		t.Parallel()
		s, ctx := newStorage(t), t.Context()
		key := "user/u/conversation/c/document/d/original"
		a, b := bytes.Repeat([]byte("a"), 100000), bytes.Repeat([]byte("b"), 100000)
		var wg sync.WaitGroup
		for i := range 8 {
			wg.Go(func() {
				data := a
				if i%2 == 1 {
					data = b
				}
				if err := s.Put(ctx, key, data); err != nil {
					t.Error(err)
				}
				got, err := s.Get(ctx, key)
				if err != nil {
					t.Error(err)
					return
				}
				if !bytes.Equal(got, a) && !bytes.Equal(got, b) {
					t.Errorf("Get saw a mixed object of %d bytes", len(got))
				}
			})
		}
		wg.Wait()
	})
}
