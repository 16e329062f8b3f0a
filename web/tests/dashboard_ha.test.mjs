// The dashboard across gantryd replicas (docs/ha.md "The dashboard"), in
// Playwright driving Debian's chromium against what
// tests/ui/test_dashboard_ha.py started: a 3-member etcd and replicas
// r1-r3, r1 leading, r2 crashing right after committing its first API
// write (before answering). The page's Content-Security-Policy is kept
// (no bypass): the calls to other replicas must pass it and CORS.
//
// The page is opened on r1 and left on the Queue (a live list of jobs).
// r1, the leader, is SIGKILLed; a job created through r3 afterwards shows
// on the page, whose watch resumed on r2 from the last resourceVersion it
// saw (no new list); the header moves from r1 to r2 and names the new
// leader. A job submitted from the page's form is stored by r2, which
// crashes before answering: the page sends it again to r3, takes the 409
// for its own create and opens the job; stopping it from the job page
// deletes it through r3, and the page's watch of the job sees it go.
// Usage: node dashboard_ha.test.mjs ENV.json
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { chromium } from "playwright-core";
import { API, ARGS, assert, request, until } from "./harness.mjs";

const env = JSON.parse(readFileSync(process.argv[2], "utf8"));
const [u1, u2, u3] = env.urls;
const BOUND_MS = env.sanitized ? 90000 : 30000; // a failover and what follows it
const bob = env.tokens.bob;

const job = (name) => ({
  apiVersion: "gantry.dev/v1", kind: "Job", metadata: { name, project: "proj-a" },
  spec: { replicaSpecs: { Worker: { replicas: 1, template: { command: ["true"], resources: { limits: { cpu: "100m", memory: "64Mi" } } } } } },
});
const queued = (page, name) => page.waitForSelector(`table a:text-is('proj-a/${name}')`, { timeout: BOUND_MS });
const header = (page) => page.$eval("#replica-status", (el) => ({ server: el.dataset.server, leader: el.dataset.leader, text: el.textContent }));
const down = async (url) => fetch(`${url}/healthz`).then(() => false, () => true);

const browser = await chromium.launch({ executablePath: env.chromium, args: ARGS });
let page;
let ok = false;
const t0 = Date.now();
const trail = []; // the page's requests, printed when the flow fails
try {
  const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
  page = await context.newPage();
  page.on("dialog", (d) => d.accept());
  const problems = [];
  page.on("pageerror", (e) => problems.push(`page error: ${e.message}`));
  page.on("console", (m) => {
    if (/Content Security Policy|CORS/.test(m.text())) problems.push(m.text());
  });
  const apiRequests = []; // [url, time]
  page.on("request", (r) => {
    if (r.url().includes(`${API}/jobs`)) apiRequests.push([r.url(), Date.now()]);
    trail.push(`${Date.now() - t0} ${r.method()} ${r.url()}`);
  });
  page.on("response", (r) => trail.push(`${Date.now() - t0} ${r.status()} ${r.url()}`));
  page.on("requestfailed", (r) => trail.push(`${Date.now() - t0} failed ${r.url()}: ${r.failure()?.errorText}`));

  await page.goto(`${u1}/#/queue`);
  await page.fill("#token", bob);
  await page.press("#token", "Enter");
  await page.waitForSelector("header.top");
  const h1 = await until("the header names r1, the leader", async () => {
    const h = await header(page);
    return h.server === u1 && h.leader === "r1" ? h : null;
  }, BOUND_MS);
  assert(h1.text === "Replica r1 · leader r1", `header: ${h1.text}`);
  const made = await request(u1, "POST", "/projects/proj-a/jobs", job("before-kill"), bob);
  assert(made.status === 201, `before-kill created: ${JSON.stringify(made.body)}`);
  await queued(page, "before-kill");

  // SIGKILL r1, the leader and the page's own server
  const killedAt = Date.now();
  process.kill(env.pids[0], "SIGKILL");
  await until("r1 down", () => down(u1), 10000);
  const after = await request(u3, "POST", "/projects/proj-a/jobs", job("after-kill"), bob);
  assert(after.status === 201, `after-kill created through r3: ${JSON.stringify(after.body)}`);
  await queued(page, "after-kill");
  console.log(`job created after the kill shown ${Date.now() - killedAt} ms after the kill`);
  // the watch moved to r2 and resumed: its first jobs request there is a watch from a revision
  const moved = apiRequests.filter(([u, t]) => t >= killedAt && !u.startsWith(u1));
  assert(moved.length > 0 && moved[0][0].startsWith(u2), `requests after the kill: ${JSON.stringify(moved)}`);
  const rv = new URL(moved[0][0]).searchParams;
  assert(rv.get("watch") === "true" && Number(rv.get("resourceVersion")) > 0, `resumed, not listed again: ${moved[0][0]}`);
  const h2 = await until("the header names r2 and a new leader", async () => {
    const h = await header(page);
    return h.server === u2 && (h.leader === "r2" || h.leader === "r3") ? h : null;
  }, BOUND_MS, 200);
  console.log(`header: ${h2.text} (${Date.now() - killedAt} ms after the kill)`);

  // a write from the page: r2 stores it and crashes before answering
  await page.evaluate(() => { location.hash = "#/new"; }); // r1, which served the page, is gone
  await page.waitForSelector("#f-name");
  await page.fill("#f-name", "ui-ha");
  await page.selectOption("#f-framework", "command");
  await page.fill("#f-command", "true");
  await page.fill("#f-gpus", "0");
  await page.fill("#f-memory", "64Mi");
  await page.click("button:has-text('Create job')");
  await page.waitForURL(/#\/job\/proj-a\/ui-ha$/, { timeout: BOUND_MS });
  assert(await down(u2), "r2 crashed after storing the create");
  const stored = await request(u3, "GET", "/projects/proj-a/jobs/ui-ha", undefined, bob);
  const tmpl = Object.values(stored.body.spec?.replicaSpecs ?? {})[0]?.template;
  assert(stored.status === 200 && tmpl?.command?.at(-1) === "true" && stored.body.metadata.creator.user === "bob",
    `ui-ha stored, as the form sent it: ${JSON.stringify(stored.body)}`);
  await page.waitForSelector("h1:has-text('Job proj-a/ui-ha')");
  await until("the header names r3", async () => (await header(page)).server === u3, BOUND_MS, 200);

  // and a delete from the page, through r3
  await page.click("button:has-text('Stop')");
  await until("ui-ha deleted", async () => (await request(u3, "GET", "/projects/proj-a/jobs/ui-ha", undefined, bob)).status === 404, BOUND_MS, 200);
  await page.waitForSelector("text=Job ui-ha is gone.", { timeout: BOUND_MS }); // its watch saw it go
  const h3 = await until("r3 leads", async () => {
    const h = await header(page);
    return h.leader === "r3" ? h : null;
  }, BOUND_MS, 200);
  console.log(`header: ${h3.text}`);
  await page.screenshot({ path: join(env.shots, "ha-failover.png"), fullPage: true });
  assert(problems.length === 0, `the page reported: ${problems.join("\n")}`);
  ok = true;
  console.log("ok   the dashboard fails over between replicas");
} catch (e) {
  console.log(`FAIL the dashboard fails over between replicas: ${e.stack ?? e}`);
  if (page) {
    await page.screenshot({ path: join(env.shots, "FAILED-ha.png"), fullPage: true }).catch(() => {});
    console.log(`  page ${page.url()}: ${(await page.textContent("body").catch(() => "")).slice(0, 1500)}`);
    console.log(`  requests:\n  ${trail.filter((l) => !l.includes("/readyz")).join("\n  ")}`);
  }
} finally {
  await browser.close();
}
process.exit(ok ? 0 : 1);
