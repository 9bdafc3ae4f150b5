// The chat page: conversations, the composer, and the run being watched.
//
// The page holds at most one open stream, for the current conversation's
// active run ("the follow"). A stream that ends before a terminal event,
// errs, or stays silent too long is reopened with GET
// /conversations/{id}/stream and Last-Event-ID, after a growing pause.

import { APIError, Client, path } from "./api.js";
import { Board } from "./board.js";
import { Documents } from "./documents.js";
import { el } from "./dom.js";
import { Files } from "./files.js";
import { GraphView } from "./graphview.js";
import { Memory } from "./memory.js";
import { Usage } from "./usage.js";
import { readEvents } from "./sse.js";
import { TERMINAL, Turn } from "./turn.js";

const KEY_API = "trellis.apiKey";
const KEY_MODEL = "trellis.model";
const MAX_RECONNECTS = 8;
const IDLE_MS = 45000; // the server pings at least every 15 s

const $ = (sel) => document.querySelector(sel);
const ui = {
  transcript: $("#transcript"),
  scroller: $("#scroller"),
  empty: $("#empty-state"),
  composer: $("#composer"),
  input: $("#composer-input"),
  send: $("#send"),
  cancel: $("#cancel-run"),
  list: $("#conversation-list"),
  tools: $("#tool-list"),
  toolsCount: $("#tools-count"),
  connection: $("#connection-status"),
  banner: $("#error-banner"),
  bannerText: $("#error-text"),
  announcer: $("#announcer"),
  settings: $("#settings"),
  apiKey: $("#api-key"),
  model: $("#model"),
  nav: $("#sidebar"),
  navToggle: $("#nav-toggle"),
  title: $("#conversation-title"),
  live: $("#live"),
  liveToggle: $("#live-toggle"),
  liveClose: $("#live-close"),
  topbar: $(".topbar"),
  note: $("#composer-note"),
  signin: $("#signin"),
  signinButton: $("#signin-button"),
  signinUser: $("#signin-user"),
  signout: $("#signout-button"),
};

const storage = {
  get(k) {
    try {
      return localStorage.getItem(k) || "";
    } catch {
      return "";
    }
  },
  set(k, v) {
    try {
      if (v) localStorage.setItem(k, v);
      else localStorage.removeItem(k);
    } catch {
      // Storage may be off; the setting lasts for this page only.
    }
  },
};

const client = new Client(() => storage.get(KEY_API));

const state = {
  cid: null, // the current conversation's id
  turns: [],
  follow: null, // {turn, ctl: AbortController} while a stream is open
  sending: false,
  load: 0, // bumps on every conversation switch, to drop stale loads
  stick: true, // keep the transcript scrolled to the bottom
};

// The live view beside the chat: the agent's graph with the running node
// lit, its sub-agents, and the task board.
const graphView = new GraphView({ client, root: $("#graph-view") });
const board = new Board({ client, root: $("#task-board"), conversation: () => state.cid, showError });

/** live passes one event of a run to the live view. */
function live(ev) {
  graphView.apply(ev);
  board.apply(ev);
  files.apply(ev);
}

const docs = new Documents({
  client,
  conversation: () => state.cid,
  onConversation: (cid) => {
    setConversation(cid);
    board.load(cid);
    ui.title.textContent = "Conversation";
    refreshConversations();
  },
  streaming: () => !!state.follow,
  showError,
  announce: (text) => announce(text),
});

const files = new Files({ client, conversation: () => state.cid, showError, announce: (text) => announce(text) });
const memory = new Memory({ client, showError, announce: (text) => announce(text) });
const usage = new Usage({ client });

const turnContext = {
  client,
  onAnswered: (turn) => watch(turn),
  onRerun: (turn, text) => rerun(turn, text),
  onRetry: (turn) => retry(turn),
  onBranch: (turn, step) => switchBranch(turn, step),
  canEdit: (turn) => !busy() && !turn.superseded && !!turn.runId,
  announce,
};

// --- the conversation ---

function busy() {
  return state.sending || state.turns.some((t) => t.active);
}

function updateControls() {
  const b = busy();
  ui.send.disabled = b;
  ui.send.title = b ? "Wait for the current answer, or cancel it" : "";
  ui.cancel.hidden = !state.turns.some((t) => t.active);
  ui.cancel.disabled = false;
  board.setBusy(b);
  for (const t of state.turns) t.refreshControls();
  ui.empty.hidden = state.turns.length > 0;
}

function addTurn(init) {
  const turn = new Turn(init, turnContext);
  state.turns.push(turn);
  ui.transcript.append(turn.element);
  return turn;
}

function clearTranscript() {
  state.turns = [];
  ui.transcript.replaceChildren();
  state.stick = true;
}

function setConversation(cid) {
  const changed = cid !== state.cid;
  state.cid = cid;
  if (changed) files.conversationChanged();
  const want = cid ? `#/c/${encodeURIComponent(cid)}` : " ";
  if (location.hash !== want.trim()) history.replaceState(null, "", want === " " ? location.pathname : want);
  for (const a of ui.list.querySelectorAll("a[data-id]")) {
    if (a.dataset.id === cid) a.setAttribute("aria-current", "page");
    else a.removeAttribute("aria-current");
  }
}

function conversationFromHash() {
  const m = /^#\/c\/(.+)$/.exec(location.hash);
  return m ? decodeURIComponent(m[1]) : null;
}

async function route() {
  const id = conversationFromHash();
  if (id === state.cid && (id === null || state.turns.length > 0)) return;
  if (id) await openConversation(id);
  else newConversation();
}

function newConversation() {
  stopFollow();
  hideError(); // an error of the conversation left behind is not this one's
  state.load++;
  clearTranscript();
  setConversation(null);
  docs.show(null);
  board.load(null);
  graphView.reset();
  ui.title.textContent = "New conversation";
  updateControls();
}

async function openConversation(id) {
  stopFollow();
  hideError();
  const load = ++state.load;
  clearTranscript();
  setConversation(id);
  docs.show(id);
  board.load(id);
  graphView.reset();
  ui.title.textContent = "Loading…";
  updateControls();
  let conv, runs;
  try {
    ({ conv, runs } = await loadConversation(id));
  } catch (err) {
    if (load !== state.load) return;
    if (err instanceof APIError && err.status === 404) newConversation();
    showError(err);
    return;
  }
  if (load !== state.load) return;
  const listed = ui.list.querySelector(`a[data-id="${CSS.escape(id)}"] .title`);
  ui.title.textContent = conv.title || listed?.textContent || "Conversation";
  for (const run of runs) {
    // The active branch: the versions an edit, a retry or a switch left
    // behind are a click on "< i / n >" away.
    if (run.superseded) continue;
    const turn = addTurn({ runId: run.id, message: run.user_message });
    for (const ev of Array.isArray(run.events) ? run.events : []) {
      if (turn.apply(ev, true)) live(ev);
    }
    turn.finishReplay(run);
  }
  if (runs.length === 0 && Array.isArray(conv.messages)) {
    // No runs recorded: show the bare messages.
    for (const m of conv.messages) {
      if (m && m.role === "user") {
        const turn = addTurn({ message: m.content });
        turn.close("completed", "");
      } else if (m && state.turns.length) {
        const turn = state.turns[state.turns.length - 1];
        turn.answer = String(m.content ?? "");
        turn.renderAnswer();
      }
    }
  }
  updateControls();
  scrollToEnd(true);
  const last = state.turns[state.turns.length - 1];
  if (last && last.state === "running" && !last.superseded) watch(last);
}

/**
 * loadConversation reads a conversation and its whole history: every page
 * of its runs (next_cursor), and the rest of the events of each run that
 * came with its first ones only (events_truncated).
 */
async function loadConversation(id) {
  const conv = await client.json("GET", path`/api/v1/conversations/${id}`);
  const runs = [];
  for (let page = conv; ; ) {
    for (const run of Array.isArray(page.runs) ? page.runs : []) {
      const events = Array.isArray(run.events) ? run.events : [];
      if (run.events_truncated) {
        run.events = events.concat(await restOfEvents(id, run.id, events.length ? events[events.length - 1].seq : 0));
      }
      runs.push(run);
    }
    if (!page.next_cursor) return { conv, runs };
    page = await client.json("GET", path`/api/v1/conversations/${id}?cursor=${page.next_cursor}`);
  }
}

/**
 * restOfEvents reads a run's stored events after seq after, page by page
 * (a page may stop short of its count, at the server's byte budget).
 */
async function restOfEvents(cid, runId, after) {
  const events = [];
  for (;;) {
    const page = await client.json("GET", path`/api/v1/conversations/${cid}/runs/${runId}/events?after=${after}&limit=500`);
    events.push(...(Array.isArray(page.events) ? page.events : []));
    if (!page.next_after) return events;
    after = page.next_after;
  }
}

/** send starts a run with the composer's message. */
async function send(text) {
  if (busy()) return;
  hideError();
  const turn = addTurn({ message: text });
  state.sending = true;
  updateControls();
  scrollToEnd(true);
  const body = { message: text };
  if (state.cid) body.conversation_id = state.cid;
  const model = storage.get(KEY_MODEL);
  if (model) body.model = model;
  const ok = await start(turn, "POST", "/api/v1/chat", body);
  if (!ok) {
    turn.element.remove();
    state.turns = state.turns.filter((t) => t !== turn);
    if (!ui.input.value) ui.input.value = text;
    updateControls();
  }
}

/** rerun runs an edited message in place of turn's run; it returns an error text or "". */
async function rerun(turn, text) {
  if (busy() || !state.cid) return "Wait for the current answer to finish.";
  hideError();
  const idx = state.turns.indexOf(turn);
  const fresh = addTurn({ message: text });
  state.sending = true;
  updateControls();
  const ok = await start(fresh, "POST", path`/api/v1/conversations/${state.cid}/runs/${turn.runId}/edit`, { message: text });
  if (!ok) {
    fresh.element.remove();
    state.turns = state.turns.filter((t) => t !== fresh);
    updateControls();
    return ui.bannerText.textContent || "The edit could not be run.";
  }
  for (const t of state.turns.slice(idx, state.turns.indexOf(fresh))) {
    t.markSuperseded(t === turn ? "Superseded: this message was edited and run again below." : "Superseded: an earlier message was edited.");
  }
  scrollToEnd(true);
  return "";
}

/** retry takes a failed turn up again, as a new run shown below it. */
async function retry(turn) {
  if (busy() || !state.cid) return;
  hideError();
  const fresh = addTurn({ message: turn.message });
  state.sending = true;
  updateControls();
  const ok = await start(fresh, "POST", path`/api/v1/conversations/${state.cid}/runs/${turn.runId}/retry`);
  if (!ok) {
    fresh.element.remove();
    state.turns = state.turns.filter((t) => t !== fresh);
    updateControls();
    return;
  }
  turn.markSuperseded("Superseded: this turn was retried below.");
  scrollToEnd(true);
}

/**
 * switchBranch shows the version of turn's message step places away
 * (-1 the one before, 1 the one after): its branch becomes the
 * conversation's active one, which the page then reads again.
 */
async function switchBranch(turn, step) {
  if (busy() || !state.cid) return;
  hideError();
  const cid = state.cid;
  try {
    const { branches } = await client.json("GET", path`/api/v1/conversations/${cid}/branches?run_id=${turn.runId}`);
    const at = branches.findIndex((b) => b.run_id === turn.runId);
    const to = branches[at + step];
    if (at < 0 || !to) return;
    await client.json("POST", path`/api/v1/conversations/${cid}/branches/${to.run_id}/activate`);
  } catch (err) {
    showError(err);
    return;
  }
  await openConversation(cid);
  announce(`Showing version ${turn.versions.index + step} of ${turn.versions.count} of the message.`);
}

/**
 * start opens a run's stream with one request and follows it; it returns
 * false when the request failed (the error is shown).
 */
async function start(turn, method, url, body) {
  stopFollow();
  const ctl = new AbortController();
  state.follow = { turn, ctl };
  let resp;
  try {
    resp = await client.stream(method, url, { body, signal: ctl.signal });
  } catch (err) {
    state.sending = false;
    if (state.follow?.ctl === ctl) state.follow = null;
    if (err.name !== "AbortError") showError(err);
    return false;
  }
  state.sending = false;
  const cid = resp.headers.get("X-Conversation-ID");
  if (cid && cid !== state.cid) {
    setConversation(cid);
    docs.show(cid);
    ui.title.textContent = "Conversation";
  }
  turn.setRunId(resp.headers.get("X-Run-ID"));
  turn.setState("running");
  updateControls();
  follow(turn, ctl, resp); // runs until the run's terminal event
  refreshConversations();
  return true;
}

/**
 * watch makes sure the page follows turn's run while it is active: after
 * an answer to a card, a cancel, a reload. An answer's reply can come after
 * the run already finished on the open stream; then there is nothing to
 * watch.
 */
function watch(turn) {
  if (state.follow) return; // the open stream carries the rest
  if (!state.cid || !turn.runId || !turn.active) return;
  const ctl = new AbortController();
  state.follow = { turn, ctl };
  updateControls();
  follow(turn, ctl, null);
}

function stopFollow() {
  if (!state.follow) return;
  state.follow.ctl.abort();
  state.follow = null;
  setConnection("");
}

/**
 * follow reads the run's events until a terminal one, reconnecting with
 * Last-Event-ID when the stream drops. resp is an open stream, or null to
 * start by (re)attaching.
 */
async function follow(turn, ctl, resp) {
  let attempt = 0;
  let wait = 0; // at least this long before the next attempt, in ms
  const cid = state.cid;
  try {
    for (;;) {
      if (resp) {
        const end = await read(turn, resp, ctl, () => {
          attempt = 0;
          setConnection("");
        });
        if (end === "terminal" || ctl.signal.aborted) return;
        // Asked to reconnect (stream.reconnect): no sooner than the
        // server said, or a server shutting down is asked too early.
        wait = end.retryMs || 0;
        resp = null;
      }
      if (!turn.active) return; // finished or parked: nothing more will come
      if (attempt >= MAX_RECONNECTS) {
        setConnection("lost", turn);
        return;
      }
      attempt++;
      setConnection("reconnecting", attempt);
      await pause(Math.max(backoff(attempt), wait), ctl.signal);
      wait = 0;
      try {
        resp = await client.stream("GET", path`/api/v1/conversations/${cid}/stream`, {
          lastEventId: turn.lastSeq || undefined,
          signal: ctl.signal,
        });
      } catch (err) {
        if (err.name === "AbortError") return;
        if (err instanceof APIError && !err.retryable) {
          showError(err);
          return;
        }
      }
    }
  } catch (err) {
    if (err.name !== "AbortError") throw err;
  } finally {
    if (state.follow?.ctl === ctl) {
      state.follow = null;
      if (ui.connection.dataset.state !== "lost") setConnection("");
      updateControls();
      refreshConversations();
    }
  }
}

/**
 * read applies one stream's events and says how it ended: "terminal"
 * after a new terminal event, { retryMs } when the server asked for a
 * reconnection after retryMs, else "dropped".
 */
async function read(turn, resp, ctl, onEvent) {
  // A stream of its own to abort when silent for too long.
  const idle = new AbortController();
  const abortIdle = () => idle.abort();
  ctl.signal.addEventListener("abort", abortIdle);
  let timer = 0;
  const alive = () => {
    clearTimeout(timer);
    timer = setTimeout(abortIdle, IDLE_MS);
  };
  alive();
  try {
    for await (const msg of readEvents(resp, { onBytes: alive, signal: idle.signal })) {
      let ev;
      try {
        ev = JSON.parse(msg.data);
      } catch {
        console.warn("trellis: skipped an event whose data is not JSON", msg);
        continue;
      }
      if (!ev.type) ev.type = msg.event;
      if (ev.type === "document.status") {
        // No run's event: it has no id and takes no seq.
        docs.apply(ev);
        onEvent();
        continue;
      }
      // The server ends the stream before the run's end and asks for a
      // reconnection (it lost its database, say): no run's event either.
      if (ev.type === "stream.reconnect") return { retryMs: Number(ev.retry_ms) || 0 };
      if (!ev.seq && msg.id) ev.seq = Number(msg.id);
      const target = turnFor(turn, ev);
      if (!target.apply(ev)) continue;
      live(ev);
      onEvent();
      updateControls();
      if (TERMINAL.has(ev.type)) {
        if (ev.type === "run.failed") announce("The run failed.");
        return "terminal";
      }
    }
  } catch (err) {
    if (ctl.signal.aborted) throw Object.assign(new Error("aborted"), { name: "AbortError" });
    // A network error or an idle stream: reconnect.
  } finally {
    clearTimeout(timer);
    ctl.signal.removeEventListener("abort", abortIdle);
  }
  return "dropped";
}

// turnFor finds the turn an event belongs to: the followed one, or another
// run the stream moved on to.
function turnFor(turn, ev) {
  if (!ev.run_id || !turn.runId || ev.run_id === turn.runId) return turn;
  return state.turns.find((t) => t.runId === ev.run_id) || addTurn({ runId: ev.run_id, message: "" });
}

function backoff(attempt) {
  const base = Math.min(500 * 2 ** (attempt - 1), 10000);
  return base / 2 + Math.random() * (base / 2);
}

function pause(ms, signal) {
  return new Promise((resolve, reject) => {
    const t = setTimeout(resolve, ms);
    signal.addEventListener("abort", () => {
      clearTimeout(t);
      reject(Object.assign(new Error("aborted"), { name: "AbortError" }));
    }, { once: true });
  });
}

async function cancelRun() {
  const turn = state.turns.findLast((t) => t.active);
  if (!turn) return;
  if (!state.cid) {
    // The run has not been created yet: drop the request.
    stopFollow();
    return;
  }
  ui.cancel.disabled = true;
  turn.statusLine.textContent = "Cancelling…";
  try {
    await client.json("POST", path`/api/v1/conversations/${state.cid}/cancel`);
  } catch (err) {
    ui.cancel.disabled = false;
    showError(err);
    return;
  }
  announce("Cancelling the run.");
  watch(turn); // the stream ends with run.cancelled
  ui.input.focus();
}

// --- conversation list, tools, settings ---

async function refreshConversations() {
  let data;
  try {
    data = await client.json("GET", "/api/v1/conversations?limit=50");
  } catch (err) {
    if (err instanceof APIError && err.status === 401) showError(err);
    return;
  }
  const items = Array.isArray(data?.conversations) ? data.conversations : [];
  ui.list.replaceChildren(...items.map((c) => {
    const a = el("a", { href: `#/c/${encodeURIComponent(c.id)}`, "data-id": c.id },
      el("span", { class: "title" }, c.title || "Untitled conversation"),
      el("span", { class: "meta" }, [c.status, when(c.updated_at || c.created_at)].filter(Boolean).join(" · ")));
    if (c.id === state.cid) {
      a.setAttribute("aria-current", "page");
      if (c.title) ui.title.textContent = c.title;
    }
    return el("li", {}, a);
  }));
  if (items.length === 0) ui.list.append(el("li", { class: "hint" }, "No conversations yet."));
}

function when(ts) {
  const d = new Date(ts);
  if (!ts || Number.isNaN(d.getTime())) return "";
  const same = d.toDateString() === new Date().toDateString();
  return same ? d.toLocaleTimeString([], { hour: "2-digit", minute: "2-digit" }) : d.toLocaleDateString();
}

async function loadTools() {
  let data;
  try {
    data = await client.json("GET", "/api/v1/tools");
  } catch {
    ui.tools.replaceChildren(el("li", { class: "hint" }, "Tools are not available."));
    return;
  }
  const tools = Array.isArray(data?.tools) ? data.tools : [];
  ui.toolsCount.textContent = `(${tools.length})`;
  ui.tools.replaceChildren(...tools.map((t) => el("li", {},
    el("code", {}, t.name),
    t.source ? el("span", { class: "badge" }, t.server ? `${t.source}: ${t.server}` : t.source) : "",
    t.requires_approval ? el("span", { class: "badge warn" }, "needs approval") : "",
    t.description ? el("p", { class: "hint" }, t.description) : "")));
}

function openSettings() {
  ui.apiKey.value = storage.get(KEY_API);
  ui.model.value = storage.get(KEY_MODEL);
  ui.settings.showModal();
  ui.apiKey.focus();
  usage.show();
}

function saveSettings() {
  storage.set(KEY_API, ui.apiKey.value.trim());
  storage.set(KEY_MODEL, ui.model.value.trim());
  hideError();
  loadTools();
  graphView.load();
  refreshConversations();
  if (state.cid && !busy()) openConversation(state.cid);
}

// --- feedback ---

function showError(err) {
  const code = err instanceof APIError ? err.code : "";
  ui.bannerText.textContent = `${err.message || String(err)}${code ? ` (${code})` : ""}`;
  ui.banner.querySelector("[data-action=settings]").hidden = !(err instanceof APIError && err.status === 401);
  ui.banner.hidden = false;
}

function hideError() {
  ui.banner.hidden = true;
  ui.bannerText.textContent = "";
}

function announce(text) {
  ui.announcer.textContent = "";
  setTimeout(() => {
    ui.announcer.textContent = text;
  }, 50);
}

function setConnection(kind, detail) {
  ui.connection.dataset.state = kind;
  ui.connection.replaceChildren();
  ui.connection.hidden = !kind;
  if (kind === "reconnecting") {
    ui.connection.append(`Connection lost. Reconnecting${detail > 1 ? ` (attempt ${detail})` : ""}…`);
  } else if (kind === "lost") {
    const retry = el("button", { type: "button", "data-action": "reconnect" }, "Reconnect");
    retry.addEventListener("click", () => {
      setConnection("");
      watch(detail);
    });
    ui.connection.append("The connection to the server is lost. ", retry);
  }
}

function scrollToEnd(force) {
  if (force) state.stick = true;
  if (state.stick) ui.scroller.scrollTop = ui.scroller.scrollHeight;
}

// --- wiring ---

function init() {
  ui.composer.addEventListener("submit", (e) => {
    e.preventDefault();
    const text = ui.input.value.trim();
    if (!text || busy()) {
      // Say why nothing was sent, where the user looks and aloud.
      noteComposer(text ? "Wait for the current answer, or stop it." : "Type a message to send.");
      ui.input.focus();
      return;
    }
    noteComposer("");
    ui.input.value = "";
    autosize();
    send(text);
  });
  ui.input.addEventListener("keydown", (e) => {
    if (e.key === "Enter" && !e.shiftKey && !e.altKey && !e.ctrlKey && !e.metaKey && !e.isComposing) {
      e.preventDefault();
      ui.composer.requestSubmit();
    }
  });
  const autosize = () => {
    ui.input.style.height = "auto";
    ui.input.style.height = `${Math.min(ui.input.scrollHeight, 240)}px`;
  };
  ui.input.addEventListener("input", () => {
    autosize();
    noteComposer("");
  });
  ui.cancel.addEventListener("click", cancelRun);
  docs.init($("#main"));
  $("#passage-close").addEventListener("click", () => $("#passage").close());
  $("#new-chat").addEventListener("click", () => {
    newConversation();
    closeNav();
    ui.input.focus();
  });
  $("#settings-open").addEventListener("click", openSettings);
  $("#settings-form").addEventListener("submit", saveSettings); // method=dialog closes it
  $("#settings-close").addEventListener("click", () => ui.settings.close());
  ui.banner.querySelector("[data-action=dismiss]").addEventListener("click", hideError);
  ui.banner.querySelector("[data-action=settings]").addEventListener("click", openSettings);

  ui.navToggle.addEventListener("click", () => (ui.nav.classList.contains("open") ? closeNav() : openNav()));
  ui.liveToggle.addEventListener("click", () => (ui.live.classList.contains("open") ? closeLive() : openLive()));
  ui.liveClose.addEventListener("click", () => closeLive(true));
  keepHeights();
  ui.list.addEventListener("click", (e) => {
    if (e.target.closest("a")) closeNav();
  });
  document.addEventListener("click", (e) => {
    // On a phone the menu covers the page, and on a narrow window the
    // plan covers part of it; a click beside either closes it.
    if (ui.nav.classList.contains("open") && !ui.nav.contains(e.target) && !ui.navToggle.contains(e.target)) closeNav();
    if (liveOver() && !ui.live.contains(e.target) && !ui.liveToggle.contains(e.target) && e.target.isConnected) closeLive();
  });
  document.addEventListener("keydown", (e) => {
    if (e.key !== "Escape" || document.querySelector("dialog[open]")) return;
    if (ui.nav.classList.contains("open")) {
      closeNav();
      ui.navToggle.focus();
    } else if (liveOver()) {
      closeLive(true);
    }
  });

  ui.scroller.addEventListener("scroll", () => {
    const s = ui.scroller;
    state.stick = s.scrollHeight - s.scrollTop - s.clientHeight < 80;
  }, { passive: true });
  new MutationObserver(() => scrollToEnd(false)).observe(ui.transcript, { childList: true, subtree: true, characterData: true });

  window.addEventListener("hashchange", route);
  memory.init();
  files.init();
  ui.signout.addEventListener("click", signOut);
  showSession();
  loadTools();
  graphView.load();
  refreshConversations();
  route().finally(() => {
    document.body.dataset.ready = "true";
  });
  updateControls();
}

function openNav() {
  ui.nav.classList.add("open");
  ui.navToggle.setAttribute("aria-expanded", "true");
  ui.nav.querySelector("a, button")?.focus();
}

function closeNav() {
  ui.nav.classList.remove("open");
  ui.navToggle.setAttribute("aria-expanded", "false");
}

// On a window 1,100 px wide or narrower the plan (the task board and the
// agent's graph) is a panel over the right of the page, opened with the
// Plan button; wider, it is a column of its own.

/** liveOver reports whether the plan is open as a panel over the page. */
function liveOver() {
  return ui.live.classList.contains("open") && getComputedStyle(ui.live).position === "fixed";
}

function openLive() {
  ui.live.classList.add("open");
  ui.liveToggle.setAttribute("aria-expanded", "true");
  ui.liveClose.focus();
}

function closeLive(refocus) {
  ui.live.classList.remove("open");
  ui.liveToggle.setAttribute("aria-expanded", "false");
  if (refocus) ui.liveToggle.focus();
}

/**
 * keepHeights keeps the top bar's and the composer's heights in CSS
 * variables, which place the plan's panel between them.
 */
function keepHeights() {
  const root = document.documentElement.style;
  const heights = new ResizeObserver(() => {
    root.setProperty("--topbar-h", `${ui.topbar.getBoundingClientRect().bottom}px`);
    root.setProperty("--composer-h", `${window.innerHeight - ui.composer.getBoundingClientRect().top}px`);
  });
  for (const box of [document.body, ui.topbar, ui.composer]) heights.observe(box);
}

/**
 * showSession shows "Sign in" when the server signs people in through
 * its identity provider and no one is, or who is with "Sign out"; it
 * shows nothing when the server offers no sign-in (keys, local mode).
 */
async function showSession() {
  const s = await client.session();
  ui.signin.hidden = s === undefined;
  ui.signinButton.hidden = s !== null;
  ui.signout.hidden = !s;
  ui.signinUser.textContent = s ? s.user : "";
}

async function signOut() {
  try {
    await client.send("POST", "/auth/logout");
  } catch (err) {
    showError(err);
    return;
  }
  client.csrf = "";
  location.assign("./"); // the page, under the prefix it is served at
}

/** noteComposer says under the message box why nothing was sent; "" clears it. */
function noteComposer(text) {
  ui.note.textContent = text;
  if (text) {
    ui.input.setAttribute("aria-invalid", "true");
    announce(text);
  } else {
    ui.input.removeAttribute("aria-invalid");
  }
}

init();
