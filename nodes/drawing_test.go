package nodes_test

import (
	"os"
	"strings"
	"testing"

	"github.com/trellis-ai/trellis/llm"
	"github.com/trellis-ai/trellis/nodes"
)

// TestAgentGraphDrawing keeps the one drawing of the agent graph, in
// docs/architecture.md, equal to what the compiled graph draws.
func TestAgentGraphDrawing(t *testing.T) {
	reg, err := llm.NewRegistry(llm.Config{})
	if err != nil {
		t.Fatal(err)
	}
	a, err := nodes.New(reg, nil, nil, nodes.Options{})
	if err != nil {
		t.Fatal(err)
	}
	doc, err := os.ReadFile("../docs/architecture.md")
	if err != nil {
		t.Fatal(err)
	}
	const marker = "<!-- agent graph: the output of nodes.Agent.Mermaid -->\n```mermaid\n"
	_, rest, ok := strings.Cut(string(doc), marker)
	if !ok {
		t.Fatalf("docs/architecture.md has no drawing under %q", marker)
	}
	drawn, _, ok := strings.Cut(rest, "```")
	if !ok {
		t.Fatal("the drawing in docs/architecture.md is not closed")
	}
	if want := a.Mermaid(); drawn != want {
		t.Errorf("docs/architecture.md draws the agent graph differently from Agent.Mermaid; replace its drawing with:\n%s", want)
	}
}
