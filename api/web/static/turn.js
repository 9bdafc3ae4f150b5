// One turn of the conversation: the user's message and everything one run
// produced, rendered from the run's events (API.md, "Event types"). The
// same code renders a live stream and a conversation's stored history, so
// a reloaded page looks like the live one.
//
// Events are deduplicated by seq: a reconnect or a replay may repeat
// events, and apply ignores any event whose seq is not above the last one
// applied.

import { ApprovalCard, ElicitationCard, OUTCOMES, UncertainCallCard } from "./cards.js";
import { path } from "./api.js";
import { clip, el, pretty } from "./dom.js";
import { renderMarkdown } from "./markdown.js";
import { openPassage } from "./passage.js";

export const TERMINAL = new Set(["run.completed", "run.interrupted", "run.cancelled", "run.failed"]);

const STATUS = {
  pending: "Sending…",
  running: "Working…",
  completed: "Done",
  cancelled: "Cancelled",
  failed: "Failed",
  interrupted: "Paused",
};

let counter = 0;

export class Turn {
  /**
   * @param {{runId?: string, message: string, superseded?: boolean}} init
   * @param {{client, onAnswered(turn), onRerun(turn, text): Promise<boolean>, canEdit(turn): boolean,
   *   onRetry(turn), onBranch(turn, step), announce(text)}} ctx
   */
  constructor(init, ctx) {
    this.ctx = ctx;
    this.runId = init.runId || "";
    this.conversationId = ""; // from the run's events
    this.message = init.message || "";
    this.lastSeq = 0;
    this.answer = "";
    this.shown = []; // what operators showed directly (direct.response), as text
    this.renderQueued = false;
    this.tools = new Map(); // tool_call_id → activity entry
    this.nodes = new Map(); // node → its running entry
    this.cards = new Map(); // approval or elicitation id → card
    this.thoughts = new Map(); // namespace|node → the reasoning block of its model call under way
    this.waitingOn = ""; // "approval", "elicitation", "clarification", "uncertain_call" while interrupted
    const n = ++counter;

    this.element = el("li", { class: "turn", "data-state": "pending" });
    if (this.runId) this.element.dataset.runId = this.runId;

    // The user's message, with edit-and-rerun.
    this.editButton = el("button", { type: "button", class: "link-button", "data-action": "edit-message", "aria-label": "Edit this message and rerun it" }, "Edit");
    this.editButton.addEventListener("click", () => this.startEdit());
    this.userText = el("div", { class: "msg-text" }, this.message || "(message not shown)");
    // "< i / n >" on a message edited into several versions: each arrow
    // makes the branch of the version beside this one the active one.
    this.prevBranch = el("button", { type: "button", class: "link-button", "data-action": "prev-branch", "aria-label": "Show the previous version of this message" }, "<");
    this.nextBranch = el("button", { type: "button", class: "link-button", "data-action": "next-branch", "aria-label": "Show the next version of this message" }, ">");
    this.branchLabel = el("span", { class: "branch-label" }, "");
    this.prevBranch.addEventListener("click", () => this.ctx.onBranch(this, -1));
    this.nextBranch.addEventListener("click", () => this.ctx.onBranch(this, 1));
    this.branchNav = el("span", { class: "branch-nav", role: "group", "aria-label": "Versions of this message", hidden: true },
      this.prevBranch, this.branchLabel, this.nextBranch);
    this.userBox = el("div", { class: "msg user-msg" },
      el("div", { class: "msg-head" }, el("span", { class: "who" }, "You"), this.branchNav, this.editButton),
      this.userText);

    // The assistant's side.
    this.statusLine = el("span", { class: "turn-status" }, STATUS.pending);
    this.activityCount = el("span", { class: "count" }, "");
    this.activityLog = el("ol", { class: "activity-log" });
    this.activity = el("details", { class: "activity", open: true },
      el("summary", {}, "Activity ", this.activityCount), this.activityLog);
    this.activity.hidden = true;
    // The model's reasoning (reasoning.chunk), one block per node that
    // thought, collapsed: the answer is what the user asked for.
    this.thinkingLabel = el("span", {}, "Thinking");
    this.thinkingLog = el("div", { class: "thinking-log" });
    this.thinking = el("details", { class: "thinking" },
      el("summary", {}, this.thinkingLabel), this.thinkingLog);
    this.thinking.hidden = true;
    // Approve all: shown while more than one approval of the run waits
    // (parallel sub-agents ask at once); one request answers them all.
    this.approveAllButton = el("button", { type: "button", class: "primary", "data-action": "approve-all", hidden: true }, "Approve all");
    this.approveAllButton.addEventListener("click", () => this.approveAll());
    this.cardsBox = el("div", { class: "cards" }, this.approveAllButton);
    this.directBox = el("div", { class: "direct" });
    this.answerBox = el("div", { class: "answer markdown", id: `answer-${n}`, "aria-live": "polite", "aria-busy": "true", "aria-label": "Answer" });
    this.citations = el("ol", { class: "citations", "aria-label": "Sources", hidden: true });
    this.failure = el("div", { class: "run-error", role: "alert", hidden: true });
    // Retry takes a failed turn up again where it failed, as a new run.
    this.retryButton = el("button", { type: "button", "data-action": "retry", hidden: true }, "Retry");
    this.retryButton.addEventListener("click", () => this.ctx.onRetry(this));
    this.usage = el("span", { class: "usage" });
    this.supersededNote = el("p", { class: "superseded-note", hidden: true });
    this.element.append(
      this.userBox,
      el("div", { class: "msg assistant-msg" },
        el("div", { class: "msg-head" }, el("span", { class: "who" }, "Trellis"), this.statusLine),
        this.supersededNote, this.activity, this.thinking, this.cardsBox, this.directBox, this.answerBox,
        this.citations, this.failure, this.retryButton,
        el("div", { class: "turn-foot" }, this.usage)));
  }

  get state() {
    return this.element.dataset.state;
  }

  /** active reports whether the run may still produce events or wait on the user. */
  get active() {
    const s = this.state;
    return !this.superseded && (s === "pending" || s === "running" || (s === "interrupted" && this.waitingOn !== "clarification"));
  }

  get superseded() {
    return this.element.classList.contains("superseded");
  }

  setRunId(id) {
    if (!id || this.runId) return;
    this.runId = id;
    this.element.dataset.runId = id;
  }

  setState(s, text) {
    this.element.dataset.state = s;
    this.statusLine.textContent = text || STATUS[s] || s;
    this.thinkingLabel.textContent = s === "running" && this.thoughts.size > 0 ? "Thinking…" : "Thinking";
    this.answerBox.setAttribute("aria-busy", String(s === "pending" || s === "running"));
    this.refreshControls();
  }

  refreshControls() {
    this.editButton.hidden = !this.runId || this.superseded || this.active;
    this.editButton.disabled = !this.ctx.canEdit(this);
    const waiting = this.pendingApprovals().length;
    this.approveAllButton.hidden = waiting < 2;
    this.approveAllButton.textContent = `Approve all (${waiting})`;
    this.retryButton.hidden = this.state !== "failed" || this.superseded || !this.runId;
    this.retryButton.disabled = !this.ctx.canEdit(this);
    this.branchNav.hidden = !this.versions || this.versions.count < 2 || this.superseded;
    if (this.versions) {
      this.branchLabel.textContent = `${this.versions.index} / ${this.versions.count}`;
      this.prevBranch.disabled = !this.ctx.canEdit(this) || this.versions.index <= 1;
      this.nextBranch.disabled = !this.ctx.canEdit(this) || this.versions.index >= this.versions.count;
    }
  }

  /** pendingApprovals are the approval cards still waiting for an answer. */
  pendingApprovals() {
    return [...this.cards.values()].filter((c) => c instanceof ApprovalCard && c.state === "pending");
  }

  /**
   * approveAll approves every waiting approval of the run in one request
   * (POST …/runs/{run_id}/answers): all of them or, refused, none.
   */
  async approveAll() {
    const cards = this.pendingApprovals();
    if (cards.length < 2 || !this.conversationId || !this.runId) return;
    for (const c of cards) c.setState("sending");
    this.approveAllButton.disabled = true;
    try {
      await this.ctx.client.json("POST", path`/api/v1/conversations/${this.conversationId}/runs/${this.runId}/answers`,
        { answers: cards.map((c) => ({ approval_id: c.approvalId, decision: "approve" })) });
    } catch (err) {
      for (const c of cards) c.setState("pending");
      cards[0].showError(`Nothing was approved: ${err.message || String(err)}`);
      return;
    } finally {
      this.approveAllButton.disabled = false;
      this.refreshControls();
    }
    for (const c of cards) c.finish("resolved", "Approved. The run continues.");
    this.refreshControls();
    this.ctx.onAnswered(this);
  }

  /** markSuperseded greys the turn out: an edit replaced it. */
  markSuperseded(note = "Superseded by an edit further down.") {
    this.element.classList.add("superseded");
    this.supersededNote.textContent = note;
    this.supersededNote.hidden = false;
    this.activity.open = false;
    for (const card of this.cards.values()) card.expire("No longer needed: the message was edited.");
    this.refreshControls();
  }

  /**
   * apply renders one event and returns whether it was new. replay is
   * true for events from stored history.
   */
  apply(ev, replay = false) {
    if (!ev || typeof ev.type !== "string") return false;
    const seq = Number(ev.seq);
    if (Number.isFinite(seq) && seq > 0) {
      if (seq <= this.lastSeq) return false;
      this.lastSeq = seq;
    }
    this.setRunId(ev.run_id);
    if (this.state === "pending" || (this.state === "interrupted" && !TERMINAL.has(ev.type))) {
      this.waitingOn = "";
      this.setState("running");
    }
    const handler = HANDLERS[ev.type];
    if (handler) handler.call(this, ev, replay);
    else this.log("act-other", `Event ${ev.type}`);
    return true;
  }

  /** finishReplay completes a turn built from history with the run's record. */
  finishReplay(run) {
    if (run.usage && !this.usage.textContent) this.setUsage(run.usage);
    const v = run.versions;
    if (v && Number.isInteger(v.index) && Number.isInteger(v.count)) this.versions = { index: v.index, count: v.count };
    if (run.superseded) this.markSuperseded();
    if (this.state === "pending" || this.state === "running") {
      const s = String(run.status || "");
      if (["completed", "cancelled", "failed"].includes(s)) this.close(s);
      else this.setState(s === "interrupted" ? "interrupted" : "running");
    }
    this.renderAnswer();
    this.activity.open = this.state === "running";
  }

  // --- rendering helpers ---

  log(kind, ...content) {
    const item = el("li", { class: `act ${kind}` }, ...content);
    this.activityLog.append(item);
    this.activity.hidden = false;
    this.activityCount.textContent = `(${this.activityLog.children.length})`;
    return item;
  }

  queueAnswer() {
    if (this.renderQueued) return;
    this.renderQueued = true;
    requestAnimationFrame(() => this.renderAnswer());
  }

  renderAnswer() {
    this.renderQueued = false;
    this.answerBox.innerHTML = renderMarkdown(this.answer);
    this.answerBox.hidden = this.answer === "";
  }

  setUsage(u) {
    if (!u || typeof u !== "object") return;
    const n = (k) => Number(u[k]) || 0;
    const total = n("total_tokens") || n("input_tokens") + n("output_tokens");
    if (!total) return;
    const parts = [`${n("input_tokens").toLocaleString()} in`, `${n("output_tokens").toLocaleString()} out`];
    if (n("thinking_tokens")) parts.push(`${n("thinking_tokens").toLocaleString()} thinking`);
    if (n("cache_read_tokens")) parts.push(`${n("cache_read_tokens").toLocaleString()} cached`);
    this.usage.textContent = `Tokens: ${parts.join(" · ")} · ${total.toLocaleString()} total`;
    this.usage.title = ["input_tokens", "output_tokens", "thinking_tokens", "cache_read_tokens", "cache_write_tokens", "total_tokens"]
      .map((k) => `${k}: ${n(k)}`).join("\n");
  }

  /** close ends the turn in a final state and retires what waited. */
  close(state, text) {
    this.setState(state, text);
    this.activity.open = false;
    this.renderAnswer();
    if (state !== "interrupted") {
      for (const card of this.cards.values()) card.expire(`No longer needed: the run ${state === "completed" ? "finished" : state}.`);
    }
    this.refreshControls();
  }

  /**
   * thought returns the reasoning block of a node's model call under way,
   * starting one; the block's text is plain text, never markup.
   */
  thought(ev) {
    const key = `${ev.namespace || ""}|${ev.node}`;
    let t = this.thoughts.get(key);
    if (!t) {
      const who = ev.namespace ? `${ev.namespace} › ${ev.node}` : ev.node;
      t = { text: el("p", { class: "thought-text" }), item: null };
      t.item = el("div", { class: "thought" }, el("span", { class: "thought-node" }, String(who || "model")), t.text);
      this.thinkingLog.append(t.item);
      this.thoughts.set(key, t);
      this.thinking.hidden = false;
      this.thinkingLabel.textContent = "Thinking…";
    }
    return t;
  }

  // --- edit and rerun ---

  startEdit() {
    if (this.editor || !this.ctx.canEdit(this)) return;
    const id = `${this.element.dataset.runId}-edit`.replace(/[^\w-]/g, "_");
    const input = el("textarea", { id, rows: "3" }, this.message);
    const error = el("p", { class: "card-error", role: "alert", hidden: true });
    const form = el("form", { class: "msg-editor" },
      el("label", { for: id }, "Edit your message; the conversation continues from here"),
      input, error,
      el("div", { class: "form-actions" },
        el("button", { type: "submit", class: "primary", "data-action": "rerun" }, "Rerun"),
        el("button", { type: "button", "data-action": "cancel-edit" }, "Cancel")));
    const stop = () => {
      form.remove();
      this.editor = null;
      this.userText.hidden = false;
      this.editButton.focus();
    };
    form.querySelector('[data-action="cancel-edit"]').addEventListener("click", stop);
    input.addEventListener("keydown", (e) => {
      if (e.key === "Escape") {
        e.preventDefault();
        stop();
      } else if (e.key === "Enter" && !e.shiftKey && !e.isComposing) {
        e.preventDefault();
        form.requestSubmit();
      }
    });
    form.addEventListener("submit", async (e) => {
      e.preventDefault();
      const text = input.value.trim();
      if (!text) return;
      for (const b of form.querySelectorAll("button")) b.disabled = true;
      const err = await this.ctx.onRerun(this, text);
      if (!err) {
        form.remove();
        this.editor = null;
        this.userText.hidden = false;
        return;
      }
      error.textContent = err;
      error.hidden = false;
      for (const b of form.querySelectorAll("button")) b.disabled = false;
    });
    this.editor = form;
    this.userText.hidden = true;
    this.userBox.append(form);
    input.focus();
    input.setSelectionRange(input.value.length, input.value.length);
  }
}

// HANDLERS render each event type; `this` is the Turn.
const HANDLERS = {
  "file.changed"(ev) {
    const what = { write: "Wrote", edit: "Edited", delete: "Deleted", restore: "Restored" }[ev.op] || "Changed";
    this.log("act-other", el("span", { class: "icon", "aria-hidden": "true" }, "🗎"), ` ${what} file `, el("code", {}, ev.path),
      ev.op === "delete" ? "" : el("span", { class: "act-meta" }, ` v${ev.version}`));
  },
  "run.started"() {
    this.setState("running");
  },
  "node.start"(ev) {
    const who = ev.namespace ? `${ev.namespace} › ` : "";
    const item = this.log("act-node", el("span", { class: "icon", "aria-hidden": "true" }, "▸"), " ", who, el("code", {}, ev.node), el("span", { class: "act-meta" }, " running"));
    this.nodes.set(`${ev.namespace || ""}|${ev.node}`, item); // a sub-agent's nodes have the same names
  },
  "node.end"(ev) {
    const key = `${ev.namespace || ""}|${ev.node}`;
    if (ev.reasoning || this.thoughts.has(key)) {
      // The node's whole reasoning: it completes chunks a page that
      // joined late missed.
      const t = this.thought(ev);
      if (ev.reasoning) t.text.textContent = String(ev.reasoning);
      this.thoughts.delete(key);
      if (this.thoughts.size === 0) this.thinkingLabel.textContent = "Thinking";
    }
    const item = this.nodes.get(key);
    const text = ev.duration_ms !== undefined ? ` ${ev.duration_ms} ms` : " done";
    if (!item) {
      this.log("act-node done", el("span", { class: "icon", "aria-hidden": "true" }, "✓"), " ", el("code", {}, ev.node), el("span", { class: "act-meta" }, text));
      return;
    }
    item.classList.add("done");
    item.querySelector(".icon").textContent = "✓";
    item.querySelector(".act-meta").textContent = text;
    this.nodes.delete(key);
  },
  "subagent.start"(ev) {
    this.log("act-other", el("span", { class: "icon", "aria-hidden": "true" }, "⇲"), ` Sub-agent ${ev.subagent || ev.namespace}`, ev.task ? `: ${ev.task}` : "");
  },
  "subagent.end"(ev) {
    this.log("act-other", el("span", { class: "icon", "aria-hidden": "true" }, "⇱"), ` Sub-agent ${ev.subagent || ev.namespace} ${ev.status || "ended"}`);
  },
  "tasks.updated"(ev) {
    const n = Array.isArray(ev.tasks) ? ev.tasks.length : 0;
    this.log("act-other", el("span", { class: "icon", "aria-hidden": "true" }, "☰"), ` Task board: ${n} task${n === 1 ? "" : "s"}`);
  },
  "supervisor.thinking"(ev) {
    // The supervisor begins deciding; the model's own thinking, if any,
    // is under "Thinking" (reasoning.chunk).
    this.log("act-think", el("span", { class: "icon", "aria-hidden": "true" }, "…"), " ", ev.message || "Deciding…");
  },
  "supervisor.decided"(ev) {
    const tools = Array.isArray(ev.tools) && ev.tools.length ? ` (${ev.tools.join(", ")})` : "";
    const item = this.log("act-decide", el("span", { class: "icon", "aria-hidden": "true" }, "→"), ` Decided: ${String(ev.action || "").replace(/_/g, " ")}${tools}`);
    if (ev.reasoning) item.append(el("details", {}, el("summary", {}, "Reasoning"), el("p", { class: "reasoning" }, ev.reasoning)));
  },
  "tool.start"(ev) {
    const status = el("span", { class: "act-meta tool-status" }, " running…");
    const item = this.log("act-tool",
      el("span", { class: "icon", "aria-hidden": "true" }, "⚙"), " ", el("code", {}, ev.tool || "tool"),
      ev.source ? el("span", { class: "badge" }, ev.source) : "", status);
    item.dataset.toolCallId = ev.tool_call_id || "";
    if (ev.args !== undefined && ev.args !== null) {
      item.append(el("details", {}, el("summary", {}, "Arguments"), el("pre", {}, clip(pretty(ev.args)))));
    }
    this.tools.set(ev.tool_call_id, item);
  },
  "tool.progress"(ev) {
    let item = this.tools.get(ev.tool_call_id);
    if (!item) {
      HANDLERS["tool.start"].call(this, { tool_call_id: ev.tool_call_id, tool: ev.tool || "tool" });
      item = this.tools.get(ev.tool_call_id);
    }
    let bar = item.querySelector("progress");
    let label = item.querySelector(".progress-label");
    if (!bar) {
      const pid = `progress-${++counter}`;
      label = el("span", { class: "progress-label", id: `${pid}-label` });
      bar = el("progress", { "aria-labelledby": `${pid}-label` });
      item.append(el("div", { class: "progress-row" }, bar, label));
    }
    const total = Number(ev.total);
    const done = Number(ev.progress);
    if (total > 0 && Number.isFinite(done)) {
      bar.max = total;
      bar.value = Math.min(done, total);
    } else {
      bar.removeAttribute("value"); // indeterminate
    }
    const count = total > 0 ? `${done} / ${total}` : Number.isFinite(done) ? String(done) : "";
    label.textContent = [count, ev.message].filter(Boolean).join(" — ") || "In progress";
  },
  "tool.complete"(ev) {
    const item = this.tools.get(ev.tool_call_id) || (HANDLERS["tool.start"].call(this, ev), this.tools.get(ev.tool_call_id));
    item.classList.add("done");
    item.querySelector(".icon").textContent = "✓";
    item.querySelector(".tool-status").textContent = ev.duration_ms !== undefined ? ` done in ${ev.duration_ms} ms` : " done";
    const bar = item.querySelector("progress");
    if (bar && bar.hasAttribute("value")) bar.value = bar.max;
    if (ev.result !== undefined && ev.result !== null && ev.result !== "") {
      item.append(el("details", {}, el("summary", {}, "Result"), el("pre", {}, clip(pretty(ev.result)))));
    }
  },
  "tool.error"(ev) {
    const item = this.tools.get(ev.tool_call_id) || (HANDLERS["tool.start"].call(this, ev), this.tools.get(ev.tool_call_id));
    item.classList.add("failed");
    item.querySelector(".icon").textContent = "✗";
    item.querySelector(".tool-status").textContent = " failed";
    item.append(el("p", { class: "tool-error" }, String(ev.error ?? "unknown error")));
  },
  "approval.required"(ev, replay) {
    this.log("act-approval", el("span", { class: "icon", "aria-hidden": "true" }, "?"), " Approval requested for ", el("code", {}, ev.tool || "tool"));
    if (this.cards.has(ev.approval_id)) return;
    const card = new ApprovalCard(ev, { client: this.ctx.client, onAnswered: () => {
      this.refreshControls();
      this.ctx.onAnswered(this);
    } });
    this.conversationId = ev.conversation_id;
    this.cards.set(ev.approval_id, card);
    this.cardsBox.append(card.element);
    this.refreshControls();
    if (!replay) this.ctx.announce(`Approval needed to run ${ev.tool || "a tool"}.`);
  },
  "approval.expired"(ev) {
    this.log("act-approval", el("span", { class: "icon", "aria-hidden": "true" }, "⌛"), ` Approval expired with no answer: ${OUTCOMES[ev.outcome] || ev.outcome}`);
    this.cards.get(ev.approval_id)?.expired(ev);
  },
  "approval.resolved"(ev) {
    this.log("act-approval", el("span", { class: "icon", "aria-hidden": "true" }, "✓"), ` Approval ${ev.decision === "reject" ? "rejected" : ev.decision === "edit" ? "given with edited arguments" : "given"}`);
    this.cards.get(ev.approval_id)?.resolve(ev);
    this.refreshControls();
  },
  "tool.uncertain"(ev, replay) {
    this.log("act-approval", el("span", { class: "icon", "aria-hidden": "true" }, "?"), " ", el("code", {}, ev.tool || "tool"), " may have run: your decision is needed");
    if (this.cards.has(ev.uncertain_call_id)) return;
    const card = new UncertainCallCard(ev, { client: this.ctx.client, onAnswered: () => this.ctx.onAnswered(this) });
    this.cards.set(ev.uncertain_call_id, card);
    this.cardsBox.append(card.element);
    if (!replay) this.ctx.announce(`${ev.tool || "A tool"} may have run before the service stopped; decide what to do with it.`);
  },
  "uncertain_call.expired"(ev) {
    this.log("act-approval", el("span", { class: "icon", "aria-hidden": "true" }, "⌛"), ` Nobody decided on the call that may have run in time: ${OUTCOMES[ev.outcome] || ev.outcome}`);
    this.cards.get(ev.uncertain_call_id)?.expired(ev);
  },
  "clarification.expired"(ev) {
    this.log("act-approval", el("span", { class: "icon", "aria-hidden": "true" }, "⌛"), ` The question expired with no answer: ${OUTCOMES[ev.outcome] || ev.outcome}`);
  },
  "uncertain_call.resolved"(ev) {
    const decided = { retry: "run again", skip: "skipped", fail: "treated as failed" }[ev.decision] || ev.decision;
    this.log("act-approval", el("span", { class: "icon", "aria-hidden": "true" }, "✓"), ` The call that may have run: ${decided}`);
    this.cards.get(ev.uncertain_call_id)?.resolve(ev);
  },
  "elicitation.request"(ev, replay) {
    this.log("act-elicit", el("span", { class: "icon", "aria-hidden": "true" }, "?"), ` Input requested${ev.source ? ` by ${ev.source}` : ""}`);
    if (this.cards.has(ev.elicitation_id)) return;
    const card = new ElicitationCard(ev, { client: this.ctx.client, onAnswered: () => this.ctx.onAnswered(this) });
    this.cards.set(ev.elicitation_id, card);
    this.cardsBox.append(card.element);
    if (!replay) this.ctx.announce("A tool asks for your input.");
  },
  "elicitation.expired"(ev) {
    this.log("act-elicit", el("span", { class: "icon", "aria-hidden": "true" }, "⌛"), ` Input request expired with no answer: ${OUTCOMES[ev.outcome] || ev.outcome}`);
    this.cards.get(ev.elicitation_id)?.expired(ev);
  },
  "elicitation.response"(ev) {
    this.log("act-elicit", el("span", { class: "icon", "aria-hidden": "true" }, "✓"), ` Input ${ev.action === "accept" ? "given" : ev.action === "decline" ? "declined" : "cancelled"}`);
    this.cards.get(ev.elicitation_id)?.resolve(ev);
  },
  "direct.response"(ev) {
    const type = ev.content_type || "text";
    this.log("act-direct", el("span", { class: "icon", "aria-hidden": "true" }, "↩"), ` Direct response (${type}${ev.widget_type ? `: ${ev.widget_type}` : ""})`);
    this.directBox.append(renderDirect(ev));
    this.shown.push(shownText(ev));
  },
  "reasoning.chunk"(ev) {
    this.thought(ev).text.textContent += String(ev.content ?? "");
  },
  "response.chunk"(ev) {
    this.answer += String(ev.content ?? "");
    this.queueAnswer();
  },
  "response.done"(ev) {
    // When operators answered directly and nothing was written after,
    // the answer is what they showed, joined; it is on the page already.
    const echo = this.answer === "" && this.shown.length > 0 && ev.content === this.shown.join("\n\n");
    if (typeof ev.content === "string" && ev.content !== "" && !echo) this.answer = ev.content;
    this.renderAnswer();
    renderCitations(this.citations, ev.citations, this.answer);
    this.setUsage(ev.usage);
  },
  "run.completed"(ev) {
    this.setUsage(ev.usage);
    this.close("completed");
  },
  "run.interrupted"(ev, replay) {
    this.waitingOn = ev.reason || "";
    const text = {
      approval: "Waiting for your approval",
      elicitation: "Waiting for your input",
      clarification: "Waiting for your answer",
      uncertain_call: "Waiting for your decision",
    }[ev.reason] || "Paused";
    if (ev.reason === "clarification" && ev.question && !this.answer) this.answer = ev.question;
    const asked = ev.reason === "clarification" && (ev.pending || []).find((p) => p.kind === "clarification" && p.expires_at);
    this.close("interrupted", asked
      ? `${text} by ${new Date(asked.expires_at).toLocaleString()}; after that, ${OUTCOMES[asked.on_expiry] || asked.on_expiry}`
      : text);
    if (ev.reason === "clarification" && !replay) this.ctx.announce("Trellis asks a question; answer it in the message box.");
  },
  "run.cancelled"() {
    this.close("cancelled");
  },
  "run.failed"(ev) {
    const e = ev.error || {};
    this.failure.replaceChildren(el("strong", {}, "The run failed: "), e.message || "unknown error", e.code ? el("span", { class: "code" }, ` (${e.code})`) : "");
    this.failure.hidden = false;
    this.close("failed");
  },
};

// shownText is a direct response as the server keeps it in the answer's
// text (nodes' directText): images and widgets by a placeholder.
function shownText(ev) {
  switch (ev.content_type) {
    case "image":
      return "[image]";
    case "widget":
      return `[widget: ${ev.widget_type || ""}]`;
    default:
      return typeof ev.content === "string" ? ev.content : JSON.stringify(ev.content);
  }
}

// renderDirect renders an operator's direct answer by its content type.
function renderDirect(ev) {
  const type = ev.content_type || "text";
  const box = el("div", { class: `direct-response direct-${type.replace(/[^\w-]/g, "")}` });
  const content = ev.content;
  const text = typeof content === "string" ? content : pretty(content);
  switch (type) {
    case "markdown":
      box.classList.add("markdown");
      box.innerHTML = renderMarkdown(text);
      break;
    case "html":
      box.append(sandboxed(text, "Operator's HTML response"));
      break;
    case "json": {
      let value = content;
      if (typeof content === "string") {
        try {
          value = JSON.parse(content);
        } catch {
          value = content;
        }
      }
      box.append(el("pre", { class: "json" }, pretty(value)));
      break;
    }
    case "image": {
      const src = text.trim();
      if (/^data:image\/(png|jpe?g|gif|webp|avif);/i.test(src) || /^https?:\/\//i.test(src)) {
        box.append(el("img", { src, alt: "Image from the operator", loading: "lazy" }));
      } else {
        box.append(el("p", {}, "An image that cannot be shown safely."));
      }
      break;
    }
    case "widget": {
      const kind = ev.widget_type || "widget";
      box.append(el("p", { class: "widget-title" }, el("span", { class: "badge" }, kind)));
      let value;
      try {
        value = typeof content === "string" ? JSON.parse(content) : content;
      } catch {
        value = undefined;
      }
      if (value !== undefined && typeof value === "object") box.append(el("pre", { class: "json" }, pretty(value)));
      else box.append(sandboxed(text, `${kind} widget`));
      break;
    }
    default:
      box.append(el("p", { class: "direct-text" }, text));
  }
  return box;
}

// sandboxed shows untrusted HTML in an iframe that may run no script, may
// not navigate the page, and has an opaque origin.
function sandboxed(html, title) {
  const frame = el("iframe", { sandbox: "", title, referrerpolicy: "no-referrer", loading: "lazy" });
  frame.srcdoc = html;
  return frame;
}

/**
 * renderCitations lists an answer's citations in list; a citation of a
 * document opens its passage with the words answer cites highlighted.
 */
export function renderCitations(list, citations, answer = "") {
  list.replaceChildren();
  if (!Array.isArray(citations) || citations.length === 0) {
    list.hidden = true;
    return;
  }
  for (const [i, c] of citations.entries()) {
    const item = el("li", {});
    if (typeof c === "string") {
      item.append(/^https?:\/\//i.test(c) ? el("a", { href: c, target: "_blank", rel: "noopener noreferrer" }, c) : c);
    } else if (c && typeof c === "object" && typeof c.document_id === "string" && c.document_id) {
      // A passage of a document (API.md): {index, document_id, filename, chunk, start, end, text}.
      const n = Number(c.index) || i + 1;
      item.value = n;
      item.classList.add("doc-citation");
      const open = el("button", { type: "button", class: "link", "data-cite": String(n) },
        `${c.filename || c.document_id}, chunk ${Number(c.chunk) || 0}`);
      open.addEventListener("click", () => openPassage(c, answer));
      item.append(open);
    } else if (c && typeof c === "object") {
      const n = Number(c.number) || i + 1;
      item.value = n;
      const url = [c.url, c.source].find((u) => typeof u === "string" && /^https?:\/\//i.test(u));
      const label = c.title || c.source || c.url || c.document_id || `Source ${n}`;
      item.append(url ? el("a", { href: url, target: "_blank", rel: "noopener noreferrer" }, label) : String(label));
      if (c.title && c.source && c.source !== url) item.append(el("span", { class: "cite-source" }, ` — ${c.source}`));
      if (c.text) item.append(el("blockquote", {}, clip(c.text, 300)));
    }
    list.append(item);
  }
  list.hidden = false;
}
