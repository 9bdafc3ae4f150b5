// The memory panel: what the agent remembers of the user across
// conversations (GET /api/v1/me/memories), each memory with a button that
// forgets it, and one that forgets everything. It is read when the panel
// opens, so it shows what was learnt since.

import { APIError, path } from "./api.js";
import { el } from "./dom.js";

export class Memory {
  /** @param {object} ctx client, showError(err), announce(text). */
  constructor(ctx) {
    this.ctx = ctx;
    this.panel = document.querySelector("#memory-panel");
    this.list = document.querySelector("#memory-list");
    this.forgetAll = document.querySelector("#memory-forget-all");
    this.load = 0;
  }

  init() {
    this.panel.addEventListener("toggle", () => {
      if (this.panel.open) this.show();
    });
    this.forgetAll.addEventListener("click", () => this.removeAll());
  }

  /** show reads the memories (the first page, newest first) again. */
  async show() {
    const load = ++this.load;
    let data;
    try {
      data = await this.ctx.client.json("GET", "/api/v1/me/memories?limit=200");
    } catch (err) {
      if (load !== this.load) return;
      const off = err instanceof APIError && err.status === 404;
      this.list.replaceChildren(el("li", { class: "hint" }, off ? "Memory is off on this server." : "Memories could not be read."));
      this.forgetAll.hidden = true;
      return;
    }
    if (load !== this.load) return;
    const memories = Array.isArray(data?.memories) ? data.memories : [];
    this.forgetAll.hidden = memories.length === 0;
    if (memories.length === 0) {
      this.list.replaceChildren(el("li", { class: "hint" }, "Nothing is remembered about you yet."));
      return;
    }
    this.list.replaceChildren(...memories.map((m) => this.item(m)));
  }

  item(m) {
    const forget = el("button", { type: "button", class: "icon-button", "aria-label": `Forget: ${m.summary}`, title: "Forget this" }, "✕");
    const li = el("li", { "data-memory-id": m.id }, el("span", { class: "memory-summary" }, m.summary), forget);
    forget.addEventListener("click", async () => {
      forget.disabled = true;
      try {
        await this.ctx.client.json("DELETE", path`/api/v1/me/memories/${m.id}`);
      } catch (err) {
        // Gone already (another tab): the list is what matters.
        if (!(err instanceof APIError && err.status === 404)) {
          forget.disabled = false;
          this.ctx.showError(err);
          return;
        }
      }
      li.remove();
      this.ctx.announce("Forgotten.");
      if (!this.list.querySelector("li[data-memory-id]")) this.show();
    });
    return li;
  }

  async removeAll() {
    if (!window.confirm("Forget everything Trellis remembers about you?")) return;
    try {
      await this.ctx.client.json("DELETE", "/api/v1/me/memories");
    } catch (err) {
      this.ctx.showError(err);
      return;
    }
    this.ctx.announce("Everything is forgotten.");
    this.show();
  }
}
