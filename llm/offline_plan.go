package llm

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// The offline model's planning intent: a request for a plan becomes a
// write_todos call, so the plan lands on the task board. The request may
// list its steps ("make a plan for the shed: buy wood; build the frame,
// then paint it") or only name its goal ("plan a 3-step trip to Lisbon",
// "help me plan my move"); with no steps to read, the model, which cannot
// invent them, writes numbered placeholders the user renames on the board.

// planCue finds a request for a plan at the start of a message, after
// optional politeness ("please", "can you", "help me", "I need") and an
// optional verb ("make", "write"…): "plan a trip", "make a plan to …",
// "a to-do list for …", "plan: …". Group 1 is the plan's size when said
// before the noun ("a 3-step plan"); group 2 is what follows the cue: the
// steps, the goal, or both.
var planCue = regexp.MustCompile(`(?is)^\s*(?:(?:hi|hey|hello)\b[,!]?\s*)?(?:please\s+)?` +
	`(?:(?:can|could|would|will)\s+you\s+(?:please\s+)?)?(?:help\s+me\s+(?:to\s+)?)?` +
	`(?:i\s+(?:need|want|would\s+like)\s+(?:you\s+to\s+)?|i'd\s+like\s+(?:you\s+to\s+)?)?` +
	`(?:(?:make|write|draft|create|build|prepare|give|draw\s+up|put\s+together|come\s+up\s+with)\s+(?:me\s+|us\s+)?)?` +
	`(?:(?:a|an|the|my|our)\s+)?(?:(\w+)[- ]step\s+)?(?:plan(?:\s+out)?|to-?do(?:\s+list)?|task\s+list|checklist)\b(.*)$`)

// notAPlan is what, right after the plan word, shows a statement about a
// plan rather than a request for one ("the plan is ready").
var notAPlan = regexp.MustCompile(`(?i)^\s*(?:is|was|are|were|has|had|looks|seems|sounds|works|worked|went|'s)\b`)

// planSizeCue finds a plan's size said after its goal: "… in 4 steps".
var planSizeCue = regexp.MustCompile(`(?i)\b(?:in\s+)?(\w+)[- ]steps?\b`)

// planSeparators split a plan's steps.
var planSeparators = regexp.MustCompile(`(?i)\s*(?:;|,|\n|\band\s+then\b|\bthen\b)\s*`)

// planLead is what may stand between the cue and the goal.
var planLead = regexp.MustCompile(`(?i)^(?:\s*(?:for|to|of|about|on|out|a|an|the|me|us)\b)+\s*`)

// Bounds of a plan the offline model writes.
const (
	maxPlanSteps        = 20
	defaultPlanSize     = 3
	maxPlaceholderSteps = 10
	maxPlanGoalRunes    = 150
	// placeholderStep opens a placeholder's title; the goal follows it.
	placeholderStep = "Step %d of %d"
)

var numberWords = map[string]int{"two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8, "nine": 9, "ten": 10}

// planSteps reads the steps of a plan request, or nil when q asks for no
// plan: the listed steps (at most 20), else placeholders for the goal,
// as many as the request says (three when it does not, at most ten).
func planSteps(q string) []string {
	m := planCue.FindStringSubmatch(q)
	if m == nil || notAPlan.MatchString(m[2]) {
		return nil
	}
	size := planSize(m[1])
	rest := m[2]
	goal, list, hasList := strings.Cut(rest, ":")
	if !hasList {
		goal, list = rest, ""
		// "make a plan to buy wood, build the frame, then paint it":
		// a goal that is itself a list of two steps or more.
		if parts := splitSteps(rest); len(parts) >= 2 {
			list, goal = planLead.ReplaceAllString(rest, ""), ""
		}
	}
	if steps := splitSteps(list); len(steps) > 0 {
		return steps
	}
	if hasList {
		return nil // "plan:" with nothing after it
	}
	if sm := planSizeCue.FindStringSubmatchIndex(goal); sm != nil {
		if n := planSize(goal[sm[2]:sm[3]]); n > 0 {
			size = n
			goal = goal[:sm[0]] + goal[sm[1]:]
		}
	}
	goal = strings.Join(strings.Fields(planLead.ReplaceAllString(goal, "")), " ")
	goal = strings.TrimSpace(strings.TrimRight(goal, ".!?,; "))
	goal = strings.TrimSpace(strings.TrimSuffix(strings.TrimSuffix(goal, "please"), ","))
	if r := []rune(goal); len(r) > maxPlanGoalRunes {
		goal = string(r[:maxPlanGoalRunes]) + "…"
	}
	if size == 0 {
		size = defaultPlanSize
	}
	size = min(max(size, 2), maxPlaceholderSteps)
	steps := make([]string, size)
	for i := range steps {
		steps[i] = fmt.Sprintf(placeholderStep, i+1, size)
		if goal != "" {
			steps[i] += ": " + goal
		}
	}
	return steps
}

// splitSteps cuts a list of steps ("buy wood; build the frame, then
// paint it") into at most 20 steps.
func splitSteps(list string) []string {
	var out []string
	for _, p := range planSeparators.Split(list, -1) {
		p = strings.Trim(strings.TrimSpace(p), ".!?")
		p = strings.TrimSpace(strings.TrimPrefix(p, "and "))
		if p != "" && len(out) < maxPlanSteps {
			out = append(out, p)
		}
	}
	return out
}

// planSize reads "3" or "three" as a number of steps, or 0.
func planSize(w string) int {
	w = strings.ToLower(w)
	if n, err := strconv.Atoi(w); err == nil && n > 0 {
		return n
	}
	return numberWords[w]
}

// placeholderPlan reports whether write_todos' arguments are the
// placeholders planSteps writes for a request with no steps.
func placeholderPlan(args map[string]any) bool {
	todos, _ := args["todos"].([]any)
	if len(todos) == 0 {
		return false
	}
	first, _ := todos[0].(map[string]any)
	title, _ := first["title"].(string)
	return strings.HasPrefix(title, fmt.Sprintf(placeholderStep, 1, len(todos)))
}

// describePlan words write_todos' result: where the plan is, and, for
// placeholders, how to get real steps.
func describePlan(r toolResult, value string, isErr bool) string {
	if isErr {
		return "I couldn't write the plan: " + value
	}
	todos, _ := r.args["todos"].([]any)
	tasks := fmt.Sprintf("%d tasks", len(todos))
	if len(todos) == 1 {
		tasks = "1 task"
	}
	text := "The plan is on the task board, " + tasks + ": change a task's title, status or order there."
	if placeholderPlan(r.args) {
		text += " I'm offline, so I can't work out the steps myself: rename each step on the board, " +
			"or list the steps after a colon (\"plan the trip: book flights; pack; go\")."
	}
	return text
}

// writeTodosArguments are write_todos' arguments for steps, each a task.
func writeTodosArguments(steps []string) string {
	todos := make([]map[string]string, len(steps))
	for i, st := range steps {
		todos[i] = map[string]string{"title": st}
	}
	b, _ := json.Marshal(map[string]any{"todos": todos})
	return string(b)
}
