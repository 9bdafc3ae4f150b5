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
		if want := 19; len(stmts) != want {
			t.Errorf("turn %d: %d statements, want %d:\n%s", i+2, len(stmts), want, strings.Join(stmts, "\n"))
		}
		// Each transaction's BEGIN goes with its first statement; the
		// conversation's update at the run's start goes with the read
		// of the run it follows, and the run's and its message's
		// inserts with the COMMIT; at the run's end, the updates of the
		// run, the usage and the conversation and the last events go
		// with the COMMIT (20 trips when each was a trip of its own);
		// the checkpoints' batch is one trip. So: the run's start 2,
		// the thread's, profile's and memories' reads 3, three
		// checkpoint writes in two trips, the answer 1, the learning
		// job's state 1 (River's, not among the statements above), the
		// run's end with its events 2.
		if want := 11; trips != want {
			t.Errorf("turn %d: %d round trips, want %d:\n%s", i+2, trips, want, strings.Join(stmts, "\n"))
		}
	}
}

// statementProxy forwards connections to a PostgreSQL server and notes
// each statement the clients execute: the text of each simple query and
// of each prepared statement bound. It also counts the round trips that
// execute something: a simple query, or a Sync after an Execute (a
// Sync that ends only the preparing of statements is not counted, as
// which connection has a statement prepared already varies).
type statementProxy struct {
	addr  string
	mu    sync.Mutex
	seen  []string
	trips int
}

func newStatementProxy(t *testing.T, upstream string) *statementProxy {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &statementProxy{addr: l.Addr().String()}
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
			wg.Go(func() {
				p.read(io.TeeReader(c, up))
				up.Close()
			})
		}
	})
	return p
}

// read reads one client's messages to their end: the startup message,
// which has no type, then typed ones.
func (p *statementProxy) read(r io.Reader) {
	br := bufio.NewReader(r)
	var n [4]byte
	if _, err := io.ReadFull(br, n[:]); err != nil {
		return
	}
	if _, err := io.CopyN(io.Discard, br, int64(binary.BigEndian.Uint32(n[:]))-4); err != nil {
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
		msg := make([]byte, binary.BigEndian.Uint32(n[:])-4)
		if _, err := io.ReadFull(br, msg); err != nil {
			return
		}
		f := bytes.Split(msg, []byte{0})
		switch typ {
		case 'Q':
			p.trip()
			p.note(string(f[0]))
		case 'P':
			named[string(f[0])] = string(f[1])
		case 'B':
			p.note(named[string(f[1])])
		case 'E':
			executed = true
		case 'S':
			if executed {
				p.trip()
			}
			executed = false
		}
	}
}

func (p *statementProxy) note(q string) {
	q = strings.TrimSpace(q)
	if strings.HasPrefix(q, "-- name:") || q == "-- ping" || strings.Contains(q, "INSERT INTO events") {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.seen = append(p.seen, strings.Join(strings.Fields(q), " "))
}

func (p *statementProxy) trip() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.trips++
}

// take returns the statements noted, and the round trips counted, since
// the last call.
func (p *statementProxy) take() ([]string, int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	s, n := p.seen, p.trips
	p.seen, p.trips = nil, 0
	return s, n
}
