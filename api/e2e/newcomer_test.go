package e2e_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/trellis-ai/trellis/api/web/webtest"
)

// uncovered is a script that reports whether the element matching its
// argument is on top at its own centre: nothing (the plan's panel, say)
// lies over it.
const uncovered = `(sel) => {
	const el = document.querySelector(sel);
	if (!el || !el.checkVisibility()) return false;
	const r = el.getBoundingClientRect();
	const top = document.elementFromPoint(r.left + r.width / 2, r.top + r.height / 2);
	return !!top && el.contains(top);
}`

// titlesWhole is a script that reports whether every task title on the
// board shows all of its text: nothing scrolled out of its field, and
// the field inside the window.
const titlesWhole = `() => {
	const ts = [...document.querySelectorAll("#task-list .task-title")];
	return ts.length === 3 && ts.every((t) => {
		const r = t.getBoundingClientRect();
		return t.scrollHeight <= t.clientHeight + 1 && t.scrollWidth <= t.clientWidth + 1 && r.left >= 0 && r.right <= window.innerWidth;
	});
}`

// TestE2ENewcomerPage tries the page as a new user would, at a phone's
// width, a small laptop's and a desktop's: an empty message says so; an
// upload's error goes away with the conversation it belonged to; a plan
// with long task titles shows them whole; on a narrow window the plan's
// panel covers neither the Plan button, Settings nor Send, and closes
// with its ✕, Escape, the Plan button and a click beside it; a citation
// opens its passage rendered, with the cited sentence highlighted and no
// markup of the document let through.
func TestE2ENewcomerPage(t *testing.T) {
	for _, width := range []int64{390, 1000, 1280} {
		t.Run(fmt.Sprint(width), func(t *testing.T) {
			s := newServer(t, "newcomer.json", withDocuments(t, 4096))
			ctx := webtest.Browser(t)
			opts := []chromedp.EmulateViewportOption{}
			if width < 760 {
				opts = append(opts, chromedp.EmulateMobile, chromedp.EmulateTouch)
			}
			if err := chromedp.Do(ctx, chromedp.EmulateViewport(width, 844, opts...)); err != nil {
				t.Fatalf("emulate a %d px window: %v", width, err)
			}
			p := webtest.Open(t, ctx, s.URL)
			narrow := width <= 1100
			phone := width < 760
			menu := func() {
				t.Helper()
				if phone {
					// While it slides shut, the menu still lies over its button.
					p.WaitJS("the menu shut", `() => getComputedStyle(document.querySelector("#sidebar")).visibility === "hidden"`)
					p.Click("#nav-toggle")
					p.WaitJS("the menu open", `() => document.querySelector("#sidebar").getBoundingClientRect().left === 0`)
				}
			}
			newChat := func() {
				t.Helper()
				menu()
				p.Click("#new-chat")
			}

			// An empty message sends nothing and says why.
			p.Click(webtest.SendButton)
			p.WaitText("#composer-note", "Type a message to send.")
			p.WaitJS("the message box focused and marked", `() => document.activeElement?.id === "composer-input" &&
				document.activeElement.getAttribute("aria-invalid") === "true"`)
			p.Enter()
			p.WaitText("#announcer", "Type a message to send.")
			if n := len(s.requests("POST", "/api/v1/chat")); n != 0 {
				t.Fatalf("an empty message sent %d chats", n)
			}
			p.Type(webtest.Composer, "x")
			p.WaitJS("the note gone once typing", `() => document.querySelector("#composer-note").textContent === "" &&
				!document.querySelector("#composer-input").hasAttribute("aria-invalid")`)
			p.Fill(webtest.Composer, "")

			// An upload's error goes with its conversation.
			drop(t, p, "big.txt", strings.Repeat("many words ", 500))
			p.WaitText("#error-text", "too large")
			newChat()
			p.WaitGone(webtest.ErrorBanner)

			// A plan whose titles are long.
			p.Send("plan the trip")
			p.WaitText(webtest.LastAnswer, "The plan is on the board.")
			waitState(p, turn(1), "completed")
			cid := conversationID(t, p)
			// openPlan opens the plan's panel and waits until it has slid in,
			// so that what a click aims at stays where it was aimed.
			openPlan := func() {
				t.Helper()
				p.Click("#live-toggle")
				p.WaitJS("the plan open", `() => { const r = document.querySelector("#live").getBoundingClientRect();
					return getComputedStyle(document.querySelector("#live")).visibility === "visible" && Math.abs(r.right - window.innerWidth) < 1 &&
						document.querySelector("#live-toggle").getAttribute("aria-expanded") === "true" }`)
			}
			if narrow {
				p.WaitVisible("#live-toggle")
				openPlan()
				p.WaitJS("focus on the plan's close button", `() => document.activeElement?.id === "live-close"`)
				for _, sel := range []string{"#live-toggle", "#settings-open", webtest.SendButton, "#live-close"} {
					p.WaitJS(sel+" not covered by the plan", uncovered, sel)
				}
			} else {
				p.WaitJS("no Plan button beside a column", `() => !document.querySelector("#live-toggle").checkVisibility()`)
			}
			p.WaitJS("every task title whole", titlesWhole)
			p.CheckAccessible()
			p.Screenshot(fmt.Sprintf("plan-%d", width))
			if narrow {
				closed := func(how string) {
					t.Helper()
					p.WaitJS("the plan closed by "+how, `() => getComputedStyle(document.querySelector("#live")).visibility === "hidden" &&
						document.querySelector("#live-toggle").getAttribute("aria-expanded") === "false"`)
				}
				p.Do("press Escape", chromedp.KeyEvent("\x1b"))
				closed("Escape")
				p.WaitJS("focus back on the Plan button", `() => document.activeElement?.id === "live-toggle"`)
				openPlan()
				p.Click("#live-toggle")
				closed("the Plan button")
				openPlan()
				p.Click("#live-close")
				closed("its close button")
				openPlan()
				p.Click("#conversation-title")
				closed("a click beside it")
			}

			// A cited passage: rendered, the sentence highlighted, no markup
			// of the document let through.
			drop(t, p, "notes.md", "# Notes\n\nThe trellis holds the vines. Bamboo is the **usual** wood.\n\n"+
				`<img src=x onerror="window.injected=1"> <script>window.injected=2</script>`+"\n")
			p.WaitText(`#document-list li[data-status="ready"]`, "Ready")
			p.Send("What holds the vines?")
			p.WaitText(webtest.LastAnswer, "the trellis holds the vines [1].")
			// Clicked once the turn is done, so nothing moves it meanwhile.
			waitState(p, turn(2), "completed")
			p.Click(webtest.LastTurn + ` ol.citations button[data-cite="1"]`)
			p.WaitVisible("#passage")
			p.WaitJS("the passage rendered with the cited sentence highlighted", `() => {
				const box = document.querySelector("#passage-text");
				const marks = [...box.querySelectorAll("mark.quoted")].map((m) => m.textContent).join("");
				return marks === "The trellis holds the vines." && box.querySelector("h1")?.textContent === "Notes" &&
					box.querySelector("strong")?.textContent === "usual" && !box.textContent.includes("# Notes") &&
					document.querySelector("#passage-where").textContent.includes("highlighted");
			}`)
			if got := webtest.Eval[string](p, `(() => { const b = document.querySelector("#passage-text");
				return [b.querySelectorAll("img, script, [onerror]").length, String(window.injected)].join(); })()`); got != "0,undefined" {
				t.Errorf("the document's markup got into the page: %s", got)
			}
			p.WaitJS("the dialog within the window", `() => { const r = document.querySelector("#passage").getBoundingClientRect();
				return r.left >= 0 && r.right <= window.innerWidth }`)
			p.CheckAccessible()
			p.Screenshot(fmt.Sprintf("passage-%d", width))
			p.Click("#passage-close")

			// Another upload error, then back to a conversation from the list.
			newChat()
			drop(t, p, "big.txt", strings.Repeat("many words ", 500))
			p.WaitText("#error-text", "too large")
			menu()
			p.Click(fmt.Sprintf(`#conversation-list a[data-id="%s"]`, cid))
			p.WaitText(webtest.LastAnswer, "the trellis holds the vines [1].")
			p.WaitGone(webtest.ErrorBanner)
		})
	}
}
