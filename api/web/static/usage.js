// The usage section of Settings: what the user's runs spent this month
// (GET /api/v1/me/usage), per day and model, and the monthly quota when
// the server sets one. It is read each time Settings opens, so it shows
// the runs that ended since.

import { el } from "./dom.js";

const number = new Intl.NumberFormat();

export class Usage {
  /** @param {object} ctx client. */
  constructor(ctx) {
    this.ctx = ctx;
    this.summary = document.querySelector("#usage-summary");
    this.table = document.querySelector("#usage-table");
    this.load = 0;
  }

  /** show reads this month's usage again (its first page of days). */
  async show() {
    const load = ++this.load;
    let data;
    try {
      data = await this.ctx.client.json("GET", "/api/v1/me/usage?limit=200");
    } catch {
      if (load !== this.load) return;
      this.summary.textContent = "Usage could not be read.";
      this.table.hidden = true;
      return;
    }
    if (load !== this.load) return;
    const days = Array.isArray(data?.days) ? data.days : [];
    const total = data?.totals?.total_tokens ?? 0;
    let text = `${number.format(total)} tokens in ${number.format(data?.totals?.runs ?? 0)} runs this month.`;
    if (data?.quota) {
      const q = data.quota;
      const left = Math.max(0, q.monthly_tokens - q.used_tokens);
      // The quota resets at midnight UTC: the date is UTC's too.
      text += ` Quota: ${number.format(q.used_tokens)} of ${number.format(q.monthly_tokens)} tokens used, ${number.format(left)} left;` +
        ` it resets on ${new Date(q.resets_at).toLocaleDateString(undefined, { timeZone: "UTC" })} (UTC).`;
    }
    this.summary.textContent = text;
    this.table.hidden = days.length === 0;
    this.table.tBodies[0].replaceChildren(...days.map((d) => el("tr", { "data-day": d.day, "data-model": d.model },
      el("td", {}, d.day), el("td", {}, el("code", {}, d.model)),
      el("td", {}, number.format(d.input_tokens)), el("td", {}, number.format(d.output_tokens)),
      el("td", {}, number.format(d.tool_calls)), el("td", {}, number.format(d.runs)))));
  }
}
