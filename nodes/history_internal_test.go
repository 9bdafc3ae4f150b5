package nodes

import "testing"

// pageOut moves only what the extractive summary covers, none of what a
// model summary still has to read, and nothing until a page is full.
func TestPageOut(t *testing.T) {
	var msgs []Message
	for turn := 1; turn <= 100; turn++ {
		msgs = append(msgs, Message{Role: RoleUser, Turn: turn}, Message{Role: RoleAssistant, Turn: turn})
	}
	for _, c := range []struct {
		name               string
		upTo               int
		asked              bool
		modelTurn, askTurn int
		want               int
	}{
		{"summary short of a page", pageMessages - 1, false, 0, 0, 0},
		{"a page", 120, false, 0, 0, 120},
		{"beyond the messages", 500, false, 0, 0, 200},
		{"no model summary yet", 120, true, 0, 0, 0},
		{"a model summary of 40 turns", 120, true, 40, 0, 80},
		{"an ask of 50 turns", 120, true, 40, 50, 100},
		{"a model summary past the extractive one", 120, true, 90, 0, 120},
	} {
		if got := pageOut(msgs, c.upTo, c.asked, c.modelTurn, c.askTurn); got != c.want {
			t.Errorf("%s: %d, want %d", c.name, got, c.want)
		}
	}
}
