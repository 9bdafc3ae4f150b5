package pgstore

import "testing"

// The shared SQL is written with ?; PostgreSQL must get $1, $2, … in
// order, and a ? inside a quoted string or identifier must stay a ?.
func TestRebind(t *testing.T) {
	for _, tc := range []struct{ name, in, want string }{
		{"none", `SELECT 1`, `SELECT 1`},
		{"in order", `UPDATE runs SET owner = ? WHERE id = ? AND (? = '' OR owner = ?)`,
			`UPDATE runs SET owner = $1 WHERE id = $2 AND ($3 = '' OR owner = $4)`},
		{"ten and more", `VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			`VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)`},
		{"quoted string", `SELECT '?', ? WHERE x = 'it''s ?'`, `SELECT '?', $1 WHERE x = 'it''s ?'`},
		{"quoted identifier", `SELECT "a?b" FROM t WHERE c = ?`, `SELECT "a?b" FROM t WHERE c = $1`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := &db{}
			for range 2 { // the second answer comes from the cache
				if got := d.rebind(tc.in); got != tc.want {
					t.Errorf("rebind(%q) = %q, want %q", tc.in, got, tc.want)
				}
			}
		})
	}
}
