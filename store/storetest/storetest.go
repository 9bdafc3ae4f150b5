package storetest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/trellis-ai/trellis/events"
	"github.com/trellis-ai/trellis/internal/testcheck"

	"github.com/trellis-ai/trellis/store"
)

// Record is a store.Store with every capability of the store package,
// as both backends keep it: one suite checks all of it, and a case may
// use any part (erasure reaches documents and memories, sessions and
// files go with their user).
type Record interface {
	store.Store
	store.Documents
	store.Memories
	store.Users
	store.Keys
	store.Sessions
	store.Webhooks
	store.Workspaces
}

// Run checks that stores made by newStore behave as the store package
// says. newStore must return an empty store not shared with other calls,
// and register its own cleanup with t.Cleanup. Subtests run in parallel.
func Run(t *testing.T, newStore func(t *testing.T) Record) {
	testcheck.RunCases(t, newStore, testcheck.Cases[Record]{
		{"Ping", testPing},
		{"ConversationRoundTrip", testConversationRoundTrip},
		{"ConversationGivenID", testConversationGivenID},
		{"ConversationMetadata", testConversationMetadata},
		{"ConversationTitles", testConversationTitles},
		{"Pagination", testPagination},
		{"IdleConversations", testIdleConversations},
		{"PaginationStableUnderWrites", testPaginationStable},
		{"DeleteCascades", testDeleteCascades},
		{"BeginDelete", testBeginDelete},
		{"BeginDeleteRaces", testBeginDeleteRaces},
		{"Messages", testMessages},
		{"RunLifecycle", testRunLifecycle},
		{"ActiveUsers", testActiveUsers},
		{"RunInput", testRunInput},
		{"ActiveRunRule", testActiveRunRule},
		{"OneActiveRunConcurrent", testOneActiveRunConcurrent},
		{"EndRunRacesStart", testEndRunRacesStart},
		{"ResumeRespectsActiveRun", testResumeRespectsActiveRun},
		{"Supersede", testSupersede},
		{"SupersedeRefused", testSupersedeRefused},
		{"Branches", testBranches},
		{"SetBranch", testSetBranch},
		{"SetBranchRefused", testSetBranchRefused},
		{"ListRuns", testListRuns},
		{"ListRunsPages", testListRunsPages},
		{"ListRunsLimits", testListRunsLimits},
		{"PagesBoundedByBytes", testPagesBoundedByBytes},
		{"PendingBoundedByBytes", testPendingBoundedByBytes},
		{"EventsVerbatim", testEventsVerbatim},
		{"EventsAfter", testEventsAfter},
		{"EventsAfterLimits", testEventsAfterLimits},
		{"EventsInBatches", testEventsInBatches},
		{"EventSeqConcurrent", testEventSeqConcurrent},
		{"AppendEvents", testAppendEvents},
		{"Fencing", testFencing},
		{"EndRun", testEndRun},
		{"EventMessages", testEventMessages},
		{"CompactEvents", testCompactEvents},
		{"Approvals", testApprovals},
		{"ApprovalResolveConcurrent", testApprovalResolveConcurrent},
		{"ApprovalDeadlines", testApprovalDeadlines},
		{"Elicitations", testElicitations},
		{"ElicitationResolveConcurrent", testElicitationResolveConcurrent},
		{"ElicitationDeadlines", testElicitationDeadlines},
		{"ClarificationAndCallDeadlines", testClarificationAndCallDeadlines},
		{"FinalRunExpiresPending", testFinalRunExpiresPending},
		{"Clarifications", testClarifications},
		{"ToolCalls", testToolCalls},
		{"UncertainCalls", testUncertainCalls},
		{"OtherUsersIDs", testOtherUsersIDs},
		{"UnknownIDs", testUnknownIDs},
		{"InvalidInputChangesNothing", testInvalidInput},
		{"UnstorableIDsNameNothing", testUnstorableIDs},
		{"UnstorableTextIsInvalid", testUnstorableText},
		{"JSONEscapesKept", testJSONEscapesKept},
		{"StartRunInNewConversation", testStartRunInNewConversation},
		{"CanceledContext", testCanceledContext},
		{"Queue", testQueue},
		{"QueueStartConcurrent", testQueueStartConcurrent},
		{"Usage", testUsage},

		// Documents' and memories' cases are named under their part, as
		// "Lifecycle" or "Search" alone would be either's.
		{"Documents/Lifecycle", testDocumentLifecycle},
		{"Documents/InNewConversation", testDocumentInNewConversation},
		{"Documents/LimitPerConversation", testDocumentLimit},
		{"Documents/LimitConcurrent", testDocumentLimitConcurrent},
		{"Documents/OtherUsersIDs", testDocumentOtherUsers},
		{"Documents/Search", testSearchChunks},
		{"Documents/SearchScope", testSearchScope},
		{"Documents/PutChunksAgain", testPutChunksAgain},
		{"Documents/DeleteCascades", testDocumentDeleteCascades},
		{"Documents/RefusedWhileDeleting", testDocumentRefusedWhileDeleting},
		{"Documents/InvalidChangesNothing", testDocumentInvalid},
		{"Documents/BoundedByBytes", testDocumentsBoundedByBytes},
		{"Documents/StrandedUploads", testStrandedUploads},

		{"Memories/Lifecycle", testMemoryLifecycle},
		{"Memories/Pages", testMemoryPages},
		{"Memories/OtherUsers", testMemoryOtherUsers},
		{"Memories/Search", testMemorySearch},
		{"Memories/Touch", testMemoryTouch},
		{"Memories/TouchConcurrent", testMemoryTouchConcurrent},
		{"Memories/Prune", testMemoryPrune},
		{"Memories/Profile", testProfile},
		{"Memories/ProfileConcurrent", testProfileConcurrent},
		{"Memories/ToolStats", testToolStats},
		{"Memories/Invalid", testMemoryInvalid},
		{"Memories/UnlearnedTurns", testUnlearnedTurns},
		{"Memories/Learn", testLearn},
		{"Memories/LearnConcurrent", testLearnConcurrent},

		{"EraseUser", testEraseUser},
		{"EraseInvalid", testEraseInvalid},
		{"ErasingRefusesWrites", testErasingRefusesWrites},

		{"KeyLifecycle", testKeyLifecycle},
		{"KeyList", testKeyList},
		{"KeyInvalid", testKeyInvalid},

		{"SessionLifecycle", testSessionLifecycle},
		{"SessionExpiry", testSessionExpiry},
		{"SessionInvalid", testSessionInvalid},
		{"SessionErased", testSessionErased},

		{"WebhookDeliveriesRecorded", testWebhookDeliveriesRecorded},
		{"WebhookRoutesInvalid", testWebhookRoutesInvalid},
		{"WebhookAttempts", testWebhookAttempts},
		{"WebhookDeliveriesPages", testWebhookDeliveriesPages},
		{"WebhookDeliveriesGoWithTheirEvents", testWebhookDeliveriesDeleted},
		{"CompactionKeepsEventsToDeliver", testCompactionKeepsEventsToDeliver},
		{"DeliveryInBatch", testDeliveryInBatch},

		{"Projects", testProjects},
		{"FileVersions", testFileVersions},
		{"FileList", testFileList},
		{"FileConflicts", testFileConflicts},
		{"FileConcurrentWrites", testFileConcurrentWrites},
		{"FileWriteDeleteRace", testFileWriteDeleteRace},
		{"FileQuota", testFileQuota},
		{"FileInvalid", testFileInvalid},
		{"FilesGoWithConversation", testFilesGoWithConversation},
		{"FileWriteConversationDeleteRace", testFileWriteConversationDeleteRace},
		{"FilesErased", testFilesErased},
	})
}

const (
	alice = "alice"
	bob   = "bob"
)

// must is testcheck.Must, short for the many calls of the suite.
func must[T any](v T, err error) func(t *testing.T) T { return testcheck.Must(v, err) }

func wantErr(t *testing.T, what string, err, want error) {
	t.Helper()
	testcheck.WantErr(t, what, err, want)
}

// wantErrs checks each named error, in name order.
func wantErrs(t *testing.T, suffix string, errs map[string]error, want error) {
	t.Helper()
	for _, name := range slices.Sorted(maps.Keys(errs)) {
		wantErr(t, name+suffix, errs[name], want)
	}
}

func newConversation(t *testing.T, s store.Store, user string) store.Conversation {
	t.Helper()
	return must(s.CreateConversation(t.Context(), store.NewConversation{UserID: user, Title: "title of " + user}))(t)
}

func startRun(t *testing.T, s store.Store, c store.Conversation, msg string) store.Run {
	t.Helper()
	return must(s.StartRun(t.Context(), store.NewRun{UserID: c.UserID, ConversationID: c.ID, UserMessage: msg,
		RequestID: "req-" + msg, Owner: "proc-1", CheckpointID: "cp-before-" + msg}))(t)
}

func finish(t *testing.T, s store.Store, runID string, status store.RunStatus, reason events.PendingKind) store.Run {
	t.Helper()
	return must(s.FinishRun(t.Context(), runID, store.RunEnd{Status: status, Reason: reason}))(t)
}

// appendEvent appends an event as the service would build it.
func appendEvent(t *testing.T, s store.Store, r store.Run, typ string) store.Event {
	t.Helper()
	data := fmt.Sprintf(`{"type":%q,"run_id":%q,"conversation_id":%q,"ts":"2026-11-03T14:05:06Z"}`, typ, r.ID, r.ConversationID)
	return must(s.AppendEvent(t.Context(), store.NewEvent{RunID: r.ID, Type: typ, Data: json.RawMessage(data)}))(t)
}

func newApproval(t *testing.T, s store.Store, r store.Run, tool string) store.HumanRequest {
	t.Helper()
	return must(s.CreateHumanRequest(t.Context(), store.NewHumanRequest{RunID: r.ID, Kind: events.PendingApproval, Approval: store.Approval{ToolCallID: "call-" + tool, Tool: tool, Args: json.RawMessage(`{"path":"/tmp/x","n":1}`), Revision: 0}}))(t)
}

func newElicitation(t *testing.T, s store.Store, r store.Run, msg string) store.HumanRequest {
	t.Helper()
	return must(s.CreateHumanRequest(t.Context(), store.NewHumanRequest{RunID: r.ID, Kind: events.PendingElicitation, Elicitation: store.Elicitation{Source: "mcp:files", Message: msg, Schema: json.RawMessage(`{"type":"object","properties":{"name":{"type":"string"}}}`)}}))(t)
}

// snapshot is everything a user can read about one conversation, so a
// test can show that a call changed nothing.
type snapshot struct {
	Conversation store.Conversation
	Runs         []store.RunWithEvents
	Messages     []store.Message
	Approvals    []store.HumanRequest
	Elicitations []store.HumanRequest
}

func take(t *testing.T, s store.Store, user, conversationID string) snapshot {
	t.Helper()
	ctx := t.Context()
	snap := snapshot{
		Conversation: must(s.GetConversation(ctx, user, conversationID))(t),
	}
	snap.Runs, snap.Messages = allRuns(t, s, user, conversationID)
	// Every approval and elicitation, resolved or not.
	for _, r := range snap.Runs {
		for _, e := range r.Events {
			var ids struct {
				Approval    string `json:"approval_id"`
				Elicitation string `json:"elicitation_id"`
			}
			if err := json.Unmarshal(e.Data, &ids); err != nil {
				t.Fatalf("event %s/%d data: %v", e.RunID, e.Seq, err)
			}
			if ids.Approval != "" {
				snap.Approvals = append(snap.Approvals, must(s.GetHumanRequest(ctx, events.PendingApproval, user, ids.Approval))(t))
			}
			if ids.Elicitation != "" {
				snap.Elicitations = append(snap.Elicitations, must(s.GetHumanRequest(ctx, events.PendingElicitation, user, ids.Elicitation))(t))
			}
		}
	}
	return snap
}

// allEvents reads the run's events after after, a page of limit at a
// time, checking that no page holds more.
func allEvents(t *testing.T, s store.Store, user, runID string, after int64, limit int) []store.Event {
	t.Helper()
	all := []store.Event{}
	for {
		page := must(s.EventsAfter(t.Context(), user, runID, after, limit))(t)
		if len(page) > limit {
			t.Fatalf("EventsAfter(%d, limit %d) = %d events", after, limit, len(page))
		}
		all = append(all, page...)
		// A page may stop short at store.PageBytes: only an empty one
		// ends the events.
		if len(page) == 0 {
			return all
		}
		after = page[len(page)-1].Seq
	}
}

// allRuns reads every page of the conversation's runs, completes the
// events of each, and returns them with the pages' messages.
func allRuns(t *testing.T, s store.Store, user, conversationID string) ([]store.RunWithEvents, []store.Message) {
	t.Helper()
	runs, msgs := []store.RunWithEvents{}, []store.Message{}
	for q := (store.RunQuery{}); ; {
		page := must(s.ListRuns(t.Context(), user, conversationID, q))(t)
		for _, r := range page.Runs {
			if r.EventsTruncated {
				var after int64
				if len(r.Events) > 0 {
					after = r.Events[len(r.Events)-1].Seq
				}
				r.Events = append(r.Events, allEvents(t, s, user, r.ID, after, store.MaxEventLimit)...)
				r.EventsTruncated = false
			}
			runs = append(runs, r)
		}
		msgs = append(msgs, page.Messages...)
		if page.NextCursor == "" {
			return runs, msgs
		}
		q.Cursor = page.NextCursor
	}
}

// allMessages returns the conversation's messages in run order, read a
// run at a time with RunMessages.
func allMessages(t *testing.T, s store.Store, user, conversationID string) []store.Message {
	t.Helper()
	msgs := []store.Message{}
	runs, _ := allRuns(t, s, user, conversationID)
	for _, r := range runs {
		msgs = append(msgs, must(s.RunMessages(t.Context(), user, r.ID))(t)...)
	}
	return msgs
}

// allPending pages through the user's pending requests of the kind.
func allPending(t *testing.T, s store.Store, kind events.PendingKind, user, conversationID string) []store.HumanRequest {
	t.Helper()
	all := []store.HumanRequest{}
	for p := (store.Page{}); ; {
		page := must(s.PendingHumanRequests(t.Context(), kind, user, conversationID, p))(t)
		all = append(all, page.Requests...)
		if page.NextCursor == "" {
			return all
		}
		p.Cursor = page.NextCursor
	}
}

// allDocuments pages through the conversation's documents.
func allDocuments(t *testing.T, s Record, user, conversationID string) []store.Document {
	t.Helper()
	all := []store.Document{}
	for p := (store.Page{}); ; {
		page := must(s.ListDocuments(t.Context(), user, conversationID, p))(t)
		all = append(all, page.Documents...)
		if page.NextCursor == "" {
			return all
		}
		p.Cursor = page.NextCursor
	}
}

func sameSnapshot(t *testing.T, what string, before, after snapshot) {
	t.Helper()
	if !reflect.DeepEqual(before, after) {
		t.Errorf("%s changed stored state:\nbefore %+v\nafter  %+v", what, before, after)
	}
}

// busy gives alice a conversation with a bit of everything: a completed
// run with events, then a run interrupted on an approval and an
// elicitation, both pending and announced by events (so take finds
// them).
func busy(t *testing.T, s store.Store, user string) (store.Conversation, store.Run, store.HumanRequest, store.HumanRequest) {
	t.Helper()
	ctx := t.Context()
	c := newConversation(t, s, user)
	r1 := startRun(t, s, c, "first")
	appendEvent(t, s, r1, "run.started")
	must(s.AddMessage(ctx, store.NewMessage{RunID: r1.ID, Role: store.RoleAssistant, Content: "answer one"}))(t)
	finish(t, s, r1.ID, store.RunCompleted, "")
	r2 := startRun(t, s, c, "second")
	appendEvent(t, s, r2, "run.started")
	a := newApproval(t, s, r2, "write_file")
	must(s.AppendEvent(ctx, store.NewEvent{RunID: r2.ID, Type: "approval.required",
		Data: json.RawMessage(fmt.Sprintf(`{"type":"approval.required","approval_id":%q}`, a.ID))}))(t)
	e := newElicitation(t, s, r2, "your name?")
	must(s.AppendEvent(ctx, store.NewEvent{RunID: r2.ID, Type: "elicitation.request",
		Data: json.RawMessage(fmt.Sprintf(`{"type":"elicitation.request","elicitation_id":%q}`, e.ID))}))(t)
	r2 = finish(t, s, r2.ID, store.RunInterrupted, events.PendingApproval)
	return c, r2, a, e
}

// utc fails unless ts are all in UTC, to the microsecond.
func utc(t *testing.T, what string, ts ...time.Time) {
	t.Helper()
	for _, v := range ts {
		if v.Location() != time.UTC || v.IsZero() || v.Nanosecond()%1000 != 0 {
			t.Errorf("%s time %v: want a non-zero UTC time to the microsecond", what, v)
		}
	}
}

func testPing(t *testing.T, s Record) {
	if err := s.Ping(t.Context()); err != nil {
		t.Errorf("Ping = %v", err)
	}
}

func testCanceledContext(t *testing.T, s Record) {
	c := newConversation(t, s, alice)
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := s.StartRun(ctx, store.NewRun{UserID: alice, ConversationID: c.ID, UserMessage: "x"}); err == nil {
		t.Error("StartRun with a canceled context succeeded")
	}
	if _, err := s.GetConversation(ctx, alice, c.ID); err == nil {
		t.Error("GetConversation with a canceled context succeeded")
	}
	if _, err := s.LatestRun(t.Context(), alice, c.ID); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("after a canceled StartRun, LatestRun = %v, want ErrNotFound: nothing started", err)
	}
}
