package cognition_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tmc/langchaingo/llms/openai"

	"github.com/trellis-ai/trellis/cognition"
	"github.com/trellis-ai/trellis/internal/jobs"
	"github.com/trellis-ai/trellis/llm/llmtest"
	"github.com/trellis-ai/trellis/store"
)

// recordedTurn is a turn as the run service records it: the run with the
// user's message, and its answer with the answer's meta.
type recordedTurn struct {
	query, answer string
	meta          store.AnswerMeta
	// status ends the run; "" leaves it running, with no answer.
	status store.RunStatus
}

// record stores turns in a new conversation of user and returns its id.
func record(t *testing.T, st store.Store, user string, turns []recordedTurn) string {
	t.Helper()
	ctx := t.Context()
	conv, err := st.CreateConversation(ctx, store.NewConversation{UserID: user})
	if err != nil {
		t.Fatal(err)
	}
	for _, tr := range turns {
		addTurn(t, st, user, conv.ID, tr)
	}
	return conv.ID
}

func addTurn(t testing.TB, st store.Store, user, conv string, tr recordedTurn) {
	t.Helper()
	ctx := t.Context()
	run, err := st.StartRun(ctx, store.NewRun{UserID: user, ConversationID: conv, UserMessage: tr.query, RequestID: tr.meta.RequestID})
	if err != nil {
		t.Fatal(err)
	}
	if tr.status == "" {
		return
	}
	if tr.answer != "" {
		meta, _ := json.Marshal(tr.meta)
		if _, err := st.AddMessage(ctx, store.NewMessage{RunID: run.ID, Role: store.RoleAssistant, Content: tr.answer, Meta: meta}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := st.FinishRun(ctx, run.ID, store.RunEnd{Status: tr.status}); err != nil {
		t.Fatal(err)
	}
}

// learned is what memory holds of a user, without ids and times.
type learned struct {
	profile  store.Profile
	memories []store.Memory
}

func learnedOf(t *testing.T, svc *cognition.Service, user string) learned {
	t.Helper()
	p, err := svc.Profile(t.Context(), user)
	if err != nil {
		t.Fatal(err)
	}
	p.UserID, p.UpdatedAt = "", time.Time{}
	page, err := svc.Memories(t.Context(), user, store.Page{})
	if err != nil {
		t.Fatal(err)
	}
	ms := page.Memories
	for i := range ms {
		ms[i].ID, ms[i].UserID, ms[i].ConversationID = "", "", ""
		ms[i].CreatedAt, ms[i].LastAccessed = time.Time{}, time.Time{}
	}
	return learned{profile: p, memories: ms}
}

// writes counts a store's writes that learning makes: its lessons
// (Learn) and what each holds, and any write outside one.
type writes struct {
	cognition.Store
	mu                                              sync.Mutex
	lessons, profiles, memories, stats, markLearned int
	outside                                         int
}

func (w *writes) Learn(ctx context.Context, l store.Lesson) error {
	w.mu.Lock()
	w.lessons++
	if l.Profile != nil {
		w.profiles++
	}
	w.memories += len(l.Adds) + len(l.Updates)
	if len(l.Stats) > 0 {
		w.stats++
	}
	if l.ConversationID != "" {
		w.markLearned++
	}
	w.mu.Unlock()
	return w.Store.Learn(ctx, l)
}

func (w *writes) wrote() {
	w.mu.Lock()
	w.outside++
	w.mu.Unlock()
}

func (w *writes) UpdateProfile(ctx context.Context, userID string, fn func(*store.Profile) error) (store.Profile, error) {
	w.wrote()
	return w.Store.UpdateProfile(ctx, userID, fn)
}

func (w *writes) AddMemory(ctx context.Context, nm store.NewMemory) (store.Memory, error) {
	w.wrote()
	return w.Store.AddMemory(ctx, nm)
}

func (w *writes) UpdateMemory(ctx context.Context, userID, id string, nm store.NewMemory) (store.Memory, error) {
	w.wrote()
	return w.Store.UpdateMemory(ctx, userID, id, nm)
}

func (w *writes) DeleteMemory(ctx context.Context, userID, id string) error {
	w.wrote()
	return w.Store.DeleteMemory(ctx, userID, id)
}

func (w *writes) AddToolStats(ctx context.Context, userID string, stats []store.ToolStat) error {
	w.wrote()
	return w.Store.AddToolStats(ctx, userID, stats)
}

func (w *writes) MarkLearned(ctx context.Context, userID, conversationID string, num int64) error {
	w.wrote()
	return w.Store.MarkLearned(ctx, userID, conversationID, num)
}

func toolStats(t *testing.T, st cognition.Store) map[string]store.ToolStat {
	t.Helper()
	stats, err := st.ToolStats(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	by := map[string]store.ToolStat{}
	for _, s := range stats {
		by[s.Tool] = s
	}
	return by
}

// Learning a conversation's turns at once learns what learning each turn
// as it was answered would: the same profile, memories and stats, with
// turns that say the same again merged into one memory. It writes each
// thing once, however many turns, in one lesson (store.Memories.Learn):
// the profile, each memory, the stats, and how far it learned. Turns with nothing to teach are passed over, a
// turn still going stops it, and learning again learns nothing twice.
func TestLearnConversationIsLearningEachTurn(t *testing.T) {
	turns := []recordedTurn{
		{query: "I prefer short answers. How do tides work?", answer: "The moon pulls the sea.",
			meta: store.AnswerMeta{Outcome: "answered", RequestID: "q1"}, status: store.RunCompleted},
		{query: "remember that I live in Lisbon", answer: "Noted.",
			meta: store.AnswerMeta{Outcome: "answered", RequestID: "q2"}, status: store.RunCompleted},
		{query: "what is the weather in Lisbon tomorrow?", answer: "Sunny.", status: store.RunCompleted,
			meta: store.AnswerMeta{Outcome: "answered", RequestID: "q3", Tools: []store.AnswerTool{{Tool: "weather", Status: "error"}, {Tool: "weather", Status: "success"}}}},
		{query: "my secret plans for the garden", answer: "Kept out.", status: store.RunCompleted,
			meta: store.AnswerMeta{Outcome: "answered", RequestID: "q4", NoMemory: true}},
		{query: "book it", answer: "Which day?", meta: store.AnswerMeta{Outcome: "clarify", RequestID: "q5"}, status: store.RunCompleted},
		{query: "cancelled before any answer", status: store.RunCancelled, meta: store.AnswerMeta{RequestID: "q6"}},
		{query: "deploy the service to production", answer: "Blocked by policy.",
			meta: store.AnswerMeta{Outcome: "blocked", RequestID: "q7", Tools: []store.AnswerTool{{Tool: "deploy", Status: "rejected"}}}, status: store.RunCompleted},
		// Said again: merged into the memories of q1 and q2.
		{query: "I prefer short answers. How do tides work?", answer: "Still the moon.",
			meta: store.AnswerMeta{Outcome: "answered", RequestID: "q8", Tools: []store.AnswerTool{{Tool: "weather", Status: "success"}}}, status: store.RunCompleted},
		{query: "remember that I live in Lisbon", answer: "Noted again.",
			meta: store.AnswerMeta{Outcome: "answered", RequestID: "q9"}, status: store.RunCompleted},
	}
	for _, b := range backends() {
		t.Run(b.name, func(t *testing.T) {
			r := newRig(t, b, cognition.Config{})
			ctx := t.Context()
			st := r.st.(store.Store)
			conv := record(t, st, "alice", turns)
			// The turn after is still going: learning stops before it.
			addTurn(t, st, "alice", conv, recordedTurn{query: "and what about Porto?"})
			w := &writes{Store: r.st}
			together, err := cognition.New(cognition.Config{Store: w})
			if err != nil {
				t.Fatal(err)
			}
			defer together.Close()
			if err := together.LearnConversation(ctx, "alice", conv); err != nil {
				t.Fatal(err)
			}
			aliceStats := toolStats(t, r.st)
			for _, tr := range turns {
				if tr.answer == "" || tr.meta.NoMemory || tr.meta.Outcome == "clarify" {
					continue
				}
				bt := cognition.Turn{UserID: "bob", ConversationID: "b", RequestID: tr.meta.RequestID, Query: tr.query,
					Answer: tr.answer, Outcome: tr.meta.Outcome}
				for _, c := range tr.meta.Tools {
					bt.Tools = append(bt.Tools, cognition.ToolOutcome{Tool: c.Tool, Status: c.Status})
				}
				if err := r.svc.Learn(ctx, bt); err != nil {
					t.Fatal(err)
				}
			}
			alice, bob := learnedOf(t, r.svc, "alice"), learnedOf(t, r.svc, "bob")
			if len(alice.memories) == 0 {
				t.Fatal("nothing learned")
			}
			if !reflect.DeepEqual(alice, bob) {
				t.Errorf("learnt at once:\n%+v\nlearnt turn by turn:\n%+v", alice, bob)
			}
			if w.lessons != 1 || w.outside != 0 || w.profiles != 1 || w.stats != 1 || w.markLearned != 1 || w.memories != len(alice.memories) {
				t.Errorf("learning %d turns at once wrote %d lessons (and %d writes outside one), holding the profile %d times, memories %d times (%d memories), stats %d times, how far it learned %d times; want one lesson holding each once",
					len(turns), w.lessons, w.outside, w.profiles, w.memories, len(alice.memories), w.stats, w.markLearned)
			}
			// The stats are everyone's: bob's are what his learning added.
			for tool, all := range toolStats(t, r.st) {
				a := aliceStats[tool]
				bob := store.ToolStat{Tool: tool, Calls: all.Calls - a.Calls, Failures: all.Failures - a.Failures, Blocked: all.Blocked - a.Blocked,
					Rejections: all.Rejections - a.Rejections, ConfidenceSum: all.ConfidenceSum - a.ConfidenceSum}
				if math.Abs(bob.ConfidenceSum-a.ConfidenceSum) < 1e-9 {
					bob.ConfidenceSum = a.ConfidenceSum
				}
				if bob != a {
					t.Errorf("stats of %s learnt at once %+v, turn by turn %+v", tool, a, bob)
				}
			}
			for _, m := range alice.memories {
				if m.Summary == "Asked: my secret plans for the garden" {
					t.Errorf("a turn kept out of memory was learned: %+v", m)
				}
			}
			left, err := r.st.UnlearnedTurns(ctx, "alice", conv, 0)
			if err != nil || len(left) != 1 || left[0].Query != "and what about Porto?" {
				t.Fatalf("unlearned after learning = %+v, %v", left, err)
			}
			// Learning again learns nothing twice.
			if err := r.svc.LearnConversation(ctx, "alice", conv); err != nil {
				t.Fatal(err)
			}
			if again := learnedOf(t, r.svc, "alice"); !reflect.DeepEqual(again, alice) {
				t.Errorf("learning again changed memory:\n%+v\n%+v", again, alice)
			}
			// Another user's learning reads nothing of alice's.
			if _, err := r.st.UnlearnedTurns(ctx, "bob", conv, 0); err == nil {
				t.Error("bob read alice's turns")
			}
		})
	}
}

// A long backlog is learned sixteen turns at a time, each part one
// lesson that marks it learned: a job that times out part-way (its Extractor asks a
// model once a turn) keeps what it learned.
func TestLearnConversationInParts(t *testing.T) {
	var turns []recordedTurn
	for i := range 33 {
		turns = append(turns, recordedTurn{query: "thanks, and what else?", answer: "More.", status: store.RunCompleted,
			meta: store.AnswerMeta{Outcome: "answered", RequestID: fmt.Sprintf("q%d", i)}})
	}
	for _, b := range backends() {
		t.Run(b.name, func(t *testing.T) {
			r := newRig(t, b, cognition.Config{})
			conv := record(t, r.st.(store.Store), "alice", turns)
			w := &writes{Store: r.st}
			svc, err := cognition.New(cognition.Config{Store: w})
			if err != nil {
				t.Fatal(err)
			}
			defer svc.Close()
			if err := svc.LearnConversation(t.Context(), "alice", conv); err != nil {
				t.Fatal(err)
			}
			if w.lessons != 3 || w.outside != 0 || w.profiles != 3 || w.markLearned != 3 {
				t.Errorf("33 turns wrote %d lessons (and %d writes outside one), holding the profile %d times and how far they were learned %d times, want 3 lessons holding each",
					w.lessons, w.outside, w.profiles, w.markLearned)
			}
			if left, err := r.st.UnlearnedTurns(t.Context(), "alice", conv, 0); err != nil || len(left) != 0 {
				t.Errorf("unlearned after learning = %d turns, %v", len(left), err)
			}
		})
	}
}

// adaTurns are three answered turns that tell a model something to
// remember.
var adaTurns = []recordedTurn{
	{query: "hello, my name is Ada and I like tea", answer: "Hello Ada.", status: store.RunCompleted,
		meta: store.AnswerMeta{Outcome: "answered", RequestID: "q1"}},
	{query: "I moved to Lisbon last year", answer: "Welcome to Lisbon.", status: store.RunCompleted,
		meta: store.AnswerMeta{Outcome: "answered", RequestID: "q2"}},
	{query: "thanks, and what else?", answer: "Green tea is popular there.", status: store.RunCompleted,
		meta: store.AnswerMeta{Outcome: "answered", RequestID: "q3"}},
}

// With a model, a conversation's turns are read in one call, every
// exchange in it, and what the model found is learned: its memory, and
// the preference and expertise the user stated.
func TestLearnConversationAsksTheModelOnce(t *testing.T) {
	turns := adaTurns
	srv := llmtest.NewOpenAIServerFunc(t, func(llmtest.Request, int) llmtest.Response {
		return llmtest.Response{Text: `{"memories": [{"event": "ADD", "text": "Ada lives in Lisbon and likes tea"}],
			"preferences": {"drink": "tea"}, "expertise": "expert"}`}
	})
	m, err := openai.New(openai.WithBaseURL(srv.BaseURL()), openai.WithToken("test"), openai.WithModel("extractor"))
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range backends() {
		t.Run(b.name, func(t *testing.T) {
			before := len(srv.Requests())
			r := newRig(t, b, cognition.Config{Extractor: cognition.ModelExtractor{Model: m}})
			conv := record(t, r.st.(store.Store), "alice", turns)
			if err := r.svc.LearnConversation(t.Context(), "alice", conv); err != nil {
				t.Fatal(err)
			}
			reqs := srv.Requests()[before:]
			if len(reqs) != 1 {
				t.Fatalf("the model was asked %d times for %d turns, want once", len(reqs), len(turns))
			}
			asked := string(reqs[0].Raw)
			for _, tr := range turns {
				if !strings.Contains(asked, tr.query) || !strings.Contains(asked, tr.answer) {
					t.Errorf("the model was not shown %q and its answer %q", tr.query, tr.answer)
				}
			}
			got := learnedOf(t, r.svc, "alice")
			if !slices.ContainsFunc(got.memories, func(m store.Memory) bool { return m.Summary == "Ada lives in Lisbon and likes tea" }) {
				t.Errorf("memories %+v lack the model's", got.memories)
			}
			if got.profile.Preferences["drink"] != "tea" || got.profile.Expertise != "expert" || got.profile.Patterns["turns"] != 3 {
				t.Errorf("profile %+v: want the stated preference and expertise over three turns", got.profile)
			}
		})
	}
}

// LearnLater asks for one job per conversation however many turns come
// within LearnAfter, and with LearnEvery the n-th turn runs it at once.
func TestLearnLaterIsOneJob(t *testing.T) {
	for _, b := range backends() {
		t.Run(b.name, func(t *testing.T) {
			r := newRig(t, b, cognition.Config{LearnAfter: time.Hour, LearnEvery: 3})
			ctx := t.Context()
			for turn := 1; turn <= 2; turn++ {
				if err := r.svc.LearnLater(ctx, "alice", "c1", turn); err != nil {
					t.Fatal(err)
				}
			}
			ids, err := r.queue.Unfinished(ctx, cognition.Pending{}.Kind(), "conversation_id", "c1")
			if err != nil || len(ids) != 1 {
				t.Fatalf("jobs after two turns = %v, %v", ids, err)
			}
			if st, _, _ := r.queue.JobState(ctx, ids[0]); st != jobs.StateScheduled {
				t.Fatalf("the job is %s, not scheduled an hour away", st)
			}
			if err := r.svc.LearnLater(ctx, "alice", "c1", 3); err != nil {
				t.Fatal(err)
			}
			again, _ := r.queue.Unfinished(ctx, cognition.Pending{}.Kind(), "conversation_id", "c1")
			if !reflect.DeepEqual(again, ids) {
				t.Fatalf("jobs after the third turn = %v, want %v", again, ids)
			}
			if st, _, _ := r.queue.JobState(ctx, ids[0]); st != jobs.StateAvailable {
				t.Errorf("on the third turn the job is %s, not available at once", st)
			}
			if err := r.svc.LearnLater(ctx, "alice", "c2", 1); err != nil {
				t.Fatal(err)
			}
			if other, _ := r.queue.Unfinished(ctx, cognition.Pending{}.Kind(), "conversation_id", "c2"); len(other) != 1 {
				t.Errorf("another conversation's jobs = %v", other)
			}
		})
	}
}

// A turn's answer is stored with its run's end, after the run asked for
// learning: a job that runs in between finds the turn running, waits
// for it, and learns it once it is answered.
func TestLearningWaitsForARunningTurn(t *testing.T) {
	for _, b := range backends() {
		t.Run(b.name, func(t *testing.T) {
			r := newRig(t, b, cognition.Config{LearnAfter: -1})
			ctx := t.Context()
			st := r.st.(store.Store)
			conv, err := st.CreateConversation(ctx, store.NewConversation{UserID: "alice"})
			if err != nil {
				t.Fatal(err)
			}
			run, err := st.StartRun(ctx, store.NewRun{UserID: "alice", ConversationID: conv.ID, UserMessage: "remember that I live in Lisbon", RequestID: "q1"})
			if err != nil {
				t.Fatal(err)
			}
			startQueue(t, r.queue)
			if err := r.svc.LearnLater(ctx, "alice", conv.ID, 1); err != nil {
				t.Fatal(err)
			}
			// The job runs at once (its first look comes within 100 ms),
			// finds the turn running, and waits: it is not finished, and
			// nothing is learned.
			time.Sleep(time.Second)
			ids, err := r.queue.Unfinished(ctx, cognition.Pending{}.Kind(), "conversation_id", conv.ID)
			if err != nil || len(ids) != 1 {
				t.Fatalf("the job did not wait for the running turn: unfinished jobs %v, %v", ids, err)
			}
			if got := learnedOf(t, r.svc, "alice").memories; len(got) != 0 {
				t.Fatalf("learned from a turn with no answer: %+v", got)
			}
			meta, _ := json.Marshal(store.AnswerMeta{Outcome: "answered", RequestID: "q1"})
			if _, err := st.EndRun(ctx, run.ID, store.RunEnd{Status: store.RunCompleted}, []store.NewEvent{{RunID: run.ID, Type: "response.done", Data: json.RawMessage(`{}`),
				Message: &store.NewMessage{RunID: run.ID, Role: store.RoleAssistant, Content: "Noted.", Meta: meta}}}); err != nil {
				t.Fatal(err)
			}
			for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(50 * time.Millisecond) {
				left, err := r.st.UnlearnedTurns(ctx, "alice", conv.ID, 0)
				if err != nil {
					t.Fatal(err)
				}
				if len(left) == 0 && len(learnedOf(t, r.svc, "alice").memories) > 0 {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("the answered turn was not learned: unlearned %+v", left)
				}
			}
		})
	}
}
