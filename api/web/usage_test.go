package web_test

import (
	"strings"
	"testing"
)

// Settings shows this month's usage per day and model, and the quota,
// read again each time it opens.
func TestUsageInSettings(t *testing.T) {
	f := newContractFake(t, nil)
	p := open(t, f)
	p.Click("#settings-open")
	p.WaitVisible("#settings")
	p.WaitVisible("#usage-table")
	if n := p.Count("#usage-table tbody tr"); n != 3 {
		t.Fatalf("usage rows = %d, want 3", n)
	}
	row := p.Text(`#usage-table tr[data-day="2026-11-03"][data-model="gpt-mini"]`)
	for _, want := range []string{"2026-11-03", "gpt-mini", "800", "200"} {
		if !strings.Contains(row, want) {
			t.Errorf("the row of gpt-mini on 2026-11-03 = %q, want %q in it", row, want)
		}
	}
	summary := p.Text("#usage-summary")
	for _, want := range []string{"8,500 tokens", "5 runs", "of 100,000 tokens used", "91,500 left"} {
		if !strings.Contains(summary, want) {
			t.Errorf("summary = %q, want %q in it", summary, want)
		}
	}
	p.CheckAccessible()
	p.Screenshot("usage")
	p.Click("#settings-close")
	p.WaitGone("#settings")
	p.Click("#settings-open")
	p.WaitVisible("#settings")
	if got := f.requestsTo("GET", "/api/v1/me/usage", 2); len(got) < 2 || !strings.Contains(got[0].Query, "limit=") {
		t.Errorf("usage requests: %+v", got)
	}
}
