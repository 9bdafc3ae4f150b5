package storetest

import (
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/trellis-ai/trellis/events"
	"github.com/trellis-ai/trellis/store"
)

// benchData is a typical response.chunk event, envelope included.
const benchData = `{"type":"response.chunk","run_id":"0190e3a4-5c1e-7a3b-9f00-1234567890ab",` +
	`"conversation_id":"0190e3a4-5c1e-7a3b-9f00-ba0987654321","ts":"2026-11-03T14:05:06.123456Z","content":"Hello, wor"}`

// benchRun starts a run for a benchmark.
func benchRun(b *testing.B, s store.Store) store.Run {
	b.Helper()
	c, err := s.CreateConversation(b.Context(), store.NewConversation{UserID: "bench"})
	if err != nil {
		b.Fatal(err)
	}
	r, err := s.StartRun(b.Context(), store.NewRun{UserID: "bench", ConversationID: c.ID, UserMessage: "go"})
	if err != nil {
		b.Fatal(err)
	}
	return r
}

// BenchmarkAppendEvent measures AppendEvent on one run, one event at a
// time: the service stores every event before it sends it.
func BenchmarkAppendEvent(b *testing.B, s store.Store) {
	r := benchRun(b, s)
	e := store.NewEvent{RunID: r.ID, Type: "response.chunk", Data: json.RawMessage(benchData)}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := s.AppendEvent(b.Context(), e); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkAppendEventParallel measures AppendEvent from many goroutines,
// each on a run of its own, as many conversations streaming at once.
func BenchmarkAppendEventParallel(b *testing.B, s store.Store) {
	var mu sync.Mutex
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		mu.Lock()
		r := benchRun(b, s)
		mu.Unlock()
		e := store.NewEvent{RunID: r.ID, Type: "response.chunk", Data: json.RawMessage(benchData)}
		for pb.Next() {
			if _, err := s.AppendEvent(b.Context(), e); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

// BenchmarkReplay measures reading a long run's events back a page at a
// time, as a client reconnecting at Last-Event-ID 0 does: 10,000 events
// stored in batches of 1,000, read in pages of 256.
func BenchmarkReplay(b *testing.B, s store.Store) {
	const events, batch, page = 10000, 1000, 256
	r := benchRun(b, s)
	nes := make([]store.NewEvent, batch)
	for i := range nes {
		nes[i] = store.NewEvent{RunID: r.ID, Type: "response.chunk", Data: json.RawMessage(benchData)}
	}
	for range events / batch {
		if _, err := s.AppendEvents(b.Context(), nes); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportAllocs()
	for b.Loop() {
		n, after := 0, int64(0)
		for {
			evs, err := s.EventsAfter(b.Context(), r.UserID, r.ID, after, page)
			if err != nil {
				b.Fatal(err)
			}
			if len(evs) == 0 {
				break
			}
			n, after = n+len(evs), evs[len(evs)-1].Seq
		}
		if n != events {
			b.Fatalf("replayed %d events, want %d", n, events)
		}
	}
}

// AppendConcurrently appends 100 events to run r through each of stores,
// all at once, and checks that the run's events are numbered 1..N without
// gaps. Backends call it with several handles on one database, standing
// for several processes.
func AppendConcurrently(t *testing.T, stores []store.Store, r store.Run) {
	t.Helper()
	const each = 100
	var wg sync.WaitGroup
	for i, s := range stores {
		wg.Go(func() {
			for j := range each {
				data := fmt.Sprintf(`{"type":"x","store":%d,"j":%d}`, i, j)
				if _, err := s.AppendEvent(t.Context(), store.NewEvent{RunID: r.ID, Type: "x", Data: json.RawMessage(data)}); err != nil {
					t.Errorf("store %d append %d: %v", i, j, err)
					return
				}
			}
		})
	}
	wg.Wait()
	events := allEvents(t, stores[0], r.UserID, r.ID, 0, store.MaxEventLimit)
	for i, e := range events {
		if e.Seq != int64(i+1) {
			t.Fatalf("event %d has seq %d: want 1..%d without gaps", i, e.Seq, len(stores)*each)
		}
	}
	if len(events) != len(stores)*each {
		t.Errorf("%d events, want %d", len(events), len(stores)*each)
	}
}

// Turn is what one sync chat turn leaves in the record: the run with
// the user's message and the input that would start it again, then its
// end with the events the client was sent, response.done carrying the
// answer's message.
type Turn struct {
	UserMessage, Answer string
	Input               json.RawMessage
	Usage               events.Usage
	Types               []string
	Events              []json.RawMessage
}

// LoadTurn is a turn of the README's load test as the offline model
// answers it, with the fourteen events it stores (about 4 KiB): the
// run's start, the start and end of its four nodes, the supervisor's
// thinking and decision, the answer's chunk, the answer, and the run's
// end.
func LoadTurn() Turn {
	t := Turn{
		UserMessage: "thanks, and what else?",
		Answer: strings.Repeat("Here is what else I know about tea, Ada: it keeps best in a dry, dark tin, "+
			"away from spices, and a cup wants water just off the boil. ", 5),
		Input: json.RawMessage(`{"message":"thanks, and what else?","model":"default"}`),
		Usage: events.Usage{InputTokens: 1044, OutputTokens: 130, TotalTokens: 1174},
	}
	add := func(typ, fields string) {
		t.Types = append(t.Types, typ)
		t.Events = append(t.Events, json.RawMessage(`{"run_id":"0190e3a4-5c1e-7a3b-9f00-1234567890ab",`+
			`"conversation_id":"0190e3a4-5c1e-7a3b-9f00-ba0987654321","ts":"2026-11-03T14:05:06.123Z","type":"`+typ+`"`+fields+`}`))
	}
	node := func(name string, between func()) {
		add(events.TypeNodeStart, `,"node":"`+name+`"`)
		if between != nil {
			between()
		}
		add(events.TypeNodeEnd, `,"node":"`+name+`","duration_ms":0`)
	}
	add(events.TypeRunStarted, `,"request_id":"req_f79eb0a40747af26"`)
	node("initialize", nil)
	node("supervisor", func() {
		add(events.TypeSupervisorThinking, `,"message":"Deciding how to handle your request…"`)
		add(events.TypeSupervisorDecided, `,"action":"answer","tools":[],"reasoning":""`)
	})
	node("write", func() { add(events.TypeResponseChunk, `,"content":"`+t.Answer+`"`) })
	node("stream", func() { add(events.TypeResponseDone, `,"content":"`+t.Answer+`","tool_calls":[],"citations":[]`) })
	add(events.TypeRunCompleted, `,"status":"completed","usage":{"input_tokens":1044,"output_tokens":130,"total_tokens":1174}`)
	return t
}

// Batch is the turn's events as one text, a line each: how a floor
// stores them in one row.
func (t Turn) Batch() string {
	var b strings.Builder
	for i, e := range t.Events {
		if i > 0 {
			b.WriteByte('\n')
		}
		b.Write(e)
	}
	return b.String()
}

// BenchmarkTurnRecord measures the record of one sync chat turn through
// the store: StartRun, then EndRun with LoadTurn's events, eight
// turns a conversation as in the README's load test. Each backend's
// BenchmarkTurnRecordFloor stores the same facts with the fewest
// statements its database takes, in tables of its own: the ratio of the
// two, in one run, is what the record's shape costs over that floor.
func BenchmarkTurnRecord(b *testing.B, s store.Store) {
	ctx := b.Context()
	turn := LoadTurn()
	conversation := ""
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		nr := store.NewRun{UserID: "bench", ConversationID: conversation, UserMessage: turn.UserMessage,
			Input: turn.Input, Owner: "bench-process"}
		if i%8 == 0 {
			nr.ConversationID, nr.NewConversation = "", &store.NewConversation{UserID: "bench"}
		}
		r, err := s.StartRun(ctx, nr)
		if err != nil {
			b.Fatal(err)
		}
		conversation = r.ConversationID
		nes := make([]store.NewEvent, len(turn.Events))
		for j, data := range turn.Events {
			nes[j] = store.NewEvent{RunID: r.ID, Type: turn.Types[j], Data: data, Owner: nr.Owner}
			if nes[j].Type == events.TypeResponseDone {
				nes[j].Message = &store.NewMessage{RunID: r.ID, Role: store.RoleAssistant, Content: turn.Answer}
			}
		}
		end := store.RunEnd{Status: store.RunCompleted, Owner: nr.Owner, Usage: turn.Usage}
		if _, err := s.EndRun(ctx, r.ID, end, nes); err != nil {
			b.Fatal(err)
		}
	}
}
