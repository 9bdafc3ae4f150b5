package cognition_test

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/trellis-ai/trellis/cognition"
	"github.com/trellis-ai/trellis/store"
)

// benchWords make the memories' summaries and the queries.
var benchWords = strings.Fields(`postgres sqlite index query latency boat garden recipe coffee tea travel paris lyon
	kubernetes docker goroutine mutex channel budget invoice tax holiday flight hotel museum painting guitar piano jazz
	running marathon diet protein vitamin sleep meeting deadline report slides python rust golang compiler linker kernel
	network router firewall backup restore cluster replica shard cache redis kafka stream batch schedule cron alert`)

// BenchmarkContext measures Service.Context with 100,000 memories across
// 1,000 users, on each backend, and with 2,000 memories of one user, of
// near-identical text, as a load test of one local user leaves them
// (-one-user), or one memory rewritten as often (-one-user-rewritten), or
// rewritten every eight contexts (-one-user-learning); it reports the
// median and 99th percentile beside the mean:
//
//	go test -run '^$' -bench Context -benchtime 2000x ./cognition/
func BenchmarkContext(b *testing.B) {
	for _, be := range backends() {
		b.Run(be.name, func(b *testing.B) {
			st, _ := be.open(b)
			seed(b, st, 1000, 100)
			rng := rand.New(rand.NewPCG(1, 2))
			benchContext(b, st, func() (string, string) {
				// A question as a user asks it: Context's query is the
				// message, stop words and all.
				return fmt.Sprintf("user-%d", rng.IntN(1000)), "What do you remember about " +
					benchWords[rng.IntN(len(benchWords))] + " and " + benchWords[rng.IntN(len(benchWords))] + "?"
			})
		})
		b.Run(be.name+"-one-user", func(b *testing.B) {
			st, _ := be.open(b)
			rng := rand.New(rand.NewPCG(1, 2))
			for i := range 2000 {
				text := oneUserTurns[i%len(oneUserTurns)]
				_, err := st.AddMemory(b.Context(), store.NewMemory{UserID: "local", Summary: "Asked: " + text,
					Topics: cognition.Topics(text, 8), Importance: rng.Float64(), Outcome: "success"})
				if err != nil {
					b.Fatal(err)
				}
			}
			benchContext(b, st, func() (string, string) { return "local", oneUserTurns[rng.IntN(len(oneUserTurns))] })
		})
		// And one memory of one user, rewritten 2,000 times, as learning
		// merges each conversation's fact into it (the serve load test's
		// other case).
		b.Run(be.name+"-one-user-rewritten", func(b *testing.B) {
			st, _ := be.open(b)
			m, err := st.AddMemory(b.Context(), store.NewMemory{UserID: "local", Summary: oneUserTurns[0], Importance: 0.9})
			if err != nil {
				b.Fatal(err)
			}
			for i := range 2000 {
				text := fmt.Sprintf("%s (%d)", oneUserTurns[0], i)
				_, err := st.UpdateMemory(b.Context(), "local", m.ID, store.NewMemory{Summary: text, Topics: cognition.Topics(text, 8), Importance: 0.9})
				if err != nil {
					b.Fatal(err)
				}
			}
			rng := rand.New(rand.NewPCG(1, 2))
			benchContext(b, st, func() (string, string) { return "local", oneUserTurns[rng.IntN(len(oneUserTurns))] })
		})
		// And the two together, as the serve load test has them: the
		// memory rewritten once every eight contexts (a conversation's
		// learning after its eight turns). The rewrite counts in the time
		// an operation, not in p50 and p99: what a write leaves in the
		// index is what the next searches pay for.
		b.Run(be.name+"-one-user-learning", func(b *testing.B) {
			st, _ := be.open(b)
			m, err := st.AddMemory(b.Context(), store.NewMemory{UserID: "local", Summary: oneUserTurns[0], Importance: 0.9})
			if err != nil {
				b.Fatal(err)
			}
			rng := rand.New(rand.NewPCG(1, 2))
			n := 0
			benchContext(b, st, func() (string, string) {
				if n++; n%8 == 0 {
					text := fmt.Sprintf("%s (%d)", oneUserTurns[0], n)
					_, err := st.UpdateMemory(b.Context(), "local", m.ID, store.NewMemory{Summary: text, Topics: cognition.Topics(text, 8), Importance: 0.9})
					if err != nil {
						b.Fatal(err)
					}
				}
				return "local", oneUserTurns[rng.IntN(len(oneUserTurns))]
			})
		})
	}
}

// oneUserTurns are what the one user of BenchmarkContext says, as the
// serve load test's conversations do.
var oneUserTurns = []string{"hello, my name is Ada and I like tea", "thanks, and what else?"}

// benchContext runs Context for the users and questions next gives.
func benchContext(b *testing.B, st cognition.Store, next func() (user, query string)) {
	svc, err := cognition.New(cognition.Config{Store: st, Budget: time.Minute})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(svc.Close)
	var ds []time.Duration
	for b.Loop() {
		user, q := next()
		start := time.Now()
		if _, err := svc.Context(b.Context(), user, q); err != nil {
			b.Fatal(err)
		}
		ds = append(ds, time.Since(start))
	}
	slices.Sort(ds)
	b.ReportMetric(float64(ds[len(ds)/2].Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(ds[len(ds)*99/100].Microseconds())/1000, "p99-ms")
}

// seed stores perUser memories for each of users users, 16 writers at
// once.
func seed(b *testing.B, st cognition.Store, users, perUser int) {
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for w := range 16 {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(w), 7))
			for u := w; u < users; u += 16 {
				for range perUser {
					words := make([]string, 6)
					for i := range words {
						words[i] = benchWords[rng.IntN(len(benchWords))]
					}
					_, err := st.AddMemory(b.Context(), store.NewMemory{UserID: fmt.Sprintf("user-%d", u),
						Summary: "Asked about " + strings.Join(words, " "), Topics: words[:3], Importance: rng.Float64(), Outcome: "success"})
					if err != nil {
						errs <- err
						return
					}
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		b.Fatal(err)
	}
}

// BenchmarkLearnConversation measures a conversation's learning job as
// the serve load test makes them: eight answered turns of one local user
// ("hello, my name is Ada and I like tea", then "thanks, and what else?"),
// learned at once, on each backend; each op is one conversation's job,
// and turn-ms is its time a turn:
//
//	go test -run '^$' -bench LearnConversation -count 6 ./cognition/
func BenchmarkLearnConversation(b *testing.B) {
	queries := []string{"hello, my name is Ada and I like tea"}
	for range 7 {
		queries = append(queries, "thanks, and what else?")
	}
	for _, be := range backends() {
		b.Run(be.name, func(b *testing.B) {
			st, _ := be.open(b)
			svc, err := cognition.New(cognition.Config{Store: st})
			if err != nil {
				b.Fatal(err)
			}
			defer svc.Close()
			ss := st.(store.Store)
			convs := make([]string, b.N)
			for i := range convs {
				c, err := ss.CreateConversation(b.Context(), store.NewConversation{UserID: "local"})
				if err != nil {
					b.Fatal(err)
				}
				for j, q := range queries {
					meta := store.AnswerMeta{Outcome: "answered", RequestID: fmt.Sprintf("q%d-%d", i, j)}
					addTurn(b, ss, "local", c.ID, recordedTurn{query: q, answer: "Here is what else.", meta: meta, status: store.RunCompleted})
				}
				convs[i] = c.ID
			}
			b.ResetTimer()
			start := time.Now()
			for i := range b.N {
				if err := svc.LearnConversation(b.Context(), "local", convs[i]); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(time.Since(start).Microseconds())/1000/float64(b.N*len(queries)), "turn-ms")
		})
	}
}
