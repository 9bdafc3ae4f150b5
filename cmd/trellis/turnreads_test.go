package main

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
)

// TestSyncTurnStatements pins the statements a plain sync turn (no
// documents, approvals or webhooks) sends to PostgreSQL through the
// server as serve wires it: a read that finds nothing and comes back
// fails it. The statements are seen on the wire, by a proxy between
// the server and the database; River's own (its queries name
// themselves "-- name: …"), pgx's pings and the appends of events
// (how many, the outbox's timing decides) are left out, as are the run
// claimer's, which runs but once an hour here.
func TestSyncTurnStatements(t *testing.T) {
	dsn := pgDSN(t)
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatal(err)
	}
	p := newStatementProxy(t, u.Host)
	u.Host = p.addr
	base := startBenchServe(t, "DATABASE_URL", u.String(), "TRELLIS_CLAIM_INTERVAL", "1h")
	// The jobs the queue enqueues once it elects its leader (the
	// periodic ones that run on start) are stored and worked first, so
	// that none runs during a turn.
	waitForSQL(t, dsn, "the queue's start jobs", `SELECT count(*) > 0 AND count(*) FILTER (WHERE state IN ('available', 'running', 'retryable')) = 0
FROM river_job`)
	conv := ""
	turn := func() ([]string, int) {
		p.take() // what ran between turns
		body := `{"message": "hello"}`
		if conv != "" {
			body = `{"message": "hello", "conversation_id": "` + conv + `"}`
		}
		resp, err := http.Post(base+"/api/v1/chat/sync", "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		got, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		var res struct {
			ConversationID string `json:"conversation_id"`
			Status         string `json:"status"`
		}
		if err := json.Unmarshal(got, &res); err != nil || res.Status != "completed" {
			t.Fatalf("%d %s (%v)", resp.StatusCode, got, err)
		}
		conv = res.ConversationID
		return p.take()
	}
	// The first turn starts the conversation (and reads what the server
	// caches, the tools' statistics); the others continue it, and they
	// are pinned.
	turn()
	for i := range 2 {
		stmts, trips := turn()
		if want := 20; len(stmts) != want {
			t.Errorf("turn %d: %d statements, want %d:\n%s", i+2, len(stmts), want, strings.Join(stmts, "\n"))
		}
		// Each transaction's BEGIN goes with its first statement; the
		// conversation's update at the run's start goes with the read
		// of the run it follows, and the run's and its message's
		// inserts with the COMMIT; at the run's end, the updates of the
		// run, the usage and the conversation, the answer and the last
		// events go with the COMMIT (20 trips when each was a trip of
		// its own); the checkpoints' batch is one trip. So: the run's
		// start 2, the thread's, profile's and memories' reads 3, three
		// checkpoint writes in two trips, the learning job's state 1,
		// the run's end with its answer and its events 2.
		if want := 10; trips != want {
			t.Errorf("turn %d: %d round trips, want %d:\n%s", i+2, trips, want, strings.Join(stmts, "\n"))
		}
	}
}

// statementProxy forwards connections to a PostgreSQL server and notes
// each statement the clients execute: the text of each simple query and
// of each prepared statement bound. It also counts the round trips that
// execute something: a simple query, or a Sync after an Execute (a
// Sync that ends only the preparing of statements is not counted, as
// which connection has a statement prepared already varies). An append
// of events that is not the run's end (how many there are, the
// outbox's timing decides) is left out, its transaction and round
// trips with it: a batch holding the answer is a transaction.
type statementProxy struct {
	addr     string
	mu       sync.Mutex
	seen     []noted
	lastTrip int // the last round trip's number
}

// noted is a statement as one connection executed it, and the round
// trip it went in (0 until its Sync).
type noted struct {
	conn int
	q    string
	trip int
}

func newStatementProxy(t *testing.T, upstream string) *statementProxy {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &statementProxy{addr: l.Addr().String()}
	conns := 0
	var wg sync.WaitGroup
	t.Cleanup(func() {
		l.Close()
		wg.Wait()
	})
	wg.Go(func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			up, err := net.Dial("tcp", upstream)
			if err != nil {
				c.Close()
				continue
			}
			wg.Go(func() {
				_, _ = io.Copy(c, up)
				c.Close()
			})
			conns++
			conn := conns
			wg.Go(func() {
				p.read(conn, c, up)
				up.Close()
			})
		}
	})
	return p
}

// read reads one client's messages to their end, the startup message,
// which has no type, then typed ones, and forwards each to w once it is
// noted: what the server answers, the statement it answers was noted
// first, so a turn's statements are all noted when its response comes.
func (p *statementProxy) read(conn int, r io.Reader, w io.Writer) {
	br := bufio.NewReader(r)
	var n [4]byte
	if _, err := io.ReadFull(br, n[:]); err != nil {
		return
	}
	startup := make([]byte, binary.BigEndian.Uint32(n[:]))
	copy(startup, n[:])
	if _, err := io.ReadFull(br, startup[4:]); err != nil {
		return
	}
	if _, err := w.Write(startup); err != nil {
		return
	}
	named := map[string]string{}
	executed := false
	for {
		typ, err := br.ReadByte()
		if err != nil {
			return
		}
		if _, err := io.ReadFull(br, n[:]); err != nil {
			return
		}
		whole := make([]byte, 1+binary.BigEndian.Uint32(n[:]))
		whole[0] = typ
		copy(whole[1:], n[:])
		msg := whole[5:]
		if _, err := io.ReadFull(br, msg); err != nil {
			return
		}
		f := bytes.Split(msg, []byte{0})
		switch typ {
		case 'Q':
			p.note(conn, string(f[0]))
			p.trip(conn)
		case 'P':
			named[string(f[0])] = string(f[1])
		case 'B':
			p.note(conn, named[string(f[1])])
		case 'E':
			executed = true
		case 'S':
			if executed {
				p.trip(conn)
			}
			executed = false
		}
		if _, err := w.Write(whole); err != nil {
			return
		}
	}
}

func (p *statementProxy) note(conn int, q string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.seen = append(p.seen, noted{conn: conn, q: strings.Join(strings.Fields(q), " ")})
}

// trip numbers a round trip of conn's, and gives its number to the
// statements it carried.
func (p *statementProxy) trip(conn int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.lastTrip++
	for i := len(p.seen) - 1; i >= 0 && (p.seen[i].conn != conn || p.seen[i].trip == 0); i-- {
		if p.seen[i].conn == conn {
			p.seen[i].trip = p.lastTrip
		}
	}
}

// take returns the statements noted since the last call, but River's
// (named "-- name: …"), pings and the appends of events, and the round
// trips they went in, but those of the appends, of River's statements
// and transactions and of pings. The answer's insert counts wherever it
// went: with the run's end, or with the append of its response.done.
func (p *statementProxy) take() ([]string, int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	seen := p.seen
	p.seen = nil
	// Each connection's statements, in units: a transaction, or a
	// statement outside one.
	unit := make([]int, len(seen))
	open := map[int]int{} // a connection's transaction, by its first statement
	for i, st := range seen {
		first, in := open[st.conn]
		switch {
		case st.q == "begin":
			open[st.conn], unit[i] = i, i
		case in:
			unit[i] = first
			if st.q == "commit" || st.q == "rollback" {
				delete(open, st.conn)
			}
		default:
			unit[i] = i
		}
	}
	// River's statements (named "-- name: …") come on its own clock
	// (the leader's re-election, the producer's polls for jobs), as do
	// its transactions, which hold nothing else; the turn's learning
	// job is read by a statement of the queue's own.
	appends, ends, ours := map[int]bool{}, map[int]bool{}, map[int]bool{}
	for i, st := range seen {
		if strings.Contains(st.q, "INSERT INTO events") {
			appends[unit[i]] = true
		}
		if strings.HasPrefix(st.q, "UPDATE runs SET status") {
			ends[unit[i]] = true
		}
		control := st.q == "begin" || st.q == "commit" || st.q == "rollback"
		if !control && !strings.HasPrefix(st.q, "-- name:") {
			ours[unit[i]] = true
		}
	}
	var out []string
	trips := map[int]bool{}
	for i, st := range seen {
		switch {
		case !ours[unit[i]] || st.q == "-- ping":
			// pgxpool pings a connection idle for a second before it
			// lends it: how many, the turn's pace decides.
			continue
		case !appends[unit[i]] || ends[unit[i]]:
			if st.trip != 0 {
				trips[st.trip] = true
			}
		case st.q == "begin" || st.q == "commit" || st.q == "rollback":
			continue
		}
		if strings.HasPrefix(st.q, "-- name:") || st.q == "-- ping" || strings.Contains(st.q, "INSERT INTO events") {
			continue
		}
		out = append(out, st.q)
	}
	return out, len(trips)
}
