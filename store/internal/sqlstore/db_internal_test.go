package sqlstore

import (
	"testing"
	"time"
)

// Times come back in UTC, whether the driver gives a time.Time
// (PostgreSQL) or the text SQLite stores; NULL is no time.
func TestTimeScan(t *testing.T) {
	at := time.Date(2026, 3, 4, 5, 6, 7, 890123000, time.FixedZone("x", 3600))
	for _, tc := range []struct {
		name string
		src  any
		want *time.Time
	}{
		{"time", at, &at},
		{"text", FormatTime(at), &at},
		{"bytes", []byte(FormatTime(at)), &at},
		{"null", nil, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := dbTime{t: time.Now(), valid: true} // a NULL must clear what was there
			if err := d.Scan(tc.src); err != nil {
				t.Fatal(err)
			}
			got := d.ptr()
			switch {
			case (got == nil) != (tc.want == nil):
				t.Fatalf("got %v, want %v", got, tc.want)
			case got != nil && (!got.Equal(*tc.want) || got.Location() != time.UTC):
				t.Errorf("got %v, want %v in UTC", got, tc.want)
			}
		})
	}
	for _, bad := range []any{"yesterday", 42} {
		var d dbTime
		if err := d.Scan(bad); err == nil {
			t.Errorf("Scan(%#v) = nil error, want one", bad)
		}
	}
}
