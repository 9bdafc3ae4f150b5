// A small, safe Markdown renderer for answers.
//
// Safety comes from the order of work: the whole source is HTML-escaped
// first, and only then are Markdown constructs turned into the few tags
// this file writes itself. No tag or attribute of the source survives.
// Link targets are kept only for http:, https: and mailto: URLs.
//
// Supported: ATX headings, fenced code blocks (``` or ~~~, an unclosed
// fence runs to the end, which suits streaming), unordered and ordered
// lists (nested by indentation), block quotes, horizontal rules,
// paragraphs with line breaks, **bold**, __bold__, *italic*, _italic_,
// ~~strike~~, `inline code`, [links](https://…) and bare https:// URLs.

const ESCAPES = { "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" };

/** escapeHTML escapes the five characters that matter in HTML text and attributes. */
export function escapeHTML(s) {
  return String(s).replace(/[&<>"']/g, (c) => ESCAPES[c]);
}

/** renderMarkdown returns safe HTML for the Markdown source src. */
export function renderMarkdown(src) {
  const text = escapeHTML(String(src ?? "").replace(/\r\n?/g, "\n").replace(/\u0000/g, ""));
  return blocks(text.split("\n"));
}

const FENCE = /^ {0,3}(`{3,}|~{3,})[ \t]*([\w+#.-]*)[^`]*$/;
const HEADING = /^ {0,3}(#{1,6})(?:[ \t]+(.*?))?(?:[ \t]+#+)?[ \t]*$/;
const RULE = /^ {0,3}([-*_])(?:[ \t]*\1){2,}[ \t]*$/;
const QUOTE = /^ {0,3}&gt;[ ]?(.*)$/;
const ITEM = /^( *)([-*+]|\d{1,9}[.)])[ \t]+(.*)$/;

// blocks renders escaped lines as block elements.
function blocks(lines) {
  const out = [];
  let i = 0;
  while (i < lines.length) {
    const line = lines[i];
    let m;
    if (line.trim() === "") {
      i++;
    } else if ((m = FENCE.exec(line))) {
      const fence = m[1];
      const lang = m[2];
      const body = [];
      i++;
      while (i < lines.length && !isFenceClose(lines[i], fence)) body.push(lines[i++]);
      i++; // the closing fence, if any
      const cls = lang ? ` class="language-${lang}"` : "";
      out.push(`<pre><code${cls}>${body.join("\n")}</code></pre>`);
    } else if ((m = HEADING.exec(line))) {
      const n = m[1].length;
      out.push(`<h${n}>${inline(m[2] || "")}</h${n}>`);
      i++;
    } else if (RULE.test(line)) {
      out.push("<hr>");
      i++;
    } else if (QUOTE.test(line)) {
      const inner = [];
      while (i < lines.length && (m = QUOTE.exec(lines[i]))) {
        inner.push(m[1]);
        i++;
      }
      out.push(`<blockquote>${blocks(inner)}</blockquote>`);
    } else if (ITEM.test(line)) {
      i = list(lines, i, out);
    } else {
      const para = [];
      while (i < lines.length && lines[i].trim() !== "" && !startsBlock(lines[i])) para.push(lines[i++].trim());
      out.push(`<p>${inline(para.join("\n")).replace(/\n/g, "<br>")}</p>`);
    }
  }
  return out.join("\n");
}

function isFenceClose(line, fence) {
  const t = line.trim();
  return t.length >= fence.length && t[0] === fence[0] && /^(`+|~+)$/.test(t);
}

function startsBlock(line) {
  return FENCE.test(line) || HEADING.test(line) || RULE.test(line) || QUOTE.test(line) || ITEM.test(line);
}

// list renders the list starting at lines[i] into out and returns the
// index after it. Items of one list share the marker kind and indent;
// lines indented deeper belong to the item above (nested lists included).
function list(lines, i, out) {
  const first = ITEM.exec(lines[i]);
  const indent = first[1].length;
  const ordered = /\d/.test(first[2]);
  const items = [];
  while (i < lines.length) {
    const m = ITEM.exec(lines[i]);
    if (!m || m[1].length !== indent || /\d/.test(m[2]) !== ordered) break;
    const item = { text: m[3], sub: [] };
    i++;
    while (i < lines.length) {
      const l = lines[i];
      if (l.trim() === "") {
        // A blank line ends the list unless the list goes on after it.
        const next = lines.slice(i + 1).find((x) => x.trim() !== "");
        const nm = next !== undefined ? ITEM.exec(next) : null;
        const deeper = next !== undefined && leading(next) > indent;
        if (!(nm && nm[1].length >= indent) && !deeper) break;
        i++;
        continue;
      }
      if (leading(l) <= indent) break;
      item.sub.push(l.slice(Math.min(leading(l), indent + 2)));
      i++;
    }
    items.push(item);
    const ahead = lines[i];
    if (ahead === undefined || ahead.trim() === "" || !ITEM.test(ahead)) break;
  }
  const start = ordered ? parseInt(first[2], 10) : 1;
  const open = ordered ? (start !== 1 ? `<ol start="${start}">` : "<ol>") : "<ul>";
  const body = items.map((it) => {
    const subText = [];
    const subBlocks = [];
    // Lines right after the marker that are not blocks continue its text.
    let j = 0;
    while (j < it.sub.length && !startsBlock(it.sub[j]) && it.sub[j].trim() !== "") subText.push(it.sub[j++].trim());
    const rest = it.sub.slice(j);
    if (rest.length) subBlocks.push(blocks(rest));
    const text = inline([it.text, ...subText].join("\n")).replace(/\n/g, "<br>");
    return `<li>${text}${subBlocks.join("")}</li>`;
  });
  out.push(`${open}${body.join("")}${ordered ? "</ol>" : "</ul>"}`);
  return i;
}

function leading(line) {
  return line.length - line.trimStart().length;
}

// inline formats one block's escaped text. Code spans and links are cut
// out into placeholders first, so nothing inside them is formatted again.
function inline(text) {
  const saved = [];
  const hold = (html) => `\u0000${saved.push(html) - 1}\u0000`;

  text = text.replace(/(`+)([^`]|[^`][\s\S]*?[^`])\1(?!`)/g, (_, ticks, code) => {
    const c = /^ [\s\S]* $/.test(code) && code.trim() !== "" ? code.slice(1, -1) : code;
    return hold(`<code>${c}</code>`);
  });
  // A URL may hold balanced parentheses, one level deep: (…/Go_(language)).
  text = text.replace(/\[([^\]\n]+)\]\([ \t]*((?:[^\s()]|\([^\s()]*\))+)(?:[ \t]+&quot;[^\n]*?&quot;)?[ \t]*\)/g, (whole, label, url) => {
    if (!safeURL(url)) return emphasis(label);
    return hold(`<a href="${url}" target="_blank" rel="noopener noreferrer nofollow">${emphasis(label)}</a>`);
  });
  text = text.replace(/\bhttps?:\/\/(?:[^\s&\u0000]|&amp;)+/g, (url) => {
    // Leave trailing punctuation to the sentence.
    const m = /^(.*?)((?:[.,;:!?)\]]|&#39;|&quot;)*)$/.exec(url);
    return hold(`<a href="${m[1]}" target="_blank" rel="noopener noreferrer nofollow">${m[1]}</a>`) + m[2];
  });
  text = emphasis(text);
  while (/\u0000\d+\u0000/.test(text)) text = text.replace(/\u0000(\d+)\u0000/g, (_, n) => saved[+n]);
  return text;
}

function emphasis(text) {
  return text
    .replace(/\*\*(?=\S)([\s\S]*?\S)\*\*/g, "<strong>$1</strong>")
    .replace(/(^|[^\w])__(?=\S)([\s\S]*?\S)__(?!\w)/g, "$1<strong>$2</strong>")
    .replace(/\*(?=[^\s*])([^*]*?[^\s*])\*/g, "<em>$1</em>")
    .replace(/\*(?=[^\s*])([^*])\*/g, "<em>$1</em>")
    .replace(/(^|[^\w])_(?=[^\s_])([^_]*?[^\s_]|[^\s_])_(?!\w)/g, "$1<em>$2</em>")
    .replace(/~~(?=\S)([\s\S]*?\S)~~/g, "<del>$1</del>");
}

// safeURL reports whether an escaped URL may become a link.
function safeURL(url) {
  return /^(https?:\/\/|mailto:)/i.test(url);
}
