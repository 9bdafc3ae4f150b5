package graph

import (
	"fmt"
	"slices"
	"strings"
)

// Mermaid draws the graph as a Mermaid flowchart. Conditional edges are
// dotted and labelled with their path map's keys; routers without a path
// map are drawn to every node they might reach. Subgraphs are drawn inside
// their node.
func (c *Compiled[S]) Mermaid() string {
	var b strings.Builder
	b.WriteString("flowchart TD\n")
	b.WriteString(c.mermaidBody(""))
	b.WriteString("\tclassDef first fill-opacity:0\n\tclassDef last fill:#bfb6fc\n")
	return b.String()
}

func (c *Compiled[S]) mermaidBody(prefix string) string {
	g := c.spec
	var b strings.Builder
	id := func(name string) string { return prefix + mermaidID(name) }
	fmt.Fprintf(&b, "\t%s([\"%s\"]):::first\n", id(START), START)
	for _, n := range c.nodes {
		name := n.spec.name
		if n.spec.sub != nil {
			fmt.Fprintf(&b, "\tsubgraph %s [\"%s\"]\n", id(name), name)
			b.WriteString(n.spec.sub.mermaidBody(id(name) + "_"))
			b.WriteString("\tend\n")
			continue
		}
		fmt.Fprintf(&b, "\t%s(\"%s\")\n", id(name), name)
	}
	fmt.Fprintf(&b, "\t%s([\"%s\"]):::last\n", id(END), END)
	for _, e := range g.edges {
		fmt.Fprintf(&b, "\t%s --> %s\n", id(e[0]), id(e[1]))
	}
	for _, j := range g.joins {
		for _, f := range j.from {
			fmt.Fprintf(&b, "\t%s -->|join| %s\n", id(f), id(j.to))
		}
	}
	anywhere := append(slices.Clone(g.order), END)
	slices.Sort(anywhere[:len(anywhere)-1])
	dotted := func(from string, to []string, label func(string) string) {
		for _, t := range to {
			if l := label(t); l != "" {
				fmt.Fprintf(&b, "\t%s -.->|%s| %s\n", id(from), l, id(t))
			} else {
				fmt.Fprintf(&b, "\t%s -.-> %s\n", id(from), id(t))
			}
		}
	}
	none := func(string) string { return "" }
	for _, br := range g.branches {
		switch {
		case br.pathMap != nil:
			for _, k := range slices.Sorted(mapsKeys(br.pathMap)) {
				to := br.pathMap[k]
				dotted(br.from, []string{to}, func(string) string { return mermaidLabel(k) })
			}
		case br.sends != nil && br.targets != nil:
			dotted(br.from, br.targets, func(string) string { return "Send" })
		case br.sends != nil:
			dotted(br.from, anywhere[:len(anywhere)-1], func(string) string { return "Send" })
		default:
			dotted(br.from, anywhere, none)
		}
	}
	for _, name := range g.order {
		n := g.nodes[name]
		if n.plain {
			continue
		}
		to := n.targets
		if to == nil {
			to = anywhere
		}
		dotted(name, to, none)
	}
	return b.String()
}

func mermaidID(name string) string {
	return strings.Map(func(r rune) rune {
		if r == '_' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' {
			return r
		}
		return '_'
	}, name)
}

func mermaidLabel(s string) string {
	return strings.NewReplacer("|", "/", "\"", "'", "\n", " ").Replace(s)
}
