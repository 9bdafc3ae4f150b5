// The client scripts' report: each scenario's result (or what it threw:
// the error's text, status and body) and how long it took.
export const report = {};

export async function scenario(name, fn) {
  const t0 = Date.now();
  try {
    report[name] = await fn();
  } catch (err) {
    report[name] = { thrown: String(err), status: err?.status ?? null, error: err?.error ?? null };
  }
  report[name].ms = Date.now() - t0;
}
