package runs

import (
	"testing"

	"github.com/trellis-ai/trellis/store"
)

func TestHubCutsASubscriberThatFallsBehind(t *testing.T) {
	h := newHub("run")
	fast := h.add(4, true, false)
	slow := h.add(4, true, false)
	idle := h.idle()
	for seq := int64(1); seq <= 10; seq++ {
		h.publish(&Event{Event: &store.Event{Seq: seq}}) // never blocks
		if e := <-fast.ch; e.Seq != seq {
			t.Fatalf("fast got %d, want %d", e.Seq, seq)
		}
	}
	var got []int64
	for e := range slow.ch { // closed once it was cut
		got = append(got, e.Seq)
	}
	if len(got) != 4 || got[0] != 1 || got[3] != 4 || !slow.gone {
		t.Errorf("slow got %v before being cut", got)
	}
	if h.remove(slow) {
		t.Error("a cut subscriber was removed again")
	}
	select {
	case <-idle:
		t.Fatal("idle while a stream still follows the run")
	default:
	}
	if !h.remove(fast) {
		t.Error("fast was not on the hub")
	}
	select {
	case <-idle:
	default:
		t.Fatal("not idle once the last stream left")
	}
}
