package runs

import (
	"encoding/json"
	"fmt"
	"maps"
	"net/mail"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
)

// validateContent checks the content of an accept to the elicitation
// id, asked with schema (nil: any object), as respond does: for an answer
// to a question no tool waits for here. The error is a *ValidationError.
func validateContent(id string, schema *jsonschema.Schema, content json.RawMessage) error {
	e := &entry{p: asked{ElicitationID: id, Schema: schema}}
	if schema != nil {
		// A schema that does not resolve is checked as ask checks it:
		// the answer must be an object, and formats still apply.
		e.schema, _ = schema.Resolve(nil)
	}
	return validate(e, content)
}

// validate checks accepted content: a JSON object that satisfies the
// entry's schema, and whose string properties match the formats MCP
// elicitation schemas may name (email, uri, date, date-time), which the
// schema validator treats as annotations only.
func validate(e *entry, content json.RawMessage) error {
	invalid := func(format string, args ...any) error {
		return &ValidationError{ElicitationID: e.p.ElicitationID, Reason: fmt.Sprintf(format, args...)}
	}
	var v any
	if err := json.Unmarshal(content, &v); err != nil {
		return invalid("content is not JSON: %v", err)
	}
	obj, ok := v.(map[string]any)
	if !ok {
		return invalid("content must be a JSON object")
	}
	if e.schema != nil {
		if err := e.schema.Validate(obj); err != nil {
			return invalid("%s", strings.TrimPrefix(err.Error(), "validating root: "))
		}
	}
	if e.p.Schema == nil {
		return nil
	}
	for _, name := range slices.Sorted(maps.Keys(e.p.Schema.Properties)) {
		prop := e.p.Schema.Properties[name]
		s, isString := obj[name].(string)
		if prop == nil || prop.Format == "" || !isString {
			continue
		}
		if err := checkFormat(prop.Format, s); err != nil {
			return invalid("property %q: %v", name, err)
		}
	}
	return nil
}

func checkFormat(format, s string) error {
	switch format {
	case "email":
		if a, err := mail.ParseAddress(s); err != nil || a.Address != s {
			return fmt.Errorf("%q is not an email address", s)
		}
	case "uri":
		if u, err := url.Parse(s); err != nil || u.Scheme == "" {
			return fmt.Errorf("%q is not an absolute URI", s)
		}
	case "date":
		if _, err := time.Parse(time.DateOnly, s); err != nil {
			return fmt.Errorf("%q is not a date (YYYY-MM-DD)", s)
		}
	case "date-time":
		if _, err := time.Parse(time.RFC3339, s); err != nil {
			return fmt.Errorf("%q is not an RFC 3339 date-time", s)
		}
	}
	return nil
}
