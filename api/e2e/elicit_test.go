package e2e_test

import (
	"fmt"
	"testing"

	"github.com/trellis-ai/trellis/api/web/webtest"
)

// pendingElicitation is the selector of the last turn's elicitation card
// that waits for an answer.
const pendingElicitation = webtest.LastTurn + ` .elicitation-card[data-state="pending"]`

// TestE2EElicitationForms answers a tool's three questions (Elicit with a
// JSON Schema, Choose, Confirm) in forms the page builds from their
// schemas; the tool gets the answers and shows the booking directly,
// which is the turn's answer. A second booking is declined.
func TestE2EElicitationForms(t *testing.T) {
	s := newServer(t, "elicit.json")
	p := open(t, s)
	p.Send("Book a table for tonight, please.")

	// Elicit: a form from bookingSchema.
	p.WaitText(pendingElicitation+" .card-message", "Who is the table for?")
	p.WaitText(pendingElicitation+" h3 .badge", "book_table")
	p.WaitText(webtest.LastTurn+" .act-tool", "book_table")
	pending := getJSON[pendingElicitations](s, "/api/v1/elicitation/pending?conversation_id="+conversationID(t, p))
	if len(pending.Elicitations) != 1 || pending.Elicitations[0].ID != p.Attr(pendingElicitation, "data-elicitation-id") {
		t.Errorf("pending elicitations on the server: %+v", pending.Elicitations)
	}
	type control struct {
		Name, Tag, Type, Label, Min, Max, Value string
		Required                                bool
		Options                                 int
		Described                               string
	}
	got := webtest.Eval[[]control](p, `[...document.querySelectorAll('`+pendingElicitation+` form :is(input, select, textarea)')].map((c) => ({
		Name: c.name, Tag: c.tagName.toLowerCase(), Type: c.type, Label: c.labels[0]?.textContent ?? "", Min: c.min ?? "", Max: c.max ?? "",
		Value: c.type === "checkbox" ? String(c.checked) : c.value, Required: c.required, Options: c.options?.length ?? 0,
		Described: c.getAttribute("aria-describedby") ? document.getElementById(c.getAttribute("aria-describedby")).textContent : "",
	}))`)
	want := []control{ // in the schema's property order
		{Name: "name", Tag: "input", Type: "text", Label: "Name for the booking *", Required: true},
		{Name: "guests", Tag: "input", Type: "number", Label: "Guests *", Min: "1", Max: "12", Value: "2", Required: true},
		{Name: "seating", Tag: "select", Type: "select-one", Label: "Seating *", Required: true, Options: 3},
		{Name: "allergy", Tag: "input", Type: "checkbox", Label: "Someone has a food allergy", Value: "false", Described: "The kitchen will call you."},
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("the form's controls:\n got %+v\nwant %+v", got, want)
	}
	if webtest.Eval[bool](p, `document.querySelector('`+pendingElicitation+` form').checkValidity()`) {
		t.Error("the empty form is valid; the schema's required fields are not enforced")
	}
	p.CheckAccessible()
	p.Screenshot("elicitation-form")

	first := `.elicitation-card[data-elicitation-id="` + p.Attr(pendingElicitation, "data-elicitation-id") + `"]`
	p.Type(first+` input[name="name"]`, "Ada Lovelace")
	p.Fill(first+` input[name="guests"]`, "4")
	p.Fill(first+` select[name="seating"]`, "1") // option values index the enum: terrace
	p.Click(first + ` input[name="allergy"]`)
	p.Screenshot("elicitation-filled")
	p.Click(first + ` [data-action="accept"]`)
	p.WaitText(first+" .card-result", "Answered.")

	// Choose: a select of the options.
	p.WaitText(pendingElicitation+" .card-message", "Which time?")
	if n := p.Count(pendingElicitation + ` select[name="choice"] option`); n != 4 {
		t.Errorf("the choice has %d options, want 3 and the empty one", n)
	}
	p.Fill(pendingElicitation+` select[name="choice"]`, "1") // 19:30
	p.Click(pendingElicitation + ` [data-action="accept"]`)

	// Confirm: a checkbox.
	p.WaitText(pendingElicitation+" .card-message", "Book a terrace table for 4 at 19:30 under Ada Lovelace?")
	p.Click(pendingElicitation + ` input[name="confirm"]`)
	p.Screenshot("confirm")
	p.Click(pendingElicitation + ` [data-action="accept"]`)

	// The tool got every answer, and its direct response and result show.
	b := receive(t, "book_table's answers", s.booked)
	if wantB := (booking{Name: "Ada Lovelace", Guests: 4, Seating: "terrace", Allergy: true, Time: "19:30", Confirm: true}); b != wantB {
		t.Errorf("the tool received %+v, want %+v", b, wantB)
	}
	const summary = "Booked: Ada Lovelace, 4 guests, terrace, at 19:30."
	p.WaitText(webtest.LastTurn+" .direct-text", summary)
	p.WaitText(webtest.LastTurn+" .act-tool .tool-status", "done")
	waitState(p, webtest.LastTurn, "completed")
	p.WaitText(webtest.LastUsage, "total")
	// The tool answered the user directly, so that is the answer: the
	// server keeps it as the answer's text, and the page shows it once.
	if got := p.Text(webtest.LastAnswer); got != "" {
		t.Errorf("the answer repeats the direct response: %q", got)
	}
	if n := p.Count(webtest.LastTurn + " .direct-response"); n != 1 {
		t.Errorf("%d direct responses in the turn, want 1", n)
	}
	if conv := s.conversation(p); len(conv.Messages) != 2 || conv.Messages[1].Content != summary {
		t.Errorf("stored messages: %+v", conv.Messages)
	}
	if n := p.Count(webtest.LastTurn + ` .elicitation-card[data-state="resolved"]`); n != 3 {
		t.Errorf("%d answered elicitation cards, want 3", n)
	}
	openAll(p, webtest.LastTurn+" .act-tool details")
	p.Screenshot("booked")
	if n := len(s.requests("POST", "/api/v1/elicitation/respond")); n != 3 {
		t.Errorf("the page posted %d answers, want 3", n)
	}

	// Decline: the tool is told so.
	p.Send("Book another table.")
	p.WaitText(pendingElicitation+" .card-message", "Who is the table for?")
	card := `.elicitation-card[data-elicitation-id="` + p.Attr(pendingElicitation, "data-elicitation-id") + `"]`
	p.Click(card + ` [data-action="decline"]`)
	p.WaitText(card+" .card-result", "Declined.")
	if b := receive(t, "book_table's decline", s.booked); !b.Declined {
		t.Errorf("the tool received %+v, want a decline", b)
	}
	p.WaitText(webtest.LastTurn+" .act-tool details:last-of-type pre", "the user did not give the details (decline)")
	p.WaitText(webtest.LastAnswer, "No booking, then.")
	waitState(p, webtest.LastTurn, "completed")
	pending = getJSON[pendingElicitations](s, "/api/v1/elicitation/pending?conversation_id="+conversationID(t, p))
	if len(pending.Elicitations) != 0 {
		t.Errorf("pending elicitations after the answers: %+v", pending.Elicitations)
	}

	// From the stored history too, the booking shows once.
	p.Reload()
	p.WaitText(turn(2)+" .answer", "No booking, then.")
	p.WaitText(turn(1)+" .direct-text", summary)
	if got := p.Text(turn(1) + " .answer"); got != "" {
		t.Errorf("after a reload, the answer repeats the direct response: %q", got)
	}
	if n := p.Count(turn(1) + ` .elicitation-card[data-state="resolved"]`); n != 3 {
		t.Errorf("after a reload, %d answered elicitation cards, want 3", n)
	}
	s.checkScript()
}

// pendingElicitations is GET /api/v1/elicitation/pending.
type pendingElicitations struct {
	Elicitations []struct {
		ID string `json:"elicitation_id"`
	} `json:"elicitations"`
}
