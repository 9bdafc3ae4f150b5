package webtest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto"
	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/input"
	"github.com/chromedp/chromedp"
)

// StepTimeout bounds each step a Page takes: a navigation, a click, a wait.
const StepTimeout = 20 * time.Second

// Selectors of the chat page that tests wait on and click. They are the
// page's stable test surface: ids and data attributes, not layout.
const (
	Composer         = "#composer-input"
	SendButton       = "#send"
	CancelButton     = "#cancel-run"
	NewChatButton    = "#new-chat"
	Transcript       = "#transcript"
	ConversationList = "#conversation-list"
	ErrorBanner      = "#error-banner"
	LastTurn         = "#transcript > li.turn:last-of-type"
	LastAnswer       = LastTurn + " .answer"
	LastUsage        = LastTurn + " .usage"
	ApprovalCard     = ".approval-card"
	ElicitationCard  = ".elicitation-card"
)

// Page drives the chat page in one browser tab. Every method fails the
// test (t.Fatalf) when its step fails or takes longer than StepTimeout, so
// tests read as a list of steps. The same steps run against the in-test
// contract fake of package web and against the real server: only the URL
// differs.
type Page struct {
	t   testing.TB
	ctx context.Context
}

// Open navigates ctx's tab to url (the page is at "/") and waits until the
// page has started: its script sets data-ready on <body>.
func Open(t testing.TB, ctx context.Context, url string) *Page {
	t.Helper()
	p := &Page{t: t, ctx: ctx}
	p.Do("open "+url, chromedp.Navigate(url))
	p.WaitJS("the page is ready", `() => document.body && document.body.dataset.ready === "true"`)
	return p
}

// Context is the tab's context, for chromedp actions the Page lacks.
func (p *Page) Context() context.Context { return p.ctx }

// Do runs actions as one step.
func (p *Page) Do(what string, actions ...chromedp.Action[chromedp.Void]) {
	p.t.Helper()
	ctx, cancel := context.WithTimeout(p.ctx, StepTimeout)
	defer cancel()
	if err := chromedp.Do(ctx, actions...); err != nil {
		p.t.Fatalf("webtest: %s: %v", what, err)
	}
}

// Reload reloads the page and waits until it is ready again.
func (p *Page) Reload() {
	p.t.Helper()
	p.Do("reload", chromedp.Reload())
	p.WaitJS("the page is ready after reload", `() => document.body && document.body.dataset.ready === "true"`)
}

// Send types message into the composer and presses Enter, as a user would.
func (p *Page) Send(message string) {
	p.t.Helper()
	p.WaitJS("the send button is enabled", `() => { const b = document.querySelector("#send"); return b && !b.disabled }`)
	p.Type(Composer, message)
	p.Enter()
}

// Type focuses the element matching css and types text into it, key by
// key.
func (p *Page) Type(css, text string) {
	p.t.Helper()
	p.Do("type into "+css, chromedp.Focus(chromedp.CSS(css)), chromedp.SendKeys(chromedp.CSS(css), text))
}

// Enter presses Enter on the focused element, with modifiers held (Shift
// for Shift+Enter). It sends what a keyboard sends, a keyDown carrying the
// text "\r" and a keyUp, so a keydown handler that calls preventDefault
// stops the new line as it would in a real browser (chromedp.KeyEvent
// sends the text as a separate char event, which nothing can cancel).
func (p *Page) Enter(modifiers ...chromedp.Modifier) {
	p.t.Helper()
	var mods int64
	for _, m := range modifiers {
		mods |= int64(m)
	}
	p.Do("press Enter", chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
		for _, typ := range []input.DispatchKeyEventType{input.DispatchKeyEventTypeKeyDown, input.DispatchKeyEventTypeKeyUp} {
			ev := input.DispatchKeyEventParams{
				Type: typ, Modifiers: mods, Key: "Enter", Code: "Enter",
				WindowsVirtualKeyCode: 13, NativeVirtualKeyCode: 13,
			}
			if typ == input.DispatchKeyEventTypeKeyDown {
				ev.Text, ev.UnmodifiedText = "\r", "\r"
			}
			if _, err := cdp.Call(ctx, t, input.DispatchKeyEvent, ev); err != nil {
				return err
			}
		}
		return nil
	}))
}

// Click clicks the first element matching css with the mouse, once it is
// visible. A live page may render the element anew between the query
// that finds it and the click (the Files panel's tree does, as a run's
// events come): the node the query found is gone then, and the click is
// tried again on the element that took its place.
func (p *Page) Click(css string) {
	p.t.Helper()
	ctx, cancel := context.WithTimeout(p.ctx, StepTimeout)
	defer cancel()
	for {
		err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS(css)))
		if err == nil {
			return
		}
		if !nodeGone(err) || ctx.Err() != nil {
			p.t.Fatalf("webtest: click %s: %v", css, err)
		}
	}
}

// nodeGone reports whether err is the browser's answer about a node
// that is no longer in the page ("Could not find node with given id",
// "Node is detached from document").
func nodeGone(err error) bool {
	e, ok := errors.AsType[*cdproto.Error](err)
	return ok && e.Code == -32000 && strings.Contains(strings.ToLower(e.Message), "node")
}

// Fill sets the value of the input, textarea or select matching css and
// fires its input and change events.
func (p *Page) Fill(css, value string) {
	p.t.Helper()
	p.WaitVisible(css)
	ok := Eval[bool](p, fmt.Sprintf(`(() => {
		const el = document.querySelector(%s);
		if (!el) return false;
		el.focus();
		el.value = %s;
		el.dispatchEvent(new Event("input", {bubbles: true}));
		el.dispatchEvent(new Event("change", {bubbles: true}));
		return true;
	})()`, jsString(css), jsString(value)))
	if !ok {
		p.t.Fatalf("webtest: fill %s: no such element", css)
	}
}

// WaitVisible waits until an element matching css is rendered and visible.
func (p *Page) WaitVisible(css string) {
	p.t.Helper()
	p.WaitJS("visible "+css, `(sel) => { const el = document.querySelector(sel); return !!el && el.checkVisibility() }`, css)
}

// WaitGone waits until no element matching css is visible.
func (p *Page) WaitGone(css string) {
	p.t.Helper()
	p.WaitJS("gone "+css, `(sel) => ![...document.querySelectorAll(sel)].some((el) => el.checkVisibility())`, css)
}

// WaitText waits until the text of the first element matching css
// contains want.
func (p *Page) WaitText(css, want string) {
	p.t.Helper()
	ctx, cancel := context.WithTimeout(p.ctx, StepTimeout)
	defer cancel()
	_, err := chromedp.Run(ctx, chromedp.PollFunction[bool](
		`(sel, want) => { const el = document.querySelector(sel); return !!el && el.textContent.includes(want) }`,
		chromedp.WithPollingArgs(css, want), chromedp.WithPollingInterval(25*time.Millisecond), chromedp.WithPollingTimeout(StepTimeout)))
	if err != nil {
		p.t.Fatalf("webtest: wait for %q in %s: %v; the text is %q", want, css, err, p.textNow(css))
	}
}

// WaitJS waits until the JavaScript function fn, called with args, returns
// a truthy value.
func (p *Page) WaitJS(what, fn string, args ...any) {
	p.t.Helper()
	ctx, cancel := context.WithTimeout(p.ctx, StepTimeout)
	defer cancel()
	_, err := chromedp.Run(ctx, chromedp.PollFunction[chromedp.Void](fn,
		chromedp.WithPollingArgs(args...), chromedp.WithPollingInterval(25*time.Millisecond), chromedp.WithPollingTimeout(StepTimeout)))
	if err != nil {
		p.t.Fatalf("webtest: wait until %s: %v", what, err)
	}
}

// Text is the text content of the first element matching css, or "" when
// there is none.
func (p *Page) Text(css string) string {
	p.t.Helper()
	return Eval[string](p, fmt.Sprintf(`document.querySelector(%s)?.textContent ?? ""`, jsString(css)))
}

// HTML is the inner HTML of the first element matching css, or "".
func (p *Page) HTML(css string) string {
	p.t.Helper()
	return Eval[string](p, fmt.Sprintf(`document.querySelector(%s)?.innerHTML ?? ""`, jsString(css)))
}

// Count is the number of elements matching css.
func (p *Page) Count(css string) int {
	p.t.Helper()
	return Eval[int](p, fmt.Sprintf(`document.querySelectorAll(%s).length`, jsString(css)))
}

// Attr is the attribute name of the first element matching css, or "".
func (p *Page) Attr(css, name string) string {
	p.t.Helper()
	return Eval[string](p, fmt.Sprintf(`document.querySelector(%s)?.getAttribute(%s) ?? ""`, jsString(css), jsString(name)))
}

// CheckAccessible reports, with t.Errorf, what breaks the basics in the
// visible page: a form control with no label, a button or link with no
// name, an image with no alt text, a frame with no title, a duplicate id,
// or an aria-labelledby, aria-describedby, aria-controls or label[for]
// naming a missing element.
func (p *Page) CheckAccessible() {
	p.t.Helper()
	for _, problem := range Eval[[]string](p, checkAccessibleJS) {
		p.t.Errorf("webtest: accessibility: %s", problem)
	}
}

const checkAccessibleJS = `(() => {
	const out = [];
	const visible = (el) => el.checkVisibility({ visibilityProperty: true });
	const byIds = (v) => (v || "").split(/\s+/).filter(Boolean).map((id) => document.getElementById(id)?.textContent ?? "").join(" ").trim();
	const name = (el) => (el.getAttribute("aria-label") || "").trim() || byIds(el.getAttribute("aria-labelledby")) ||
		(el.labels ? [...el.labels].map((l) => l.textContent).join(" ").trim() : "") || (el.title || "").trim();
	const what = (el) => el.tagName.toLowerCase() + (el.id ? "#" + el.id : "") + (el.className ? "." + String(el.className).trim().replace(/\s+/g, ".") : "");
	for (const el of document.querySelectorAll("input:not([type=hidden]), select, textarea")) {
		if (visible(el) && !name(el)) out.push("no label: " + what(el));
	}
	for (const el of document.querySelectorAll("button, a[href], summary")) {
		if (visible(el) && !name(el) && !el.textContent.trim()) out.push("no name: " + what(el));
	}
	for (const el of document.querySelectorAll("img")) if (!el.hasAttribute("alt")) out.push("no alt: " + what(el));
	for (const el of document.querySelectorAll("iframe")) if (!el.title) out.push("no title: " + what(el));
	const seen = new Set();
	for (const el of document.querySelectorAll("[id]")) {
		if (seen.has(el.id)) out.push("duplicate id: " + el.id);
		seen.add(el.id);
	}
	for (const attr of ["aria-labelledby", "aria-describedby", "aria-controls"]) {
		for (const el of document.querySelectorAll("[" + attr + "]")) {
			for (const id of el.getAttribute(attr).split(/\s+/).filter(Boolean)) {
				if (!document.getElementById(id)) out.push(attr + " of " + what(el) + " names a missing #" + id);
			}
		}
	}
	for (const l of document.querySelectorAll("label[for]")) {
		if (!document.getElementById(l.htmlFor)) out.push("label for a missing #" + l.htmlFor);
	}
	return out;
})()`

// Screenshot saves a screenshot of the page; see the package function.
func (p *Page) Screenshot(name string) string {
	p.t.Helper()
	return Screenshot(p.t, p.ctx, name)
}

// Eval evaluates a JavaScript expression in the page (awaiting a promise)
// and decodes its value into T.
func Eval[T any](p *Page, expr string) T {
	p.t.Helper()
	ctx, cancel := context.WithTimeout(p.ctx, StepTimeout)
	defer cancel()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](expr, chromedp.EvalAwaitPromise))
	if err != nil {
		p.t.Fatalf("webtest: evaluate %s: %v", abbreviate(expr), err)
	}
	return v
}

// textNow reads an element's text for a failure message, without failing.
func (p *Page) textNow(css string) string {
	ctx, cancel := context.WithTimeout(p.ctx, 5*time.Second)
	defer cancel()
	s, err := chromedp.Run(ctx, chromedp.Evaluate[string](fmt.Sprintf(`document.querySelector(%s)?.textContent ?? "(no element)"`, jsString(css))))
	if err != nil {
		return "(unreadable: " + err.Error() + ")"
	}
	return s
}

// jsString quotes s as a JavaScript string literal.
func jsString(s string) string {
	b, _ := json.Marshal(s) // a string always marshals
	return string(b)
}

func abbreviate(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > 80 {
		s = s[:77] + "..."
	}
	return s
}
