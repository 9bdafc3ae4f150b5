// Server-sent events over fetch.
//
// EventSource cannot POST or send headers, and POST /api/v1/chat answers
// with a stream, so the page reads streams from fetch and parses them here,
// following the WHATWG event-stream rules: lines end in LF, CR or CRLF
// (even when a CRLF is split between two chunks), lines starting with ":"
// are comments, "id", "event", "data" and "retry" are fields, a blank line
// dispatches, and an event cut off by the end of the stream is dropped.

/** SSEParser turns decoded text, fed in chunks of any size, into events. */
export class SSEParser {
  constructor() {
    this.buffer = "";
    this.skipLF = false; // the last chunk ended in CR; a leading LF is its pair
    this.data = [];
    this.type = "";
    this.lastEventId = "";
    this.retry = null;
    this.comments = 0;
  }

  /**
   * push parses a chunk and returns the events it completes, each
   * {id, event, data}: id is the last id seen (the SSE rules), event
   * defaults to "message", data joins the data lines with "\n".
   */
  push(chunk) {
    const events = [];
    let s = this.buffer + chunk;
    this.buffer = "";
    let start = 0;
    if (this.skipLF && s.startsWith("\n")) start = 1;
    this.skipLF = false;
    for (let i = start; i < s.length; i++) {
      const c = s[i];
      if (c !== "\n" && c !== "\r") continue;
      this.line(s.slice(start, i), events);
      if (c === "\r") {
        if (i + 1 === s.length) this.skipLF = true;
        else if (s[i + 1] === "\n") i++;
      }
      start = i + 1;
    }
    this.buffer = s.slice(start);
    return events;
  }

  line(line, events) {
    if (line === "") {
      if (this.data.length > 0) {
        events.push({ id: this.lastEventId, event: this.type || "message", data: this.data.join("\n") });
      }
      this.data = [];
      this.type = "";
      return;
    }
    if (line.startsWith(":")) {
      this.comments++;
      return;
    }
    const colon = line.indexOf(":");
    const field = colon < 0 ? line : line.slice(0, colon);
    let value = colon < 0 ? "" : line.slice(colon + 1);
    if (value.startsWith(" ")) value = value.slice(1);
    switch (field) {
      case "data":
        this.data.push(value);
        break;
      case "event":
        this.type = value;
        break;
      case "id":
        if (!value.includes("\u0000")) this.lastEventId = value;
        break;
      case "retry":
        if (/^\d+$/.test(value)) this.retry = parseInt(value, 10);
        break;
      default: // unknown fields are ignored
    }
  }
}

/**
 * readEvents yields the events of a fetch Response's body as they arrive.
 * It calls onBytes on every chunk read (comments included), so a caller
 * can tell a live but idle stream from a dead one. It ends when the body
 * ends or signal aborts, and throws when reading fails (an aborted fetch
 * included).
 */
export async function* readEvents(response, { onBytes, signal } = {}) {
  const reader = response.body.getReader();
  const decoder = new TextDecoder("utf-8");
  const parser = new SSEParser();
  const stop = () => reader.cancel().catch(() => {});
  signal?.addEventListener("abort", stop);
  let first = true;
  try {
    if (signal?.aborted) return;
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      if (onBytes) onBytes();
      let text = decoder.decode(value, { stream: true });
      if (first && text) {
        if (text.charCodeAt(0) === 0xfeff) text = text.slice(1);
        first = false;
      }
      for (const ev of parser.push(text)) yield ev;
    }
    parser.push(decoder.decode());
  } finally {
    signal?.removeEventListener("abort", stop);
    stop();
  }
}
