package main

import (
	"io"
	"strings"
	"testing"
	"time"

	"github.com/trellis-ai/trellis/cognition"
)

// --learn-after and --learn-every: their defaults, 0, values, and bad
// values refused with an error naming the flag.
func TestParseLearnFlags(t *testing.T) {
	t.Parallel()
	none := func(string) string { return "" }
	c, err := parseServe(nil, none, io.Discard)
	if err != nil || c.cognition.learnAfter != cognition.DefaultLearnAfter || c.cognition.learnEvery != 0 {
		t.Errorf("defaults: %v %d %v", c.cognition.learnAfter, c.cognition.learnEvery, err)
	}
	c, err = parseServe([]string{"--learn-after", "0", "--learn-every", "4"}, none, io.Discard)
	if err != nil || c.cognition.learnAfter >= 0 || c.cognition.learnEvery != 4 {
		t.Errorf("learn-after 0 (at once, negative for cognition.Config), learn-every 4: %v %d %v", c.cognition.learnAfter, c.cognition.learnEvery, err)
	}
	c, err = parseServe(nil, func(k string) string {
		return map[string]string{"TRELLIS_LEARN_AFTER": "1m30s"}[k]
	}, io.Discard)
	if err != nil || c.cognition.learnAfter != 90*time.Second {
		t.Errorf("TRELLIS_LEARN_AFTER 1m30s: %v %v", c.cognition.learnAfter, err)
	}
	for _, args := range [][]string{{"--learn-after", "-1s"}, {"--learn-after", "soon"}, {"--learn-every", "-1"}, {"--learn-every", "x"}} {
		if _, err := parseServe(args, none, io.Discard); err == nil || !strings.Contains(err.Error(), strings.TrimPrefix(args[0], "--")+": ") {
			t.Errorf("%v: %v", args, err)
		}
	}
}
