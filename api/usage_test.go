package api_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/trellis-ai/trellis/api/apitest"
)

type usageDay struct {
	UserID       string `json:"user_id"`
	Day          string
	Model        string
	InputTokens  int64 `json:"input_tokens"`
	OutputTokens int64 `json:"output_tokens"`
	TotalTokens  int64 `json:"total_tokens"`
	ToolCalls    int64 `json:"tool_calls"`
	Runs         int64
}

type usagePage struct {
	Days       []usageDay
	Totals     usageDay
	NextCursor *string `json:"next_cursor"`
	Quota      *struct {
		MonthlyTokens int64     `json:"monthly_tokens"`
		UsedTokens    int64     `json:"used_tokens"`
		ResetsAt      time.Time `json:"resets_at"`
	}
}

// A run's tokens, tool calls and the run itself are in its user's usage
// under its model and day once it ends; another user sees none of it;
// an operator sees everyone's, one user's, a page at a time; anyone
// else is refused; and bad parameters are refused the same everywhere.
func TestUsageViews(t *testing.T) {
	for _, be := range backends {
		t.Run(string(be), func(t *testing.T) {
			e := newEnv(t, envOptions{backend: be, configure: func(c *apitest.Config) { c.API.Admins = []string{"alice"} }})
			status, body := e.do("POST", "/api/v1/chat/sync", map[string]any{"message": "what is 2+2?"})
			if status != http.StatusOK {
				t.Fatalf("chat: %d %s", status, body)
			}
			res := jsonOf[struct{ Usage map[string]int64 }](t, body)
			if status, body := e.doAs(bobKey, "POST", "/api/v1/chat/sync", map[string]any{"message": "hello"}); status != http.StatusOK {
				t.Fatalf("bob's chat: %d %s", status, body)
			}
			today := time.Now().UTC().Format(time.DateOnly)

			status, body = e.do("GET", "/api/v1/me/usage", nil)
			mine := jsonOf[usagePage](t, body)
			if status != http.StatusOK || len(mine.Days) != 1 || mine.Quota != nil || mine.NextCursor == nil || *mine.NextCursor != "" {
				t.Fatalf("alice's usage: %d %s", status, body)
			}
			d := mine.Days[0]
			if d.UserID != "alice" || d.Day != today || d.Model != "scripted" || d.Runs != 1 || d.ToolCalls != 1 ||
				d.TotalTokens != res.Usage["total_tokens"] || d.InputTokens != res.Usage["input_tokens"] || d.OutputTokens != res.Usage["output_tokens"] {
				t.Errorf("alice's day %+v, the run's usage %v", d, res.Usage)
			}
			if mine.Totals.TotalTokens != d.TotalTokens || mine.Totals.Runs != 1 {
				t.Errorf("totals %+v", mine.Totals)
			}

			status, body = e.doAs(bobKey, "GET", "/api/v1/me/usage?from="+today+"&to="+today, nil)
			if b := jsonOf[usagePage](t, body); status != http.StatusOK || len(b.Days) != 1 || b.Days[0].UserID != "bob" {
				t.Errorf("bob's usage: %d %s", status, body)
			}

			status, body = e.do("GET", "/api/v1/admin/usage?limit=1", nil)
			first := jsonOf[usagePage](t, body)
			if status != http.StatusOK || len(first.Days) != 1 || first.Days[0].UserID != "alice" || first.NextCursor == nil || *first.NextCursor == "" ||
				first.Totals.Runs != 2 {
				t.Fatalf("every user's usage, page 1: %d %s", status, body)
			}
			status, body = e.do("GET", "/api/v1/admin/usage?limit=1&cursor="+*first.NextCursor, nil)
			if next := jsonOf[usagePage](t, body); status != http.StatusOK || len(next.Days) != 1 || next.Days[0].UserID != "bob" || *next.NextCursor != "" {
				t.Errorf("every user's usage, page 2: %d %s", status, body)
			}
			status, body = e.do("GET", "/api/v1/admin/usage?user_id=bob", nil)
			if b := jsonOf[usagePage](t, body); status != http.StatusOK || len(b.Days) != 1 || b.Days[0].UserID != "bob" {
				t.Errorf("bob's usage as the operator sees it: %d %s", status, body)
			}
			if status, body := e.doAs(bobKey, "GET", "/api/v1/admin/usage", nil); status != http.StatusForbidden {
				t.Errorf("bob read every user's usage: %d %s", status, body)
			}

			for _, path := range []string{
				"/api/v1/me/usage?from=yesterday",
				"/api/v1/me/usage?from=2026-02-30",
				"/api/v1/me/usage?from=" + today + "&to=2000-01-01",
				"/api/v1/me/usage?from=2000-01-01&to=2010-01-01",
				"/api/v1/me/usage?limit=-1",
				"/api/v1/me/usage?limit=x",
				"/api/v1/me/usage?cursor=nope",
				"/api/v1/me/usage?user_id=bob",
				"/api/v1/me/usage?group=model",
				"/api/v1/admin/usage?from=2026-13-01",
				"/api/v1/admin/usage?users=bob",
			} {
				status, body := e.do("GET", path, nil)
				if p := jsonOf[apiError](t, body); status != http.StatusBadRequest || p.Error.Code == "" || p.Error.Message == "" {
					t.Errorf("%s: %d %s", path, status, body)
				}
			}
		})
	}
}

// With a monthly quota, a user whose month is used up is refused a new
// run up front (429, quota_exceeded, nothing stored), and the refusal
// counts nothing; the user's view shows the quota.
func TestUsageQuota(t *testing.T) {
	for _, be := range backends {
		t.Run(string(be), func(t *testing.T) {
			e := newEnv(t, envOptions{backend: be, configure: func(c *apitest.Config) { c.Runs.MonthlyTokenQuota = 1 }})
			// The month's one token is the run's budget: the run stops
			// as a run over its budget does.
			status, body := e.do("POST", "/api/v1/chat/sync", map[string]any{"message": "what is 2+2?"})
			if res := jsonOf[struct{ Status, Response string }](t, body); status != http.StatusOK || res.Status != "completed" ||
				!strings.Contains(res.Response, "budget") {
				t.Fatalf("the first chat: %d %s", status, body)
			}
			_, body = e.do("GET", "/api/v1/me/usage", nil)
			before := jsonOf[usagePage](t, body)
			if before.Totals.TotalTokens < 1 || before.Quota == nil || before.Quota.MonthlyTokens != 1 ||
				before.Quota.UsedTokens != before.Totals.TotalTokens || !before.Quota.ResetsAt.After(time.Now()) {
				t.Fatalf("usage after the first run: %s", body)
			}
			_, convs := e.do("GET", "/api/v1/conversations", nil)

			for _, path := range []string{"/api/v1/chat/sync", "/api/v1/chat"} {
				resp, err := e.ts.Client().Do(e.request("POST", path, map[string]any{"message": "and 3+3?"}, e.key))
				if err != nil {
					t.Fatal(err)
				}
				b, err := readAll(resp)
				resp.Body.Close()
				if err != nil {
					t.Fatal(err)
				}
				p := jsonOf[apiError](t, b)
				if resp.StatusCode != http.StatusTooManyRequests || p.Error.Code != "quota_exceeded" || resp.Header.Get("Retry-After") == "" {
					t.Errorf("%s over the quota: %d %+v", path, resp.StatusCode, p)
				}
			}
			if status, body := e.doAs(bobKey, "POST", "/api/v1/chat/sync", map[string]any{"message": "hello"}); status != http.StatusOK {
				t.Errorf("bob, whose month is not used up: %d %s", status, body)
			}
			_, after := e.do("GET", "/api/v1/me/usage", nil)
			if a := jsonOf[usagePage](t, after); a.Totals != before.Totals {
				t.Errorf("the refused runs counted: %+v, was %+v", a.Totals, before.Totals)
			}
			if _, now := e.do("GET", "/api/v1/conversations", nil); string(now) != string(convs) {
				t.Errorf("a refused run stored a conversation: %s, was %s", now, convs)
			}
		})
	}
}
