// DOM helpers. Text always goes in as text nodes, never as HTML.

/**
 * el creates an element with attributes and children. Attribute values
 * are strings ("" for a boolean attribute); null and undefined skip the
 * attribute. Children are nodes or strings (added as text).
 */
export function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === null || v === undefined || v === false) continue;
    node.setAttribute(k, v === true ? "" : String(v));
  }
  for (const c of children) {
    if (c === null || c === undefined || c === false) continue;
    node.append(c instanceof Node ? c : String(c));
  }
  return node;
}

/** pretty formats a value as indented JSON, or returns a string as is. */
export function pretty(v) {
  if (typeof v === "string") return v;
  try {
    return JSON.stringify(v, null, 2) ?? String(v);
  } catch {
    return String(v);
  }
}

/** clip shortens long text for display. */
export function clip(s, n = 2000) {
  s = String(s ?? "");
  return s.length > n ? `${s.slice(0, n)}… (${s.length - n} more characters)` : s;
}
