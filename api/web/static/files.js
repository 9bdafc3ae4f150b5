// The Files panel: the agent's workspace (docs/api.md, Workspace files
// and projects) in one scope at a time — the current conversation's, the
// user's, or a project's — as a tree of paths, with a preview of a text
// file, a download link, an upload into the scope, and a file's versions,
// any of which can be restored. A file.changed event on the
// conversation's stream updates the tree (and the open file) live.

import { APIError, path } from "./api.js";
import { el } from "./dom.js";

const PREVIEW_BYTES = 256 * 1024; // a larger file is offered as a download only
const TEXT = /^(text\/|application\/(json|jsonl|xml|yaml|toml|sql))/;

export class Files {
  /**
   * @param {object} ctx client, conversation() (the current id or null),
   * showError(err), announce(text).
   */
  constructor(ctx) {
    this.ctx = ctx;
    this.files = new Map(); // path → file
    this.scope = "conversation"; // "conversation", "user" or "project:<id>"
    this.open = null; // the path whose preview and versions show
    this.load = 0;
    this.root = document.querySelector("#files");
    this.select = document.querySelector("#files-scope");
    this.tree = document.querySelector("#files-tree");
    this.empty = document.querySelector("#files-empty");
    this.input = document.querySelector("#files-input");
    this.uploadButton = document.querySelector("#files-upload");
    this.view = document.querySelector("#file-view");
    this.viewPath = document.querySelector("#file-view-path");
    this.preview = document.querySelector("#file-preview");
    this.versions = document.querySelector("#file-versions");
    this.download = document.querySelector("#file-download");
  }

  init() {
    this.select.addEventListener("change", () => {
      this.scope = this.select.value;
      this.refresh();
    });
    this.uploadButton.addEventListener("click", () => this.input.click());
    this.input.addEventListener("change", async () => {
      const picked = [...this.input.files];
      this.input.value = "";
      for (const f of picked) if (!(await this.upload(f))) return;
    });
    this.tree.addEventListener("click", (e) => {
      const b = e.target.closest("button[data-path]");
      if (b) this.show(b.dataset.path);
    });
    this.versions.addEventListener("click", (e) => {
      const b = e.target.closest("button[data-restore]");
      if (b) this.restore(Number(b.dataset.restore));
    });
    this.download.addEventListener("click", () => this.fetchLink());
    document.querySelector("#file-close").addEventListener("click", () => this.close());
    this.loadProjects();
  }

  /** base is the API path of the scope shown, or null when there is none (no conversation yet). */
  base() {
    if (this.scope === "user") return "/api/v1/files/user/me";
    if (this.scope.startsWith("project:")) return path`/api/v1/files/project/${this.scope.slice(8)}`;
    const cid = this.ctx.conversation();
    return cid ? path`/api/v1/files/conversation/${cid}` : null;
  }

  /** conversationChanged shows the new conversation's files when its scope is shown. */
  conversationChanged() {
    if (this.scope === "conversation") {
      this.close();
      this.refresh();
    }
  }

  async loadProjects() {
    let data;
    try {
      data = await this.ctx.client.json("GET", "/api/v1/projects");
    } catch {
      return; // no projects on this server: the two other scopes remain
    }
    for (const p of Array.isArray(data?.projects) ? data.projects : []) {
      this.select.append(el("option", { value: `project:${p.id}` }, `Project: ${p.name}`));
    }
  }

  /** refresh reads the scope's list again, every page of it. */
  async refresh() {
    const load = ++this.load;
    const base = this.base();
    const files = new Map();
    if (base) {
      try {
        for (let after = ""; ;) {
          const page = await this.ctx.client.json("GET", `${base}?limit=1000&after=${encodeURIComponent(after)}`);
          for (const f of Array.isArray(page?.files) ? page.files : []) files.set(f.path, f);
          after = page?.next || "";
          if (!after) break;
        }
      } catch (err) {
        // A conversation the server does not know yet has no files.
        if (!(err instanceof APIError && err.status === 404)) this.ctx.showError(err);
      }
    }
    if (load !== this.load) return;
    this.files = files;
    this.render();
  }

  /** apply takes a file.changed event of the conversation's stream; it reports whether it was used. */
  apply(ev) {
    if (!ev || ev.type !== "file.changed") return false;
    const shown = this.scopeOf(ev);
    if (!shown) return true;
    if (ev.op === "delete") this.files.delete(ev.path);
    else {
      const f = this.files.get(ev.path) || { path: ev.path };
      this.files.set(ev.path, { ...f, version: ev.version });
    }
    this.ctx.announce(`${ev.path} ${ev.op === "delete" ? "deleted" : "changed"}.`);
    this.render();
    this.refresh(); // sizes and times
    if (this.open === ev.path) {
      if (ev.op === "delete") this.close();
      else this.show(ev.path);
    }
    return true;
  }

  /** scopeOf reports whether ev is of the scope shown. */
  scopeOf(ev) {
    if (ev.scope === "user") return this.scope === "user";
    if (ev.scope === "project") return this.scope === `project:${ev.scope_id}`;
    return this.scope === "conversation" && ev.scope_id === this.ctx.conversation();
  }

  render() {
    const paths = [...this.files.keys()].sort();
    this.empty.hidden = paths.length > 0;
    this.empty.textContent = this.base() ? "No files here yet." : "Start a conversation to see its files.";
    this.uploadButton.disabled = !this.base();
    this.tree.replaceChildren(...this.branch(paths.map((p) => ({ rest: p.split("/"), file: this.files.get(p) }))));
  }

  /** branch renders the entries of one folder: folders first, then files. */
  branch(entries) {
    const folders = new Map();
    const items = [];
    for (const e of entries) {
      if (e.rest.length > 1) {
        const [head, ...rest] = e.rest;
        if (!folders.has(head)) folders.set(head, []);
        folders.get(head).push({ rest, file: e.file });
      } else {
        const f = e.file;
        items.push(el("li", { class: "file-item" },
          el("button", { type: "button", class: "link-button file-name", "data-path": f.path, "aria-current": f.path === this.open ? "true" : null }, e.rest[0]),
          el("span", { class: "file-meta" }, f.version ? `v${f.version}` : "")));
      }
    }
    const dirs = [...folders.keys()].sort().map((name) => el("li", { class: "file-folder" },
      el("span", { class: "folder-name" }, `${name}/`),
      el("ul", { class: "files-tree" }, ...this.branch(folders.get(name)))));
    return [...dirs, ...items];
  }

  /** show opens p: its preview (text) and its versions. */
  async show(p) {
    const base = this.base();
    if (!base) return;
    this.open = p;
    this.view.hidden = false;
    this.viewPath.textContent = p;
    this.render();
    const load = this.load;
    const q = `?path=${encodeURIComponent(p)}`;
    try {
      const [resp, vs] = await Promise.all([
        this.ctx.client.send("GET", `${base}/content${q}`, { headers: { Accept: "*/*" } }),
        this.ctx.client.json("GET", `${base}/versions${q}`),
      ]);
      if (this.open !== p || load !== this.load) return;
      const type = resp.headers.get("Content-Type") || "";
      const size = Number(resp.headers.get("Content-Length") || 0);
      if (TEXT.test(type) && size <= PREVIEW_BYTES) this.preview.textContent = await resp.text();
      else {
        resp.body?.cancel().catch(() => {});
        this.preview.textContent = `(${type || "binary"}, ${size} bytes: download it to see it)`;
      }
      this.renderVersions(Array.isArray(vs?.versions) ? vs.versions : []);
    } catch (err) {
      if (this.open === p) this.ctx.showError(err);
    }
  }

  /** renderVersions lists a file's versions, newest first, each but the current one with Restore. */
  renderVersions(vs) {
    const current = Math.max(0, ...vs.map((v) => v.version));
    const f = this.files.get(this.open);
    if (f && f.version !== current) {
      // Changed where no event told (another tab, the API): the tree follows.
      this.files.set(this.open, { ...f, version: current });
      this.render();
    }
    const newest = [...vs].sort((a, b) => b.version - a.version);
    this.versions.replaceChildren(...newest.map((v) => el("li", { "data-version": v.version },
      el("span", {}, `v${v.version} · ${v.op} · ${v.size_bytes} bytes · `),
      el("time", { datetime: v.created_at }, new Date(v.created_at).toLocaleString()),
      v.version === current ? null
        : el("button", { type: "button", "data-restore": v.version, "aria-label": `Restore version ${v.version} of ${this.open}` }, "Restore"))));
  }

  close() {
    this.open = null;
    this.view.hidden = true;
    this.render();
  }

  async restore(version) {
    const base = this.base();
    const p = this.open;
    if (!base || !p) return;
    let f;
    try {
      f = await this.ctx.client.json("POST", `${base}/restore`, { path: p, version });
    } catch (err) {
      this.ctx.showError(err);
      return;
    }
    this.files.set(f.path, f);
    this.ctx.announce(`${p}: version ${version} restored as version ${f.version}.`);
    this.render();
    this.show(p);
  }

  /** fetchLink asks for a download link and follows it. */
  async fetchLink() {
    const base = this.base();
    const p = this.open;
    if (!base || !p) return;
    let link;
    try {
      link = await this.ctx.client.json("GET", `${base}/download?path=${encodeURIComponent(p)}`);
    } catch (err) {
      this.ctx.showError(err);
      return;
    }
    // A relative link is relative to the download request (the page's
    // own, under any path prefix); a presigned one is absolute.
    const href = new URL(link.url, new URL(`.${base}/download`, document.baseURI)).href;
    this.download.dataset.href = href;
    // A bucket's link is another origin's, where download is ignored:
    // it opens in a tab of its own rather than replacing the page.
    const same = new URL(href).origin === location.origin;
    const a = el("a", same ? { href, download: p.split("/").pop() } : { href, target: "_blank", rel: "noopener" });
    document.body.append(a);
    a.click();
    a.remove();
  }

  /** upload puts one file into the scope under its name; it reports whether it was stored. */
  async upload(file) {
    const base = this.base();
    if (!base) return false;
    let resp;
    try {
      resp = await this.ctx.client.send("PUT", `${base}/content?path=${encodeURIComponent(file.name)}`,
        { raw: file, headers: { "Content-Type": file.type || "application/octet-stream" } });
    } catch (err) {
      this.ctx.showError(err instanceof APIError && err.status === 413
        ? new APIError(413, err.code, `${file.name} is too large. ${err.message}`) : err);
      return false;
    }
    const f = await resp.json();
    this.files.set(f.path, f);
    this.ctx.announce(`${file.name} uploaded.`);
    this.render();
    return true;
  }
}
