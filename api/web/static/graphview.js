// The live view of the agent: its graph as the engine draws it (GET
// /api/v1/agent/graph, a Mermaid flowchart), laid out here in layers and
// drawn as SVG, with the node that runs lit as node.start and node.end
// events arrive, and the sub-agents a run starts (subagent.start,
// subagent.end, and every event carrying a "namespace" path) nested below it.

import { path } from "./api.js";
import { el } from "./dom.js";

const SVG = "http://www.w3.org/2000/svg";
const NODE_W = 104;
const NODE_H = 28;
const GAP_X = 14;
const GAP_Y = 26;
const TERMINAL = new Set(["run.completed", "run.interrupted", "run.cancelled", "run.failed"]);

/**
 * parseMermaid reads the flowchart subset graph.Compiled.Mermaid writes:
 * node lines (`id("label")`, `id(["label"])`), edges (`a --> b`,
 * `a -.->|label| b`) and subgraph blocks, whose nodes are kept flat.
 */
export function parseMermaid(text) {
  const nodes = new Map();
  const edges = [];
  for (const raw of String(text).split("\n")) {
    const line = raw.trim();
    let m;
    if ((m = /^([\w.-]+)\s+(-->|-\.->)(?:\|([^|]*)\|)?\s+([\w.-]+)$/.exec(line))) {
      edges.push({ from: m[1], to: m[4], dotted: m[2] === "-.->", label: m[3] || "" });
    } else if ((m = /^([\w.-]+)\(\[?"([^"]*)"\]?\)(?::::(\w+))?$/.exec(line))) {
      nodes.set(m[1], { id: m[1], label: m[2], terminal: m[3] === "first" || m[3] === "last" });
    }
  }
  for (const e of edges) {
    for (const id of [e.from, e.to]) if (!nodes.has(id)) nodes.set(id, { id, label: id, terminal: false });
  }
  return { nodes, edges: drawnEdges(edges) };
}

// drawnEdges leaves out the unlabelled dotted edges of a node that also
// has other edges: the engine draws a command node to every node it
// might reach, which says nothing about the usual flow and would hide it.
function drawnEdges(edges) {
  const seen = new Set();
  const out = [];
  for (const e of edges) {
    const key = `${e.from}>${e.to}`;
    if (seen.has(key)) continue;
    if (e.dotted && !e.label && edges.some((o) => o.from === e.from && (!o.dotted || o.label))) continue;
    seen.add(key);
    out.push(e);
  }
  return out;
}

/**
 * layout places nodes in layers by their longest path from the first
 * node, over the edges a depth-first walk finds going forward; the
 * others (loops back) are marked back.
 */
export function layout(g) {
  const out = new Map();
  for (const e of g.edges) (out.get(e.from) || out.set(e.from, []).get(e.from)).push(e);
  const ids = [...g.nodes.keys()];
  const first = ids.find((id) => g.nodes.get(id).label === "__start__") || ids[0];
  const order = [];
  const mark = new Map(); // 1 on the path, 2 done
  const visit = (id) => {
    mark.set(id, 1);
    for (const e of out.get(id) || []) {
      if (mark.get(e.to) === 1) e.back = true;
      else if (!mark.get(e.to)) visit(e.to);
    }
    mark.set(id, 2);
    order.push(id);
  };
  if (first) visit(first);
  for (const id of ids) if (!mark.get(id)) visit(id);
  order.reverse();
  const layer = new Map(order.map((id) => [id, 0]));
  for (const id of order) {
    for (const e of out.get(id) || []) {
      if (!e.back) layer.set(e.to, Math.max(layer.get(e.to), layer.get(id) + 1));
    }
  }
  const rows = [];
  for (const id of order) (rows[layer.get(id)] ||= []).push(id);
  const width = Math.max(...rows.map((r) => r.length)) * (NODE_W + GAP_X);
  const pos = new Map();
  rows.forEach((row, y) => {
    const left = (width - row.length * (NODE_W + GAP_X)) / 2;
    row.forEach((id, x) => pos.set(id, { x: left + x * (NODE_W + GAP_X) + GAP_X / 2, y: y * (NODE_H + GAP_Y) + 8 }));
  });
  return { pos, width: width + 40, height: rows.length * (NODE_H + GAP_Y) + 8 };
}

function svg(tag, attrs = {}, ...children) {
  const n = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs)) n.setAttribute(k, String(v));
  for (const c of children) n.append(c);
  return n;
}

export class GraphView {
  /**
   * @param {{client, root: HTMLElement}} opts root receives the drawing,
   *   its caption and the sub-agents' tree.
   */
  constructor({ client, root }) {
    this.client = client;
    this.root = root;
    this.lit = "";
    this.subagents = new Map(); // path → {name, task, status, node, li}
    this.caption = el("p", { id: "graph-caption", class: "hint", "aria-live": "polite" }, "Idle");
    this.svgHolder = el("div", { class: "graph-drawing" });
    this.tree = el("ul", { id: "subagent-tree", class: "subagent-tree", "aria-label": "Sub-agents" });
    root.append(this.caption, this.tree, this.svgHolder);
  }

  /** load reads the agent's graph and draws it; a failure leaves a note. */
  async load() {
    try {
      const g = await this.client.json("GET", path`/api/v1/agent/graph`);
      this.draw(parseMermaid(g.mermaid));
    } catch (err) {
      this.svgHolder.replaceChildren(el("p", { class: "hint" }, `The agent's graph could not be read: ${err.message}`));
    }
  }

  draw(g) {
    const { pos, width, height } = layout(g);
    const s = svg("svg", { viewBox: `0 0 ${width} ${height}`, role: "img", "aria-labelledby": "graph-caption", class: "graph-svg" });
    s.append(svg("defs", {}, svg("marker", { id: "arrow", viewBox: "0 0 8 8", refX: 8, refY: 4, markerWidth: 6, markerHeight: 6, orient: "auto" },
      svg("path", { d: "M0,0 L8,4 L0,8 z", class: "graph-arrow" }))));
    for (const e of g.edges) {
      const a = pos.get(e.from);
      const b = pos.get(e.to);
      if (!a || !b) continue;
      let d;
      if (e.back || b.y <= a.y) {
        // A loop back: out of the right side and round.
        const x1 = a.x + NODE_W;
        const x2 = b.x + NODE_W;
        const bend = Math.max(x1, x2) + 18 + Math.abs(a.y - b.y) / 8;
        d = `M${x1},${a.y + NODE_H / 2} C${bend},${a.y + NODE_H / 2} ${bend},${b.y + NODE_H / 2} ${x2},${b.y + NODE_H / 2}`;
      } else {
        d = `M${a.x + NODE_W / 2},${a.y + NODE_H} L${b.x + NODE_W / 2},${b.y}`;
      }
      const p = svg("path", { d, class: `graph-edge${e.dotted ? " dotted" : ""}`, "marker-end": "url(#arrow)" });
      p.append(svg("title", {}, `${e.from} → ${e.to}${e.label ? ` (${e.label})` : ""}`));
      s.append(p);
    }
    for (const [id, n] of g.nodes) {
      const p = pos.get(id);
      const label = n.label.replace(/^__(start|end)__$/, "$1");
      const grp = svg("g", { class: `graph-node${n.terminal ? " terminal" : ""}`, "data-node": n.label, transform: `translate(${p.x},${p.y})` },
        svg("rect", { width: NODE_W, height: NODE_H, rx: n.terminal ? NODE_H / 2 : 6 }),
        svg("text", { x: NODE_W / 2, y: NODE_H / 2 + 4, "text-anchor": "middle" }, label));
      s.append(grp);
    }
    this.svgHolder.replaceChildren(s);
    this.light(this.lit);
  }

  /** reset forgets a run's lit node and sub-agents (a new run or conversation). */
  reset() {
    this.light("");
    for (const n of this.root.querySelectorAll(".graph-node.visited")) n.classList.remove("visited");
    this.subagents.clear();
    this.tree.replaceChildren();
    this.caption.textContent = "Idle";
  }

  light(node) {
    this.lit = node;
    for (const n of this.root.querySelectorAll(".graph-node")) {
      const on = n.dataset.node === node;
      n.classList.toggle("active", on);
      if (on) n.classList.add("visited");
    }
    if (node) this.caption.textContent = `Running: ${node}`;
  }

  /** apply follows one event of a run, as it arrives or as history replays it. */
  apply(ev) {
    if (ev.type === "run.started") {
      this.reset();
      return;
    }
    if (ev.type === "subagent.start") {
      this.startSubagent(ev);
      return;
    }
    if (ev.type === "subagent.end") {
      const sa = this.subagents.get(ev.namespace);
      if (sa) {
        sa.status = ev.status || "completed";
        sa.node = "";
        this.renderSubagent(sa);
      }
      return;
    }
    if (ev.namespace) {
      const sa = this.subagents.get(ev.namespace) || this.startSubagent({ namespace: ev.namespace, subagent: ev.namespace.split("/").pop().split(":")[0] });
      if (ev.type === "node.start") sa.node = ev.node;
      else if (ev.type === "node.end" && sa.node === ev.node) sa.node = "";
      else if (ev.type === "tool.start") sa.activity = `tool ${ev.tool}`;
      this.renderSubagent(sa);
      return;
    }
    if (ev.type === "node.start") this.light(ev.node);
    else if (ev.type === "node.end" && ev.node === this.lit) this.light("");
    else if (TERMINAL.has(ev.type)) {
      this.light("");
      this.caption.textContent = ev.type === "run.interrupted" ? "Waiting for you" : "Idle";
    }
  }

  startSubagent(ev) {
    const pathStr = String(ev.namespace || "");
    let sa = this.subagents.get(pathStr);
    if (!sa) {
      const li = el("li", { class: "subagent", "data-namespace": pathStr });
      sa = { path: pathStr, li, nested: el("ul", { class: "subagent-tree" }) };
      this.subagents.set(pathStr, sa);
      const parent = this.subagents.get(pathStr.includes("/") ? pathStr.slice(0, pathStr.lastIndexOf("/")) : "");
      (parent ? parent.nested : this.tree).append(li);
    }
    Object.assign(sa, { name: ev.subagent || sa.name || pathStr, task: ev.task ?? sa.task ?? "", status: "running", node: "" });
    this.renderSubagent(sa);
    return sa;
  }

  renderSubagent(sa) {
    sa.li.dataset.status = sa.status;
    const head = el("div", { class: "subagent-head" },
      el("strong", { class: "subagent-name" }, sa.name),
      el("span", { class: `badge subagent-status ${sa.status}` }, sa.status),
      sa.node ? el("span", { class: "subagent-node", "data-node": sa.node }, sa.node) : null);
    sa.li.replaceChildren(head, sa.task ? el("p", { class: "hint subagent-task" }, sa.task) : "", sa.nested);
  }
}
