package web_test

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/trellis-ai/trellis/api/web/webtest"
)

// TestGraphLayout runs the live view's Mermaid reader and layout in the
// browser on a drawing shaped like the engine's: a command node drawn to
// every node, a loop back, a subgraph.
func TestGraphLayout(t *testing.T) {
	p := open(t, newContractFake(t, nil))
	const drawing = "flowchart TD\n" +
		"\t__start__([\"__start__\"]):::first\n\tplan(\"plan\")\n\tact(\"act\")\n\tjudge(\"judge\")\n" +
		"\tsubgraph team [\"team\"]\n\tteam_a(\"a\")\n\tend\n\t__end__([\"__end__\"]):::last\n" +
		"\t__start__ --> plan\n\tplan -.->|go| act\n\tplan -.->|go| act\n\tact --> judge\n\tjudge -.->|again| plan\n" +
		"\tjudge -.->|done| __end__\n\tact --> team\n\tplan -.-> judge\n\tplan -.-> __end__\n"
	src, _ := json.Marshal(drawing)
	got := webtest.Eval[string](p, fmt.Sprintf(`import("/static/graphview.js").then((m) => {
		const g = m.parseMermaid(%s);
		const { pos } = m.layout(g);
		const row = (id) => Math.round((pos.get(id).y - 8) / %d);
		const edges = g.edges.map((e) => e.from + (e.back ? "<" : ">") + e.to + (e.label ? ":" + e.label : "")).join(" ");
		const rows = [...g.nodes.keys()].map((id) => id + "@" + row(id)).join(" ");
		return [...g.nodes.values()].map((n) => n.label).join(",") + " | " + edges + " | " + rows;
	})`, src, 54))
	want := "__start__,plan,act,judge,a,__end__,team | __start__>plan plan>act:go act>judge judge<plan:again judge>__end__:done act>team | " +
		"__start__@0 plan@1 act@2 judge@3 team_a@0 __end__@4 team@3"
	if got != want {
		t.Errorf("layout:\n got %s\nwant %s", got, want)
	}
}
