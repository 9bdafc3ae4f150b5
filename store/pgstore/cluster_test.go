package pgstore

// These tests are inside the package so that they can reach a Listener's
// backend, to kill it as a dying process would, and shorten its
// heartbeat. Two Stores on two pools over one schema stand for two
// processes.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"go.uber.org/goleak"

	"github.com/trellis-ai/trellis/events"
	"github.com/trellis-ai/trellis/internal/pgtest"
	"github.com/trellis-ai/trellis/store"
)

// waitFor bounds every wait that should end quickly.
const waitFor = 10 * time.Second

// twoProcesses returns two Stores on separate pools over one fresh schema.
func twoProcesses(t *testing.T) (*Store, *Store) {
	t.Helper()
	pool := pgtest.New(t)
	a, err := New(t.Context(), pool)
	if err != nil {
		t.Fatal(err)
	}
	// The config carries the schema's search_path.
	other, err := pgxpool.NewWithConfig(t.Context(), pool.Config())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(other.Close)
	b, err := New(t.Context(), other)
	if err != nil {
		t.Fatal(err)
	}
	return a, b
}

// ownerName makes an owner name of the test's own: locks and channels
// are database-wide, and tests run in parallel.
func ownerName(t *testing.T, who string) string {
	return fmt.Sprintf("%s:%s:%016x", t.Name(), who, rand.Uint64())
}

func listen(t *testing.T, s *Store, owner string) *Listener {
	t.Helper()
	l, err := s.Listen(t.Context(), owner)
	if err != nil {
		t.Fatalf("Listen(%q): %v", owner, err)
	}
	t.Cleanup(func() {
		if err := l.Close(); err != nil {
			t.Errorf("Close listener of %s: %v", owner, err)
		}
	})
	return l
}

// next returns l's next notice, failing the test if none comes soon.
func next(t *testing.T, l *Listener) store.Notice {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), waitFor)
	defer cancel()
	n, err := l.Next(ctx)
	if err != nil {
		t.Fatalf("Next for %s: %v", l.owner, err)
	}
	return n
}

// noNotice checks that l gets nothing for a while.
func noNotice(t *testing.T, l *Listener) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 300*time.Millisecond)
	defer cancel()
	if n, err := l.Next(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Next for %s = %+v, %v; want nothing (DeadlineExceeded)", l.owner, n, err)
	}
}

// startRuns starts n running runs owned by owner, each in a conversation
// of its own.
func startRuns(t *testing.T, s *Store, owner string, n int) []store.Run {
	t.Helper()
	runs := make([]store.Run, n)
	for i := range runs {
		c, err := s.CreateConversation(t.Context(), store.NewConversation{UserID: "u"})
		if err != nil {
			t.Fatal(err)
		}
		runs[i], err = s.StartRun(t.Context(), store.NewRun{UserID: "u", ConversationID: c.ID, UserMessage: "hi", Owner: owner})
		if err != nil {
			t.Fatal(err)
		}
	}
	return runs
}

func runIDs(runs []store.Run) []string {
	out := make([]string, len(runs))
	for i, r := range runs {
		out[i] = r.ID
	}
	slices.Sort(out)
	return out
}

func claim(t *testing.T, s *Store, owner string) []store.Run {
	t.Helper()
	runs, err := s.ClaimOrphans(t.Context(), owner)
	if err != nil {
		t.Fatalf("ClaimOrphans(%s): %v", owner, err)
	}
	if runs == nil {
		t.Fatalf("ClaimOrphans(%s) = nil, want a non-nil slice", owner)
	}
	return runs
}

// wantOwner checks the stored owner of every run.
func wantOwner(t *testing.T, s *Store, runs []store.Run, owner string) {
	t.Helper()
	for _, r := range runs {
		got, err := s.GetRun(t.Context(), r.UserID, r.ID)
		if err != nil {
			t.Fatal(err)
		}
		if got.Owner != owner {
			t.Errorf("run %s: owner %q, want %q", r.ID, got.Owner, owner)
		}
	}
}

func alive(t *testing.T, s *Store, owner string) bool {
	t.Helper()
	ok, err := s.Alive(t.Context(), owner)
	if err != nil {
		t.Fatal(err)
	}
	return ok
}

func TestNoticeReachesItsOwnerOnly(t *testing.T) {
	t.Parallel()
	a, b := twoProcesses(t)
	ownerA, ownerB := ownerName(t, "a"), ownerName(t, "b")
	la, lb := listen(t, a, ownerA), listen(t, b, ownerB)

	sent := []store.Notice{
		{Kind: store.NoticeApproval, Owner: ownerA, RunID: "r1", ConversationID: "c1", ID: "ap1"},
		{Kind: store.NoticeElicitation, Owner: ownerA, RunID: "r2", ConversationID: "c2", ID: "el1"},
		{Kind: store.NoticeElicitationCancel, Owner: ownerA, RunID: "r3", ConversationID: "c3", ID: "el2"},
		{Kind: store.NoticeCancel, Owner: ownerA, RunID: "r4", ConversationID: "c4"},
	}
	// Sent through the other process, as an answer reaching process b
	// for a run of a would be.
	for _, n := range sent {
		if err := b.Notify(t.Context(), n); err != nil {
			t.Fatalf("Notify(%+v): %v", n, err)
		}
	}
	for _, want := range sent {
		if got := next(t, la); got != want {
			t.Errorf("Next = %+v, want %+v", got, want)
		}
	}
	noNotice(t, lb)
	noNotice(t, la)

	// And the other way round.
	want := store.Notice{Kind: store.NoticeCancel, Owner: ownerB, RunID: "r5"}
	if err := a.Notify(t.Context(), want); err != nil {
		t.Fatal(err)
	}
	if got := next(t, lb); got != want {
		t.Errorf("Next = %+v, want %+v", got, want)
	}
	noNotice(t, la)
}

func TestNotifyValidates(t *testing.T) {
	t.Parallel()
	s, _ := twoProcesses(t)
	owner := ownerName(t, "o")
	l := listen(t, s, owner)
	for _, n := range []store.Notice{
		{Kind: store.NoticeCancel, RunID: "r"},
		{Kind: "", Owner: owner, RunID: "r"},
		{Kind: "resume", Owner: owner, RunID: "r"},
		{Kind: store.NoticeCancel, Owner: owner},
		{Kind: store.NoticeApproval, Owner: owner, RunID: "r"},
		{Kind: store.NoticeElicitation, Owner: owner, RunID: "r"},
		{Kind: store.NoticeElicitationCancel, Owner: owner, RunID: "r"},
		{Kind: store.NoticeCancel, Owner: owner, RunID: strings.Repeat("r", maxPayload)},
	} {
		if err := s.Notify(t.Context(), n); !errors.Is(err, store.ErrInvalid) {
			t.Errorf("Notify(%.80v) = %v, want ErrInvalid", n, err)
		}
	}
	noNotice(t, l)

	// Nobody listens as that owner: dropped, not an error.
	if err := s.Notify(t.Context(), store.Notice{Kind: store.NoticeCancel, Owner: ownerName(t, "nobody"), RunID: "r"}); err != nil {
		t.Errorf("Notify to an owner nobody listens as: %v", err)
	}
}

func TestNextSkipsMalformedPayloads(t *testing.T) {
	t.Parallel()
	s, _ := twoProcesses(t)
	owner := ownerName(t, "o")
	l := listen(t, s, owner)
	for _, payload := range []string{
		"not json",
		`{"kind":"approval","owner":"someone else","run_id":"r","id":"a"}`,
		`{"kind":"resume","owner":` + fmt.Sprintf("%q", owner) + `,"run_id":"r"}`,
		`{"kind":"approval","owner":` + fmt.Sprintf("%q", owner) + `,"run_id":"r"}`,
	} {
		if _, err := s.pool.Exec(t.Context(), `SELECT pg_notify($1, $2)`, l.channel, payload); err != nil {
			t.Fatal(err)
		}
	}
	want := store.Notice{Kind: store.NoticeApproval, Owner: owner, RunID: "r", ID: "a"}
	if err := s.Notify(t.Context(), want); err != nil {
		t.Fatal(err)
	}
	if got := next(t, l); got != want {
		t.Errorf("Next = %+v, want %+v after skipping the malformed ones", got, want)
	}
}

func TestChannelName(t *testing.T) {
	t.Parallel()
	s, _ := twoProcesses(t)
	l := listen(t, s, ownerName(t, strings.Repeat("long", 40)))
	if len(l.channel) != len("trellis_")+16 || !strings.HasPrefix(l.channel, "trellis_") {
		t.Errorf("channel %q, want trellis_ and 16 hex digits", l.channel)
	}
}

func TestListenOwnerOnce(t *testing.T) {
	t.Parallel()
	a, b := twoProcesses(t)
	owner := ownerName(t, "o")
	l, err := a.Listen(t.Context(), owner)
	if err != nil {
		t.Fatal(err)
	}
	if !alive(t, b, owner) {
		t.Error("Alive = false while a Listener is open")
	}
	for name, s := range map[string]*Store{"other process": b, "same process": a} {
		if l2, err := s.Listen(t.Context(), owner); !errors.Is(err, store.ErrConflict) {
			if l2 != nil {
				l2.Close()
			}
			t.Errorf("second Listen as %s from the %s = %v, want ErrConflict", owner, name, err)
		}
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if alive(t, b, owner) {
		t.Error("Alive = true after Close")
	}
	// Free again once closed.
	listen(t, b, owner)

	if _, err := a.Listen(t.Context(), ""); !errors.Is(err, store.ErrInvalid) {
		t.Errorf("Listen with no owner = %v, want ErrInvalid", err)
	}
	if alive(t, a, ownerName(t, "never")) {
		t.Error("Alive = true for an owner that never listened")
	}
}

// Locks and channels are database-wide; stores in two schemas must not
// see each other's.
func TestSchemasAreSeparate(t *testing.T) {
	t.Parallel()
	s1, _ := twoProcesses(t)
	s2, _ := twoProcesses(t)
	owner := ownerName(t, "o")
	l1, l2 := listen(t, s1, owner), listen(t, s2, owner)
	want := store.Notice{Kind: store.NoticeCancel, Owner: owner, RunID: "r"}
	if err := s1.Notify(t.Context(), want); err != nil {
		t.Fatal(err)
	}
	if got := next(t, l1); got != want {
		t.Errorf("Next = %+v, want %+v", got, want)
	}
	noNotice(t, l2)
}

func TestClaimOrphansOfClosedListener(t *testing.T) {
	t.Parallel()
	a, b := twoProcesses(t)
	ownerA, ownerB := ownerName(t, "a"), ownerName(t, "b")
	la := listen(t, a, ownerA)
	listen(t, b, ownerB)
	runs := startRuns(t, a, ownerA, 3)

	if got := claim(t, b, ownerB); len(got) != 0 {
		t.Fatalf("claimed %v of a live owner", runIDs(got))
	}
	wantOwner(t, a, runs, ownerA)

	if err := la.Close(); err != nil {
		t.Fatal(err)
	}
	got := claim(t, b, ownerB)
	if !slices.Equal(runIDs(got), runIDs(runs)) {
		t.Fatalf("claimed %v, want %v", runIDs(got), runIDs(runs))
	}
	for _, r := range got {
		if r.Owner != ownerB || r.Status != store.RunRunning {
			t.Errorf("claimed run %s: owner %q status %s, want %q running", r.ID, r.Owner, r.Status, ownerB)
		}
	}
	wantOwner(t, a, runs, ownerB)
	if got := claim(t, b, ownerB); len(got) != 0 {
		t.Errorf("second claim got %v, want none", runIDs(got))
	}
}

// A process killed without Close: its session ends, and with it its lock.
func TestClaimOrphansOfKilledProcess(t *testing.T) {
	t.Parallel()
	a, b := twoProcesses(t)
	ownerA, ownerB := ownerName(t, "a"), ownerName(t, "b")
	la := listen(t, a, ownerA)
	listen(t, b, ownerB)
	runs := startRuns(t, a, ownerA, 2)

	var done bool
	if err := b.pool.QueryRow(t.Context(), `SELECT pg_terminate_backend($1::int, 5000)`,
		int64(la.conn.PgConn().PID())).Scan(&done); err != nil || !done {
		t.Fatalf("pg_terminate_backend = %v, %v", done, err)
	}
	if alive(t, b, ownerA) {
		t.Error("Alive = true for a killed process")
	}
	got := claim(t, b, ownerB)
	if !slices.Equal(runIDs(got), runIDs(runs)) {
		t.Fatalf("claimed %v, want %v", runIDs(got), runIDs(runs))
	}
	wantOwner(t, b, runs, ownerB)

	ctx, cancel := context.WithTimeout(t.Context(), waitFor)
	defer cancel()
	_, err := la.Next(ctx)
	if err == nil || errors.Is(err, context.DeadlineExceeded) || errors.Is(err, net.ErrClosed) {
		t.Fatalf("Next on a killed connection = %v, want a lost-connection error", err)
	}
	if _, again := la.Next(ctx); again != err {
		t.Errorf("Next again = %v, want the same %v", again, err)
	}
	// The lost connection is closed; so is the Listener (its cleanup
	// checks Close returns nil).
}

func TestClaimOrphansLeavesOtherRunsAlone(t *testing.T) {
	t.Parallel()
	a, b := twoProcesses(t)
	dead, ownerB := ownerName(t, "dead"), ownerName(t, "b")
	listen(t, b, ownerB)
	ctx := t.Context()
	runs := startRuns(t, a, dead, 6)
	ends := []store.RunEnd{
		{Status: store.RunInterrupted, Reason: events.PendingApproval},
		{Status: store.RunInterrupted, Reason: events.PendingClarification},
		{Status: store.RunCompleted},
		{Status: store.RunCancelled},
		{Status: store.RunFailed},
	}
	for i, end := range ends {
		if _, err := a.FinishRun(ctx, runs[i].ID, end); err != nil {
			t.Fatal(err)
		}
	}
	// Superseded yet running cannot happen through the Store (a running
	// run cannot be superseded); the claim must not trust that.
	if _, err := a.pool.Exec(ctx, `UPDATE runs SET superseded = true WHERE id = $1`, runs[5].ID); err != nil {
		t.Fatal(err)
	}
	// Superseded and interrupted, the Store's way.
	if _, err := a.StartRun(ctx, store.NewRun{UserID: "u", ConversationID: runs[1].ConversationID, UserMessage: "edit",
		Owner: ownerB, Supersedes: runs[1].ID}); err != nil {
		t.Fatal(err)
	}

	if got := claim(t, b, ownerB); len(got) != 0 {
		t.Errorf("claimed %v; none is running", runIDs(got))
	}
	wantOwner(t, a, runs, dead)
}

func TestClaimOrphansValidates(t *testing.T) {
	t.Parallel()
	s, _ := twoProcesses(t)
	startRuns(t, s, ownerName(t, "dead"), 1)
	if _, err := s.ClaimOrphans(t.Context(), ""); !errors.Is(err, store.ErrInvalid) {
		t.Errorf("ClaimOrphans with no owner = %v, want ErrInvalid", err)
	}
	if _, err := s.ClaimOrphans(t.Context(), ownerName(t, "not-listening")); !errors.Is(err, store.ErrInvalid) {
		t.Errorf("ClaimOrphans as an owner nobody listens as = %v, want ErrInvalid", err)
	}
}

// Two processes claiming at once split the orphans: every run is claimed
// by exactly one, and the store agrees with what each was told.
func TestClaimOrphansConcurrent(t *testing.T) {
	t.Parallel()
	a, b := twoProcesses(t)
	ownerA, ownerB := ownerName(t, "a"), ownerName(t, "b")
	listen(t, a, ownerA)
	listen(t, b, ownerB)
	for round := range 5 {
		var orphans []store.Run
		for i := range 6 {
			orphans = append(orphans, startRuns(t, a, ownerName(t, fmt.Sprintf("dead%d.%d", round, i)), 3)...)
		}
		var (
			wg     sync.WaitGroup
			start  = make(chan struct{})
			got    [2][]store.Run
			errs   [2]error
			owners = [2]string{ownerA, ownerB}
		)
		for i, s := range []*Store{a, b} {
			wg.Go(func() {
				<-start
				got[i], errs[i] = s.ClaimOrphans(t.Context(), owners[i])
			})
		}
		close(start)
		wg.Wait()
		for i, err := range errs {
			if err != nil {
				t.Fatalf("round %d: ClaimOrphans(%s): %v", round, owners[i], err)
			}
		}
		all := append(runIDs(got[0]), runIDs(got[1])...)
		slices.Sort(all)
		if !slices.Equal(all, runIDs(orphans)) {
			t.Fatalf("round %d: claimed %v and %v, want each of %v once", round, runIDs(got[0]), runIDs(got[1]), runIDs(orphans))
		}
		wantOwner(t, a, got[0], ownerA)
		wantOwner(t, a, got[1], ownerB)
		t.Logf("round %d: a claimed %d, b claimed %d", round, len(got[0]), len(got[1]))
	}
}

// Not parallel: goleak compares against the goroutines of this test alone.
func TestNextStopsOnContext(t *testing.T) {
	s, _ := twoProcesses(t)
	owner := ownerName(t, "o")
	l := listen(t, s, owner)
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())

	ctx, cancel := context.WithCancel(t.Context())
	errc := make(chan error, 1)
	go func() {
		_, err := l.Next(ctx)
		errc <- err
	}()
	time.Sleep(100 * time.Millisecond)
	cancel()
	select {
	case err := <-errc:
		if err != context.Canceled {
			t.Fatalf("Next after cancel = %v, want context.Canceled", err)
		}
	case <-time.After(waitFor):
		t.Fatal("Next did not return after its context was cancelled")
	}

	dctx, dcancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
	defer dcancel()
	if _, err := l.Next(dctx); err != context.DeadlineExceeded {
		t.Fatalf("Next past its deadline = %v, want context.DeadlineExceeded", err)
	}

	// Still listening, and still holding the owner.
	want := store.Notice{Kind: store.NoticeCancel, Owner: owner, RunID: "r"}
	if err := s.Notify(t.Context(), want); err != nil {
		t.Fatal(err)
	}
	if got := next(t, l); got != want {
		t.Errorf("Next = %+v, want %+v", got, want)
	}
	if !alive(t, s, owner) {
		t.Error("Alive = false after Next was cancelled")
	}
}

// Heartbeats on an idle connection keep it usable; they only notice when
// it is gone.
func TestNextHeartbeat(t *testing.T) {
	t.Parallel()
	s, _ := twoProcesses(t)
	owner := ownerName(t, "o")
	l := listen(t, s, owner)
	l.heartbeat = 20 * time.Millisecond

	ctx, cancel := context.WithTimeout(t.Context(), 300*time.Millisecond)
	defer cancel()
	if _, err := l.Next(ctx); err != context.DeadlineExceeded {
		t.Fatalf("Next over several heartbeats = %v, want context.DeadlineExceeded", err)
	}
	want := store.Notice{Kind: store.NoticeCancel, Owner: owner, RunID: "r"}
	go func() {
		time.Sleep(100 * time.Millisecond)
		if err := s.Notify(context.Background(), want); err != nil {
			t.Error(err)
		}
	}()
	if got := next(t, l); got != want {
		t.Errorf("Next = %+v, want %+v", got, want)
	}
}

func TestCloseInterruptsNext(t *testing.T) {
	t.Parallel()
	s, _ := twoProcesses(t)
	owner := ownerName(t, "o")
	l, err := s.Listen(t.Context(), owner)
	if err != nil {
		t.Fatal(err)
	}
	errc := make(chan error, 1)
	go func() {
		_, err := l.Next(context.Background())
		errc <- err
	}()
	time.Sleep(100 * time.Millisecond)
	if err := l.Close(); err != nil {
		t.Fatalf("Close while Next waits: %v", err)
	}
	select {
	case err := <-errc:
		if !errors.Is(err, net.ErrClosed) {
			t.Errorf("Next interrupted by Close = %v, want net.ErrClosed", err)
		}
	case <-time.After(waitFor):
		t.Fatal("Next did not return after Close")
	}
	// The lock is free when Close returns, not some time after.
	if alive(t, s, owner) {
		t.Error("Alive = true once Close returned")
	}
	if _, err := l.Next(t.Context()); !errors.Is(err, net.ErrClosed) {
		t.Errorf("Next after Close = %v, want net.ErrClosed", err)
	}
	if err := l.Close(); err != nil {
		t.Errorf("second Close = %v, want nil", err)
	}
}

// kill ends l's session on the server, as a database that goes away (or
// an operator's pg_terminate_backend) does.
func kill(t *testing.T, s *Store, l *Listener) {
	t.Helper()
	var done bool
	if err := s.pool.QueryRow(t.Context(), `SELECT pg_terminate_backend($1::int, 5000)`,
		int64(l.conn.PgConn().PID())).Scan(&done); err != nil || !done {
		t.Fatalf("pg_terminate_backend = %v, %v", done, err)
	}
}

// A Listener whose session was lost takes its owner's lock again with
// Reopen, unless another process holds it meanwhile, and then receives
// notices again; the runs that a peer claimed in between stay the peer's.
func TestReopenAfterLostSession(t *testing.T) {
	t.Parallel()
	a, b := twoProcesses(t)
	ownerA, ownerB := ownerName(t, "a"), ownerName(t, "b")
	la := listen(t, a, ownerA)
	listen(t, b, ownerB)
	if err := la.Reopen(t.Context()); err != nil {
		t.Fatalf("Reopen of a Listener that is not lost = %v, want nil", err)
	}
	claimed := startRuns(t, a, ownerA, 1)

	kill(t, b, la)
	ctx, cancel := context.WithTimeout(t.Context(), waitFor)
	defer cancel()
	if _, err := la.Next(ctx); err == nil || errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Next on a killed connection = %v, want a lost-connection error", err)
	}
	if got := claim(t, b, ownerB); !slices.Equal(runIDs(got), runIDs(claimed)) {
		t.Fatalf("claimed %v, want %v", runIDs(got), runIDs(claimed))
	}

	// While another session holds the owner's lock, Reopen fails.
	hold, err := b.pool.Acquire(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	var locked bool
	if err := hold.QueryRow(t.Context(), `SELECT pg_try_advisory_lock(`+ownerKeySQL("$1")+`)`, ownerA).Scan(&locked); err != nil || !locked {
		t.Fatalf("taking the lost owner's lock: %v %v", locked, err)
	}
	if err := la.Reopen(t.Context()); !errors.Is(err, store.ErrConflict) {
		t.Errorf("Reopen while another session holds the lock = %v, want ErrConflict", err)
	}
	if _, err := hold.Exec(t.Context(), `SELECT pg_advisory_unlock_all()`); err != nil {
		t.Fatal(err)
	}
	hold.Release()

	if err := la.Reopen(t.Context()); err != nil {
		t.Fatalf("Reopen = %v", err)
	}
	if !alive(t, b, ownerA) {
		t.Error("Alive = false after Reopen")
	}
	mine := startRuns(t, a, ownerA, 1)
	if got := claim(t, b, ownerB); len(got) != 0 {
		t.Errorf("a peer claimed %v of a reopened owner", runIDs(got))
	}
	wantOwner(t, b, claimed, ownerB)
	wantOwner(t, b, mine, ownerA)
	want := store.Notice{Kind: store.NoticeCancel, Owner: ownerA, RunID: mine[0].ID}
	if err := b.Notify(t.Context(), want); err != nil {
		t.Fatal(err)
	}
	if got := next(t, la); got != want {
		t.Errorf("Next after Reopen = %+v, want %+v", got, want)
	}
}

func TestReopenAfterClose(t *testing.T) {
	t.Parallel()
	a, b := twoProcesses(t)
	owner := ownerName(t, "o")
	l, err := a.Listen(t.Context(), owner)
	if err != nil {
		t.Fatal(err)
	}
	kill(t, b, l)
	if _, err := l.Next(t.Context()); err == nil {
		t.Fatal("Next on a killed connection = nil")
	}
	if err := l.Close(); err != nil {
		t.Fatalf("Close of a lost Listener = %v", err)
	}
	if err := l.Reopen(t.Context()); !errors.Is(err, net.ErrClosed) {
		t.Errorf("Reopen after Close = %v, want net.ErrClosed", err)
	}
	if alive(t, b, owner) {
		t.Error("Alive = true after Reopen of a closed Listener")
	}
}

// Lost tells the errors of a lost or unreachable database from those that
// would come again.
func TestLost(t *testing.T) {
	t.Parallel()
	s, other := twoProcesses(t)
	conn, err := s.pool.Acquire(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	if _, err := other.pool.Exec(t.Context(), `SELECT pg_terminate_backend($1::int, 5000)`, int64(conn.Conn().PgConn().PID())); err != nil {
		t.Fatal(err)
	}
	_, terminated := conn.Exec(t.Context(), "SELECT 1")
	_, closed := conn.Exec(t.Context(), "SELECT 1")

	unreachable, err := pgxpool.New(t.Context(), "postgres://nobody@127.0.0.1:1/none?connect_timeout=2")
	if err != nil {
		t.Fatal(err)
	}
	defer unreachable.Close()
	refused := unreachable.Ping(t.Context())

	_, invalid := s.GetRun(t.Context(), "", "r")
	_, missing := s.GetRun(t.Context(), "u", "no-such-run")
	_, syntax := s.pool.Exec(t.Context(), "SELEKT 1")
	cancelled, cancel := context.WithCancel(t.Context())
	cancel()
	_, gone := s.GetRun(cancelled, "u", "r")

	for _, c := range []struct {
		name string
		err  error
		want bool
	}{
		{"session terminated", terminated, true},
		{"connection closed", closed, true},
		{"connection refused", refused, true},
		{"invalid", invalid, false},
		{"not found", missing, false},
		{"syntax error", syntax, false},
		{"context cancelled", gone, false},
		{"an HTTP call's broken connection", &url.Error{Op: "Post", URL: "http://model", Err: io.ErrUnexpectedEOF}, false},
		{"nil", nil, false},
	} {
		if c.err == nil && c.want {
			t.Errorf("%s: no error", c.name)
		}
		if got := s.Lost(c.err); got != c.want {
			t.Errorf("Lost(%s: %v) = %v, want %v", c.name, c.err, got, c.want)
		}
	}
}
