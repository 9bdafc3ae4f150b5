package sqlstore

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/trellis-ai/trellis/internal/ids"
	"github.com/trellis-ai/trellis/store"
	"github.com/trellis-ai/trellis/store/internal/storeutil"
)

var _ store.Webhooks = (*Store)(nil)

// hasWebhookType reports whether an event of nes may be delivered to a
// webhook: then its append records the deliveries in its transaction.
func hasWebhookType(nes []store.NewEvent) bool {
	return slices.ContainsFunc(nes, func(e store.NewEvent) bool { return store.WebhookType(e.Type) })
}

// recordDeliveries records, with q, the transaction that stores evs (as
// numbered), a pending delivery of each event to each endpoint routed
// for its type.
func (s *Store) recordDeliveries(ctx context.Context, q Querier, evs []store.Event) error {
	for _, e := range evs {
		if !store.WebhookType(e.Type) {
			continue
		}
		rows, err := q.Query(ctx, `SELECT endpoint FROM webhook_routes WHERE event_type = ? ORDER BY endpoint`, e.Type)
		if err != nil {
			return err
		}
		endpoints, _, err := CollectBudget(rows, scanString, func(string) int { return 0 })
		if err != nil {
			return err
		}
		now := s.db.Time(e.CreatedAt)
		for _, ep := range endpoints {
			if _, err := q.Exec(ctx, `INSERT INTO webhook_deliveries (id, endpoint, run_id, seq, event_type, status, created_at, updated_at)
VALUES (?, ?, ?, ?, ?, 'pending', ?, ?)`, ids.New(), ep, e.RunID, e.Seq, e.Type, now, now); err != nil {
				return fmt.Errorf("record the delivery of %s to %s: %w", e.Type, ep, err)
			}
		}
	}
	return nil
}

// SetWebhookRoutes implements store.Webhooks.
func (s *Store) SetWebhookRoutes(ctx context.Context, routes []store.WebhookRoute) error {
	for _, r := range routes {
		if err := r.Validate(); err != nil {
			return s.errorf("set webhook routes: %w", err)
		}
	}
	err := s.db.Tx(ctx, func(ctx context.Context, q Querier) error {
		if _, err := q.Exec(ctx, `DELETE FROM webhook_routes`); err != nil {
			return err
		}
		for _, r := range routes {
			for _, t := range r.Types {
				if _, err := q.Exec(ctx, `INSERT INTO webhook_routes (endpoint, event_type) VALUES (?, ?) ON CONFLICT DO NOTHING`,
					r.Endpoint, t); err != nil {
					return err
				}
			}
		}
		return nil
	})
	if err != nil {
		return s.errorf("set webhook routes: %w", err)
	}
	return nil
}

// deliveryCols are read by scanDelivery; d is the delivery, r its run.
const deliveryCols = `d.id, d.endpoint, d.run_id, d.seq, d.event_type, r.user_id, r.conversation_id, d.status, d.attempts,
    d.last_status, d.last_error, d.created_at, d.updated_at, d.delivered_at`

// deliveriesFrom is the FROM of every read of deliveries.
const deliveriesFrom = ` FROM webhook_deliveries d JOIN runs r ON r.id = d.run_id`

func scanDelivery(row Row) (store.WebhookDelivery, error) {
	var (
		d                           store.WebhookDelivery
		created, updated, delivered dbTime
	)
	err := row.Scan(&d.ID, &d.Endpoint, &d.RunID, &d.Seq, &d.EventType, &d.UserID, &d.ConversationID, &d.Status, &d.Attempts,
		&d.LastStatus, &d.LastError, &created, &updated, &delivered)
	if err != nil {
		return d, err
	}
	d.EventID = store.WebhookEventID(d.RunID, d.Seq)
	d.CreatedAt, d.UpdatedAt, d.DeliveredAt = created.t, updated.t, delivered.ptr()
	return d, nil
}

// deliveryBytes is a delivery's size in a page (see store.PageBytes).
func deliveryBytes(d store.WebhookDelivery) int {
	return len(d.ID) + len(d.Endpoint) + len(d.RunID) + len(d.EventType) + len(d.UserID) + len(d.ConversationID) + len(d.LastError)
}

// UnqueuedWebhookDeliveries implements store.Webhooks.
func (s *Store) UnqueuedWebhookDeliveries(ctx context.Context, limit int) ([]store.WebhookDelivery, error) {
	size, err := store.Page{Limit: limit}.Size()
	if err != nil {
		return nil, s.errorf("unqueued webhook deliveries: %w", err)
	}
	rows, err := s.db.Query(ctx, `SELECT `+deliveryCols+deliveriesFrom+`
WHERE d.status = 'pending' AND NOT d.queued ORDER BY d.created_at, d.id LIMIT ?`, size)
	if err != nil {
		return nil, s.errorf("unqueued webhook deliveries: %w", err)
	}
	out, _, err := CollectBudget(rows, scanDelivery, deliveryBytes)
	if err != nil {
		return nil, s.errorf("unqueued webhook deliveries: %w", err)
	}
	return out, nil
}

// MarkWebhookQueued implements store.Webhooks.
func (s *Store) MarkWebhookQueued(ctx context.Context, deliveries []string) error {
	err := s.db.Tx(ctx, func(ctx context.Context, q Querier) error {
		for _, id := range deliveries {
			if _, err := q.Exec(ctx, `UPDATE webhook_deliveries SET queued = true WHERE id = ?`, id); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return s.errorf("mark %d webhook deliveries queued: %w", len(deliveries), err)
	}
	return nil
}

// GetWebhookDelivery implements store.Webhooks.
func (s *Store) GetWebhookDelivery(ctx context.Context, id string) (store.WebhookDelivery, error) {
	if err := storeutil.CheckIDs(id); err != nil {
		return store.WebhookDelivery{}, s.errorf("webhook delivery: %w", err)
	}
	var data string
	d, err := scanDelivery(firstCol{s.db.QueryRow(ctx, `SELECT e.data, `+deliveryCols+deliveriesFrom+`
JOIN events e ON e.run_id = d.run_id AND e.seq = d.seq WHERE d.id = ?`, id), &data})
	if noRows(err) {
		err = store.ErrNotFound
	}
	if err != nil {
		return store.WebhookDelivery{}, s.errorf("webhook delivery %s: %w", id, err)
	}
	// The delivery's event ends its row (see EventSep).
	d.Event = []byte(data[strings.LastIndex(data, EventSep)+1:])
	return d, nil
}

// RecordWebhookAttempt implements store.Webhooks.
func (s *Store) RecordWebhookAttempt(ctx context.Context, id string, a store.WebhookAttempt) (store.WebhookDelivery, error) {
	if !slices.Contains([]store.WebhookStatus{store.WebhookPending, store.WebhookDelivered, store.WebhookFailed}, a.Outcome) {
		return store.WebhookDelivery{}, s.errorf("record webhook attempt: %w: unknown outcome %q", store.ErrInvalid, a.Outcome)
	}
	if !store.ValidText(a.Error) {
		a.Error = "the error is not valid UTF-8 text"
	}
	if err := storeutil.CheckIDs(id); err != nil {
		return store.WebhookDelivery{}, s.errorf("record webhook attempt: %w", err)
	}
	now := storeutil.Now()
	var delivered any
	if a.Outcome == store.WebhookDelivered {
		delivered = s.db.Time(now)
	}
	var d store.WebhookDelivery
	err := s.db.Tx(ctx, func(ctx context.Context, q Querier) error {
		n, err := q.Exec(ctx, `UPDATE webhook_deliveries SET attempts = attempts + 1, last_status = ?, last_error = ?, status = ?,
    updated_at = ?, delivered_at = ? WHERE id = ? AND status = 'pending'`, a.Status, a.Error, string(a.Outcome), s.db.Time(now), delivered, id)
		d, err = updatedDelivery(ctx, q, id, n, err)
		return err
	})
	if err != nil {
		return store.WebhookDelivery{}, s.errorf("record an attempt at webhook delivery %s: %w", id, err)
	}
	return d, nil
}

// updatedDelivery reads delivery id after a conditional update of it
// that changed n rows or failed with err: ErrNotFound when there is no
// such delivery, ErrConflict when its status kept the update out.
func updatedDelivery(ctx context.Context, q Querier, id string, n int64, err error) (store.WebhookDelivery, error) {
	if err != nil {
		return store.WebhookDelivery{}, err
	}
	d, err := scanDelivery(q.QueryRow(ctx, `SELECT `+deliveryCols+deliveriesFrom+` WHERE d.id = ?`, id))
	switch {
	case noRows(err):
		return d, store.ErrNotFound
	case err == nil && n == 0:
		return d, fmt.Errorf("%w: the delivery is %s", store.ErrConflict, d.Status)
	}
	return d, err
}

// ListWebhookDeliveries implements store.Webhooks.
func (s *Store) ListWebhookDeliveries(ctx context.Context, page store.Page) (store.WebhookDeliveryPage, error) {
	items, next, err := readPage(ctx, s, s.db, keyed{sel: `SELECT ` + deliveryCols + deliveriesFrom, alias: "d", where: `true`},
		page, scanDelivery,
		func(d store.WebhookDelivery) storeutil.Cursor {
			return storeutil.Cursor{CreatedAt: d.CreatedAt, ID: d.ID}
		}, deliveryBytes)
	if err != nil {
		return store.WebhookDeliveryPage{}, s.errorf("list webhook deliveries: %w", err)
	}
	return store.WebhookDeliveryPage{Deliveries: items, NextCursor: next}, nil
}

// RedeliverWebhook implements store.Webhooks.
func (s *Store) RedeliverWebhook(ctx context.Context, id string) (store.WebhookDelivery, error) {
	if err := storeutil.CheckIDs(id); err != nil {
		return store.WebhookDelivery{}, s.errorf("redeliver webhook: %w", err)
	}
	var d store.WebhookDelivery
	err := s.db.Tx(ctx, func(ctx context.Context, q Querier) error {
		n, err := q.Exec(ctx, `UPDATE webhook_deliveries SET status = 'pending', queued = false, delivered_at = NULL, updated_at = ?
WHERE id = ? AND status <> 'pending'`, s.db.Time(storeutil.Now()), id)
		d, err = updatedDelivery(ctx, q, id, n, err)
		return err
	})
	if err != nil {
		return store.WebhookDelivery{}, s.errorf("redeliver webhook %s: %w", id, err)
	}
	return d, nil
}
