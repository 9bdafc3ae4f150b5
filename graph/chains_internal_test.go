package graph

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// However many elements each step appends, link keeps the chain a chain
// (each blob extends the one before it, element for element), short, and
// stores each element a bounded number of times.
func TestLinkKeepsChainsShortAndWritesFlat(t *testing.T) {
	for _, maxStep := range []int{1, 2, 3, 40} {
		t.Run(fmt.Sprint("up to ", maxStep), func(t *testing.T) {
			r := rand.New(rand.NewPCG(1, uint64(maxStep)))
			e := newThreadEntry[struct{}](1)
			root, length, written, longest := "v0000000", 1, 0, 0
			for step := 1; step <= 20000; step++ {
				version := fmt.Sprintf("v%07d", step)
				prev := root
				if n := len(e.chains[0]); n > 0 {
					prev = e.chains[0][n-1].version
				}
				add := 1 + r.IntN(maxStep)
				base, from := e.link(0, version, prev, length, length+add)
				length += add
				written += length - from
				links := e.chains[0]
				if last := links[len(links)-1]; last.version != version || last.base != base || last.start != from || last.end != length {
					t.Fatalf("step %d: wrote [%d, %d) on %s, last link %+v", step, from, length, base, last)
				}
				for j, l := range links {
					wantBase, wantStart := root, 1
					if j > 0 {
						wantBase, wantStart = links[j-1].version, links[j-1].end
					}
					if l.base != wantBase || l.start != wantStart {
						t.Fatalf("step %d: link %d %+v does not extend %s at %d", step, j, l, wantBase, wantStart)
					}
				}
				longest = max(longest, len(links))
			}
			perElement := float64(written) / float64(length-1)
			t.Logf("%d elements: each stored %.2f times; chains at most %d blobs", length-1, perElement, longest)
			if perElement > chainTiers+1 {
				t.Errorf("each element stored %.2f times", perElement)
			}
			bound := chainFanout*chainFanout + (length-1)/(chainFanout*chainFanout)
			if maxStep <= 2 {
				bound = 2*(chainFanout-1) + (length-1)/(chainFanout*chainFanout) + 1
			}
			if longest > bound {
				t.Errorf("a chain reached %d blobs, more than %d", longest, bound)
			}
		})
	}
}
