package graph_test

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/trellis-ai/trellis/graph"
)

// FuzzDecodeCheckpoint feeds DecodeCheckpoint what a damaged or hostile
// database row could hold. It must never panic, and what it accepts must
// survive the encode/decode round trip that every save and load makes.
// More seeds live in testdata/fuzz/FuzzDecodeCheckpoint.
func FuzzDecodeCheckpoint(f *testing.F) {
	created := time.Date(2026, 11, 3, 14, 5, 6, 123456789, time.FixedZone("", 3600))
	for _, cp := range []graph.Checkpoint{
		{ThreadID: "t", ID: "01", Source: graph.SourceInput, CreatedAt: created},
		{
			ThreadID: "thread", Namespace: "sub:task", ID: "02", ParentID: "01", Step: 3,
			Source: graph.SourceLoop, CreatedAt: created.UTC(),
			Versions: map[string]string{"Messages": "3", "Count": "1"},
			Tasks: []graph.TaskSpec{
				{ID: "a", Node: "agent"},
				{ID: "b", Node: "worker", Input: json.RawMessage(`{"item":[1,"<x>",null]}`)},
			},
			Barriers:          map[string][]string{"join": {"left", "right"}},
			InterruptedBefore: true,
			InterruptedAfter:  []string{"review"},
		},
	} {
		b, err := graph.EncodeCheckpoint(cp)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	for _, junk := range []string{
		``, `null`, `{}`, `[]`, `{"id":"x"}`, `{"id":"x","thread_id":"t"`,
		`{"id":"x","thread_id":"t","tasks":[{"id":"","node":"n"}]}`,
		`{"id":"x","thread_id":"t","tasks":[{"id":"a","node":"n","input": { "k" : 1 } }]}`,
		`{"id":"x","thread_id":"t","versions":{},"tasks":[],"barriers":{"j":[]},"interrupted_after":[]}`,
		`{"id":"x","thread_id":"t","created_at":"not a time"}`,
		`{"id":"x","thread_id":"t","step":1e99}`,
	} {
		f.Add([]byte(junk))
	}

	f.Fuzz(func(t *testing.T, data []byte) {
		first, err := graph.DecodeCheckpoint(data)
		if err != nil {
			return
		}
		enc, err := graph.EncodeCheckpoint(first)
		if err != nil {
			t.Fatalf("decoded %q but cannot encode the result: %v", data, err)
		}
		second, err := graph.DecodeCheckpoint(enc)
		if err != nil {
			t.Fatalf("cannot decode its own encoding %q: %v", enc, err)
		}
		if !sameCheckpoint(first, second) {
			t.Fatalf("round trip changed the checkpoint:\ninput %q\nfirst  %+v\nsecond %+v", data, first, second)
		}
		// After one round trip the encoding is canonical: stored bytes do
		// not drift each time a checkpoint is loaded and saved again.
		enc2, err := graph.EncodeCheckpoint(second)
		if err != nil || !bytes.Equal(enc, enc2) {
			t.Fatalf("encoding not stable: %q then %q (%v)", enc, enc2, err)
		}
	})
}

// sameCheckpoint compares what a checkpoint means. JSON cannot tell a nil
// collection from an empty one under omitempty, an instant keeps its offset
// but not its *time.Location, and a task's Input is compared as a JSON
// value, since encoding compacts and HTML-escapes it.
func sameCheckpoint(a, b graph.Checkpoint) bool {
	if !a.CreatedAt.Equal(b.CreatedAt) || len(a.Tasks) != len(b.Tasks) {
		return false
	}
	for i := range a.Tasks {
		if !sameJSON(a.Tasks[i].Input, b.Tasks[i].Input) {
			return false
		}
	}
	return reflect.DeepEqual(normalize(a), normalize(b))
}

func normalize(cp graph.Checkpoint) graph.Checkpoint {
	cp.CreatedAt = time.Time{}
	if len(cp.Versions) == 0 {
		cp.Versions = nil
	}
	if len(cp.Barriers) == 0 {
		cp.Barriers = nil
	}
	if len(cp.InterruptedAfter) == 0 {
		cp.InterruptedAfter = nil
	}
	if len(cp.Tasks) == 0 {
		cp.Tasks = nil
	}
	tasks := make([]graph.TaskSpec, len(cp.Tasks))
	for i, t := range cp.Tasks {
		t.Input = nil
		tasks[i] = t
	}
	if cp.Tasks != nil {
		cp.Tasks = tasks
	}
	return cp
}

func sameJSON(a, b json.RawMessage) bool {
	if len(a) == 0 || len(b) == 0 {
		return len(a) == len(b)
	}
	var va, vb any
	if json.Unmarshal(a, &va) != nil || json.Unmarshal(b, &vb) != nil {
		return false
	}
	return reflect.DeepEqual(va, vb)
}
