// What the browser suites share: chromium's flags, assertions, waiting,
// and API requests from the test itself (not through the page).
export const API = "/apis/gantry.dev/v1";
// keep chromium off the network: no updates, sync, safe browsing or field trials
export const ARGS = [
  "--disable-background-networking", "--disable-component-update", "--disable-sync",
  "--no-first-run", "--no-default-browser-check", "--disable-default-apps",
  "--disable-domain-reliability", "--disable-client-side-phishing-detection",
  "--disable-features=OptimizationHints,MediaRouter,Translate,AutofillServerCommunication",
  "--metrics-recording-only", "--safebrowsing-disable-auto-update", "--disable-breakpad",
  "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1",
];

/** method path (under API) on the server at base with token: {status, body}
 * (body parsed as JSON when it is). */
export async function request(base, method, path, body, token) {
  const r = await fetch(base + API + path, {
    method,
    headers: { Authorization: `Bearer ${token}`, "Content-Type": "application/json" },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await r.text();
  let json = null;
  try { json = JSON.parse(text); } catch { /* not JSON */ }
  return { status: r.status, body: json ?? text };
}

export function assert(cond, msg) {
  if (!cond) throw new Error(`assertion failed: ${msg}`);
}

/** fn() every everyMs until it is truthy (its value) or timeoutMs pass. */
export async function until(what, fn, timeoutMs = 20000, everyMs = 50) {
  const end = Date.now() + timeoutMs;
  let last;
  while (Date.now() < end) {
    last = await fn();
    if (last) return last;
    await new Promise((r) => setTimeout(r, everyMs));
  }
  throw new Error(`timed out waiting for ${what} (last: ${JSON.stringify(last)})`);
}
