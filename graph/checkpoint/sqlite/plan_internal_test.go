package sqlite

import (
	"path/filepath"
	"strings"
	"testing"
)

// Loading a checkpoint must cost what its delta chains hold, not what its
// thread holds: every read of checkpoint_blobs in selectBlobs is a lookup
// by the whole primary key.
func TestSelectBlobsLooksUpByKey(t *testing.T) {
	s, err := Open(t.Context(), filepath.Join(t.TempDir(), "plan.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	rows, err := s.db.QueryContext(t.Context(), "EXPLAIN QUERY PLAN "+selectBlobs, "t", "", `{"Messages":"v"}`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var plan []string
	for rows.Next() {
		var id, parent, unused int
		var detail string
		if err := rows.Scan(&id, &parent, &unused, &detail); err != nil {
			t.Fatal(err)
		}
		plan = append(plan, detail)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	lookups := 0
	for _, d := range plan {
		if !strings.Contains(d, " b ") && !strings.HasSuffix(d, " b") {
			continue
		}
		if !strings.Contains(d, "version=? AND field=?") {
			t.Errorf("checkpoint_blobs is read by %q, not by its whole key; plan:\n%s", d, strings.Join(plan, "\n"))
		}
		lookups++
	}
	if lookups != 2 {
		t.Errorf("%d reads of checkpoint_blobs, want 2; plan:\n%s", lookups, strings.Join(plan, "\n"))
	}
}
