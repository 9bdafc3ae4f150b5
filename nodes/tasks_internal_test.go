package nodes

import (
	"encoding/json"
	"testing"

	"github.com/trellis-ai/trellis/events"
)

// FuzzPlanBoard: write_todos' arguments come from a model; whatever they
// are, planning returns a checked board one revision on, or an error.
func FuzzPlanBoard(f *testing.F) {
	for _, s := range []string{
		`{"todos":[{"title":"a"},{"id":"t1","title":"b","status":"done","owner":"x"}]}`,
		`{"todos":[]}`, `{"todos":[{"title":""}]}`, `{"todos":[{"title":"a","status":"later"}]}`,
		`{"todos":[{"id":"a","title":"a"},{"id":"a","title":"b"}]}`, `{"todo":[]}`, `[]`, `null`, ``,
	} {
		f.Add(s)
	}
	base := TaskBoard{Tasks: []events.Task{{ID: "t7", Title: "old", Status: events.TaskDone, Owner: OwnerAgent}}, Revision: 4}
	f.Fuzz(func(t *testing.T, raw string) {
		b, err := planBoard(base, json.RawMessage(raw))
		if err != nil {
			return
		}
		if b.Revision != 5 || len(b.Tasks) > MaxTasks {
			t.Fatalf("board %+v", b)
		}
		seen := map[string]bool{}
		for i, tk := range b.Tasks {
			if tk.Position != i {
				t.Fatalf("task %+v at %d", tk, i)
			}
			if tk.ID == "" || seen[tk.ID] || tk.ID == "t7" && tk.Title == "" || checkTitle(tk.Title) != nil || !tk.Status.Valid() || tk.Owner == "" {
				t.Fatalf("task %+v of %+v", tk, b)
			}
			seen[tk.ID] = true
		}
	})
}
