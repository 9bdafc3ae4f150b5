package webhooks_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"testing"

	"github.com/trellis-ai/trellis/webhooks"
)

// The Standard Webhooks specification's published vector: matching it
// lets a receiver verify deliveries with any of its libraries.
func TestSignMatchesTheStandardWebhooksVector(t *testing.T) {
	secret, err := webhooks.ParseSecret("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw")
	if err != nil {
		t.Fatal(err)
	}
	got := webhooks.Sign(secret, "msg_p5jXN8AQM9LWM0D4loKWxJek", 1614265330, []byte(`{"test": 2432232314}`))
	if want := "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="; got != want {
		t.Errorf("Sign = %s, want %s", got, want)
	}
	other := webhooks.Sign(secret, "msg_p5jXN8AQM9LWM0D4loKWxJek", 1614265331, []byte(`{"test": 2432232314}`))
	if other == got {
		t.Error("the signature does not cover the timestamp")
	}
}

const rawSecret = "a-plain-secret-of-enough-bytes-0123"

func TestSecretsNeverShow(t *testing.T) {
	s, err := webhooks.ParseSettings([]byte(`{"endpoints":[{"id":"ops","url":"https://example.com/h?token=abc","secret":"` + rawSecret +
		`","events":["run.failed"]}]}`))
	if err != nil {
		t.Fatal(err)
	}
	ep := s.Endpoints[0]
	var logs bytes.Buffer
	slog.New(slog.NewJSONHandler(&logs, nil)).Info("endpoint", slog.Any("endpoint", ep), slog.Any("secret", ep.Secret))
	js, _ := json.Marshal(ep)
	for _, shown := range []string{fmt.Sprintf("%v %+v %#v %s %q %x", ep, ep, ep, ep.Secret, ep.Secret, ep.Secret), logs.String(), string(js)} {
		if strings.Contains(shown, rawSecret) || strings.Contains(shown, fmt.Sprintf("%x", rawSecret)) || !strings.Contains(shown, "[redacted]") {
			t.Errorf("the secret shows: %s", shown)
		}
	}
}

func TestParseSettings(t *testing.T) {
	whsec := "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
	good, err := webhooks.ParseSettings([]byte(`{"timeout":"3s","max_attempts":4,"endpoints":[
 {"id":"ops","url":"https://ops.example.com/hooks","secret":"` + whsec + `","events":["approval.required","run.failed","run.failed"]},
 {"id":"pager-1","url":"http://127.0.0.1:9/x","secret":"` + rawSecret + `","events":["approval.expired","tool.uncertain","run.completed"]}]}`))
	if err != nil {
		t.Fatal(err)
	}
	if good.Timeout.String() != "3s" || good.MaxAttempts != 4 || len(good.Endpoints) != 2 ||
		len(good.Endpoints[0].Events) != 2 || good.Endpoints[1].URL.Host != "127.0.0.1:9" {
		t.Errorf("settings %+v", good)
	}
	def, err := webhooks.ParseSettings([]byte(`{"endpoints":[]}`))
	if err != nil || def.Timeout != webhooks.DefaultTimeout || def.MaxAttempts != webhooks.DefaultMaxAttempts {
		t.Errorf("defaults %+v %v", def, err)
	}
	ep := func(id, url, secret, events string) string {
		return fmt.Sprintf(`{"endpoints":[{"id":%q,"url":%q,"secret":%q,"events":%s}]}`, id, url, secret, events)
	}
	for name, c := range map[string]struct{ file, says string }{
		"not JSON":          {`{"endpoints":`, "not valid JSON"},
		"unknown field":     {`{"endpoint":[]}`, `unknown field "endpoint"`},
		"two values":        {`{} {}`, "more than one"},
		"bad timeout":       {`{"timeout":"forever"}`, "timeout"},
		"timeout too long":  {`{"timeout":"2h"}`, "timeout"},
		"attempts":          {`{"max_attempts":99}`, "max_attempts"},
		"ftp":               {ep("a", "ftp://x/y", rawSecret, `["run.failed"]`), `"url"`},
		"relative":          {ep("a", "/hooks", rawSecret, `["run.failed"]`), `"url"`},
		"credentials":       {ep("a", "https://u:p@x/", rawSecret, `["run.failed"]`), "credentials"},
		"no secret":         {ep("a", "https://x/", "", `["run.failed"]`), `"secret" is required`},
		"short secret":      {ep("a", "https://x/", "short-secret", `["run.failed"]`), "12 bytes"},
		"short whsec":       {ep("a", "https://x/", "whsec_c2hvcnQ=", `["run.failed"]`), "5 bytes"},
		"whsec not base64":  {ep("a", "https://x/", "whsec_not base64 at all, not at all!", `["run.failed"]`), "base64"},
		"no events":         {ep("a", "https://x/", rawSecret, `[]`), `"events"`},
		"unknown event":     {ep("a", "https://x/", rawSecret, `["response.chunk"]`), `"response.chunk"`},
		"bad id":            {ep("a b", "https://x/", rawSecret, `["run.failed"]`), `"id"`},
		"secret not string": {`{"endpoints":[{"secret":12}]}`, "must be a JSON string"},
		"duplicate id": {`{"endpoints":[{"id":"a","url":"https://x/","secret":"` + rawSecret + `","events":["run.failed"]},
 {"id":"a","url":"https://y/","secret":"` + rawSecret + `","events":["run.failed"]}]}`, "taken"},
	} {
		_, err := webhooks.ParseSettings([]byte(c.file))
		if err == nil || !strings.Contains(err.Error(), c.says) {
			t.Errorf("%s: error %v, want one saying %s", name, err, c.says)
			continue
		}
		if strings.Contains(err.Error(), rawSecret) || strings.Contains(err.Error(), "short-secret") || strings.Contains(err.Error(), "not base64 at all") {
			t.Errorf("%s: the error quotes the secret: %v", name, err)
		}
	}
}

// FuzzParseSettings: any file parses or is refused, never panics; what
// parses is usable (http(s) URLs, secrets of the right size, known
// events), and no error quotes a secret.
func FuzzParseSettings(f *testing.F) {
	f.Add([]byte(`{"endpoints":[{"id":"ops","url":"https://x/h","secret":"` + rawSecret + `","events":["run.failed"]}]}`))
	f.Add([]byte(`{"timeout":"1s","max_attempts":3,"endpoints":[{"id":"a","url":"http://h:1/","secret":"whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw","events":["approval.required"]}]}`))
	f.Add([]byte(`{"endpoints":[{"secret":"whsec_%%%"}]}`))
	f.Add([]byte(`[]`))
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := webhooks.ParseSettings(data)
		if err != nil {
			var probe struct {
				Endpoints []struct {
					Secret string `json:"secret"`
				} `json:"endpoints"`
			}
			if json.Unmarshal(data, &probe) == nil {
				for _, e := range probe.Endpoints {
					if len(e.Secret) >= 8 && strings.Contains(err.Error(), e.Secret) {
						t.Fatalf("the error quotes the secret %q: %v", e.Secret, err)
					}
				}
			}
			return
		}
		if s.Timeout <= 0 || s.Timeout > webhooks.MaxTimeout || s.MaxAttempts < 1 || s.MaxAttempts > webhooks.MaxAttempts {
			t.Fatalf("settings out of bounds: %+v", s)
		}
		for _, ep := range s.Endpoints {
			if (ep.URL.Scheme != "http" && ep.URL.Scheme != "https") || ep.URL.Host == "" || ep.URL.User != nil || len(ep.Events) == 0 {
				t.Fatalf("endpoint %+v", ep)
			}
		}
	})
}
