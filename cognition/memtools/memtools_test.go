package memtools_test

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"go.uber.org/goleak"

	"github.com/trellis-ai/trellis/cognition"
	"github.com/trellis-ai/trellis/cognition/memtools"
	"github.com/trellis-ai/trellis/operators"
	"github.com/trellis-ai/trellis/store/sqlitestore"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// The tools act for the call's user only: what alice remembers, bob
// cannot recall.
func TestToolsAreScopedToTheUser(t *testing.T) {
	st, err := sqlitestore.Open(t.Context(), filepath.Join(t.TempDir(), "t.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	svc, err := cognition.New(cognition.Config{Store: st})
	if err != nil {
		t.Fatal(err)
	}
	defer svc.Close()
	tools := map[string]operators.Tool{}
	for _, tl := range memtools.New(svc) {
		tools[tl.Spec().Name] = tl
	}
	run := func(name, user, args string) (string, error) {
		res, err := tools[name].Execute(t.Context(), operators.Call{UserID: user, ConversationID: "c1"}, json.RawMessage(args))
		if err != nil {
			return "", err
		}
		b, _ := json.Marshal(res.Contents)
		return string(b), nil
	}
	if _, err := run("remember", "alice", `{"fact": "my boat is called Nautilus"}`); err != nil {
		t.Fatal(err)
	}
	got, err := run("recall", "alice", `{"query": "boat"}`)
	if err != nil || !strings.Contains(got, "Nautilus") {
		t.Errorf("alice recalls %s, %v", got, err)
	}
	got, err = run("recall", "bob", `{"query": "boat"}`)
	if err != nil || strings.Contains(got, "Nautilus") || !strings.Contains(got, "nothing is remembered") {
		t.Errorf("bob recalls %s, %v", got, err)
	}
	got, err = run("recall", "bob", `{}`)
	if err != nil || strings.Contains(got, "Nautilus") {
		t.Errorf("bob recalls everything: %s, %v", got, err)
	}
	if _, err := run("recall", "", `{}`); err == nil {
		t.Error("recall without a user did not fail")
	}
	if _, err := run("remember", "", `{"fact": "x"}`); err == nil {
		t.Error("remember without a user did not fail")
	}
}
