package storeutil

import "github.com/trellis-ai/trellis/store"

// NumberedRun is a run with its number in its conversation (runs.num),
// which the cursor of the next page names.
type NumberedRun struct {
	store.Run
	Num int64
}

// RunQueryOf checks q and returns the runs a page holds at most, the
// number of the run it starts after, and the events it holds at most of
// each run. Errors match store.ErrInvalid.
func RunQueryOf(q store.RunQuery) (size int, after int64, events int, err error) {
	if size, err = q.Size(); err != nil {
		return 0, 0, 0, err
	}
	if events, err = store.EventLimit(q.EventLimit); err != nil {
		return 0, 0, 0, err
	}
	if after, err = DecodeRunCursor(q.Cursor); err != nil {
		return 0, 0, 0, err
	}
	return size, after, events, nil
}

// RunPage makes a page of ListRuns of the runs a query returned when
// asked for size+1 (the extra one, if any, only tells that another page
// follows), the events it read for them, ordered by run and by seq
// within a run, and their messages.
func RunPage(runs []NumberedRun, size int, events []store.Event, msgs []store.Message) store.RunPage {
	p := store.RunPage{Runs: make([]store.RunWithEvents, 0, min(len(runs), size)), Messages: msgs}
	if p.Messages == nil {
		p.Messages = []store.Message{}
	}
	if len(runs) > size {
		runs = runs[:size]
		p.NextCursor = EncodeRunCursor(runs[size-1].Num)
	}
	byRun := make(map[string]int, len(runs))
	for i, r := range runs {
		p.Runs = append(p.Runs, store.RunWithEvents{Run: r.Run, Events: []store.Event{}})
		byRun[r.ID] = i
	}
	for _, e := range events {
		if i, ok := byRun[e.RunID]; ok {
			p.Runs[i].Events = append(p.Runs[i].Events, e)
		}
	}
	for i := range p.Runs {
		r := &p.Runs[i]
		// The run and its events come from one snapshot, and the events
		// are its first: more follow when the last one read is not the
		// run's last. (A count would not do: a compacted run's numbers
		// have gaps.)
		n := len(r.Events)
		r.EventsTruncated = n == 0 && r.LastSeq > 0 || n > 0 && r.Events[n-1].Seq < r.LastSeq
	}
	return p
}
