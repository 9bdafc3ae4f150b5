package webhooks

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"strconv"
)

// Headers of a delivery, as Standard Webhooks names them.
const (
	HeaderID        = "webhook-id"
	HeaderTimestamp = "webhook-timestamp"
	HeaderSignature = "webhook-signature"
)

// Sign returns the webhook-signature of body sent under id at unix
// time ts: "v1," and the standard base64 of the HMAC-SHA256, keyed with
// the secret, of "id.ts.body" (Standard Webhooks' symmetric signature;
// Svix's too).
func Sign(secret Secret, id string, ts int64, body []byte) string {
	mac := hmac.New(sha256.New, secret.key)
	mac.Write([]byte(id))
	mac.Write([]byte{'.'})
	mac.Write(strconv.AppendInt(nil, ts, 10))
	mac.Write([]byte{'.'})
	mac.Write(body)
	return "v1," + base64.StdEncoding.EncodeToString(mac.Sum(nil))
}
