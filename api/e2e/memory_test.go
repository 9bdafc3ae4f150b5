package e2e_test

import (
	"testing"

	"github.com/trellis-ai/trellis/api/apitest"
	"github.com/trellis-ai/trellis/api/middleware"
	"github.com/trellis-ai/trellis/cognition"
	"github.com/trellis-ai/trellis/store"
)

// withMemory turns memory on and gives the test its service.
func withMemory(t *testing.T, svc **cognition.Service) func(*server, *apitest.Config) {
	return func(s *server, cfg *apitest.Config) {
		c, err := cognition.New(cognition.Config{Store: cfg.API.Store.(cognition.Store)})
		if err != nil {
			t.Fatal(err)
		}
		s.stop = append(s.stop, c.Close)
		cfg.API.Cognition = c
		*svc = c
	}
}

// TestE2EMemoryPanel: the memory panel lists what is remembered about
// the user, and its buttons forget one memory, then everything, on the
// server.
func TestE2EMemoryPanel(t *testing.T) {
	var svc *cognition.Service
	s := newServer(t, "chat.json", withMemory(t, &svc))
	for _, f := range []string{"my boat is called Nautilus", "I grow tomatoes on a trellis"} {
		if err := svc.Remember(t.Context(), middleware.LocalUser, "", f); err != nil {
			t.Fatal(err)
		}
	}
	p := open(t, s)
	p.Click("#memory-panel summary")
	p.WaitText("#memory-list", "my boat is called Nautilus")
	p.WaitText("#memory-list", "I grow tomatoes on a trellis")
	p.CheckAccessible()

	p.Click(`#memory-list button[aria-label="Forget: my boat is called Nautilus"]`)
	p.WaitJS("one memory left", `() => document.querySelectorAll("#memory-list li[data-memory-id]").length === 1`)
	page, err := svc.Memories(t.Context(), middleware.LocalUser, store.Page{})
	if err != nil {
		t.Fatal(err)
	}
	if len(page.Memories) != 1 || page.Memories[0].Summary != "I grow tomatoes on a trellis" {
		t.Fatalf("memories on the server after the delete: %+v", page.Memories)
	}

	// Forget everything (the page asks first).
	p.WaitJS("confirm is answered yes", `() => { window.confirm = () => true; return true; }`)
	p.Click("#memory-forget-all")
	p.WaitText("#memory-list", "Nothing is remembered about you yet.")
	if page, _ := svc.Memories(t.Context(), middleware.LocalUser, store.Page{}); len(page.Memories) != 0 {
		t.Fatalf("memories on the server after forgetting all: %+v", page.Memories)
	}
}
