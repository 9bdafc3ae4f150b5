package web_test

import (
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/trellis-ai/trellis/api/web/webtest"
)

// TestPhoneLayout runs a conversation with an approval at a phone's
// width: nothing overflows sideways, the conversation list is a menu, and
// the card's buttons are large enough to tap. The approval's 200 arrives
// after the run has finished on the open stream, which must not make the
// page reattach to a finished run.
func TestPhoneLayout(t *testing.T) {
	gate := make(chan struct{})
	close(gate)
	f := newContractFake(t, emailScript(gate, true))
	ctx := webtest.Browser(t)
	if err := chromedp.Do(ctx, chromedp.EmulateViewport(390, 844, chromedp.EmulateMobile, chromedp.EmulateTouch, chromedp.EmulateScale(2))); err != nil {
		t.Fatalf("emulate a phone: %v", err)
	}
	p := webtest.Open(t, ctx, f.URL)
	noOverflow := `() => document.documentElement.scrollWidth <= window.innerWidth && document.querySelector("#scroller").scrollWidth <= document.querySelector("#scroller").clientWidth`

	p.WaitJS("the conversation list is hidden", `() => getComputedStyle(document.querySelector("#sidebar")).visibility === "hidden"`)
	p.Send("Email the team about the status of the release, with the usual long-winded subject line nobody reads")
	card := `.approval-card[data-approval-id="appr-1"]`
	p.WaitVisible(card)
	p.WaitJS("no sideways overflow", noOverflow)
	p.WaitJS("buttons at least 40px tall", `(sel) => [...document.querySelectorAll(sel + " button")].filter((b) => b.checkVisibility()).every((b) => b.getBoundingClientRect().height >= 40)`, card)
	p.Screenshot("phone-approval")

	p.Click(card + ` [data-action="approve"]`)
	p.WaitText(webtest.LastAnswer, "The email is on its way.")
	p.WaitText(card+" .card-result", "Approved")
	p.WaitJS("no sideways overflow", noOverflow)
	if p.Count("#connection-status:not([hidden])") != 0 {
		t.Errorf("after the run: %q", p.Text("#connection-status"))
	}
	p.Screenshot("phone-answer")

	p.Click("#nav-toggle")
	p.WaitJS("the menu is open", `() => { const s = document.querySelector("#sidebar"); return getComputedStyle(s).visibility === "visible" && s.getBoundingClientRect().left === 0 && document.querySelector("#nav-toggle").getAttribute("aria-expanded") === "true" }`)
	p.WaitJS("focus is in the menu", `() => document.querySelector("#sidebar").contains(document.activeElement)`)
	p.WaitText(webtest.ConversationList, "Email the team")
	p.CheckAccessible()
	p.Screenshot("phone-menu")
	p.Do("press Escape", chromedp.KeyEvent("\x1b"))
	p.WaitJS("the menu is closed", `() => document.querySelector("#nav-toggle").getAttribute("aria-expanded") === "false"`)
	if n := f.count("GET", "/api/v1/conversations/conv-1/stream"); n != 0 {
		t.Errorf("the page opened %d streams for a run it had seen finish", n)
	}
}
