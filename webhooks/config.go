package webhooks

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/trellis-ai/trellis/store"
)

// Settings are the operator's webhooks, as ParseSettings reads them.
type Settings struct {
	Endpoints []Endpoint
	// Timeout bounds one attempt: connecting, sending and the answer's
	// headers. DefaultTimeout when the file gives none.
	Timeout time.Duration
	// MaxAttempts is how many times a delivery is tried before it
	// fails. DefaultMaxAttempts when the file gives none.
	MaxAttempts int
}

// JobTimeout is how long the job of one attempt may run: a little
// longer than its request. The queue must not take a job for abandoned
// sooner (jobs.Config.RescueAfter).
func (s Settings) JobTimeout() time.Duration { return s.Timeout + 5*time.Second }

// Endpoint is where some events are sent.
type Endpoint struct {
	// ID names the endpoint in the delivery log: letters, digits, '.',
	// '_' and '-', at most 64.
	ID  string
	URL *url.URL
	// Secret signs what is sent; it never shows in logs or errors.
	Secret Secret
	// Events are the event types sent (store.WebhookTypes).
	Events []string
}

// Defaults and bounds of Settings.
const (
	DefaultTimeout     = 10 * time.Second
	MaxTimeout         = time.Minute
	DefaultMaxAttempts = 8
	MaxAttempts        = 20
	MaxEndpoints       = 20
	// MinSecretBytes is the shortest secret (its key, for a whsec_ one)
	// accepted, as Standard Webhooks asks; MaxSecretBytes the longest.
	MinSecretBytes = 24
	MaxSecretBytes = 64
)

// Secret is an endpoint's signing key. It prints, logs and encodes as
// "[redacted]", whatever the verb, so no log line or error can hold it.
type Secret struct{ key []byte }

const redacted = "[redacted]"

// Format implements fmt.Formatter: every verb prints "[redacted]".
func (Secret) Format(f fmt.State, _ rune) { _, _ = io.WriteString(f, redacted) }

// LogValue implements slog.LogValuer.
func (Secret) LogValue() slog.Value { return slog.StringValue(redacted) }

// MarshalJSON writes "[redacted]".
func (Secret) MarshalJSON() ([]byte, error) { return json.Marshal(redacted) }

// ParseSecret reads an endpoint's secret: "whsec_" and the key in
// standard base64, as Standard Webhooks (and Svix) write secrets, or
// any other text, whose bytes are the key. Either key must hold
// MinSecretBytes to MaxSecretBytes bytes. Errors never quote the secret.
func ParseSecret(s string) (Secret, error) {
	key := []byte(s)
	if rest, ok := strings.CutPrefix(s, "whsec_"); ok {
		var err error
		if key, err = base64.StdEncoding.DecodeString(rest); err != nil {
			return Secret{}, errors.New(`a "whsec_" secret must be followed by standard base64`)
		}
	}
	if len(key) < MinSecretBytes || len(key) > MaxSecretBytes {
		return Secret{}, fmt.Errorf("the secret's key is %d bytes; it must be %d to %d (a whsec_ secret counts its decoded bytes)",
			len(key), MinSecretBytes, MaxSecretBytes)
	}
	return Secret{key: key}, nil
}

// file is the webhooks file, as written.
type file struct {
	Timeout     string         `json:"timeout"`
	MaxAttempts int            `json:"max_attempts"`
	Endpoints   []fileEndpoint `json:"endpoints"`
}

type fileEndpoint struct {
	ID     string   `json:"id"`
	URL    string   `json:"url"`
	Secret string   `json:"secret"`
	Events []string `json:"events"`
}

var endpointID = regexp.MustCompile(`^[A-Za-z0-9._-]{1,64}$`)

// ParseSettings reads a webhooks file:
//
//	{"timeout": "10s", "max_attempts": 8, "endpoints": [
//	  {"id": "ops", "url": "https://ops.example.com/hooks", "secret": "whsec_…",
//	   "events": ["approval.required", "run.failed"]}]}
//
// Unknown fields, a URL that is not http(s) with a host (or that holds
// credentials: they belong in the secret), a secret that ParseSecret
// refuses, an event type not in store.WebhookTypes, no events, a
// duplicate id, and bounds passed are errors, which name the endpoint
// and never quote its secret or URL.
func ParseSettings(data []byte) (Settings, error) {
	var f file
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&f); err != nil {
		return Settings{}, fmt.Errorf("webhooks: %w", cleanJSONError(err))
	}
	if dec.More() {
		return Settings{}, errors.New("webhooks: the file holds more than one JSON value")
	}
	s := Settings{Timeout: DefaultTimeout, MaxAttempts: DefaultMaxAttempts}
	var errs []error
	if f.Timeout != "" {
		d, err := time.ParseDuration(f.Timeout)
		if err != nil || d <= 0 || d > MaxTimeout {
			errs = append(errs, fmt.Errorf("timeout: %q is not a duration above 0 and at most %s", f.Timeout, MaxTimeout))
		}
		s.Timeout = d
	}
	switch {
	case f.MaxAttempts < 0 || f.MaxAttempts > MaxAttempts:
		errs = append(errs, fmt.Errorf("max_attempts: %d is not between 1 and %d (0 or absent: %d)", f.MaxAttempts, MaxAttempts, DefaultMaxAttempts))
	case f.MaxAttempts > 0:
		s.MaxAttempts = f.MaxAttempts
	}
	if len(f.Endpoints) > MaxEndpoints {
		errs = append(errs, fmt.Errorf("endpoints: %d, more than the %d allowed", len(f.Endpoints), MaxEndpoints))
	}
	for i, fe := range f.Endpoints {
		ep, err := fe.parse()
		if err == nil && slices.ContainsFunc(s.Endpoints, func(o Endpoint) bool { return o.ID == ep.ID }) {
			err = errors.New("the id is taken by an endpoint before it")
		}
		if err != nil {
			name := fmt.Sprintf("endpoint %d", i+1)
			if endpointID.MatchString(fe.ID) {
				name += fmt.Sprintf(" (%s)", fe.ID)
			}
			errs = append(errs, fmt.Errorf("%s: %w", name, err))
			continue
		}
		s.Endpoints = append(s.Endpoints, ep)
	}
	if err := errors.Join(errs...); err != nil {
		return Settings{}, fmt.Errorf("webhooks: %w", err)
	}
	return s, nil
}

func (fe fileEndpoint) parse() (Endpoint, error) {
	if !endpointID.MatchString(fe.ID) {
		return Endpoint{}, errors.New(`"id" must be 1 to 64 letters, digits, '.', '_' or '-'`)
	}
	u, err := url.Parse(fe.URL)
	switch {
	case err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.Opaque != "":
		return Endpoint{}, errors.New(`"url" must be an absolute http or https URL`)
	case u.User != nil:
		return Endpoint{}, errors.New(`"url" must not hold credentials; the secret authenticates the sender`)
	case u.Fragment != "":
		return Endpoint{}, errors.New(`"url" must not have a fragment`)
	}
	if fe.Secret == "" {
		return Endpoint{}, errors.New(`"secret" is required`)
	}
	secret, err := ParseSecret(fe.Secret)
	if err != nil {
		return Endpoint{}, fmt.Errorf(`"secret": %w`, err)
	}
	if len(fe.Events) == 0 {
		return Endpoint{}, fmt.Errorf(`"events" must name at least one of %s`, strings.Join(store.WebhookTypes, ", "))
	}
	var evs []string
	for _, t := range fe.Events {
		if !store.WebhookType(t) {
			return Endpoint{}, fmt.Errorf(`"events": %q is not one of %s`, t, strings.Join(store.WebhookTypes, ", "))
		}
		if !slices.Contains(evs, t) {
			evs = append(evs, t)
		}
	}
	return Endpoint{ID: fe.ID, URL: u, Secret: secret, Events: evs}, nil
}

// cleanJSONError is a decoding error without the text it read: a
// syntax error's offset, a type error's field, never a value (which
// could be a secret).
func cleanJSONError(err error) error {
	var (
		syntax *json.SyntaxError
		typ    *json.UnmarshalTypeError
	)
	switch {
	case errors.As(err, &syntax):
		return fmt.Errorf("the file is not valid JSON (at byte %d)", syntax.Offset)
	case errors.As(err, &typ):
		return fmt.Errorf("%q must be a JSON %s", typ.Field, typ.Type)
	case errors.Is(err, io.EOF):
		return errors.New("the file is empty")
	case strings.HasPrefix(err.Error(), "json: unknown field "):
		return errors.New(strings.TrimPrefix(err.Error(), "json: "))
	}
	return errors.New("the file is not valid JSON")
}
