// The current conversation's documents: attach (a button or a file
// dropped on the chat), the list with each document's status, and
// removal. Statuses change live from document.status events on the
// conversation's open stream; while no stream is open and a document is
// still being processed, the list is read again every second.

import { APIError, path } from "./api.js";
import { el } from "./dom.js";

const FINAL = new Set(["ready", "error"]);
const POLL_MS = 1000;

const LABELS = {
  uploading: "Uploading…",
  chunking: "Reading…",
  summarizing: "Summarizing…",
  ready: "Ready",
  error: "Failed",
};

export class Documents {
  /**
   * @param {object} ctx client, conversation() (the current id or null),
   * onConversation(id) (an upload made a new conversation), streaming()
   * (whether a stream of the conversation is open), showError(err),
   * announce(text).
   */
  constructor(ctx) {
    this.ctx = ctx;
    this.docs = new Map(); // document_id → document
    this.cid = null;
    this.load = 0;
    this.timer = 0;
    this.uploading = 0; // uploads in flight
    this.early = new Map(); // document_id → a status event that came before its upload's answer
    this.section = document.querySelector("#documents");
    this.list = document.querySelector("#document-list");
    this.input = document.querySelector("#document-input");
    this.attach = document.querySelector("#attach");
  }

  init(dropTarget) {
    this.attach.addEventListener("click", () => this.input.click());
    this.input.addEventListener("change", () => {
      const files = [...this.input.files];
      this.input.value = "";
      this.uploadAll(files);
    });
    let depth = 0;
    const hasFiles = (e) => [...(e.dataTransfer?.types || [])].includes("Files");
    dropTarget.addEventListener("dragenter", (e) => {
      if (!hasFiles(e)) return;
      e.preventDefault();
      depth++;
      dropTarget.classList.add("dropping");
    });
    dropTarget.addEventListener("dragover", (e) => {
      if (!hasFiles(e)) return;
      e.preventDefault();
      e.dataTransfer.dropEffect = "copy";
    });
    dropTarget.addEventListener("dragleave", () => {
      depth = Math.max(0, depth - 1);
      if (depth === 0) dropTarget.classList.remove("dropping");
    });
    dropTarget.addEventListener("drop", (e) => {
      depth = 0;
      dropTarget.classList.remove("dropping");
      const files = [...(e.dataTransfer?.files || [])];
      if (files.length === 0) return;
      e.preventDefault();
      this.uploadAll(files);
    });
    this.list.addEventListener("click", (e) => {
      const b = e.target.closest("button[data-remove]");
      if (b) this.remove(b.dataset.remove);
    });
  }

  /** show loads the documents of conversation cid (null: none). */
  async show(cid) {
    this.cid = cid;
    this.docs.clear();
    const load = ++this.load;
    this.render();
    if (cid) await this.refresh(load);
  }

  /** refresh reads the conversation's list again. */
  async refresh(load = this.load) {
    const cid = this.cid;
    if (!cid) return;
    const data = { documents: [] };
    try {
      // The list comes in pages (X-Next-Cursor names the next one).
      for (let cursor = ""; ; ) {
        const resp = await this.ctx.client.send("GET", path`/api/v1/documents/${cid}?limit=200&cursor=${cursor}`);
        const page = await resp.json();
        if (Array.isArray(page?.documents)) data.documents.push(...page.documents);
        cursor = resp.headers.get("X-Next-Cursor") || "";
        if (!cursor) break;
      }
    } catch (err) {
      // A conversation with no documents yet may not be known here;
      // only a failure the user can act on is shown.
      if (err instanceof APIError && (err.status === 401 || err.status === 0)) this.ctx.showError(err);
      this.schedule();
      return;
    }
    if (load !== this.load || cid !== this.cid) return;
    this.docs.clear();
    for (const d of Array.isArray(data?.documents) ? data.documents : []) this.docs.set(d.document_id, d);
    this.render();
  }

  /** apply takes a document.status event; it reports whether it was used. */
  apply(ev) {
    if (!ev || ev.type !== "document.status" || (ev.conversation_id && ev.conversation_id !== this.cid)) return false;
    const d = this.docs.get(ev.document_id);
    if (!d) {
      if (this.uploading > 0) this.early.set(ev.document_id, ev); // likely ours, still being answered
      else this.refresh(); // uploaded elsewhere: read the list
      return true;
    }
    if (d.status !== ev.status) this.announceStatus(d, ev.status);
    d.status = ev.status;
    d.error = ev.error || "";
    this.render();
    return true;
  }

  async uploadAll(files) {
    for (const f of files) {
      if (!(await this.upload(f))) return;
    }
  }

  /** upload posts one file; it reports whether it was accepted. */
  async upload(file) {
    const form = new FormData();
    form.append("file", file, file.name);
    const cid = this.ctx.conversation();
    if (cid) form.append("conversation_id", cid);
    let d;
    this.uploading++;
    try {
      d = await this.ctx.client.upload("/api/v1/documents", form);
    } catch (err) {
      this.ctx.showError(uploadError(err, file));
      return false;
    } finally {
      this.uploading--;
    }
    if (d.conversation_id && d.conversation_id !== this.cid) {
      this.cid = d.conversation_id;
      this.docs.clear();
      this.load++;
      this.ctx.onConversation(d.conversation_id);
    }
    this.docs.set(d.document_id, { ...d, error: "" });
    const early = this.early.get(d.document_id);
    this.early.clear();
    if (early) {
      this.apply(early);
      return true;
    }
    this.ctx.announce(`${d.filename} uploaded; processing it.`);
    this.render();
    return true;
  }

  async remove(id) {
    const d = this.docs.get(id);
    if (!d || !this.cid) return;
    try {
      await this.ctx.client.json("DELETE", path`/api/v1/documents/${this.cid}/${id}`);
    } catch (err) {
      if (!(err instanceof APIError && err.status === 404)) {
        this.ctx.showError(err);
        return;
      }
    }
    this.docs.delete(id);
    this.ctx.announce(`${d.filename} removed.`);
    this.render();
  }

  announceStatus(d, status) {
    if (status === "ready") this.ctx.announce(`${d.filename} is ready.`);
    else if (status === "error") this.ctx.announce(`${d.filename} could not be processed.`);
  }

  render() {
    this.section.hidden = this.docs.size === 0;
    this.list.replaceChildren(...[...this.docs.values()].map((d) => {
      const status = String(d.status || "uploading");
      const label = LABELS[status] || status;
      return el("li", { class: "document", "data-id": d.document_id, "data-status": status },
        el("span", { class: "doc-name", title: d.filename }, d.filename),
        el("span", { class: `doc-status ${status}`, role: "status" }, label),
        status === "error" && d.error ? el("span", { class: "doc-error" }, d.error) : null,
        el("button", { type: "button", class: "icon-button", "data-remove": d.document_id, "aria-label": `Remove ${d.filename}` }, "✕"));
    }));
    this.schedule();
  }

  /** schedule reads the list again while a document is being processed and no stream carries its events. */
  schedule() {
    clearTimeout(this.timer);
    this.timer = 0;
    if (!this.cid || ![...this.docs.values()].some((d) => !FINAL.has(d.status))) return;
    this.timer = setTimeout(() => {
      if (this.ctx.streaming()) this.schedule();
      else this.refresh();
    }, POLL_MS);
  }
}

/** uploadError words a refused upload for the banner. */
function uploadError(err, file) {
  if (!(err instanceof APIError)) return err;
  const prefix = {
    413: `${file.name} is too large.`,
    415: `${file.name} is not a type Trellis can read.`,
    409: `${file.name} was not added: this conversation holds as many documents as it may.`,
  }[err.status];
  return prefix ? new APIError(err.status, err.code, `${prefix} ${err.message}`) : err;
}
