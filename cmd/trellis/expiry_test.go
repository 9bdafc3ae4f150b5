package main

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/trellis-ai/trellis/internal/sqlopen"
)

// expiryEnv is the environment of a server whose approvals (of the
// calculator, in api/testdata/agent.json) expire after timeout with
// outcome, on db.
func expiryEnv(t *testing.T, db, timeout, outcome string) (env []string, dataDir, dsn string) {
	env = []string{"TRELLIS_APPROVAL_TIMEOUT=" + timeout, "TRELLIS_APPROVAL_EXPIRY=" + outcome, "TRELLIS_INTERRUPT_AFTER=100ms"}
	switch db {
	case "sqlite":
		dataDir = t.TempDir()
		env = append(env, "TRELLIS_DATA_DIR="+dataDir)
	case "postgres":
		dsn = pgDSN(t)
		env = append(env, "DATABASE_URL="+dsn)
	}
	return env, dataDir, dsn
}

// pendingApproval is the one approval a sync chat's interrupted run
// waits for, as its pending list shows it.
func pendingApproval(t *testing.T, res map[string]any) map[string]any {
	t.Helper()
	return pendingOf(t, res, "approvals")
}

// pendingOf is the one request of the list kinds ("approvals",
// "elicitations") a sync chat's interrupted run waits for, as its
// pending list shows it.
func pendingOf(t *testing.T, res map[string]any, kinds string) map[string]any {
	t.Helper()
	pending, _ := res["pending"].(map[string]any)
	list, _ := pending[kinds].([]any)
	if res["status"] != "interrupted" || len(list) != 1 {
		t.Fatalf("sync chat: %v, want interrupted on one of %s", res, kinds)
	}
	a, _ := list[0].(map[string]any)
	return a
}

// runEvents waits, 60 s at most, until the run has ended with one of
// ends and returns its events, read from the store.
func runEvents(t *testing.T, c *child, conv, runID string, ends ...string) []event {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		var page struct{ Events []map[string]any }
		resp := c.do("GET", "/api/v1/conversations/"+conv+"/runs/"+runID+"/events?limit=200", nil)
		if err := json.NewDecoder(resp.Body).Decode(&page); err != nil {
			t.Fatal(err)
		}
		var evs []event
		for _, e := range page.Events {
			seq, _ := e["seq"].(float64)
			typ, _ := e["type"].(string)
			evs = append(evs, event{id: int64(seq), typ: typ, data: e})
		}
		if n := len(evs); n > 0 && slices.Contains(ends, evs[n-1].typ) {
			return evs
		}
		if time.Now().After(deadline) {
			t.Fatalf("the run did not end with %v: %v\n%s", ends, types(evs), c.logs.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func types(evs []event) []string {
	var out []string
	for _, e := range evs {
		out = append(out, e.typ)
	}
	return out
}

// of returns the events of type typ.
func of(evs []event, typ string) []event {
	var out []event
	for _, e := range evs {
		if e.typ == typ {
			out = append(out, e)
		}
	}
	return out
}

// approvalRecord reads the approval as the conversation's run shows it
// through GET /approvals/pending's sibling, the record: status,
// decision and timed_out.
func approvalRecord(t *testing.T, dataDir, dsn, id string) (status, decision string, timedOut bool) {
	t.Helper()
	queryRow(t, dataDir, "trellis.db", dsn, `SELECT status, decision, timed_out FROM approvals WHERE id = `, id, &status, &decision, &timedOut)
	return
}

// elicitationRecord reads the elicitation's status and timed_out from
// the record.
func elicitationRecord(t *testing.T, dataDir, dsn, id string) (status string, timedOut bool) {
	t.Helper()
	queryRow(t, dataDir, "trellis.db", dsn, `SELECT status, timed_out FROM elicitations WHERE id = `, id, &status, &timedOut)
	return
}

// expiryJobDone reports whether the deadline job of the request id has
// completed, as the queue records it; field is the job's argument that
// holds the id (approval_id for an approval, request_id otherwise).
func expiryJobDone(t *testing.T, dataDir, dsn, field, id string) bool {
	t.Helper()
	var n int
	if dsn != "" {
		queryRow(t, dataDir, "jobs.db", dsn, `SELECT count(*) FROM river_job WHERE kind = 'approval_expiry' AND state = 'completed'
AND args->>'`+field+`' = `, id, &n)
	} else {
		queryRow(t, dataDir, "jobs.db", dsn, `SELECT count(*) FROM river_job WHERE kind = 'approval_expiry' AND state = 'completed'
AND json_extract(args, '$.`+field+`') = `, id, &n)
	}
	return n == 1
}

// queryRow scans the row q (ending in "WHERE … = ", the placeholder
// added here) selects for arg into dest: from PostgreSQL at dsn, or
// else from the SQLite database file in dataDir.
func queryRow(t *testing.T, dataDir, file, dsn, q, arg string, dest ...any) {
	t.Helper()
	ctx := context.Background()
	if dsn != "" {
		conn, err := pgx.Connect(ctx, dsn)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close(ctx)
		if err := conn.QueryRow(ctx, q+"$1", arg).Scan(dest...); err != nil {
			t.Fatal(err)
		}
		return
	}
	db, err := sqlopen.SQLite(filepath.Join(dataDir, file))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := db.QueryRowContext(ctx, q+"?", arg).Scan(dest...); err != nil {
		t.Fatal(err)
	}
}

// An approval nobody answers expires at the deadline the server's
// default sets, with the chosen outcome, through a durable job: reject
// goes on and tells the model the approval expired (the calculator never
// runs), approve runs the tool, cancel cancels the run; the stream shows
// approval.expired first, then what follows. The pending lists show the
// deadline before it passes. An approval answered before its deadline
// keeps its answer: the job finds it answered and does nothing.
func TestApprovalExpiresWithItsOutcome(t *testing.T) {
	t.Parallel()
	for _, db := range []string{"sqlite", "postgres"} {
		for _, outcome := range []string{"reject", "approve", "cancel"} {
			t.Run(db+"/"+outcome, func(t *testing.T) {
				t.Parallel()
				env, dataDir, dsn := expiryEnv(t, db, "2s", outcome)
				c := startServe(t, env...)

				answered := syncChat(t, c, map[string]any{"message": "what is 2+2?"})
				early := pendingApproval(t, answered)
				res := syncChat(t, c, map[string]any{"message": "what is 2+2?"})
				a := pendingApproval(t, res)
				id, _ := a["approval_id"].(string)
				at, err := time.Parse(time.RFC3339Nano, a["expires_at"].(string))
				if err != nil || a["on_expiry"] != outcome || time.Until(at) > 3*time.Second || time.Until(at) < 0 {
					t.Fatalf("the pending approval %v, want it to expire in 2s with %s", a, outcome)
				}
				var list map[string][]map[string]any
				if err := json.NewDecoder(c.do("GET", "/api/v1/approvals/pending?conversation_id="+res["conversation_id"].(string), nil).Body).Decode(&list); err != nil {
					t.Fatal(err)
				}
				if got := list["approvals"]; len(got) != 1 || got[0]["expires_at"] != a["expires_at"] {
					t.Errorf("GET /approvals/pending: %v, want the deadline %v", got, a["expires_at"])
				}

				earlyID, _ := early["approval_id"].(string)
				if r := c.do("POST", "/api/v1/approvals/"+earlyID, map[string]any{"decision": "approve"}); r.StatusCode != http.StatusOK {
					b, _ := io.ReadAll(r.Body)
					t.Fatalf("approve before the deadline: %d %s", r.StatusCode, b)
				}

				conv, runID := res["conversation_id"].(string), res["run_id"].(string)
				evs := runEvents(t, c, conv, runID, "run.completed", "run.cancelled", "run.failed")
				expired := of(evs, "approval.expired")
				if len(expired) != 1 || expired[0].data["approval_id"] != id || expired[0].data["outcome"] != outcome ||
					expired[0].data["kind"] != "approval" || expired[0].data["expires_at"] != a["expires_at"] {
					t.Fatalf("approval.expired: %v; events %v", expired, types(evs))
				}
				after := types(evs[slices.IndexFunc(evs, func(e event) bool { return e.typ == "approval.expired" })+1:])
				status, decision, timedOut := approvalRecord(t, dataDir, dsn, id)
				switch outcome {
				case "reject":
					errs := of(evs, "tool.error")
					if after[0] != "approval.resolved" || len(of(evs, "tool.complete")) != 0 || len(errs) != 1 ||
						!strings.Contains(errs[0].data["error"].(string), "the approval expired") || evs[len(evs)-1].typ != "run.completed" {
						t.Errorf("rejected at the deadline: events after it %v, tool errors %v", after, errs)
					}
					if status != "rejected" || decision != "reject" || !timedOut {
						t.Errorf("the record: %s %s timed out %v", status, decision, timedOut)
					}
				case "approve":
					if after[0] != "approval.resolved" || len(of(evs, "tool.complete")) != 1 || evs[len(evs)-1].typ != "run.completed" {
						t.Errorf("approved at the deadline: events after it %v", after)
					}
					if status != "approved" || decision != "approve" || !timedOut {
						t.Errorf("the record: %s %s timed out %v", status, decision, timedOut)
					}
				case "cancel":
					if !slices.Equal(after, []string{"run.cancelled"}) {
						t.Errorf("cancelled at the deadline: events after it %v", after)
					}
					if status != "expired" || decision != "" || !timedOut {
						t.Errorf("the record: %s %s timed out %v", status, decision, timedOut)
					}
				}

				// The approval answered in time: its job ran and did nothing.
				deadline := time.Now().Add(30 * time.Second)
				for !expiryJobDone(t, dataDir, dsn, "approval_id", earlyID) {
					if time.Now().After(deadline) {
						t.Fatalf("the deadline job of the answered approval did not run\n%s", c.logs.String())
					}
					time.Sleep(100 * time.Millisecond)
				}
				evs = runEvents(t, c, answered["conversation_id"].(string), answered["run_id"].(string), "run.completed")
				if len(of(evs, "approval.expired")) != 0 || len(of(evs, "tool.complete")) != 1 {
					t.Errorf("the approval answered in time: events %v", types(evs))
				}
				if status, decision, timedOut := approvalRecord(t, dataDir, dsn, earlyID); status != "approved" || decision != "approve" || timedOut {
					t.Errorf("the approval answered in time: %s %s timed out %v", status, decision, timedOut)
				}
			})
		}
	}
}

// A question a tool asks that nobody answers expires at the deadline the
// server's default sets, with the chosen outcome, through the durable
// job: decline hands the tool a decline (it goes on without the name),
// cancel cancels the run; the stream shows elicitation.expired first.
// The pending lists show the deadline before it passes. A question
// answered before its deadline keeps its answer: the job does nothing.
func TestElicitationExpiresWithItsOutcome(t *testing.T) {
	t.Parallel()
	for _, db := range []string{"sqlite", "postgres"} {
		for _, outcome := range []string{"decline", "cancel"} {
			t.Run(db+"/"+outcome, func(t *testing.T) {
				t.Parallel()
				e := newCrashEnv(t, db)
				e.env = append(e.env, "TRELLIS_QUESTION_TIMEOUT=2s", "TRELLIS_QUESTION_EXPIRY="+outcome)
				dataDir := e.data // "" on PostgreSQL
				c := e.startConnected()

				answered := syncChat(t, c, map[string]any{"message": "greet me by name"})
				early := pendingOf(t, answered, "elicitations")
				res := syncChat(t, c, map[string]any{"message": "greet me by name"})
				q := pendingOf(t, res, "elicitations")
				id, _ := q["elicitation_id"].(string)
				at, err := time.Parse(time.RFC3339Nano, q["expires_at"].(string))
				if err != nil || q["on_expiry"] != outcome || time.Until(at) > 3*time.Second || time.Until(at) < 0 {
					t.Fatalf("the pending question %v, want it to expire in 2s with %s", q, outcome)
				}
				var list map[string][]map[string]any
				if err := json.NewDecoder(c.do("GET", "/api/v1/elicitation/pending?conversation_id="+res["conversation_id"].(string), nil).Body).Decode(&list); err != nil {
					t.Fatal(err)
				}
				if got := list["elicitations"]; len(got) != 1 || got[0]["expires_at"] != q["expires_at"] || got[0]["on_expiry"] != outcome {
					t.Errorf("GET /elicitation/pending: %v, want the deadline %v", got, q["expires_at"])
				}

				earlyID, _ := early["elicitation_id"].(string)
				if r := c.do("POST", "/api/v1/elicitation/respond", map[string]any{"elicitation_id": earlyID, "action": "accept",
					"content": map[string]any{"name": "Ada"}}); r.StatusCode != http.StatusOK {
					b, _ := io.ReadAll(r.Body)
					t.Fatalf("answer before the deadline: %d %s", r.StatusCode, b)
				}

				conv, runID := res["conversation_id"].(string), res["run_id"].(string)
				evs := runEvents(t, c, conv, runID, "run.completed", "run.cancelled", "run.failed")
				expired := of(evs, "elicitation.expired")
				if len(expired) != 1 || expired[0].data["elicitation_id"] != id || expired[0].data["outcome"] != outcome ||
					expired[0].data["kind"] != "elicitation" || expired[0].data["expires_at"] != q["expires_at"] {
					t.Fatalf("elicitation.expired: %v; events %v", expired, types(evs))
				}
				after := types(evs[slices.IndexFunc(evs, func(e event) bool { return e.typ == "elicitation.expired" })+1:])
				status, timedOut := elicitationRecord(t, dataDir, e.dsn, id)
				switch outcome {
				case "decline":
					done := of(evs, "tool.complete")
					if after[0] != "elicitation.response" || len(done) != 1 || done[0].data["result"] != "the user would not say (decline)" ||
						evs[len(evs)-1].typ != "run.completed" {
						t.Errorf("declined at the deadline: events after it %v, results %v", after, done)
					}
					if status != "declined" || !timedOut {
						t.Errorf("the record: %s timed out %v", status, timedOut)
					}
				case "cancel":
					if !slices.Equal(after, []string{"run.cancelled"}) {
						t.Errorf("cancelled at the deadline: events after it %v", after)
					}
					if status != "expired" || !timedOut {
						t.Errorf("the record: %s timed out %v", status, timedOut)
					}
				}

				// The question answered in time: its job ran and did nothing.
				deadline := time.Now().Add(30 * time.Second)
				for !expiryJobDone(t, dataDir, e.dsn, "request_id", earlyID) {
					if time.Now().After(deadline) {
						t.Fatalf("the deadline job of the answered question did not run\n%s", c.logs.String())
					}
					time.Sleep(100 * time.Millisecond)
				}
				evs = runEvents(t, c, answered["conversation_id"].(string), answered["run_id"].(string), "run.completed")
				if len(of(evs, "elicitation.expired")) != 0 || len(of(evs, "tool.complete")) != 1 || e.effects("ask Ada") != 1 {
					t.Errorf("the question answered in time: events %v", types(evs))
				}
				if status, timedOut := elicitationRecord(t, dataDir, e.dsn, earlyID); status != "accepted" || timedOut {
					t.Errorf("the question answered in time: %s timed out %v", status, timedOut)
				}
			})
		}
	}
}

// A question whose tool still waits on the open stream when its
// deadline cancels the run: the stream shows elicitation.expired once,
// then the run ends cancelled; the tool never acts, nor replies: the run
// is cancelled before the tool can hear its question cancelled.
func TestElicitationExpiresOnAnOpenStream(t *testing.T) {
	t.Parallel()
	for _, db := range []string{"sqlite", "postgres"} {
		t.Run(db, func(t *testing.T) {
			t.Parallel()
			e := newCrashEnv(t, db)
			e.env = append(e.env, "TRELLIS_QUESTION_TIMEOUT=2s", "TRELLIS_QUESTION_EXPIRY=cancel", "TRELLIS_ELICIT_TIMEOUT=1m")
			c := e.startConnected()
			resp := c.do("POST", "/api/v1/chat", map[string]any{"message": "greet me by name"})
			conv, runID := resp.Header.Get("X-Conversation-ID"), resp.Header.Get("X-Run-ID")
			seen := sseEvents(t, resp, func(ev event) bool {
				return ev.typ == "run.cancelled" || ev.typ == "run.completed" || ev.typ == "run.failed"
			})
			if got := of(seen, "elicitation.expired"); len(got) != 1 || got[0].data["outcome"] != "cancel" {
				t.Errorf("the stream: %v", types(seen))
			}
			evs := runEvents(t, c, conv, runID, "run.cancelled", "run.completed", "run.failed")
			if evs[len(evs)-1].typ != "run.cancelled" || len(of(evs, "elicitation.expired")) != 1 || len(of(evs, "tool.complete")) != 0 {
				t.Errorf("the run's events: %v", types(evs))
			}
			if n := e.effects("ask"); n != 0 {
				t.Errorf("the tool acted %d times", n)
			}
		})
	}
}
