package operators

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"
)

// validator checks arguments against one tool's input schema. A nil
// *validator accepts any JSON object.
type validator struct {
	resolved *jsonschema.Resolved
	fast     *fastNode // nil when the schema uses keywords it does not handle
	hint     string    // "expected: a (string, required), b (integer)"
}

// newValidator resolves s. A nil schema gives a nil validator.
func newValidator(s *jsonschema.Schema) (*validator, error) {
	if s == nil {
		return nil, nil
	}
	rs, err := s.Resolve(nil)
	if err != nil {
		return nil, fmt.Errorf("operators: resolve input schema: %w", err)
	}
	return &validator{resolved: rs, fast: compileFast(s), hint: schemaHint(s)}, nil
}

var emptyObject = json.RawMessage(`{}`)

// normalizeArgs turns empty or null arguments into {}.
func normalizeArgs(args json.RawMessage) json.RawMessage {
	t := bytes.TrimSpace(args)
	if len(t) == 0 || string(t) == "null" {
		return emptyObject
	}
	return args
}

// validate checks that args is a JSON object that satisfies the schema.
// The error wraps [ErrInvalidArguments] and says, in words a model can act
// on, which argument is wrong and what the tool expects.
//
// Valid arguments are normally confirmed by the precompiled fast validator
// (see fastschema.go) without decoding them; whatever it cannot confirm is
// decoded and checked by jsonschema-go, which has the final word and
// words the error.
func (v *validator) validate(tool string, args json.RawMessage) error {
	fast := anyObject // a nil validator accepts any object
	if v != nil {
		fast = v.fast
	}
	if fastValid(fast, args) {
		return nil
	}
	return v.validateSlow(tool, args)
}

// validateSlow decodes args and validates them with jsonschema-go.
func (v *validator) validateSlow(tool string, args json.RawMessage) error {
	var inst any
	if err := json.Unmarshal(args, &inst); err != nil {
		return v.invalid(tool, "arguments are not valid JSON: "+err.Error())
	}
	if _, ok := inst.(map[string]any); !ok {
		return v.invalid(tool, "arguments must be a JSON object")
	}
	if v == nil {
		return nil
	}
	if err := v.resolved.Validate(inst); err != nil {
		return v.invalid(tool, strings.TrimPrefix(err.Error(), "validating root: "))
	}
	return nil
}

func (v *validator) invalid(tool, msg string) error {
	if v != nil && v.hint != "" {
		return fmt.Errorf("%w for %s: %s; expected %s", ErrInvalidArguments, tool, msg, v.hint)
	}
	return fmt.Errorf("%w for %s: %s", ErrInvalidArguments, tool, msg)
}

// schemaHint summarises an object schema's properties for error messages.
func schemaHint(s *jsonschema.Schema) string {
	if len(s.Properties) == 0 {
		return ""
	}
	names := s.PropertyOrder
	if len(names) != len(s.Properties) {
		names = slices.Sorted(maps.Keys(s.Properties))
	}
	parts := make([]string, 0, len(names))
	for _, n := range names {
		p := s.Properties[n]
		typ := p.Type
		if typ == "" && len(p.Types) > 0 {
			typ = strings.Join(p.Types, "|")
		}
		if len(p.Enum) > 0 {
			b, _ := json.Marshal(p.Enum)
			typ += " one of " + string(b)
		}
		if slices.Contains(s.Required, n) {
			typ += ", required"
		}
		parts = append(parts, fmt.Sprintf("%s (%s)", n, typ))
	}
	return strings.Join(parts, ", ")
}
