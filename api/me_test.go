package api_test

import (
	"context"
	"maps"
	"net/http"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/trellis-ai/trellis/api/apitest"
	"github.com/trellis-ai/trellis/cognition"
	"github.com/trellis-ai/trellis/internal/jobs"
	"github.com/trellis-ai/trellis/internal/sqlopen"
	"github.com/trellis-ai/trellis/internal/turnbench"
	"github.com/trellis-ai/trellis/nodes"
	"github.com/trellis-ai/trellis/store"
)

// newMemoryEnv is a server with memory on, and its cognition service.
func newMemoryEnv(t *testing.T, b backend) (*env, *cognition.Service) {
	var svc *cognition.Service
	e := newEnv(t, envOptions{backend: b, configure: func(c *apitest.Config) {
		var err error
		// A generous budget: these tests check who sees what.
		svc, err = cognition.New(cognition.Config{Store: c.API.Store.(cognition.Store), Budget: 10 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(svc.Close)
		c.API.Cognition = svc
	}})
	return e, svc
}

type memoryPage struct {
	Memories []struct {
		ID      string `json:"id"`
		Summary string `json:"summary"`
	} `json:"memories"`
	NextCursor string `json:"next_cursor"`
}

// keysOf returns the keys of the JSON object in b, sorted.
func keysOf(t *testing.T, b []byte) []string {
	t.Helper()
	return slices.Sorted(maps.Keys(jsonOf[map[string]any](t, b)))
}

// The bodies have exactly the keys API.md lists, and PATCH takes any of
// the profile's fields, a GET body sent back included.
func TestMeShapes(t *testing.T) {
	for _, b := range backends {
		t.Run(string(b), func(t *testing.T) {
			e, svc := newMemoryEnv(t, b)
			if err := svc.Remember(t.Context(), "alice", "", "my boat is called Nautilus"); err != nil {
				t.Fatal(err)
			}
			profileKeys := []string{"communication_style", "expertise_level", "interests", "preferences", "updated_at", "user_id"}
			status, body := e.do(http.MethodGet, "/api/v1/me/profile", nil)
			if status != http.StatusOK || !slices.Equal(keysOf(t, body), profileKeys) {
				t.Fatalf("profile: %d %s", status, body)
			}
			if p := jsonOf[map[string]any](t, body); p["user_id"] != "alice" || p["expertise_level"] != "" {
				t.Errorf("fresh profile %s", body)
			}

			status, body = e.do(http.MethodPatch, "/api/v1/me/profile", map[string]any{"expertise_level": "expert",
				"communication_style": "technical", "interests": []string{"boats", "sails"}, "preferences": map[string]string{"units": "metric"}})
			if status != http.StatusOK || !slices.Equal(keysOf(t, body), profileKeys) {
				t.Fatalf("patch: %d %s", status, body)
			}
			p := jsonOf[struct {
				UserID      string            `json:"user_id"`
				Expertise   string            `json:"expertise_level"`
				Style       string            `json:"communication_style"`
				Interests   []string          `json:"interests"`
				Preferences map[string]string `json:"preferences"`
				UpdatedAt   time.Time         `json:"updated_at"`
			}](t, body)
			if p.UserID != "alice" || p.Expertise != "expert" || p.Style != "technical" || !slices.Equal(p.Interests, []string{"boats", "sails"}) ||
				p.Preferences["units"] != "metric" || p.UpdatedAt.IsZero() {
				t.Errorf("patched profile %s", body)
			}
			// What GET shows can be sent back as it is.
			_, got := e.do(http.MethodGet, "/api/v1/me/profile", nil)
			if status, body := e.do(http.MethodPatch, "/api/v1/me/profile", jsonOf[map[string]any](t, got)); status != http.StatusOK {
				t.Errorf("patch with the GET body: %d %s", status, body)
			}

			status, body = e.do(http.MethodGet, "/api/v1/me/memories", nil)
			if status != http.StatusOK || !slices.Equal(keysOf(t, body), []string{"memories", "next_cursor"}) {
				t.Fatalf("memories: %d %s", status, body)
			}
			page := jsonOf[struct {
				Memories []map[string]any `json:"memories"`
			}](t, body)
			if len(page.Memories) != 1 {
				t.Fatalf("memories: %s", body)
			}
			m := page.Memories[0]
			want := []string{"access_count", "conversation_id", "created_at", "id", "importance", "last_accessed", "outcome", "summary", "topics"}
			if got := slices.Sorted(maps.Keys(m)); !slices.Equal(got, want) || m["summary"] != "my boat is called Nautilus" || m["id"] == "" {
				t.Errorf("memory keys %v, want %v: %s", got, want, body)
			}

			// Forgetting everything answers 204 and takes the profile too.
			status, body = e.do(http.MethodDelete, "/api/v1/me/memories", nil)
			if status != http.StatusNoContent || len(body) != 0 {
				t.Fatalf("forget all: %d %q", status, body)
			}
			if _, body = e.do(http.MethodGet, "/api/v1/me/memories", nil); string(body) != `{"memories":[],"next_cursor":""}`+"\n" {
				t.Errorf("memories after forgetting all: %s", body)
			}
			if _, body = e.do(http.MethodGet, "/api/v1/me/profile", nil); jsonOf[map[string]any](t, body)["expertise_level"] != "" {
				t.Errorf("profile after forgetting all: %s", body)
			}
		})
	}
}

// Two users never see or touch each other's memories or profile, through
// any endpoint.
func TestMeIsolation(t *testing.T) {
	for _, b := range backends {
		t.Run(string(b), func(t *testing.T) {
			e, svc := newMemoryEnv(t, b)
			ctx := t.Context()
			if err := svc.Remember(ctx, "alice", "", "my boat is called Nautilus"); err != nil {
				t.Fatal(err)
			}
			status, body := e.do(http.MethodPatch, "/api/v1/me/profile", map[string]any{"communication_style": "concise", "preferences": map[string]string{"units": "metric"}})
			if status != http.StatusOK {
				t.Fatalf("patch: %d %s", status, body)
			}
			p := jsonOf[store.Profile](t, body)
			if p.Style != "concise" || p.Preferences["units"] != "metric" || p.Preferences["style"] != "concise" {
				t.Errorf("patched profile %s", body)
			}

			status, body = e.do(http.MethodGet, "/api/v1/me/memories", nil)
			alice := jsonOf[memoryPage](t, body)
			if status != http.StatusOK || len(alice.Memories) != 1 || alice.Memories[0].Summary != "my boat is called Nautilus" {
				t.Fatalf("alice's memories: %d %s", status, body)
			}
			id := alice.Memories[0].ID

			status, body = e.doAs(bobKey, http.MethodGet, "/api/v1/me/memories", nil)
			if status != http.StatusOK || len(jsonOf[memoryPage](t, body).Memories) != 0 {
				t.Errorf("bob's memories: %d %s", status, body)
			}
			status, body = e.doAs(bobKey, http.MethodGet, "/api/v1/me/profile", nil)
			if bp := jsonOf[store.Profile](t, body); status != http.StatusOK || bp.Style != "" || len(bp.Preferences) != 0 {
				t.Errorf("bob's profile: %d %s", status, body)
			}
			status, body = e.doAs(bobKey, http.MethodDelete, "/api/v1/me/memories/"+id, nil)
			wantError(t, status, body, http.StatusNotFound)
			status, body = e.doAs(bobKey, http.MethodDelete, "/api/v1/me/memories", nil)
			if status != http.StatusNoContent || len(body) != 0 {
				t.Errorf("bob forgets all: %d %q", status, body)
			}
			if c, err := svc.Context(ctx, "bob", "what is my boat called"); err != nil || len(c.Memories) != 0 || c.Profile.Style != "" {
				t.Errorf("bob's context: %+v, %v", c, err)
			}
			// Alice's are untouched.
			if _, body = e.do(http.MethodGet, "/api/v1/me/memories", nil); len(jsonOf[memoryPage](t, body).Memories) != 1 {
				t.Errorf("alice's memories after bob: %s", body)
			}
			if status, _ = e.do(http.MethodDelete, "/api/v1/me/memories/"+id, nil); status != http.StatusNoContent {
				t.Errorf("alice deletes hers: %d", status)
			}
			status, body = e.do(http.MethodDelete, "/api/v1/me/memories/"+id, nil)
			wantError(t, status, body, http.StatusNotFound)
		})
	}
}

func TestMeBadInput(t *testing.T) {
	e, svc := newMemoryEnv(t, sqliteBackend)
	for i := range 3 {
		if err := svc.Remember(t.Context(), "alice", "", []string{"tea is best", "cats are fine", "boats float"}[i]); err != nil {
			t.Fatal(err)
		}
	}
	long := make(map[string]string, 51)
	for i := range 51 {
		long[string(rune('a'+i%26))+string(rune('a'+i/26))] = "x"
	}
	for _, tc := range []struct {
		name, method, path string
		body               any
		want               int
	}{
		{"unknown style", http.MethodPatch, "/api/v1/me/profile", map[string]any{"communication_style": "loud"}, http.StatusBadRequest},
		{"unknown expertise", http.MethodPatch, "/api/v1/me/profile", map[string]any{"expertise_level": "guru"}, http.StatusBadRequest},
		{"old style name", http.MethodPatch, "/api/v1/me/profile", map[string]any{"style": "concise"}, http.StatusBadRequest},
		{"old expertise name", http.MethodPatch, "/api/v1/me/profile", map[string]any{"expertise": "expert"}, http.StatusBadRequest},
		{"another user id", http.MethodPatch, "/api/v1/me/profile", map[string]any{"user_id": "bob"}, http.StatusBadRequest},
		{"interests not a list", http.MethodPatch, "/api/v1/me/profile", map[string]any{"interests": "boats"}, http.StatusBadRequest},
		{"too many interests", http.MethodPatch, "/api/v1/me/profile", map[string]any{"interests": make([]string, 11)}, http.StatusBadRequest},
		{"empty interest", http.MethodPatch, "/api/v1/me/profile", map[string]any{"interests": []string{""}}, http.StatusBadRequest},
		{"unknown field", http.MethodPatch, "/api/v1/me/profile", map[string]any{"mood": "happy"}, http.StatusBadRequest},
		{"too many preferences", http.MethodPatch, "/api/v1/me/profile", map[string]any{"preferences": long}, http.StatusBadRequest},
		{"empty preference name", http.MethodPatch, "/api/v1/me/profile", map[string]any{"preferences": map[string]string{"": "x"}}, http.StatusBadRequest},
		{"negative limit", http.MethodGet, "/api/v1/me/memories?limit=-1", nil, http.StatusBadRequest},
		{"bad cursor", http.MethodGet, "/api/v1/me/memories?cursor=nope", nil, http.StatusBadRequest},
	} {
		t.Run(tc.name, func(t *testing.T) {
			status, body := e.do(tc.method, tc.path, tc.body)
			wantError(t, status, body, tc.want)
		})
	}
	// Pages of two.
	var got []string
	cursor := ""
	for range 3 {
		status, body := e.do(http.MethodGet, "/api/v1/me/memories?limit=2&cursor="+cursor, nil)
		p := jsonOf[memoryPage](t, body)
		if status != http.StatusOK || len(p.Memories) > 2 {
			t.Fatalf("page: %d %s", status, body)
		}
		for _, m := range p.Memories {
			got = append(got, m.Summary)
		}
		if cursor = p.NextCursor; cursor == "" {
			break
		}
	}
	if len(got) != 3 || got[0] != "boats float" {
		t.Errorf("pages = %v", got)
	}
}

// TestIdentityOperatorsOnly: the per-tool statistics over every user are
// the operators' (Config.Admins; in local mode the local user): another
// user gets 403 forbidden.
func TestIdentityOperatorsOnly(t *testing.T) {
	memory := func(t *testing.T, c *apitest.Config) {
		svc, err := cognition.New(cognition.Config{Store: c.API.Store.(cognition.Store)})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(svc.Close)
		c.API.Cognition = svc
	}
	e := newEnv(t, envOptions{configure: func(c *apitest.Config) {
		memory(t, c)
		c.API.Admins = []string{"bob"}
	}})
	status, body := e.doAs(aliceKey, http.MethodGet, "/api/v1/cognition/identity", nil)
	wantError(t, status, body, http.StatusForbidden)
	if code := jsonOf[struct{ Error struct{ Code string } }](t, body).Error.Code; code != "forbidden" {
		t.Errorf("code %q, want forbidden", code)
	}
	if status, body := e.doAs(bobKey, http.MethodGet, "/api/v1/cognition/identity", nil); status != http.StatusOK {
		t.Errorf("an operator: %d %s", status, body)
	}
	status, body = e.doAs("", http.MethodGet, "/api/v1/cognition/identity", nil)
	wantError(t, status, body, http.StatusUnauthorized)

	none := newEnv(t, envOptions{configure: func(c *apitest.Config) { memory(t, c) }})
	status, body = none.doAs(aliceKey, http.MethodGet, "/api/v1/cognition/identity", nil)
	wantError(t, status, body, http.StatusForbidden)

	local := newEnv(t, envOptions{local: true, configure: func(c *apitest.Config) { memory(t, c) }})
	if status, body := local.do(http.MethodGet, "/api/v1/cognition/identity", nil); status != http.StatusOK {
		t.Errorf("local mode's one user: %d %s", status, body)
	}
}

// Without a cognition service the endpoints are not there.
func TestMeOff(t *testing.T) {
	e := newEnv(t, envOptions{})
	status, body := e.do(http.MethodGet, "/api/v1/me/memories", nil)
	wantError(t, status, body, http.StatusNotFound)
}

// BenchmarkSyncChatMemory is BenchmarkSyncChat with memory off and on
// (context loaded before each answer, learning asked for after it and
// worked by the queue meanwhile), in the same run, so their ratio is
// what memory adds to the answer path; each client's conversations run
// for turns turns. Memory on reports the learning jobs stored per turn
// (jobs/turn) and, once the jobs left when the clients stop have run,
// the share of turns learned (learned/turn, 1 when every answer was).
// Learning lags the answers (a job that finds the conversation's next
// turn running waits a second for it), so the time per answer (ns/op)
// holds only the learning worked meanwhile, on the same cores; the CPU
// time of the process per turn (cpu-ms/turn), server and clients, holds
// all of it. Conversations are learned 100 ms after a turn, not the
// service's 10 s, so that their learning is worked within the run:
//
//	go test -run '^$' -bench SyncChatMemory -count 6 ./api/ | benchstat -col /memory -
func BenchmarkSyncChatMemory(b *testing.B) {
	for _, be := range backends {
		for _, turns := range []int{1, 8} {
			name := "backend=" + string(be) + "/turns=" + strconv.Itoa(turns)
			b.Run(name+"/memory=off", func(b *testing.B) {
				e := newEnv(b, envOptions{backend: be, local: true, configure: benchConfig})
				cpu := turnbench.CPU(b)
				benchSyncTurns(b, e.ts.URL, e.ts.Client(), turns)
				turnbench.ReportCPU(b, cpu)
			})
			b.Run(name+"/memory=on", func(b *testing.B) {
				jobsDB := filepath.Join(b.TempDir(), "jobs.db")
				var st cognition.Store
				e := newEnv(b, envOptions{backend: be, local: true, configure: func(c *apitest.Config) {
					benchConfig(c)
					st = c.API.Store.(cognition.Store)
					svc, err := cognition.New(cognition.Config{Store: st, Budget: time.Second,
						LearnAfter: 100 * time.Millisecond})
					if err != nil {
						b.Fatal(err)
					}
					ws := jobs.NewWorkers()
					svc.Register(ws)
					q, err := jobs.SQLite(b.Context(), jobsDB, ws, jobs.Config{PollInterval: 50 * time.Millisecond})
					if err != nil {
						b.Fatal(err)
					}
					svc.Attach(q)
					if err := q.Start(context.WithoutCancel(b.Context())); err != nil {
						b.Fatal(err)
					}
					b.Cleanup(func() {
						ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
						defer cancel()
						_ = q.Stop(ctx)
						_ = q.Close()
						svc.Close()
					})
					c.API.Cognition = svc
					// The agent's side of memory, as trellis serve glues it in:
					// the context loader, and the conversation's learning job
					// asked for after each turn.
					c.Runs.Agent.Cognition = svc.ContextText
					c.Runs.Agent.Hooks.Learn = func(ctx context.Context, a nodes.Answer) {
						if err := svc.LearnLater(context.WithoutCancel(ctx), a.UserID, a.ConversationID, a.Message.Turn); err != nil {
							b.Error(err)
						}
					}
				}})
				cpu := turnbench.CPU(b)
				benchSyncTurns(b, e.ts.URL, e.ts.Client(), turns)
				b.StopTimer()
				b.ReportMetric(float64(countJobs(b, jobsDB))/float64(b.N), "jobs/turn")
				b.ReportMetric(float64(learnedAnswers(b, jobsDB, st))/float64(b.N), "learned/turn")
				turnbench.ReportCPU(b, cpu)
			})
		}
	}
}

// learnedAnswers waits until the SQLite queue at path has no learning
// job left to run, then returns the answers learned, as the agent's
// stats count them.
func learnedAnswers(b *testing.B, path string, st cognition.Store) int64 {
	db, err := sqlopen.SQLite(path)
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(10 * time.Millisecond) {
		var n int
		if err := db.QueryRowContext(b.Context(), `SELECT count(*) FROM river_job
            WHERE state NOT IN ('completed', 'cancelled', 'discarded')`).Scan(&n); err != nil {
			b.Fatal(err)
		}
		if n == 0 {
			break
		}
		if time.Now().After(deadline) {
			b.Fatalf("%d learning jobs still to run after a minute", n)
		}
	}
	stats, err := st.ToolStats(b.Context())
	if err != nil {
		b.Fatal(err)
	}
	for _, s := range stats {
		if s.Tool == store.AgentTool {
			return s.Calls
		}
	}
	return 0
}

// countJobs counts the jobs stored in the SQLite queue at path.
func countJobs(b *testing.B, path string) int {
	db, err := sqlopen.SQLite(path)
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	var n int
	if err := db.QueryRowContext(b.Context(), `SELECT count(*) FROM river_job`).Scan(&n); err != nil {
		b.Fatal(err)
	}
	return n
}
