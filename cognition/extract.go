package cognition

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/tmc/langchaingo/llms"

	"github.com/trellis-ai/trellis/llm"
	"github.com/trellis-ai/trellis/store"
)

// Extractor reads turns of one conversation, in order, with a model: the
// facts worth remembering, decided against the user's nearest memories as
// Mem0 does, and what the user stated of themself.
type Extractor interface {
	Extract(ctx context.Context, ts []Turn, nearest []store.Memory) (Extraction, error)
}

// Extraction is what an Extractor found.
type Extraction struct {
	Memories    []Decision        `json:"memories"`
	Preferences map[string]string `json:"preferences"`
	Expertise   string            `json:"expertise"`
	Style       string            `json:"style"`
}

// Decision is what to do with one fact: add it, update memory ID with
// it, delete memory ID (the fact contradicts it), or nothing.
type Decision struct {
	Event string `json:"event"`
	ID    string `json:"id,omitempty"`
	Text  string `json:"text,omitempty"`
}

// Events of a Decision.
const (
	EventAdd    = "ADD"
	EventUpdate = "UPDATE"
	EventDelete = "DELETE"
	EventNone   = "NONE"
)

// ModelExtractor is an Extractor over a model; give it one from the
// registry, whose calls go through llm's resilience policy (retries,
// breaker, timeout).
type ModelExtractor struct {
	Model llms.Model
}

const extractPrompt = `You maintain a memory of one user for an assistant. From the user's latest messages (and the assistant's answers), extract facts about the user worth remembering across conversations (preferences, circumstances, goals), and compare each with the existing memories below; where the user's messages disagree, the later one holds.
For each fact decide one event: ADD (new), UPDATE (refines or changes memory id; give the new text), DELETE (contradicts memory id), NONE (already known).
Also report preferences the user stated outright (name -> statement), and, only when the user stated them, their expertise (novice, intermediate, expert) and preferred style (concise, detailed, technical).
Reply with only a JSON object: {"memories": [{"event": "ADD", "text": "..."}, {"event": "UPDATE", "id": "...", "text": "..."}], "preferences": {}, "expertise": "", "style": ""}.`

// The most of the user's messages and of the answers one extraction
// reads, shared by its turns; one turn's messages are clipped at
// turnText and turnAnswer.
const (
	extractText   = 8000
	extractAnswer = 2000
	turnText      = 4000
	turnAnswer    = 1000
)

// Extract implements Extractor: one call for the turns.
func (m ModelExtractor) Extract(ctx context.Context, ts []Turn, nearest []store.Memory) (Extraction, error) {
	var b strings.Builder
	b.WriteString("Existing memories:\n")
	if len(nearest) == 0 {
		b.WriteString("(none)\n")
	}
	for _, mem := range nearest {
		fmt.Fprintf(&b, "- id %s: %s\n", mem.ID, mem.Summary)
	}
	n := max(len(ts), 1)
	text, answer := min(turnText, extractText/n), min(turnAnswer, extractAnswer/n)
	for _, t := range ts {
		b.WriteString("\nUser: " + clip(t.Query, text) + "\nAssistant: " + clip(t.Answer, answer) + "\n")
	}
	resp, err := m.Model.GenerateContent(ctx, []llms.MessageContent{
		llms.TextParts(llms.ChatMessageTypeSystem, extractPrompt),
		llms.TextParts(llms.ChatMessageTypeHuman, b.String()),
	}, llms.WithJSONMode(), llms.WithTemperature(0))
	if err != nil {
		return Extraction{}, fmt.Errorf("cognition: extract: %w", err)
	}
	return ParseExtraction(llm.TextFrom(resp))
}

// ParseExtraction reads a model's reply: a JSON object, possibly inside a
// Markdown code fence or after some words. Unknown events are dropped.
func ParseExtraction(reply string) (Extraction, error) {
	start, end := strings.Index(reply, "{"), strings.LastIndex(reply, "}")
	if start < 0 || end < start {
		return Extraction{}, errors.New("cognition: extract: the reply holds no JSON object")
	}
	var e Extraction
	if err := json.Unmarshal([]byte(reply[start:end+1]), &e); err != nil {
		return Extraction{}, fmt.Errorf("cognition: extract: %w", err)
	}
	kept := e.Memories[:0]
	for _, d := range e.Memories {
		d.Event = strings.ToUpper(strings.TrimSpace(d.Event))
		switch d.Event {
		case EventAdd, EventUpdate, EventDelete:
			kept = append(kept, d)
		}
	}
	e.Memories = kept
	return e, nil
}
