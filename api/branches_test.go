package api_test

import (
	"net/http"
	"slices"
	"testing"

	"github.com/trellis-ai/trellis/store"
)

// conversationRead is what the branch tests read of GET
// /conversations/{id} and of a branch.
type conversationRead struct {
	Runs     []store.RunWithEvents
	Messages []store.Message
}

// active returns the ids of the runs not superseded, in order.
func (c conversationRead) active() []string {
	var ids []string
	for _, r := range c.Runs {
		if !r.Superseded {
			ids = append(ids, r.ID)
		}
	}
	return ids
}

func (c conversationRead) run(id string) store.RunWithEvents {
	for _, r := range c.Runs {
		if r.ID == id {
			return r
		}
	}
	return store.RunWithEvents{}
}

func (e *env) read(path string) conversationRead {
	e.t.Helper()
	status, body := e.do("GET", path, nil)
	if status != http.StatusOK {
		e.t.Fatalf("GET %s: %d %s", path, status, body)
	}
	return jsonOf[conversationRead](e.t, body)
}

// turn sends a message on conv (a new conversation when "") and returns
// the run's id and conversation, with the stream's last event type.
func (e *env) turn(conv, msg string) (run, conversation, last string) {
	e.t.Helper()
	body := map[string]any{"message": msg}
	if conv != "" {
		body["conversation_id"] = conv
	}
	s := e.chat(body)
	evs := s.all()
	return s.header("X-Run-ID"), s.header("X-Conversation-ID"), evs[len(evs)-1].Type
}

// userMessages returns the user's messages in the agent's state of conv:
// the conversation the model reads.
func (e *env) userMessages(conv string) []string {
	e.t.Helper()
	snap, err := e.srv.Runs().State(e.t.Context(), conv)
	if err != nil {
		e.t.Fatal(err)
	}
	var out []string
	for _, m := range snap.State.Messages {
		if m.Role == "user" {
			out = append(out, m.Content)
		}
	}
	return out
}

func (e *env) edit(conv, run, msg string) string {
	e.t.Helper()
	s := e.open(e.request("POST", "/api/v1/conversations/"+conv+"/runs/"+run+"/edit", map[string]any{"message": msg}, aliceKey))
	if evs := s.all(); evs[len(evs)-1].Type != "run.completed" {
		e.t.Fatalf("edit of run %s: %v", run, types(evs))
	}
	return s.header("X-Run-ID")
}

// Editing a message twice makes three branches of its turn: each is
// listed and read, one is made active, and the next message continues
// it, the model reading that branch's history. Switching while a run is
// active is refused.
func TestBranches(t *testing.T) {
	for _, b := range backends {
		t.Run(string(b), func(t *testing.T) {
			e := newEnv(t, envOptions{backend: b})
			run1, conv, _ := e.turn("", "first question")
			run2, _, _ := e.turn(conv, "second question")
			run3 := e.edit(conv, run2, "second question, edited")
			run4 := e.edit(conv, run3, "second question, once more")

			status, body := e.do("GET", "/api/v1/conversations/"+conv+"/branches?run_id="+run4, nil)
			if status != http.StatusOK {
				t.Fatalf("branches: %d %s", status, body)
			}
			bs := jsonOf[struct{ Branches []store.Branch }](t, body).Branches
			var ids []string
			for _, b := range bs {
				ids = append(ids, b.RunID)
				if b.HeadRunID != b.RunID || b.Active != (b.RunID == run4) {
					t.Errorf("branch %+v: want its own last run, active only for %s", b, run4)
				}
			}
			if !slices.Equal(ids, []string{run2, run3, run4}) || bs[0].UserMessage != "second question" || bs[0].Status != store.RunCompleted {
				t.Fatalf("branches %s, want %s, %s, %s", body, run2, run3, run4)
			}

			c := e.read("/api/v1/conversations/" + conv)
			if !slices.Equal(c.active(), []string{run1, run4}) {
				t.Errorf("active branch %v, want %s, %s", c.active(), run1, run4)
			}
			for i, id := range []string{run2, run3, run4} {
				if v := c.run(id).Versions; v == nil || v.Index != i+1 || v.Count != 3 {
					t.Errorf("run %s versions %+v, want %d of 3", id, v, i+1)
				}
			}
			if c.run(run1).Versions != nil || c.run(run4).ParentID != run1 {
				t.Errorf("first run %+v, last %+v", c.run(run1).Run, c.run(run4).Run)
			}

			// Each branch reads as its own conversation.
			for id, want := range map[string][]string{run2: {"first question", "second question"},
				run3: {"first question", "second question, edited"}, run4: {"first question", "second question, once more"}} {
				br := e.read("/api/v1/conversations/" + conv + "/branches/" + id)
				var users []string
				for _, m := range br.Messages {
					if m.Role == store.RoleUser {
						users = append(users, m.Content)
					}
				}
				if !slices.Equal(users, want) || len(br.Messages) != 4 {
					t.Errorf("branch of %s: user messages %q of %d, want %q and the answers", id, users, len(br.Messages), want)
				}
			}

			status, body = e.do("POST", "/api/v1/conversations/"+conv+"/branches/"+run2+"/activate", nil)
			if status != http.StatusOK || jsonOf[map[string]string](t, body)["head_run_id"] != run2 {
				t.Fatalf("activate: %d %s", status, body)
			}
			if c := e.read("/api/v1/conversations/" + conv); !slices.Equal(c.active(), []string{run1, run2}) {
				t.Errorf("active branch after the switch %v, want %s, %s", c.active(), run1, run2)
			}

			// The next message continues the chosen branch.
			run5, _, last := e.turn(conv, "third question")
			if last != "run.completed" {
				t.Fatalf("third question: %s", last)
			}
			if c := e.read("/api/v1/conversations/" + conv); !slices.Equal(c.active(), []string{run1, run2, run5}) {
				t.Errorf("active branch %v, want %s, %s, %s", c.active(), run1, run2, run5)
			}
			if seen, want := e.userMessages(conv), []string{"first question", "second question", "third question"}; !slices.Equal(seen, want) {
				t.Errorf("the agent's conversation %q, want %q", seen, want)
			}
			calls := e.model.Calls()
			if last := calls[len(calls)-1]; last.Turn != 3 || last.LastHuman != "third question" {
				t.Errorf("the model's last call %+v", last)
			}

			// Back to the branch of the last edit, whose last run is still its own.
			status, body = e.do("POST", "/api/v1/conversations/"+conv+"/branches/"+run4+"/activate", nil)
			if status != http.StatusOK || jsonOf[map[string]string](t, body)["head_run_id"] != run4 {
				t.Fatalf("activate: %d %s", status, body)
			}
			// While a run is active, no switch.
			s := e.chat(map[string]any{"message": "wait for it", "conversation_id": conv})
			<-e.tools.waiting
			status, body = e.do("POST", "/api/v1/conversations/"+conv+"/branches/"+run2+"/activate", nil)
			wantError(t, status, body, http.StatusConflict)
			e.tools.release <- struct{}{}
			s.all()
			if c := e.read("/api/v1/conversations/" + conv); !slices.Equal(c.active()[:2], []string{run1, run4}) || len(c.active()) != 3 {
				t.Errorf("active branch %v, want %s, %s and the waiting run", c.active(), run1, run4)
			}
			if seen, want := e.userMessages(conv), []string{"first question", "second question, once more", "wait for it"}; !slices.Equal(seen, want) {
				t.Errorf("the agent's conversation %q, want %q", seen, want)
			}

			// Unknown, another user's and another conversation's runs.
			other, _, _ := e.turn("", "elsewhere")
			for _, path := range []string{"/branches?run_id=" + other, "/branches/" + other, "/branches?run_id=nope"} {
				status, body = e.do("GET", "/api/v1/conversations/"+conv+path, nil)
				wantError(t, status, body, http.StatusNotFound)
			}
			status, body = e.do("POST", "/api/v1/conversations/"+conv+"/branches/"+other+"/activate", nil)
			wantError(t, status, body, http.StatusNotFound)
			status, body = e.doAs(bobKey, "POST", "/api/v1/conversations/"+conv+"/branches/"+run2+"/activate", nil)
			wantError(t, status, body, http.StatusNotFound)
			status, body = e.doAs(bobKey, "GET", "/api/v1/conversations/"+conv+"/branches?run_id="+run2, nil)
			wantError(t, status, body, http.StatusNotFound)
			status, body = e.do("GET", "/api/v1/conversations/"+conv+"/branches", nil)
			wantError(t, status, body, http.StatusBadRequest)
		})
	}
}

// A turn that failed in a model outage is retried: a new run takes it up
// from its last checkpoint, the model is asked the same again and
// answers; the failed run's record stays.
func TestRetry(t *testing.T) {
	for _, b := range backends {
		t.Run(string(b), func(t *testing.T) {
			e := newEnv(t, envOptions{backend: b})
			run1, conv, _ := e.turn("", "first question")
			failed, _, last := e.turn(conv, "a flaky question")
			if last != "run.failed" {
				t.Fatalf("the flaky question ended with %s", last)
			}
			before := e.model.Calls()

			status, body := e.doAs(bobKey, "POST", "/api/v1/conversations/"+conv+"/runs/"+failed+"/retry", nil)
			wantError(t, status, body, http.StatusNotFound)
			status, body = e.do("POST", "/api/v1/conversations/"+conv+"/runs/"+run1+"/retry", nil)
			wantError(t, status, body, http.StatusConflict) // it did not fail

			s := e.open(e.request("POST", "/api/v1/conversations/"+conv+"/runs/"+failed+"/retry", nil, aliceKey))
			evs := s.all()
			retry := s.header("X-Run-ID")
			checkRun(t, evs, 1, retry, conv)
			if retry == failed || evs[len(evs)-1].Type != "run.completed" {
				t.Fatalf("retry run %s: %v", retry, types(evs))
			}
			calls := e.model.Calls()
			outage, again := before[len(before)-1], calls[len(before)]
			if outage.Node != "supervisor" || again.Node != outage.Node || again.Turn != outage.Turn || again.LastHuman != "a flaky question" ||
				again.System != outage.System {
				t.Errorf("the model was asked %+v on retry, %+v before", again, outage)
			}

			c := e.read("/api/v1/conversations/" + conv)
			if !slices.Equal(c.active(), []string{run1, retry}) || c.run(failed).Status != store.RunFailed || len(c.run(failed).Events) == 0 {
				t.Errorf("runs after the retry: active %v; the failed run %+v", c.active(), c.run(failed).Run)
			}
			if r := c.run(retry); r.UserMessage != "a flaky question" || r.Versions == nil || r.Versions.Index != 2 || r.Versions.Count != 2 {
				t.Errorf("retry run %+v", r.Run)
			}
			snap, err := e.srv.Runs().State(t.Context(), conv)
			if err != nil {
				t.Fatal(err)
			}
			if n := len(snap.State.Messages); n != 4 || snap.State.Messages[2].Content != "a flaky question" {
				t.Errorf("the agent's conversation after the retry: %+v", snap.State.Messages)
			}

			// Neither the retried run nor the retry can be retried now, and
			// a retry while a run is active is refused.
			for _, id := range []string{failed, retry} {
				status, body = e.do("POST", "/api/v1/conversations/"+conv+"/runs/"+id+"/retry", nil)
				wantError(t, status, body, http.StatusConflict)
			}
			failed2, _, _ := e.turn(conv, "another flaky question") // its step is spent: it is answered
			w := e.chat(map[string]any{"message": "wait for it", "conversation_id": conv})
			<-e.tools.waiting
			status, body = e.do("POST", "/api/v1/conversations/"+conv+"/runs/"+failed2+"/retry", nil)
			wantError(t, status, body, http.StatusConflict)
			status, body = e.do("POST", "/api/v1/conversations/"+conv+"/runs/"+failed+"/retry", map[string]any{"x": 1})
			wantError(t, status, body, http.StatusBadRequest)
			e.tools.release <- struct{}{}
			w.all()
		})
	}
}
