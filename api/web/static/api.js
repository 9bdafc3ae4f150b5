// The page's client of the Trellis HTTP API (API.md). Every request goes
// to the page's own origin, relative to the page (see local).

/** APIError is a failed request: an HTTP status with API.md's {code, message}. */
export class APIError extends Error {
  constructor(status, code, message) {
    super(message);
    this.name = "APIError";
    this.status = status; // 0 when the server could not be reached
    this.code = code;
  }

  /** retryable reports whether trying again later may succeed. */
  get retryable() {
    return this.status === 0 || this.status === 408 || this.status === 429 || this.status >= 500;
  }
}

/** path builds an API path, escaping each id. */
export function path(strings, ...ids) {
  return strings.reduce((acc, s, i) => acc + s + (i < ids.length ? encodeURIComponent(ids[i]) : ""), "");
}

/**
 * local makes a server path ("/api/v1/…") relative to the page, so that
 * the page works where a reverse proxy serves the server under a path
 * prefix that it strips (the page at /trellis/ reaches /trellis/api/v1)
 * as it does at the root.
 */
export function local(url) {
  return url.startsWith("/") ? "." + url : url;
}

export class Client {
  /** @param {() => string} apiKey returns the API key, or "" for none. */
  constructor(apiKey) {
    this.apiKey = apiKey;
    // csrf is the CSRF token of the session the page signed in with
    // (GET /auth/session); "" without one. The browser sends the session
    // cookie by itself, same-origin; writes must send the token too.
    this.csrf = "";
  }

  headers(extra, method = "GET") {
    const h = { Accept: "application/json", ...extra };
    const key = this.apiKey();
    if (key) h.Authorization = `Bearer ${key}`;
    else if (this.csrf && !["GET", "HEAD", "OPTIONS"].includes(method)) h["X-CSRF-Token"] = this.csrf;
    return h;
  }

  /**
   * session returns who the page is signed in as ({user, expires_at,
   * csrf_token}), null when sign-in is offered but no one is signed in,
   * or undefined when the server offers no sign-in.
   */
  async session() {
    let resp;
    try {
      resp = await fetch(local("/auth/session"), { headers: { Accept: "application/json" }, cache: "no-store" });
    } catch {
      return undefined;
    }
    if (resp.status === 401) return null;
    if (!resp.ok || !(resp.headers.get("Content-Type") || "").includes("json")) return undefined;
    const s = await resp.json();
    this.csrf = s.csrf_token || "";
    return s;
  }

  /**
   * send sends a request: body as JSON, or raw (a Blob, a string) as it
   * is, with the Content-Type headers give it.
   */
  async send(method, url, { body, raw, headers, signal } = {}) {
    const init = { method, headers: this.headers(headers, method), signal, cache: "no-store" };
    if (body !== undefined) {
      init.body = JSON.stringify(body);
      init.headers["Content-Type"] = "application/json";
    } else if (raw !== undefined) {
      init.body = raw;
    }
    let resp;
    try {
      resp = await fetch(local(url), init);
    } catch (err) {
      if (err.name === "AbortError") throw err;
      throw new APIError(0, "network_error", "The server cannot be reached. Check your connection; the page keeps trying.");
    }
    if (!resp.ok) throw await errorOf(resp);
    return resp;
  }

  /** json sends a request and returns its decoded JSON body (null for 204). */
  async json(method, url, body, signal) {
    const resp = await this.send(method, url, { body, signal });
    if (resp.status === 204) return null;
    try {
      return await resp.json();
    } catch {
      throw new APIError(resp.status, "bad_response", `The server's answer to ${method} ${url} is not JSON.`);
    }
  }

  /**
   * upload posts a multipart form (a document) and returns its decoded
   * JSON answer; the browser sets the multipart Content-Type.
   */
  async upload(url, form, signal) {
    let resp;
    try {
      resp = await fetch(local(url), { method: "POST", headers: this.headers(undefined, "POST"), body: form, signal, cache: "no-store" });
    } catch (err) {
      if (err.name === "AbortError") throw err;
      throw new APIError(0, "network_error", "The server cannot be reached. Check your connection and try again.");
    }
    if (!resp.ok) throw await errorOf(resp);
    return resp.json();
  }

  /**
   * stream sends a request that answers with an event stream and returns
   * the Response, whose body is still unread. lastEventId, when set, goes
   * in the Last-Event-ID header.
   */
  async stream(method, url, { body, lastEventId, signal } = {}) {
    const headers = { Accept: "text/event-stream" };
    if (lastEventId) headers["Last-Event-ID"] = String(lastEventId);
    const resp = await this.send(method, url, { body, headers, signal });
    const type = resp.headers.get("Content-Type") || "";
    if (!type.startsWith("text/event-stream")) {
      resp.body?.cancel().catch(() => {});
      throw new APIError(resp.status, "bad_response", `Expected an event stream from ${url}, got ${type || "no content type"}.`);
    }
    return resp;
  }
}

async function errorOf(resp) {
  let code = `http_${resp.status}`;
  let message = `The server answered ${resp.status} ${resp.statusText}.`.replace(" .", ".");
  try {
    const body = await resp.json();
    if (body && body.error) {
      code = body.error.code || code;
      message = body.error.message || message;
    }
  } catch {
    // Not API.md's error body; keep the status line.
  }
  return new APIError(resp.status, code, message);
}
