package storetest

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/trellis-ai/trellis/store"
)

func newKey(user, secret string) store.NewKey {
	return store.NewKey{UserID: user, Name: "laptop of " + user, Hash: sha256.Sum256([]byte(secret)), Prefix: secret[:8]}
}

func testKeyLifecycle(t *testing.T, s Record) {
	ctx := t.Context()
	if has := must(s.HasKeys(ctx))(t); has {
		t.Fatal("HasKeys on an empty store")
	}
	k := must(s.CreateKey(ctx, newKey(alice, "trk_alice-secret")))(t)
	if k.ID == "" || k.UserID != alice || k.Name != "laptop of alice" || k.Prefix != "trk_alic" || k.CreatedAt.IsZero() || k.RevokedAt != nil {
		t.Fatalf("created %+v", k)
	}
	if user := must(s.KeyUser(ctx, sha256.Sum256([]byte("trk_alice-secret"))))(t); user != alice {
		t.Fatalf("KeyUser = %q", user)
	}
	if _, err := s.KeyUser(ctx, sha256.Sum256([]byte("trk_guess"))); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("an unknown key: %v", err)
	}
	if _, err := s.CreateKey(ctx, newKey(bob, "trk_alice-secret")); !errors.Is(err, store.ErrConflict) {
		t.Fatalf("a hash stored twice: %v", err)
	}
	if !must(s.HasKeys(ctx))(t) {
		t.Fatal("HasKeys with a live key")
	}

	revoked := must(s.RevokeKey(ctx, k.ID))(t)
	if revoked.RevokedAt == nil || revoked.ID != k.ID || revoked.UserID != alice {
		t.Fatalf("revoked %+v", revoked)
	}
	if _, err := s.KeyUser(ctx, sha256.Sum256([]byte("trk_alice-secret"))); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("a revoked key still names %v", err)
	}
	again := must(s.RevokeKey(ctx, k.ID))(t)
	if again.RevokedAt == nil || !again.RevokedAt.Equal(*revoked.RevokedAt) {
		t.Fatalf("revoked again: %+v, first %+v", again, revoked)
	}
	if must(s.HasKeys(ctx))(t) {
		t.Fatal("HasKeys with only a revoked key")
	}
	for _, id := range []string{"nope", "bad\x00id"} {
		if _, err := s.RevokeKey(ctx, id); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("RevokeKey(%q): %v", id, err)
		}
	}
}

func testKeyList(t *testing.T, s Record) {
	ctx := t.Context()
	var made []store.Key
	for i := range 5 {
		user := alice
		if i%2 == 1 {
			user = bob
		}
		made = append(made, must(s.CreateKey(ctx, newKey(user, fmt.Sprintf("trk_secret-%d", i))))(t))
	}
	must(s.RevokeKey(ctx, made[0].ID))(t)
	var all []store.Key
	for cursor := ""; ; {
		p := must(s.ListKeys(ctx, "", store.Page{Limit: 2, Cursor: cursor}))(t)
		all = append(all, p.Keys...)
		if cursor = p.NextCursor; cursor == "" {
			break
		}
	}
	if len(all) != 5 || all[0].ID != made[4].ID || all[4].ID != made[0].ID || all[4].RevokedAt == nil {
		t.Fatalf("listed %+v, made %+v", all, made)
	}
	bobs := must(s.ListKeys(ctx, bob, store.Page{}))(t)
	if len(bobs.Keys) != 2 || bobs.Keys[0].ID != made[3].ID || bobs.Keys[1].ID != made[1].ID || bobs.NextCursor != "" {
		t.Fatalf("bob's keys %+v", bobs)
	}
	if p := must(s.ListKeys(ctx, "carol", store.Page{}))(t); len(p.Keys) != 0 || p.Keys == nil {
		t.Fatalf("carol's keys %+v", p)
	}
	if _, err := s.ListKeys(ctx, "", store.Page{Limit: -1}); !errors.Is(err, store.ErrInvalid) {
		t.Errorf("negative limit: %v", err)
	}
	if _, err := s.ListKeys(ctx, "", store.Page{Cursor: "garbage"}); !errors.Is(err, store.ErrInvalid) {
		t.Errorf("a made-up cursor: %v", err)
	}
}

func testKeyInvalid(t *testing.T, s Record) {
	ctx := t.Context()
	good := newKey(alice, "trk_valid-secret")
	for name, k := range map[string]store.NewKey{
		"no user":      {Name: good.Name, Hash: good.Hash, Prefix: good.Prefix},
		"no hash":      {UserID: alice, Name: good.Name, Prefix: good.Prefix},
		"no prefix":    {UserID: alice, Name: good.Name, Hash: good.Hash},
		"long prefix":  {UserID: alice, Name: good.Name, Hash: good.Hash, Prefix: "trk_0123456789abcdef"},
		"long name":    {UserID: alice, Name: string(make([]byte, store.MaxKeyName+1)), Hash: good.Hash, Prefix: good.Prefix},
		"NUL in name":  {UserID: alice, Name: "a\x00b", Hash: good.Hash, Prefix: good.Prefix},
		"invalid user": {UserID: "\xff", Name: good.Name, Hash: good.Hash, Prefix: good.Prefix},
		"long user":    {UserID: strings.Repeat("u", store.MaxIDBytes+1), Name: good.Name, Hash: good.Hash, Prefix: good.Prefix},
	} {
		if _, err := s.CreateKey(ctx, k); !errors.Is(err, store.ErrInvalid) {
			t.Errorf("%s: %v", name, err)
		}
	}
	if must(s.HasKeys(ctx))(t) {
		t.Error("a refused key was stored")
	}
}
