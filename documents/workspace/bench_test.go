package workspace_test

import (
	"bytes"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/trellis-ai/trellis/documents"
	"github.com/trellis-ai/trellis/documents/workspace"
	"github.com/trellis-ai/trellis/documents/workspace/workspacetest"
	"github.com/trellis-ai/trellis/store"
)

// benchFiles is how many files the benchmarked scope holds, one of
// them of benchBig bytes.
const (
	benchFiles = 10_000
	benchBig   = 1 << 20
)

// BenchmarkWorkspace measures ls (the first page of the scope's root),
// read_file's read of the 1 MiB file and edit_file's edit of it, in a
// conversation scope of 10,000 files, on each record with a file store
// it runs with; p99-ns is the 99th percentile of the iterations.
func BenchmarkWorkspace(b *testing.B) {
	for _, tc := range []struct {
		name  string
		rec   func(testing.TB) workspacetest.Record
		files func(testing.TB) documents.Storage
	}{
		{"sqlite-fs", sqliteRecord, fsFiles},
		{"postgres-pgfiles", pgRecord, pgFiles},
		{"sqlite-s3", sqliteRecord, func(t testing.TB) documents.Storage { return newFakeS3(t).storage(t) }},
	} {
		b.Run(tc.name, func(b *testing.B) {
			rec := tc.rec(b)
			w := workspace.New(rec, tc.files(b), workspace.Limits{ScopeBytes: 1 << 40, ScopeFiles: 2 * benchFiles})
			c, err := rec.CreateConversation(b.Context(), store.NewConversation{UserID: "alice"})
			if err != nil {
				b.Fatal(err)
			}
			s := workspace.Scope{Kind: workspace.KindConversation, ID: c.ID}
			for i := range benchFiles - 1 {
				if _, err := w.Write(b.Context(), "alice", s, fmt.Sprintf("dir%02d/file%05d.md", i%50, i), []byte("small file\n")); err != nil {
					b.Fatal(err)
				}
			}
			big := bytes.Repeat([]byte("0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcde\n"), benchBig/64)
			copy(big, "marker-A")
			if _, err := w.Write(b.Context(), "alice", s, "big.md", big); err != nil {
				b.Fatal(err)
			}
			ops := map[string]func(i int) error{
				"ls": func(int) error {
					files, _, err := w.List(b.Context(), "alice", s, "", "", 0)
					if err == nil && len(files) != workspace.DefaultList {
						err = fmt.Errorf("listed %d", len(files))
					}
					return err
				},
				"read": func(int) error {
					_, data, err := w.Read(b.Context(), "alice", s, "big.md")
					if err == nil && len(data) != len(big) {
						err = fmt.Errorf("read %d bytes", len(data))
					}
					return err
				},
				"edit": func(i int) error {
					from, to := "marker-A", "marker-B"
					if i%2 == 1 {
						from, to = to, from
					}
					_, err := w.Edit(b.Context(), "alice", s, "big.md", from, to, false)
					return err
				},
			}
			for _, op := range []string{"ls", "read", "edit"} {
				b.Run(op, func(b *testing.B) {
					var took []time.Duration
					i := 0
					for b.Loop() {
						start := time.Now()
						if err := ops[op](i); err != nil {
							b.Fatal(err)
						}
						took = append(took, time.Since(start))
						i++
					}
					if op == "edit" && i%2 == 1 { // leave the marker as the next run expects it
						if err := ops[op](i); err != nil {
							b.Fatal(err)
						}
					}
					slices.Sort(took)
					b.ReportMetric(float64(took[len(took)*99/100].Nanoseconds()), "p99-ns")
				})
			}
		})
	}
}
