package memtools

import (
	"context"
	"errors"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/trellis-ai/trellis/operators"
	"github.com/trellis-ai/trellis/store"
)

// Memory is what the tools use of the cognition service.
type Memory interface {
	Remember(ctx context.Context, userID, conversationID, fact string) error
	Recall(ctx context.Context, userID, query string, limit int) ([]store.Memory, error)
}

// MaxRecall is the most memories recall returns.
const MaxRecall = 20

// New returns remember and recall over m.
func New(m Memory) []operators.Tool {
	return []operators.Tool{remember(m), recall(m)}
}

// errNoUser is a call with no user (none to remember for).
var errNoUser = errors.New("memory belongs to a user, and this call has none")

// forUser is fn for calls made for a user; any other call fails with
// errNoUser.
func forUser[In any](fn operators.ToolFunc[In]) operators.ToolFunc[In] {
	return func(ctx context.Context, call operators.Call, in In) (operators.Result, error) {
		if call.UserID == "" {
			return operators.Result{}, errNoUser
		}
		return fn(ctx, call, in)
	}
}

type rememberInput struct {
	Fact string `json:"fact" jsonschema:"the fact to remember about the user, as one sentence"`
}

func remember(m Memory) operators.Tool {
	return operators.NewTool("remember",
		"Remembers a fact about the user across conversations, when the user asks you to remember something. A fact on the same topics as one remembered already replaces it.",
		forUser(func(ctx context.Context, call operators.Call, in rememberInput) (operators.Result, error) {
			if err := m.Remember(ctx, call.UserID, call.ConversationID, in.Fact); err != nil {
				return operators.Result{}, err
			}
			return jsonResult(map[string]any{"remembered": in.Fact})
		}), operators.WithOutputTypes(operators.OutputJSON),
		operators.WithSchema(func(s *jsonschema.Schema) {
			if p := s.Properties["fact"]; p != nil {
				p.MinLength, p.MaxLength = ptr(1), ptr(500)
			}
		}))
}

type recallInput struct {
	Query string `json:"query,omitempty" jsonschema:"what to look for, in words; empty recalls the most important memories"`
	Limit int    `json:"limit,omitempty" jsonschema:"the most memories to return; default 5, at most 20"`
}

// recalled is recall's item.
type recalled struct {
	Summary   string   `json:"summary"`
	Topics    []string `json:"topics,omitempty"`
	Outcome   string   `json:"outcome,omitempty"`
	CreatedAt string   `json:"created_at"`
}

func recall(m Memory) operators.Tool {
	return operators.NewTool("recall",
		"Searches what you remember about the user from earlier conversations: stated preferences, facts they asked you to remember, and past topics, most relevant first.",
		forUser(func(ctx context.Context, call operators.Call, in recallInput) (operators.Result, error) {
			ms, err := m.Recall(ctx, call.UserID, in.Query, min(max(in.Limit, 0), MaxRecall))
			if err != nil {
				return operators.Result{}, err
			}
			out := make([]recalled, len(ms))
			for i, x := range ms {
				out[i] = recalled{Summary: x.Summary, Topics: x.Topics, Outcome: x.Outcome, CreatedAt: x.CreatedAt.Format("2006-01-02")}
			}
			res := map[string]any{"memories": out}
			if len(out) == 0 {
				res["note"] = "nothing is remembered about this user yet"
			}
			return jsonResult(res)
		}), operators.ReadOnly(), operators.WithOutputTypes(operators.OutputJSON),
		operators.WithSchema(func(s *jsonschema.Schema) {
			if p := s.Properties["limit"]; p != nil {
				p.Minimum, p.Maximum = ptr(0.0), ptr(float64(MaxRecall))
			}
		}))
}

func jsonResult(v any) (operators.Result, error) {
	c, err := operators.JSONContent(v)
	if err != nil {
		return operators.Result{}, err
	}
	return operators.Result{Status: operators.StatusSuccess, Contents: []operators.Content{c}}, nil
}

func ptr[T any](v T) *T { return &v }
