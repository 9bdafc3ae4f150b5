package storeutil

import (
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/trellis-ai/trellis/store"
)

func TestCursorRoundTrip(t *testing.T) {
	c := Cursor{CreatedAt: time.Date(2026, 11, 3, 14, 5, 6, 123456000, time.UTC), ID: "0190a.b-c"}
	got, ok, err := DecodeCursor(c.Encode())
	if err != nil || !ok || !got.CreatedAt.Equal(c.CreatedAt) || got.ID != c.ID {
		t.Fatalf("DecodeCursor(Encode(%+v)) = %+v, %v, %v", c, got, ok, err)
	}
	if _, ok, err := DecodeCursor(""); ok || err != nil {
		t.Errorf(`DecodeCursor("") = %v, %v; want no cursor, no error`, ok, err)
	}
	for _, bad := range []string{"!!", "djE", "djIuMS5h" /* v2.1.a */, "djEueC5h" /* v1.x.a */, "djEuMS4" /* v1.1. */} {
		if _, _, err := DecodeCursor(bad); !errors.Is(err, store.ErrInvalid) {
			t.Errorf("DecodeCursor(%q) error = %v, want ErrInvalid", bad, err)
		}
	}
}

func TestCursorOfUnstorableID(t *testing.T) {
	for _, id := range []string{"a\x00b", "a\xffb"} {
		s := Cursor{CreatedAt: time.Unix(1, 0).UTC(), ID: id}.Encode()
		if _, _, err := DecodeCursor(s); !errors.Is(err, store.ErrInvalid) {
			t.Errorf("DecodeCursor of a cursor naming %q: error = %v, want ErrInvalid", id, err)
		}
	}
}

func TestCheckIDs(t *testing.T) {
	if err := CheckIDs("", "0190a.b-c", "café ✓"); err != nil {
		t.Errorf("CheckIDs of valid ids = %v", err)
	}
	for _, bad := range []string{"\x00", "a\x00", "\xff", "caf\xc3"} {
		if err := CheckIDs("ok", bad); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("CheckIDs(%q) = %v, want ErrNotFound", bad, err)
		}
	}
}

func TestRunCursorRoundTrip(t *testing.T) {
	for _, num := range []int64{1, 7, 1 << 40} {
		if got, err := DecodeRunCursor(EncodeRunCursor(num)); err != nil || got != num {
			t.Errorf("DecodeRunCursor(EncodeRunCursor(%d)) = %d, %v", num, got, err)
		}
	}
	if got, err := DecodeRunCursor(""); got != 0 || err != nil {
		t.Errorf(`DecodeRunCursor("") = %d, %v; want 0, no error`, got, err)
	}
	conversation := Cursor{CreatedAt: time.Now(), ID: "x"}.Encode()
	for _, bad := range []string{"!!", "cjE" /* r1 */, "cjEuMA" /* r1.0 */, "cjEuLTE" /* r1.-1 */, "cjIuMQ" /* r2.1 */, conversation} {
		if _, err := DecodeRunCursor(bad); !errors.Is(err, store.ErrInvalid) {
			t.Errorf("DecodeRunCursor(%q) error = %v, want ErrInvalid", bad, err)
		}
	}
	if _, _, err := DecodeCursor(EncodeRunCursor(3)); !errors.Is(err, store.ErrInvalid) {
		t.Errorf("DecodeCursor of a run cursor: error = %v, want ErrInvalid", err)
	}
}

func TestEventData(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{`{"type":"x"}`, `{"seq":7,"type":"x"}`},
		{` { "type" : "x" } `, `{"seq":7,"type" : "x" }`},
		{`{}`, `{"seq":7}`},
		{`{ }`, `{"seq":7}`},
	} {
		got := EventData(7, EventTail([]byte(tc.in)))
		if string(got) != tc.want || !json.Valid(got) {
			t.Errorf("EventData(7, %s) = %s, want %s", tc.in, got, tc.want)
		}
	}
}
