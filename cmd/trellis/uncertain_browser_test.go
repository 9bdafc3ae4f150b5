package main

import (
	"testing"

	"github.com/trellis-ai/trellis/api/web/webtest"
)

// In Chromium, against a real run a crash cut off: a process is killed
// while a tool that is neither read-only nor idempotent is inside its
// call, the process that recovers the run parks it on an uncertain
// call, and the page, opened on that conversation, shows the card with
// the call's tool and arguments and its three answers. "Skip it" runs
// nothing again, the agent is told, and the run finishes.
func TestServeUncertainCallInThePage(t *testing.T) {
	t.Parallel()
	e := newCrashEnv(t, "sqlite")
	second, conv, _ := e.parkedOnUncertainCall("charge alpha", "charge alpha ")
	ids := pendingIDs(t, second, "uncertain_calls", conv)
	if len(ids) != 1 {
		t.Fatalf("uncertain calls after a crash: %v, want one", ids)
	}

	p := webtest.Open(t, webtest.Browser(t), second.url+"/#/c/"+conv)
	card := `.uncertain-card[data-uncertain-call-id="` + ids[0] + `"]`
	p.WaitVisible(card)
	p.WaitText(card+" h3", "charge")
	p.WaitText(card+" pre.args", `"note": "alpha"`)
	p.WaitText(webtest.LastTurn+" .turn-status", "Waiting for your decision")
	for _, action := range []string{"retry", "skip", "fail"} {
		p.WaitVisible(card + ` [data-action="` + action + `"]`)
	}
	p.Click(card + ` [data-action="skip"]`)
	p.WaitText(card+" .card-result", "Skipped")
	p.WaitText(webtest.LastAnswer, "Done.")
	runStatus(t, second, conv, "completed")

	if lines := e.effectLines("charge alpha "); len(lines) != 1 {
		t.Errorf("side effects %q, want the one before the crash", lines)
	}
	if ids := pendingIDs(t, second, "uncertain_calls", conv); len(ids) != 0 {
		t.Errorf("uncertain calls after the answer: %v", ids)
	}
}
