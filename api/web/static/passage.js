// The dialog that opens a cited passage of a document: the chunk
// rendered as Markdown (by the page's safe renderer: no tag of the
// document survives), with the sentence the answer quotes, or rests on,
// highlighted and scrolled into view.

import { renderMarkdown } from "./markdown.js";

// Markers of the highlighted span while the chunk is rendered. They are
// private-use characters, removed from the document's text first, which
// escaping leaves alone; they end up in text nodes, never in markup.
const OPEN = "\uE000";
const CLOSE = "\uE001";

/**
 * citedWords is what the answer says where it cites source n: the text
 * in quotes before the marker [n] ("From notes.md: “The launch is on 3
 * May.” [1]"), or else the sentence that ends with it ("The trellis holds
 * the vines [1]."); "" when the answer does not cite n.
 */
export function citedWords(answer, n) {
  const text = String(answer ?? "");
  const at = text.indexOf(`[${n}]`);
  if (at < 0) return "";
  const before = text.slice(0, at).trimEnd();
  const quoted = /[“"]([^“”"]+)[”"][^“”"]*$/.exec(before);
  // A quoted word or two is a name, not the quote of a passage.
  if (quoted && wordsOf(quoted[1]).length >= 3) return quoted[1].trim();
  // The sentence: back to the last sentence end, line break or marker.
  const core = before.replace(/[\s.!?"”’)]+$/, "");
  let start = 0;
  for (const m of core.matchAll(/[.!?]["”’)]*\s+|\n|\]\s*/g)) start = m.index + m[0].length;
  return core.slice(start).trim();
}

/**
 * locate finds the span of text that quote stands for: the quote itself
 * when the text holds it (whitespace aside), else the sentence sharing
 * most of its words (at least half of them); null when none does.
 */
export function locate(text, quote) {
  const words = wordsOf(quote);
  if (words.length === 0) return null;
  // The sentence's own end is the quote's too ("… the vines [1]." cites
  // "… the vines.").
  const exact = new RegExp(`${quote.trim().split(/\s+/).map(escapeRegExp).join("\\s+")}(?:[.!?]+["”’)]*)?`, "i").exec(text);
  if (exact) return { start: exact.index, end: exact.index + exact[0].length };
  const want = new Set(words);
  let best = null;
  let bestScore = 0;
  // Sentences never run across a line break, so a span stays inside
  // one block of the rendered Markdown.
  for (const m of text.matchAll(/[^.!?\n]+(?:[.!?]+["”’)]*)?/g)) {
    const shared = new Set(wordsOf(m[0]).filter((w) => want.has(w))).size;
    const score = shared / want.size;
    if (score > bestScore) {
      bestScore = score;
      const lead = m[0].length - m[0].trimStart().length;
      best = { start: m.index + lead, end: m.index + m[0].trimEnd().length };
    }
  }
  return bestScore >= 0.5 ? best : null;
}

function wordsOf(s) {
  return (String(s).toLowerCase().match(/[\p{L}\p{N}]{3,}/gu) || []);
}

function escapeRegExp(s) {
  return s.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
}

/**
 * showPassage renders text (a chunk, Markdown) into box with the span of
 * quote highlighted; it returns the first highlighted element, or null.
 */
export function showPassage(box, text, quote) {
  const src = String(text ?? "").replace(/[\uE000\uE001]/g, "");
  const span = quote ? locate(src, quote) : null;
  const marked = span ? src.slice(0, span.start) + OPEN + src.slice(span.start, span.end) + CLOSE + src.slice(span.end) : src;
  box.innerHTML = renderMarkdown(marked);
  return highlight(box);
}

// highlight turns the text between the markers into <mark> elements, one
// per text node the span crosses, and drops the markers wherever they
// landed (a link's address included).
function highlight(root) {
  const walker = document.createTreeWalker(root, NodeFilter.SHOW_TEXT);
  const nodes = [];
  while (walker.nextNode()) nodes.push(walker.currentNode);
  let inside = false;
  let first = null;
  for (const node of nodes) {
    if (!inside && !node.data.includes(OPEN)) continue;
    const frag = document.createDocumentFragment();
    for (const part of node.data.split(/([\uE000\uE001])/)) {
      if (part === OPEN || part === CLOSE) {
        inside = part === OPEN;
      } else if (inside && part.trim()) {
        const mark = document.createElement("mark");
        mark.className = "quoted";
        mark.textContent = part;
        first ??= mark;
        frag.append(mark);
      } else if (part) {
        frag.append(part);
      }
    }
    node.replaceWith(frag);
  }
  for (const a of root.querySelectorAll("[href]")) a.setAttribute("href", a.getAttribute("href").replace(/[\uE000\uE001]/g, ""));
  return first;
}

/**
 * openPassage shows citation c ({index, document_id, filename, chunk,
 * start, end, text}) of an answer in the #passage dialog.
 */
export function openPassage(c, answer) {
  const dlg = document.querySelector("#passage");
  if (!dlg) return;
  const n = Number(c.index) || "";
  const quote = citedWords(answer, n);
  dlg.querySelector("#passage-title").textContent = `[${n}] ${c.filename || c.document_id}`;
  const mark = showPassage(dlg.querySelector("#passage-text"), c.text, quote);
  dlg.querySelector("#passage-where").textContent =
    `Chunk ${Number(c.chunk) || 0}, characters ${Number(c.start) || 0}–${Number(c.end) || 0} of the document` +
    (mark ? ". The sentence the answer cites is highlighted." : ".");
  dlg.showModal();
  mark?.scrollIntoView({ block: "nearest" });
}
