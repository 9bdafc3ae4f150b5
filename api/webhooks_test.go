package api_test

import (
	"net/http"
	"testing"

	"github.com/trellis-ai/trellis/api/apitest"
	"github.com/trellis-ai/trellis/events"
	"github.com/trellis-ai/trellis/internal/jobs"
	"github.com/trellis-ai/trellis/store"
	"github.com/trellis-ai/trellis/webhooks"
)

type deliveryPage struct {
	Deliveries []struct {
		ID, Endpoint, Status string
		EventID              string `json:"event_id"`
		EventType            string `json:"event_type"`
		UserID               string `json:"user_id"`
		ConversationID       string `json:"conversation_id"`
		RunID                string `json:"run_id"`
		Attempts             int
		CreatedAt            string `json:"created_at"`
	}
	NextCursor string `json:"next_cursor"`
}

// The delivery log is the operators': they page through it and
// redeliver; a pending delivery cannot be redelivered, an unknown one is
// 404, and a user who is no operator gets 403; on both backends.
func TestWebhookDeliveries(t *testing.T) {
	for _, b := range backends {
		t.Run(string(b), func(t *testing.T) {
			var st store.Webhooks
			e := newEnv(t, envOptions{backend: b, configure: func(c *apitest.Config) {
				st = c.API.Store.(store.Webhooks)
				svc, err := webhooks.New(webhooks.Config{Store: st}, jobs.NewWorkers())
				if err != nil {
					t.Fatal(err)
				}
				c.API.Webhooks = svc
				c.API.Admins = []string{"bob"}
			}})
			if err := st.SetWebhookRoutes(t.Context(), []store.WebhookRoute{{Endpoint: "ops", Types: []string{events.TypeRunCompleted}}}); err != nil {
				t.Fatal(err)
			}
			for range 2 {
				if status, body := e.do(http.MethodPost, "/api/v1/chat/sync", map[string]any{"message": "hello"}); status != http.StatusOK {
					t.Fatalf("chat: %d %s", status, body)
				}
			}

			status, body := e.do(http.MethodGet, "/api/v1/webhooks/deliveries", nil)
			wantError(t, status, body, http.StatusForbidden)
			status, body = e.do(http.MethodPost, "/api/v1/webhooks/deliveries/x/redeliver", nil)
			wantError(t, status, body, http.StatusForbidden)

			status, body = e.doAs(bobKey, http.MethodGet, "/api/v1/webhooks/deliveries?limit=1", nil)
			if status != http.StatusOK {
				t.Fatalf("%d %s", status, body)
			}
			first := jsonOf[deliveryPage](t, body)
			if len(first.Deliveries) != 1 || first.NextCursor == "" {
				t.Fatalf("first page %s", body)
			}
			d := first.Deliveries[0]
			if d.Endpoint != "ops" || d.EventType != "run.completed" || d.UserID != "alice" || d.Status != "pending" || d.Attempts != 0 ||
				d.EventID == "" || d.ConversationID == "" || d.RunID == "" || d.CreatedAt == "" {
				t.Errorf("delivery %s", body)
			}
			status, body = e.doAs(bobKey, http.MethodGet, "/api/v1/webhooks/deliveries?limit=1&cursor="+first.NextCursor, nil)
			if second := jsonOf[deliveryPage](t, body); status != http.StatusOK || len(second.Deliveries) != 1 ||
				second.Deliveries[0].ID == d.ID || second.NextCursor != "" {
				t.Errorf("second page: %d %s", status, body)
			}
			status, body = e.doAs(bobKey, http.MethodGet, "/api/v1/webhooks/deliveries?cursor=nonsense", nil)
			wantError(t, status, body, http.StatusBadRequest)
			status, body = e.doAs(bobKey, http.MethodGet, "/api/v1/webhooks/deliveries?limit=-1", nil)
			wantError(t, status, body, http.StatusBadRequest)

			status, body = e.doAs(bobKey, http.MethodPost, "/api/v1/webhooks/deliveries/"+d.ID+"/redeliver", nil)
			wantError(t, status, body, http.StatusConflict)
			if code := jsonOf[struct{ Error struct{ Code string } }](t, body).Error.Code; code != "delivery_pending" {
				t.Errorf("code %q, want delivery_pending", code)
			}
			status, body = e.doAs(bobKey, http.MethodPost, "/api/v1/webhooks/deliveries/nope/redeliver", nil)
			wantError(t, status, body, http.StatusNotFound)

			if _, err := st.RecordWebhookAttempt(t.Context(), d.ID, store.WebhookAttempt{Status: 200, Outcome: store.WebhookDelivered}); err != nil {
				t.Fatal(err)
			}
			status, body = e.doAs(bobKey, http.MethodPost, "/api/v1/webhooks/deliveries/"+d.ID+"/redeliver", nil)
			if again := jsonOf[struct{ ID, Status string }](t, body); status != http.StatusAccepted || again.ID != d.ID || again.Status != "pending" {
				t.Errorf("redeliver: %d %s", status, body)
			}
		})
	}
}

// Without a webhooks service the endpoints are not there.
func TestWebhookDeliveriesOff(t *testing.T) {
	e := newEnv(t, envOptions{local: true})
	status, body := e.do(http.MethodGet, "/api/v1/webhooks/deliveries", nil)
	wantError(t, status, body, http.StatusNotFound)
}
