// The cards that ask the user something during a run: an approval
// (approve, edit the arguments as JSON, or reject with a reason), an
// elicitation (a form generated from the requested JSON Schema), and an
// uncertain call (a call a crash cut off, which may have run: run it
// again, skip it, or treat it as failed). A card with a deadline says by
// when to answer and what happens then; once the deadline decided it,
// the card says so (data-state "expired", data-outcome).
//
// A card posts the answer itself and then calls onAnswered, so the page
// can make sure it is watching the run continue. Its data-state is
// "pending", "sending", "resolved" or "expired".

import { APIError, path } from "./api.js";
import { el, pretty } from "./dom.js";
import { buildSchemaForm } from "./schemaform.js";

/** OUTCOMES says what a request's deadline decides. */
export const OUTCOMES = {
  reject: "rejected", approve: "approved", decline: "declined", cancel: "the run cancelled",
  continue: "the agent going on without your answer", skip: "skipped", fail: "treated as failed",
};

/** when writes a deadline in the user's local time. */
const when = (ts) => new Date(ts).toLocaleString();

/** deadlineNote says by when a request (ev, as announced) must be answered and what happens then, "" when it waits for ever. */
const deadlineNote = (ev, fallback) => ev.expires_at
  ? el("p", { class: "card-deadline", "data-expires-at": ev.expires_at },
    `Answer by ${when(ev.expires_at)}; after that it will be ${OUTCOMES[ev.on_expiry] || fallback}.`)
  : "";

let counter = 0;
const uid = (kind) => `${kind}-${++counter}`;

/** Card is what both cards share: state, buttons, the error and result lines. */
class Card {
  constructor(kind, attrs) {
    this.id = uid(kind);
    this.element = el("section", { class: `card ${kind}-card`, "data-state": "pending", "aria-labelledby": `${this.id}-title`, ...attrs });
    this.error = el("p", { class: "card-error", role: "alert", hidden: true });
    this.result = el("p", { class: "card-result", tabindex: "-1", hidden: true });
  }

  get state() {
    return this.element.dataset.state;
  }

  setState(s) {
    this.element.dataset.state = s;
    const locked = s !== "pending";
    for (const c of this.element.querySelectorAll("button, input, select, textarea")) c.disabled = locked;
  }

  showError(msg) {
    this.error.textContent = msg;
    this.error.hidden = !msg;
  }

  /** finish ends the card with a result line; it stays readable, not usable. */
  finish(state, text) {
    if (this.state === "resolved" || this.state === "expired") return;
    const hadFocus = this.element.contains(document.activeElement);
    this.setState(state);
    this.showError("");
    for (const part of this.element.querySelectorAll(".card-actions, form")) part.hidden = true;
    this.result.textContent = text;
    this.result.hidden = false;
    if (hadFocus) this.result.focus();
  }

  /** expire ends a card the run no longer waits on. */
  expire(why) {
    this.finish("expired", why);
  }

  /** expired shows that nobody answered before the deadline, and what the deadline decided (approval.expired, elicitation.expired, uncertain_call.expired). */
  expired(ev) {
    this.element.dataset.outcome = ev.outcome;
    this.element.dataset.state = "sending";
    this.finish("expired", `Expired at ${when(ev.expires_at)} with no answer: ${OUTCOMES[ev.outcome] || ev.outcome}.`);
  }

  /** send posts an answer; it returns true when the server took it. */
  async send(client, url, body, onAnswered, done) {
    this.setState("sending");
    this.showError("");
    try {
      await client.json("POST", url, body);
    } catch (err) {
      if (err instanceof APIError && err.status === 409) {
        this.finish("resolved", "This was already answered.");
        onAnswered();
        return false;
      }
      if (err instanceof APIError && err.status === 404) {
        this.expire("This request no longer exists.");
        return false;
      }
      this.setState("pending");
      this.showError(err.message || String(err));
      return false;
    }
    this.finish("resolved", done);
    onAnswered();
    return true;
  }
}

/** ApprovalCard asks whether a tool may run with the proposed arguments. */
export class ApprovalCard extends Card {
  constructor(ev, { client, onAnswered }) {
    super("approval", { "data-approval-id": ev.approval_id });
    this.approvalId = ev.approval_id;
    const id = this.id;
    const args = ev.args ?? {};
    const send = (body, done) => this.send(client, path`/api/v1/approvals/${ev.approval_id}`, body, onAnswered, done);

    const title = el("h3", { id: `${id}-title` }, "Approval needed: ", el("code", {}, ev.tool || "tool"));
    const intro = el("p", {}, "The agent wants to run this tool with these arguments.");
    if (ev.revision > 0) intro.append(` This is a revised proposal (${ev.revision} rejected before).`);
    this.argsView = el("pre", { class: "args", "aria-label": "Proposed arguments" }, pretty(args));
    // A tool that changes a file says how, as a unified diff.
    const diff = ev.diff ? el("pre", { class: "diff", "aria-label": "The change to the file" }, ...String(ev.diff).split("\n").map((line) =>
      el("span", { class: line.startsWith("+") && !line.startsWith("+++") ? "diff-add" : line.startsWith("-") && !line.startsWith("---") ? "diff-del" : null }, `${line}\n`))) : null;
    const deadline = deadlineNote(ev, OUTCOMES.reject);

    const approve = el("button", { type: "button", class: "primary", "data-action": "approve" }, "Approve");
    const edit = el("button", { type: "button", "data-action": "edit", "aria-expanded": "false", "aria-controls": `${id}-edit` }, "Edit arguments");
    const reject = el("button", { type: "button", class: "danger", "data-action": "reject", "aria-expanded": "false", "aria-controls": `${id}-reject` }, "Reject…");
    const actions = el("div", { class: "card-actions" }, approve, edit, reject);

    const argsInput = el("textarea", { id: `${id}-args`, class: "json-input", rows: "6", spellcheck: "false", "aria-describedby": `${id}-args-hint` }, pretty(args));
    const editForm = el("form", { id: `${id}-edit`, class: "edit-form", hidden: true },
      el("label", { for: `${id}-args` }, "Arguments (JSON)"),
      argsInput,
      el("p", { id: `${id}-args-hint`, class: "hint" }, "Change the arguments, then approve. They must be a JSON object."),
      el("div", { class: "form-actions" },
        el("button", { type: "submit", class: "primary", "data-action": "submit-edit" }, "Approve with these arguments"),
        el("button", { type: "button", "data-action": "back" }, "Back")));

    const reasonInput = el("textarea", { id: `${id}-reason`, rows: "2", required: "" });
    const rejectForm = el("form", { id: `${id}-reject`, class: "reject-form", hidden: true },
      el("label", { for: `${id}-reason` }, "Why reject? The agent reads this."),
      reasonInput,
      el("div", { class: "form-actions" },
        el("button", { type: "submit", class: "danger", "data-action": "submit-reject" }, "Reject"),
        el("button", { type: "button", "data-action": "back" }, "Back")));

    const open = (form, button, focus) => {
      for (const [f, b] of [[editForm, edit], [rejectForm, reject]]) {
        f.hidden = f !== form;
        b.setAttribute("aria-expanded", String(f === form));
      }
      this.showError("");
      if (form) focus.focus();
      else button.focus();
    };
    approve.addEventListener("click", () => send({ decision: "approve" }, "Approved. The run continues."));
    edit.addEventListener("click", () => open(editForm, edit, argsInput));
    reject.addEventListener("click", () => open(rejectForm, reject, reasonInput));
    for (const [form, button] of [[editForm, edit], [rejectForm, reject]]) {
      form.querySelector('[data-action="back"]').addEventListener("click", () => open(null, button));
      form.addEventListener("keydown", (e) => {
        if (e.key === "Escape") {
          e.preventDefault();
          open(null, button);
        }
      });
    }
    argsInput.addEventListener("input", () => this.showError(""));
    editForm.addEventListener("submit", (e) => {
      e.preventDefault();
      let edited;
      try {
        edited = JSON.parse(argsInput.value);
      } catch (err) {
        this.showError(`The arguments are not valid JSON: ${err.message}`);
        argsInput.focus();
        return;
      }
      if (edited === null || typeof edited !== "object" || Array.isArray(edited)) {
        this.showError("The arguments must be a JSON object, like {\"key\": \"value\"}.");
        argsInput.focus();
        return;
      }
      send({ decision: "edit", args: edited }, "Approved with your arguments. The run continues.");
    });
    rejectForm.addEventListener("submit", (e) => {
      e.preventDefault();
      const reason = reasonInput.value.trim();
      if (!reason) {
        reasonInput.reportValidity();
        return;
      }
      send({ decision: "reject", reason }, "Rejected. The agent is told why.");
    });

    this.element.append(title, intro, deadline, diff, this.argsView, actions, editForm, rejectForm, this.error, this.result);
  }

  /** resolve shows the answer an approval.resolved event reports. */
  resolve(ev) {
    if (this.state === "expired") return; // approval.expired said it first, with why
    const text = {
      approve: "Approved.",
      edit: "Approved with edited arguments.",
      reject: `Rejected${ev.reason ? `: ${ev.reason}` : "."}`,
    }[ev.decision] || `Answered: ${ev.decision}.`;
    if (ev.decision === "edit" && ev.args !== undefined) this.argsView.textContent = pretty(ev.args);
    // The event is the truth, also after this card answered itself.
    this.element.dataset.state = "sending";
    this.finish("resolved", text);
  }
}

/** UncertainCallCard asks what to do with a call that may have run. */
export class UncertainCallCard extends Card {
  constructor(ev, { client, onAnswered }) {
    super("uncertain", { "data-uncertain-call-id": ev.uncertain_call_id });
    const id = this.id;
    const send = (decision, done) =>
      this.send(client, path`/api/v1/uncertain-calls/${ev.uncertain_call_id}`, { decision }, onAnswered, done);
    const title = el("h3", { id: `${id}-title` }, "This call may have run: ", el("code", {}, ev.tool || "tool"));
    const intro = el("p", {}, "The service stopped while this tool was running, so it may or may not have taken effect. " +
      "It will not run again unless you say so.");
    const args = el("pre", { class: "args", "aria-label": "The call's arguments" }, pretty(ev.args ?? {}));
    const deadline = deadlineNote(ev, OUTCOMES.skip);
    const retry = el("button", { type: "button", class: "primary", "data-action": "retry" }, "Run it again");
    const skip = el("button", { type: "button", "data-action": "skip" }, "Skip it");
    const fail = el("button", { type: "button", class: "danger", "data-action": "fail" }, "Treat it as failed");
    retry.addEventListener("click", () => send("retry", "Running it again. The run continues."));
    skip.addEventListener("click", () => send("skip", "Skipped. The agent is told."));
    fail.addEventListener("click", () => send("fail", "Treated as failed. The agent is told."));
    this.element.append(title, intro, args, deadline, el("div", { class: "card-actions" }, retry, skip, fail), this.error, this.result);
  }

  /** resolve shows the decision an uncertain_call.resolved event reports, wherever it was made. */
  resolve(ev) {
    if (this.state === "expired") return; // uncertain_call.expired said it first, with why
    const text = {
      retry: "Run again.",
      skip: "Skipped. The agent is told.",
      fail: "Treated as failed. The agent is told.",
    }[ev.decision] || `Decided: ${ev.decision}.`;
    this.element.dataset.state = "sending";
    this.finish("resolved", text);
  }
}

/** ElicitationCard asks for the input a tool requested, as a form. */
export class ElicitationCard extends Card {
  constructor(ev, { client, onAnswered }) {
    super("elicitation", { "data-elicitation-id": ev.elicitation_id });
    const id = this.id;
    const url = "/api/v1/elicitation/respond";
    const respond = (action, content, done) => {
      const body = { elicitation_id: ev.elicitation_id, action };
      if (content !== undefined) body.content = content;
      return this.send(client, url, body, onAnswered, done);
    };

    const title = el("h3", { id: `${id}-title` }, "Input requested");
    if (ev.source) title.append(el("span", { class: "badge" }, ev.source));
    const message = el("p", { class: "card-message" }, ev.message || "A tool needs more information to go on.");
    const fields = buildSchemaForm(ev.schema, id);
    const form = el("form", { "aria-labelledby": `${id}-title` },
      fields.element,
      el("div", { class: "card-actions" },
        el("button", { type: "submit", class: "primary", "data-action": "accept" }, "Submit"),
        el("button", { type: "button", "data-action": "decline" }, "Decline"),
        el("button", { type: "button", "data-action": "cancel" }, "Cancel")));
    form.addEventListener("submit", (e) => {
      e.preventDefault();
      if (!form.reportValidity()) return;
      const r = fields.collect();
      if (r.error) {
        this.showError(r.error);
        return;
      }
      respond("accept", r.content, "Sent. The tool goes on with your answer.");
    });
    form.querySelector('[data-action="decline"]').addEventListener("click", () => respond("decline", undefined, "Declined."));
    form.querySelector('[data-action="cancel"]').addEventListener("click", () => respond("cancel", undefined, "Cancelled."));
    this.element.append(title, message, deadlineNote(ev, OUTCOMES.decline), form, this.error, this.result);
  }

  /** resolve shows the answer an elicitation.response event reports. */
  resolve(ev) {
    if (this.state === "expired") return; // elicitation.expired said it first, with why
    const text = { accept: "Answered.", decline: "Declined.", cancel: "Cancelled or timed out." }[ev.action] || `Answered: ${ev.action}.`;
    this.element.dataset.state = "sending";
    this.finish("resolved", text);
  }
}
