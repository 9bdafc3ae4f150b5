package nodes

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/trellis-ai/trellis/events"
)

// A resumed segment's tracker takes up the run's working time from the
// state: a run that had worked 1.5s of a 1s budget before its pause is
// over its time when it resumes, however long the pause lasted, and one
// that had worked 0.2s is not, however long the pause lasted (the wait is
// not in the state).
func TestBudgetResumeAdoptsWorkingTime(t *testing.T) {
	over := &budget{start: time.Now(), limits: events.Budget{Time: time.Second}}
	over.resume(&ChatState{BudgetSpent: BudgetSpent{WorkMS: 1500}})
	if why := over.exceeded(); !strings.HasPrefix(why, "time (1.5") {
		t.Errorf("exceeded = %q", why)
	}
	if u := over.usage(); u.Exceeded != "time" || u.Seconds < 1.5 || u.Limits.Seconds != 1 {
		t.Errorf("usage = %+v", u)
	}
	under := &budget{start: time.Now(), limits: events.Budget{Time: time.Second}}
	under.resume(&ChatState{BudgetSpent: BudgetSpent{WorkMS: 200}})
	if why := under.exceeded(); why != "" {
		t.Errorf("exceeded = %q", why)
	}
}

// Figures are run totals: adopting a smaller one (an earlier step's, or a
// parent's behind its sub-agent's) never lowers the tracker's, and the
// turn's token usage counts for a checkpoint written before BudgetSpent.
func TestBudgetResumeTakesTheLarger(t *testing.T) {
	b := &budget{start: time.Now(), limits: events.Budget{Tokens: 100, ToolCalls: 5}}
	b.resume(&ChatState{BudgetSpent: BudgetSpent{Tokens: 40, ToolCalls: 3}})
	b.resume(&ChatState{BudgetSpent: BudgetSpent{Tokens: 10, ToolCalls: 1}})
	if s := b.spent(); s.Tokens != 40 || s.ToolCalls != 3 {
		t.Errorf("spent = %+v", s)
	}
	b.resume(&ChatState{TurnUsage: events.Usage{InputTokens: 50, OutputTokens: 20}})
	if s := b.spent(); s.Tokens != 70 || s.ToolCalls != 3 {
		t.Errorf("spent after an old checkpoint = %+v", s)
	}
	if got := maxSpent(BudgetSpent{Tokens: 1, ToolCalls: 9, WorkMS: 3}, BudgetSpent{Tokens: 5, ToolCalls: 2, WorkMS: 7}); got != (BudgetSpent{Tokens: 5, ToolCalls: 9, WorkMS: 7}) {
		t.Errorf("maxSpent = %+v", got)
	}
	var none *budget
	none.resume(&ChatState{BudgetSpent: BudgetSpent{ToolCalls: 1}})
	if s := none.spent(); s != (BudgetSpent{}) {
		t.Errorf("nil tracker spent = %+v", s)
	}
	// A resumed run's tracker whose request set no limits records
	// nothing in the state.
	unlimited := &budget{start: time.Now()}
	unlimited.adopt(nil)
	unlimited.spend(events.Usage{TotalTokens: 9})
	if s := unlimited.spent(); s != (BudgetSpent{}) {
		t.Errorf("unlimited tracker spent = %+v", s)
	}
}

// response.done's budget names its limits as the request does
// (max_tokens, max_tool_calls, max_seconds) beside the usage.
func TestBudgetUsageJSON(t *testing.T) {
	b := &budget{start: time.Now(), limits: events.Budget{Tokens: 100, ToolCalls: 5, Time: 1500 * time.Millisecond}}
	got, err := json.Marshal(b.usage())
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	_ = json.Unmarshal(got, &m)
	l, _ := m["limits"].(map[string]any)
	if l["max_tokens"] != float64(100) || l["max_tool_calls"] != float64(5) || l["max_seconds"] != 1.5 || len(l) != 3 {
		t.Errorf("limits %s", got)
	}
	for _, k := range []string{"tokens", "tool_calls", "seconds"} {
		if _, ok := m[k]; !ok {
			t.Errorf("no %q in %s", k, got)
		}
	}
	var req events.Budget
	if err := json.Unmarshal([]byte(`{"max_tokens": 7, "max_tool_calls": 2, "max_seconds": 0.25}`), &req); err != nil || req.Tokens != 7 || req.ToolCalls != 2 || req.Limit() != 250*time.Millisecond {
		t.Errorf("request budget %+v, %v", req, err)
	}
}
