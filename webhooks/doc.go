// Package webhooks tells the operator's endpoints what a person not
// watching the page must know: an approval asked for (approval.required)
// or expired (approval.expired), a call that may have run and needs a
// decision (tool.uncertain), a run completed or failed (run.completed,
// run.failed). It owns the webhooks file (ParseSettings), the signature
// (Sign) and the Service that delivers and keeps the delivery log.
//
// # Delivery
//
// The record writes what must be delivered: each event of a routed type
// gets a delivery per endpoint, in the transaction that stores the event
// (see store.Webhooks), so nothing stored is forgotten, whatever dies
// after the commit — on SQLite too, where the job queue is a file of its
// own. The Service hands each delivery not yet queued to the durable
// queue (internal/jobs), one job per delivery, and marks it queued; a
// crash in between enqueues it again, and the queue keeps one unfinished
// job per delivery. A job's attempt POSTs the body; a 2xx delivers it,
// anything else is retried with backoff up to Settings.MaxAttempts, and
// a refusal (3xx, or 4xx other than 408 and 429) fails it after three
// attempts. A failed or delivered delivery may be redelivered.
//
// # What is sent
//
// A JSON body (see Body): {"id", "type", "timestamp", "data": {"user_id",
// "conversation_id", "run_id", "seq", "event"}}, event being the event
// as the stream sent it, signed as Standard Webhooks (and Svix) sign:
// headers webhook-id (the event's id, the same on every attempt and
// every endpoint, for the receiver to deduplicate by), webhook-timestamp
// (the attempt's unix time) and webhook-signature ("v1," and the base64
// HMAC-SHA256 of "id.timestamp.body"). An attempt may be repeated after
// a crash, so a receiver sees an event at least once and, deduplicating
// by webhook-id, exactly once.
//
// # Secrets
//
// A Secret prints, logs and encodes as "[redacted]"; errors about a
// secret or a URL never quote them, and an attempt's recorded error
// never holds the URL (which may carry a token).
package webhooks
