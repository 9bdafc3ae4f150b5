package store

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/trellis-ai/trellis/events"
)

// WebhookTypes are the event types an endpoint may receive: what a
// person not watching the page must be told of.
var WebhookTypes = []string{
	events.TypeApprovalRequired,
	events.TypeApprovalExpired,
	events.TypeRunCompleted,
	events.TypeRunFailed,
	events.TypeToolUncertain,
	events.TypeUncertainCallExpired,
}

// WebhookType reports whether events of type t may be sent to webhooks.
func WebhookType(t string) bool { return slices.Contains(WebhookTypes, t) }

// WebhookRoute sends the events of Types to the endpoint named Endpoint.
type WebhookRoute struct {
	Endpoint string
	Types    []string
}

// Validate reports an ErrInvalid error for a route that cannot be used.
func (r WebhookRoute) Validate() error {
	if strings.TrimSpace(r.Endpoint) == "" {
		return fmt.Errorf("%w: a webhook route needs an endpoint", ErrInvalid)
	}
	for _, t := range r.Types {
		if !WebhookType(t) {
			return fmt.Errorf("%w: endpoint %q: %q is not a webhook event type (%s)", ErrInvalid, r.Endpoint, t, strings.Join(WebhookTypes, ", "))
		}
	}
	return checkText("endpoint", r.Endpoint)
}

// WebhookStatus is where a delivery stands.
type WebhookStatus string

// Webhook statuses.
const (
	// WebhookPending: not delivered yet; attempts go on.
	WebhookPending WebhookStatus = "pending"
	// WebhookDelivered: the endpoint answered 2xx.
	WebhookDelivered WebhookStatus = "delivered"
	// WebhookFailed: the attempts are spent, or the endpoint refused
	// for good; a redelivery starts them again.
	WebhookFailed WebhookStatus = "failed"
)

// WebhookDelivery is one event to be sent to one endpoint, and how its
// attempts went.
type WebhookDelivery struct {
	ID       string `json:"id"`
	Endpoint string `json:"endpoint"`
	// EventID names the event across endpoints and attempts (see
	// WebhookEventID); a receiver deduplicates by it.
	EventID        string        `json:"event_id"`
	EventType      string        `json:"event_type"`
	UserID         string        `json:"user_id"`
	ConversationID string        `json:"conversation_id"`
	RunID          string        `json:"run_id"`
	Seq            int64         `json:"seq"`
	Status         WebhookStatus `json:"status"`
	Attempts       int           `json:"attempts"`
	// LastStatus is the HTTP status of the last attempt's answer; 0
	// when none came (a timeout, a refused connection, no attempt).
	LastStatus  int        `json:"last_status"`
	LastError   string     `json:"last_error,omitempty"`
	CreatedAt   time.Time  `json:"created_at"`
	UpdatedAt   time.Time  `json:"updated_at"`
	DeliveredAt *time.Time `json:"delivered_at,omitempty"`
	// Event is the event's stored data, as the stream sent it; only
	// GetWebhookDelivery reads it.
	Event json.RawMessage `json:"-"`
}

// WebhookEventID is the id of the event numbered seq of run runID as a
// webhook carries it: the same on every attempt and every endpoint.
func WebhookEventID(runID string, seq int64) string { return fmt.Sprintf("evt_%s_%d", runID, seq) }

// WebhookDeliveryPage is one page of ListWebhookDeliveries.
type WebhookDeliveryPage struct {
	Deliveries []WebhookDelivery `json:"deliveries"`
	// NextCursor fetches the next page; "" when this page is the last.
	NextCursor string `json:"next_cursor,omitempty"`
}

// WebhookAttempt is the outcome of one attempt at a delivery.
type WebhookAttempt struct {
	// Status is the HTTP status the endpoint answered; 0 for none.
	Status int
	// Error says why the attempt failed; "" when it succeeded.
	Error string
	// Outcome is the delivery's status after the attempt: delivered,
	// failed (no attempt follows) or pending (one follows).
	Outcome WebhookStatus
}

// Webhooks keeps the deliveries of events to webhook endpoints. Both
// backends implement it beside Store. A delivery is recorded by
// AppendEvent, AppendEvents and EndRun, in the transaction that stores
// its event, for each route of the event's type: an event stored is an
// event to deliver, whatever happens to the process after the commit.
// Deliveries go with their event (a conversation deleted, a user
// erased).
type Webhooks interface {
	// SetWebhookRoutes replaces the routes events are recorded for, in
	// one transaction; deliveries recorded already stay. Returns
	// ErrInvalid for a route that cannot be used.
	SetWebhookRoutes(ctx context.Context, routes []WebhookRoute) error

	// UnqueuedWebhookDeliveries returns up to limit pending deliveries
	// not yet handed to the job queue (MarkWebhookQueued), oldest first.
	UnqueuedWebhookDeliveries(ctx context.Context, limit int) ([]WebhookDelivery, error)
	// MarkWebhookQueued records that jobs deliver the deliveries ids.
	MarkWebhookQueued(ctx context.Context, ids []string) error

	// GetWebhookDelivery returns the delivery with its event's data.
	// Returns ErrNotFound when there is none with that id.
	GetWebhookDelivery(ctx context.Context, id string) (WebhookDelivery, error)
	// RecordWebhookAttempt counts an attempt at a pending delivery and
	// records its outcome. Returns ErrNotFound for an unknown delivery,
	// ErrConflict when it is not pending, ErrInvalid for an unknown
	// outcome.
	RecordWebhookAttempt(ctx context.Context, id string, a WebhookAttempt) (WebhookDelivery, error)
	// ListWebhookDeliveries returns a page of every delivery, newest
	// first. Returns ErrInvalid for a negative limit or a cursor that it
	// did not make.
	ListWebhookDeliveries(ctx context.Context, page Page) (WebhookDeliveryPage, error)
	// RedeliverWebhook makes a delivered or failed delivery pending and
	// unqueued again, keeping its id and attempts. Returns ErrNotFound
	// for an unknown delivery and ErrConflict for a pending one.
	RedeliverWebhook(ctx context.Context, id string) (WebhookDelivery, error)
}
