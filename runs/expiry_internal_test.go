package runs

import (
	"testing"
	"time"

	"github.com/trellis-ai/trellis/events"
	"github.com/trellis-ai/trellis/store"
)

// A request its deadline decided carries its expired event to the tool
// and to the run's stream; one a person answered, or one with no
// deadline, carries none. An approval's is approval.expired, an
// elicitation's elicitation.expired.
func TestExpiredEvents(t *testing.T) {
	at := time.Date(2031, 5, 6, 7, 8, 9, 0, time.UTC)
	declined := store.HumanRequest{ID: "e1", Kind: events.PendingElicitation, Status: store.HumanDeclined, ExpiresAt: &at,
		OnExpiry: events.ExpiryDecline, TimedOut: true}
	resp := responseOf(declined)
	want := events.ElicitationExpired{ElicitationID: "e1", Kind: events.PendingElicitation, Outcome: events.ExpiryDecline, ExpiresAt: at}
	if resp.Action != events.ElicitDecline || resp.Expired == nil || *resp.Expired != want {
		t.Errorf("responseOf a declined-at-the-deadline question = %+v", resp)
	}
	if x, ok := expiredEvent(declined).(*events.ElicitationExpired); !ok || *x != want {
		t.Errorf("expiredEvent of the question = %#v", expiredEvent(declined))
	}

	byUser := declined
	byUser.TimedOut = false
	if resp := responseOf(byUser); resp.Expired != nil || expiredEvent(byUser) != nil {
		t.Errorf("a question the user declined carries an expiry: %+v", resp)
	}

	approval := store.HumanRequest{ID: "a1", Kind: events.PendingApproval, Status: store.HumanExpired, ExpiresAt: &at,
		OnExpiry: events.ExpiryCancel, TimedOut: true}
	if x, ok := expiredEvent(approval).(*events.ApprovalExpired); !ok || x.ApprovalID != "a1" || x.Outcome != events.ExpiryCancel {
		t.Errorf("expiredEvent of the approval = %#v", expiredEvent(approval))
	}
	approval.ExpiresAt = nil
	if x := expiredEvent(approval); x != nil {
		t.Errorf("an approval with no deadline expired: %#v", x)
	}
}

// The ids of what a parked run waits on: an elicitation is named by its
// elicitation id, an approval by its id.
func TestExpiringID(t *testing.T) {
	if got := expiringID(events.Pending{Kind: events.PendingElicitation, ElicitationID: "e1"}); got != "e1" {
		t.Errorf("an elicitation's id = %q", got)
	}
	if got := expiringID(events.Pending{Kind: events.PendingApproval, ID: "a1"}); got != "a1" {
		t.Errorf("an approval's id = %q", got)
	}
}
