package webhooks

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strconv"
	"sync"
	"time"

	"github.com/trellis-ai/trellis/internal/jobs"
	"github.com/trellis-ai/trellis/store"
)

// Config configures a Service. Store is required; every other zero
// field works, as stated.
type Config struct {
	// Store records the deliveries and keeps their log.
	Store store.Webhooks
	// Settings are the endpoints and how they are tried; none sends
	// nothing (and records nothing to send).
	Settings Settings
	// Poll is how often the deliveries not yet handed to the job queue
	// are looked for; 0 means DefaultPoll.
	Poll time.Duration
	// Backoff is the wait before attempt n+1 after attempt n failed;
	// nil means jobs.DefaultBackoff.
	Backoff func(attempt int) time.Duration
	// Client sends the deliveries; nil means one with Settings.Timeout
	// that follows no redirect. A given client should not follow
	// redirects either: a delivery is to the URL configured.
	Client *http.Client
	// Logger receives the service's logs; nil discards.
	Logger *slog.Logger
}

// DefaultPoll is how often deliveries not yet queued are looked for.
const DefaultPoll = time.Second

// clientErrorAttempts is how many times a delivery that the endpoint
// refuses (a 3xx, or a 4xx other than 408 and 429) is tried before it
// fails: a refusal seldom passes, but a deploy or a secret's rotation
// on the receiver's side may be brief.
const clientErrorAttempts = 3

// Service delivers events to the operator's endpoints: a job per
// delivery, on the durable queue, with backoff; and it serves the
// delivery log. Build it with New, then Start it.
type Service struct {
	cfg       Config
	st        store.Webhooks
	endpoints map[string]Endpoint
	client    *http.Client
	log       *slog.Logger
	queue     *jobs.Queue // set by Start
	wake      chan struct{}
	wg        sync.WaitGroup
}

// deliverJob is one delivery to make. It holds the delivery's id only:
// its event, its endpoint's URL and secret are read when it runs.
type deliverJob struct {
	Delivery string `json:"delivery"`
}

func (deliverJob) Kind() string { return "webhook_delivery" }

// New returns a Service and registers its jobs with ws.
func New(cfg Config, ws *jobs.Workers) (*Service, error) {
	if cfg.Store == nil {
		return nil, errors.New("webhooks: a store is required")
	}
	if cfg.Settings.Timeout <= 0 {
		cfg.Settings.Timeout = DefaultTimeout
	}
	if cfg.Settings.MaxAttempts <= 0 {
		cfg.Settings.MaxAttempts = DefaultMaxAttempts
	}
	if cfg.Poll <= 0 {
		cfg.Poll = DefaultPoll
	}
	if cfg.Backoff == nil {
		cfg.Backoff = jobs.DefaultBackoff
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	s := &Service{cfg: cfg, st: cfg.Store, endpoints: map[string]Endpoint{}, client: cfg.Client, log: cfg.Logger,
		wake: make(chan struct{}, 1)}
	for _, ep := range cfg.Settings.Endpoints {
		s.endpoints[ep.ID] = ep
	}
	if s.client == nil {
		s.client = &http.Client{
			Timeout:       cfg.Settings.Timeout,
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		}
	}
	jobs.Handle(ws, s.deliver, jobs.HandleOptions{Timeout: cfg.Settings.JobTimeout(), Backoff: cfg.Backoff})
	return s, nil
}

// Start records the endpoints' routes, so that events stored from now on
// are recorded for the endpoints configured (none: for none), and, with
// endpoints, hands the deliveries to queue until ctx ends; Wait waits
// for that. Every process sharing a database must be given the same
// endpoints: the last to start sets the routes for all.
func (s *Service) Start(ctx context.Context, queue *jobs.Queue) error {
	var routes []store.WebhookRoute
	for _, ep := range s.cfg.Settings.Endpoints {
		routes = append(routes, store.WebhookRoute{Endpoint: ep.ID, Types: ep.Events})
	}
	if err := s.st.SetWebhookRoutes(ctx, routes); err != nil {
		return fmt.Errorf("webhooks: %w", err)
	}
	if len(routes) == 0 {
		return nil
	}
	s.queue = queue
	s.wg.Go(func() { s.handOver(ctx) })
	return nil
}

// Wait waits until the loop Start began has ended.
func (s *Service) Wait() { s.wg.Wait() }

// handOver enqueues a job for each delivery not yet queued, every Poll
// and when woken, until ctx ends. A delivery enqueued but not marked
// (the process died in between) is enqueued again: the queue keeps one
// unfinished job per delivery, and a job finds a delivery made done.
func (s *Service) handOver(ctx context.Context) {
	t := time.NewTicker(s.cfg.Poll)
	defer t.Stop()
	for {
		if err := s.enqueue(ctx); err != nil && ctx.Err() == nil {
			s.log.LogAttrs(ctx, slog.LevelWarn, "webhooks: deliveries not queued yet", slog.Any("error", err))
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-s.wake:
		}
	}
}

// enqueue hands every delivery not yet queued to the queue.
func (s *Service) enqueue(ctx context.Context) error {
	const batch = 100
	for {
		ds, err := s.st.UnqueuedWebhookDeliveries(ctx, batch)
		if err != nil || len(ds) == 0 {
			return err
		}
		ids := make([]string, 0, len(ds))
		for _, d := range ds {
			if _, err := s.queue.Enqueue(ctx, deliverJob{Delivery: d.ID},
				jobs.EnqueueOptions{UniqueUnfinished: true, MaxAttempts: s.cfg.Settings.MaxAttempts}); err != nil {
				return err
			}
			ids = append(ids, d.ID)
		}
		if err := s.st.MarkWebhookQueued(ctx, ids); err != nil {
			return err
		}
		if len(ds) < batch {
			return nil
		}
	}
}

// deliver is one attempt at a delivery.
func (s *Service) deliver(ctx context.Context, j jobs.Job[deliverJob]) error {
	d, err := s.st.GetWebhookDelivery(ctx, j.Args.Delivery)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return nil // its conversation was deleted, or its user erased
	case err != nil:
		return err
	case d.Status != store.WebhookPending:
		return nil // an attempt before a crash made it
	}
	log := s.log.With(slog.String("delivery_id", d.ID), slog.String("endpoint", d.Endpoint),
		slog.String("event_type", d.EventType), slog.String("run_id", d.RunID))
	ep, ok := s.endpoints[d.Endpoint]
	if !ok {
		err := fmt.Errorf("endpoint %q is not configured", d.Endpoint)
		if _, rerr := s.st.RecordWebhookAttempt(ctx, d.ID, store.WebhookAttempt{Error: err.Error(), Outcome: store.WebhookFailed}); rerr != nil {
			return rerr
		}
		log.LogAttrs(ctx, slog.LevelWarn, "webhooks: delivery failed", slog.Any("error", err))
		return jobs.Permanent(err)
	}
	status, sendErr := s.send(ctx, ep, d)
	outcome := s.outcome(status, sendErr, j.Attempt, j.MaxAttempts)
	a := store.WebhookAttempt{Status: status, Outcome: outcome}
	if sendErr != nil {
		a.Error = sendErr.Error()
	}
	if _, err := s.st.RecordWebhookAttempt(ctx, d.ID, a); err != nil && !errors.Is(err, store.ErrConflict) {
		// Sent, perhaps, and not recorded: the next attempt sends again,
		// under the same id, which the receiver dedupes by.
		return err
	}
	switch outcome {
	case store.WebhookDelivered:
		log.LogAttrs(ctx, slog.LevelDebug, "webhooks: delivered", slog.Int("attempt", j.Attempt))
		return nil
	case store.WebhookFailed:
		log.LogAttrs(ctx, slog.LevelWarn, "webhooks: delivery failed", slog.Int("attempts", j.Attempt), slog.Any("error", sendErr))
		return jobs.Permanent(sendErr)
	}
	log.LogAttrs(ctx, slog.LevelDebug, "webhooks: attempt failed; another follows", slog.Int("attempt", j.Attempt), slog.Any("error", sendErr))
	return sendErr
}

// outcome is where a delivery stands after an attempt that answered
// status (0: none) with err.
func (s *Service) outcome(status int, err error, attempt, most int) store.WebhookStatus {
	switch {
	case err == nil:
		return store.WebhookDelivered
	case attempt >= most:
		return store.WebhookFailed
	case status >= 300 && status < 500 && status != http.StatusRequestTimeout && status != http.StatusTooManyRequests &&
		attempt >= clientErrorAttempts:
		return store.WebhookFailed
	}
	return store.WebhookPending
}

// payload is a delivery's body: Standard Webhooks' type, timestamp and
// data, with the event's id beside them.
type payload struct {
	ID        string    `json:"id"`
	Type      string    `json:"type"`
	Timestamp time.Time `json:"timestamp"`
	Data      eventData `json:"data"`
}

type eventData struct {
	UserID         string          `json:"user_id"`
	ConversationID string          `json:"conversation_id"`
	RunID          string          `json:"run_id"`
	Seq            int64           `json:"seq"`
	Event          json.RawMessage `json:"event"`
}

// Body is what a delivery sends: the same bytes on every attempt.
func Body(d store.WebhookDelivery) ([]byte, error) {
	return json.Marshal(payload{ID: d.EventID, Type: d.EventType, Timestamp: d.CreatedAt.UTC(),
		Data: eventData{UserID: d.UserID, ConversationID: d.ConversationID, RunID: d.RunID, Seq: d.Seq, Event: d.Event}})
}

// errAnswer is an attempt the endpoint answered with other than 2xx.
type errAnswer struct{ status int }

func (e errAnswer) Error() string {
	return "the endpoint answered " + strconv.Itoa(e.status) + " " + http.StatusText(e.status)
}

// send makes one attempt at d and returns the status the endpoint
// answered (0 for none) and, unless it was 2xx, why it failed. The
// error never holds the URL (which may hold a token) or the secret.
func (s *Service) send(ctx context.Context, ep Endpoint, d store.WebhookDelivery) (int, error) {
	body, err := Body(d)
	if err != nil {
		return 0, fmt.Errorf("encoding the body: %w", err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, ep.URL.String(), bytes.NewReader(body))
	if err != nil {
		return 0, errors.New("the request could not be made")
	}
	ts := time.Now().Unix()
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "trellis-webhooks")
	req.Header.Set(HeaderID, d.EventID)
	req.Header.Set(HeaderTimestamp, strconv.FormatInt(ts, 10))
	req.Header.Set(HeaderSignature, Sign(ep.Secret, d.EventID, ts, body))
	resp, err := s.client.Do(req)
	if err != nil {
		return 0, transportError(err, s.cfg.Settings.Timeout)
	}
	// Read a little of the answer, so the connection can be reused, and
	// no more: the receiver's body is not ours to keep.
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	_ = resp.Body.Close()
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return resp.StatusCode, errAnswer{resp.StatusCode}
	}
	return resp.StatusCode, nil
}

// transportError is why a request got no answer, without its URL.
func transportError(err error, timeout time.Duration) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		if ue.Timeout() {
			return fmt.Errorf("no answer within %s", timeout)
		}
		err = ue.Err
	}
	return fmt.Errorf("no answer: %w", err)
}

// Deliveries returns a page of the delivery log, newest first.
func (s *Service) Deliveries(ctx context.Context, page store.Page) (store.WebhookDeliveryPage, error) {
	p, err := s.st.ListWebhookDeliveries(ctx, page)
	if err != nil {
		return store.WebhookDeliveryPage{}, fmt.Errorf("webhooks: %w", err)
	}
	return p, nil
}

// Redeliver sends a delivered or failed delivery again, under the same
// webhook-id, with a fresh round of attempts. It returns
// store.ErrNotFound for an unknown delivery and store.ErrConflict for
// one still pending.
func (s *Service) Redeliver(ctx context.Context, id string) (store.WebhookDelivery, error) {
	d, err := s.st.RedeliverWebhook(ctx, id)
	if err != nil {
		return store.WebhookDelivery{}, fmt.Errorf("webhooks: %w", err)
	}
	select {
	case s.wake <- struct{}{}:
	default:
	}
	return d, nil
}
