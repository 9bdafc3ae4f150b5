// The task board beside the chat: the plan the agent keeps with
// write_todos (GET /conversations/{id}/tasks, then tasks.updated events),
// which the user may edit — a task's status or title, or its place —
// with PATCH /conversations/{id}/tasks/{task_id}, which answers the
// edited task; the page then reads the board again. Each task is
// {id, title, status, owner, position}, position its 0-based place on the
// board. The agent reads the board on its next turn.

import { path } from "./api.js";
import { el } from "./dom.js";

const STATUSES = [
  ["pending", "To do"],
  ["in_progress", "In progress"],
  ["done", "Done"],
];

export class Board {
  /**
   * @param {{client, root: HTMLElement, conversation: () => string|null, showError: (err) => void}} opts
   */
  constructor({ client, root, conversation, showError }) {
    this.client = client;
    this.conversation = conversation;
    this.showError = showError;
    this.cid = null;
    this.revision = -1;
    this.tasks = [];
    this.busy = false;
    this.list = el("ol", { id: "task-list", class: "task-list" });
    this.empty = el("p", { class: "hint", id: "task-empty" }, "No plan yet. For a task of several steps the agent writes one here.");
    root.append(this.empty, this.list);
  }

  /** load reads a conversation's board; null clears it. */
  async load(cid) {
    this.cid = cid;
    this.revision = -1;
    this.render([]);
    if (!cid) return;
    await this.refresh(cid);
  }

  /** refresh reads the board of conversation cid again. */
  async refresh(cid) {
    try {
      const b = await this.client.json("GET", path`/api/v1/conversations/${cid}/tasks`);
      if (this.cid === cid) this.show(b);
    } catch (err) {
      if (this.cid === cid && err.status !== 404) this.showError(err);
    }
  }

  /** apply takes a tasks.updated event of the current conversation. */
  apply(ev) {
    if (ev.type !== "tasks.updated") return;
    if (ev.conversation_id && this.cid && ev.conversation_id !== this.cid) return;
    if (!this.cid) this.cid = ev.conversation_id || this.conversation();
    this.show(ev);
  }

  show(b) {
    const rev = Number(b.revision) || 0;
    if (rev < this.revision) return; // an older board than the one shown
    this.revision = rev;
    const tasks = Array.isArray(b.tasks) ? [...b.tasks] : [];
    // The board's order is the tasks' positions.
    tasks.sort((a, c) => (Number(a.position) || 0) - (Number(c.position) || 0));
    this.render(tasks);
  }

  render(tasks) {
    this.tasks = tasks;
    this.empty.hidden = tasks.length > 0;
    this.list.replaceChildren(...tasks.map((t, i) => this.item(t, i, tasks.length)));
    this.setBusy(this.busy);
  }

  /**
   * setBusy disables the board's controls while a run goes or waits: the
   * server refuses edits then (409), since the run owns the plan.
   */
  setBusy(busy) {
    this.busy = busy;
    this.list.title = busy ? "The board can be edited once the run ends." : "";
    for (const c of this.list.querySelectorAll("select, textarea, button")) c.disabled = busy || c.hasAttribute("data-edge");
  }

  item(t, i, n) {
    const n1 = i + 1;
    const status = el("select", { class: "task-status", "aria-label": `Status of task ${n1}` },
      ...STATUSES.map(([v, label]) => el("option", { value: v, selected: v === t.status }, label)));
    status.addEventListener("change", () => this.edit(t.id, { status: status.value }));
    // A textarea, so a long title wraps and the field grows to show it
    // all; Enter saves rather than starting a line.
    const title = el("textarea", { class: "task-title", rows: "1", maxlength: "200", "aria-label": `Title of task ${n1}` }, t.title);
    const saveTitle = () => {
      const v = title.value.replace(/\s+/g, " ").trim();
      if (v && v !== t.title) this.edit(t.id, { title: v });
      else title.value = t.title;
    };
    title.addEventListener("change", saveTitle);
    title.addEventListener("keydown", (e) => {
      if (e.key === "Enter") {
        e.preventDefault();
        title.blur();
      }
    });
    const up = el("button", { type: "button", class: "icon-button task-up", "aria-label": `Move task ${n1} up`, "data-edge": i === 0 }, "↑");
    up.addEventListener("click", () => this.edit(t.id, { position: i - 1 }));
    const down = el("button", { type: "button", class: "icon-button task-down", "aria-label": `Move task ${n1} down`, "data-edge": i === n - 1 }, "↓");
    down.addEventListener("click", () => this.edit(t.id, { position: i + 1 }));
    return el("li", { class: "task", "data-task-id": t.id, "data-status": t.status },
      status, title,
      t.owner && t.owner !== "agent" ? el("span", { class: "badge task-owner", title: "Owner" }, t.owner) : null,
      el("span", { class: "task-move" }, up, down));
  }

  /**
   * edit sends one change; the answer is the edited task, so the page
   * reads the whole board again (a move shifts the others' positions).
   */
  async edit(taskId, change) {
    const cid = this.cid || this.conversation();
    if (!cid) return;
    // aria-busy while an edit is on its way, until the board is read again.
    this.pending = (this.pending || 0) + 1;
    this.list.setAttribute("aria-busy", "true");
    try {
      await this.client.json("PATCH", path`/api/v1/conversations/${cid}/tasks/${taskId}`, change);
      if (this.cid === cid) await this.refresh(cid);
    } catch (err) {
      this.showError(err);
      this.render(this.tasks); // put the controls back as the board is
    } finally {
      if (--this.pending === 0) this.list.removeAttribute("aria-busy");
    }
  }
}
