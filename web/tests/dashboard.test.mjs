// The dashboard's browser suite: Playwright (playwright-core) driving
// Debian's chromium against the real cluster tests/ui/test_dashboard.py
// started. Each flow is a user's task done through the page; axe-core
// checks every page (no serious or critical violations) and a screenshot
// of each page is saved. Usage: node dashboard.test.mjs ENV.json
import { chownSync, mkdirSync, readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { join } from "node:path";
import { chromium } from "playwright-core";
import { ARGS, assert, request, until } from "./harness.mjs";

const require = createRequire(import.meta.url);
const AXE = require.resolve("axe-core/axe.min.js");
const env = JSON.parse(readFileSync(process.argv[2], "utf8"));
const api = (method, path, body, token = env.tokens.admin, base = env.url) => request(base, method, path, body, token);

function simpleJob(name, project, command, gpus = 1, extra = {}) {
  return {
    apiVersion: "gantry.dev/v1", kind: "Job", metadata: { name, project },
    spec: { replicaSpecs: { Worker: { replicas: 1, template: { command, resources: { limits: { "nvidia.com/gpu": gpus, cpu: "1", memory: "256Mi" } } } } }, ...extra },
  };
}

const axeResults = {};
async function check(page, name) {
  await page.addScriptTag({ path: AXE });
  const v = await page.evaluate(async () => (await globalThis.axe.run(document, { resultTypes: ["violations"] })).violations);
  const bad = v.filter((x) => x.impact === "serious" || x.impact === "critical");
  axeResults[name] = bad.length;
  await page.screenshot({ path: join(env.shots, `${name}.png`), fullPage: true });
  if (bad.length) {
    throw new Error(`axe on ${name}: ${bad.map((x) => `${x.id} (${x.impact}): ${x.nodes.slice(0, 3).map((n) => n.target.join(" ")).join("; ")}`).join("\n")}`);
  }
}

let browser;
const open = new Set(); // pages of the running flow, shot when it fails
async function session(token, base = env.url, viewport = { width: 1280, height: 900 }) {
  // axe is injected as an inline script, which the page's CSP rightly forbids
  const context = await browser.newContext({ viewport, bypassCSP: true });
  const page = await context.newPage();
  open.add(page);
  page.on("close", () => open.delete(page));
  page.on("dialog", (d) => d.accept());
  page.on("pageerror", (e) => console.error(`page error: ${e.message}`));
  await page.goto(`${base}/#/jobs`);
  if (token) {
    await page.fill("#token", token);
    await page.press("#token", "Enter");
    await page.waitForSelector("header.top");
  }
  return page;
}

const flows = [];
const flow = (name, fn) => flows.push({ name, fn });

// first, while the nodes are idle: its replicas need a little CPU
flow("serving page shows a service's variants, weights and latency", async () => {
  // two variants behind the real gateway, b answering 60 ms late
  const variant = (name, weight, env2) => ({
    name, weight, replicas: 1,
    template: {
      command: ["/usr/bin/python3", env.echoServer],
      env: Object.entries(env2).map(([k, v]) => ({ name: k, value: String(v) })),
      resources: { limits: { cpu: "100m", memory: "128Mi" } },
    },
  });
  const svc = {
    apiVersion: "gantry.dev/v1", kind: "InferenceService", metadata: { name: "ui-ab", project: "proj-a" },
    spec: { public: true, variants: [variant("a", 80, { VERSION: "A" }), variant("b", 20, { VERSION: "B", DELAY_MS: 60 })] },
  };
  // bob's: the replicas run as the service's creator (admin is uid 0, refused)
  const r = await api("POST", "/projects/proj-a/inferenceservices", svc, env.tokens.bob);
  assert(r.status === 201, `service created: ${JSON.stringify(r.body)}`);
  const status = async () => (await api("GET", "/projects/proj-a/inferenceservices/ui-ab")).body.status ?? {};
  let last = {};
  await until("both variants ready", async () => {
    last = await status();
    return (last.variants ?? []).filter((v) => v.readyReplicas === 1).length === 2;
  }, 90000, 500).catch((e) => { throw new Error(`${e.message}: ${JSON.stringify(last.conditions)}`); });
  for (let i = 0; i < 60; i++) {
    const a = await fetch(`${env.gatewayUrl}/serving/proj-a/ui-ab/v2/models/ui-ab/infer`, { method: "POST", body: "{}" });
    assert(a.status === 200, `request ${i}: ${a.status}`);
    await a.text();
  }
  await until("p99 in the status", async () => ((await status()).variants ?? []).every((v) => v.latencyP99Ms !== undefined), 20000, 250);
  const page = await session(env.tokens.bob);
  await page.goto(`${env.url}/#/serving`);
  const rows = "section[aria-label='proj-a/ui-ab'] table.variants tbody tr";
  const cells = () => page.$$eval(rows, (trs) => trs.map((tr) => [...tr.querySelectorAll("td")].map((td) => td.textContent)));
  // columns: variant, role, revision, weight, ready, in flight, req/s, errors, p50, p99, avg
  const got = await until("the variants' rows with latency", async () => {
    const t = await cells();
    return t.length === 2 && t.every((c) => /^\d+ ms$/.test(c[9])) ? t : null;
  }, 20000, 200);
  const byName = Object.fromEntries(got.map((c) => [c[0], c]));
  assert(byName.a[3] === "80%" && byName.b[3] === "20%", `weights: ${JSON.stringify(got)}`);
  assert(byName.a[4] === "1/1" && byName.b[4] === "1/1", `ready: ${JSON.stringify(got)}`);
  assert(parseInt(byName.b[8], 10) >= 60 && parseInt(byName.b[9], 10) >= 60, `b's p50/p99 at least its 60 ms delay: ${JSON.stringify(got)}`);
  assert(parseInt(byName.a[7], 10) <= parseInt(byName.a[8], 10), `a's p50 <= p99: ${JSON.stringify(got)}`);
  await page.waitForSelector("section[aria-label='proj-a/ui-ab'] .split .split-part.stable");
  await check(page, "serving");
  await page.context().close();
  const d = await api("DELETE", "/projects/proj-a/inferenceservices/ui-ab", undefined, env.tokens.bob);
  assert(d.status === 200, `service deleted: ${JSON.stringify(d.body)}`);
  // its replica jobs go with it, before the other flows look at proj-a
  await until("the replica jobs deleted", async () => !((await api("GET", "/projects/proj-a/jobs")).body.items ?? []).some((j) => j.metadata.name.startsWith("is-ui-ab-")), 60000, 250);
});

flow("log in with the keyboard; a bad token is refused; log out", async () => {
  const page = await session(null);
  await page.waitForSelector("#token");
  await check(page, "login");
  await page.keyboard.type("not-a-token");
  await page.keyboard.press("Enter");
  await page.waitForSelector("#login-error:has-text('refused')");
  await page.fill("#token", env.tokens.alice);
  await page.keyboard.press("Tab");
  await page.keyboard.press("Enter"); // the Sign in button
  await page.waitForSelector("header .user:has-text('alice')");
  assert(await page.evaluate(() => sessionStorage.getItem("gantry.token")) === env.tokens.alice, "token kept in sessionStorage");
  await page.click("text=Log out");
  await page.waitForSelector("#token");
  assert(await page.evaluate(() => sessionStorage.getItem("gantry.token")) === null, "token gone after logout");
  await page.context().close();
});

flow("submit a training job from the form and watch its log stream", async () => {
  const page = await session(env.tokens.bob);
  await page.goto(`${env.url}/#/new`);
  await page.waitForSelector("#f-name");
  await page.fill("#f-name", "ui-train");
  await page.selectOption("#f-framework", "command");
  await page.fill("#f-git", env.repo);
  await page.fill("#f-command", "sh train.sh");
  await page.fill("#f-gpus", "1");
  await page.fill("#f-memory", "256Mi");
  // the volume comes from the storage root the cluster offers (GET clusterinfo)
  const root = await page.getAttribute("#roots option", "value");
  assert(root === env.storage + "/", `the storage root is offered: ${root}`);
  await page.fill("#f-vol-0-path", root + "data");
  await page.fill("#f-vol-0-mount", "/data");
  const yaml = await page.inputValue("#f-yaml");
  assert(yaml.includes("git: " + env.repo) && yaml.includes("sh train.sh"), `YAML shows the job: ${yaml}`);
  assert(yaml.includes("hostPath: " + env.storage + "/data"), `YAML shows the volume: ${yaml}`);
  await check(page, "new-job");
  await page.click("button:has-text('Create job')");
  await page.waitForURL(/#\/job\/proj-a\/ui-train/);
  await page.waitForSelector("pre.log:has-text('epoch 1')", { timeout: 30000 });
  // streaming: the first line shows before the task has finished
  const t = await api("GET", "/projects/proj-a/tasks/ui-train-worker-0");
  assert(t.body.status?.phase === "Running", `log streamed while running (phase ${t.body.status?.phase})`);
  await page.waitForSelector("pre.log:has-text('training done')", { timeout: 30000 });
  await page.waitForSelector("[data-condition=Succeeded]", { timeout: 30000 });
  await check(page, "job");
  await page.context().close();
});

flow("a 422 is shown at the field it names", async () => {
  const page = await session(env.tokens.bob);
  await page.goto(`${env.url}/#/new`);
  await page.fill("#f-name", "ui-bad-volume");
  await page.fill("#f-command", "true");
  // the image comes from the list the cluster offers (gantryd --image)
  const offered = await page.$$eval("#images option", (os) => os.map((o) => [o.label, o.value]));
  assert(JSON.stringify(offered) === JSON.stringify([["pytorch", env.image]]), `images offered: ${JSON.stringify(offered)}`);
  await page.fill("#f-image", offered[0][1]);
  assert((await page.inputValue("#f-yaml")).includes("image: " + env.image), "YAML shows the offered image");
  await page.fill("#f-vol-0-path", "/etc");
  await page.fill("#f-vol-0-mount", "/data");
  await page.click("button:has-text('Create job')");
  const err = await page.waitForSelector(".field:has(#f-vol-0-path) .field-error");
  const text = await err.textContent();
  assert(/spec\.volumes\[0\]\.hostPath/.test(text) && /storage root/.test(text), `message at the volume: ${text}`);
  assert(await page.getAttribute("#f-vol-0-path", "aria-invalid") === "true", "field marked invalid");
  assert(await page.evaluate(() => document.activeElement?.id) === "f-vol-0-path", "focus moved to the field");
  await page.fill("#f-vol-0-path", "");
  await page.fill("#f-backoff", "-1");
  await page.click("button:has-text('Create job')");
  await page.waitForSelector(".field:has(#f-backoff) .field-error");
  await page.context().close();
});

flow("stop a running job", async () => {
  const r = await api("POST", "/projects/proj-a/jobs", simpleJob("ui-sleeper", "proj-a", ["/bin/sh", "-c", "echo started; sleep 300"]), env.tokens.bob);
  assert(r.status === 201, JSON.stringify(r.body));
  const page = await session(env.tokens.bob);
  await page.goto(`${env.url}/#/job/proj-a/ui-sleeper`);
  await page.waitForSelector("[data-phase=Running]", { timeout: 30000 });
  await page.click("#main .actions button:text-is('Stop')");
  await until("job ui-sleeper gone", async () => (await api("GET", "/projects/proj-a/jobs/ui-sleeper")).status === 404, 40000, 200);
  await page.waitForFunction(() => /is gone|stopping/.test(document.querySelector(".status-area")?.textContent ?? ""), null, { timeout: 40000 });
  await page.context().close();
});

flow("resubmit opens the form filled in", async () => {
  const page = await session(env.tokens.bob);
  await page.goto(`${env.url}/#/job/proj-a/ui-train`);
  await page.click("a:has-text('Resubmit')");
  await page.waitForURL(/#\/new\?from=/);
  await until("form filled", async () => (await page.inputValue("#f-git")) === env.repo);
  assert(await page.inputValue("#f-name") === "ui-train-2", "new name");
  assert(await page.inputValue("#f-command") === "sh train.sh", "command kept");
  await page.click("button:has-text('Create job')");
  await page.waitForURL(/#\/job\/proj-a\/ui-train-2/);
  await page.waitForSelector("[data-condition=Succeeded]", { timeout: 40000 });
  await page.context().close();
});

flow("the GPU map follows a job starting and ending within a second", async () => {
  const page = await session(env.tokens.admin);
  await page.goto(`${env.url}/#/cluster`);
  await page.waitForSelector("[data-node=n1] li.gpu");
  const usedInDom = () => page.evaluate(() => document.querySelectorAll("li.gpu[data-state=used]").length);
  assert((await usedInDom()) === 0, "all GPUs free at first");
  // as bob: the admin's uid 0 may not run tasks in a project without privileged tasks
  const r = await api("POST", "/projects/proj-a/jobs", simpleJob("ui-gpu", "proj-a", ["/bin/sh", "-c", "sleep 4"], 2), env.tokens.bob);
  assert(r.status === 201, JSON.stringify(r.body));
  const allocated = async () => (await api("GET", "/nodes")).body.items.reduce((s, n) => s + (n.status.allocated?.gpus?.length ?? 0), 0);
  const tApi = await until("API shows GPUs held", async () => ((await allocated()) === 2 ? Date.now() : 0), 30000, 20)
    .catch(async (e) => { throw new Error(`${e.message}; job: ${JSON.stringify((await api("GET", "/projects/proj-a/jobs/ui-gpu")).body.status)}`); });
  const tDom = await until("GPU map shows them", async () => ((await usedInDom()) === 2 ? Date.now() : 0), 5000, 20);
  console.log(`  gpu map: start shown ${tDom - tApi} ms after the API`);
  assert(tDom - tApi <= 1000, `start shown within a second (${tDom - tApi} ms)`);
  const cell = await page.textContent("li.gpu[data-state=used]", { timeout: 2000 }).catch(async (e) => {
    throw new Error(`${e.message}; task: ${JSON.stringify((await api("GET", "/projects/proj-a/tasks/ui-gpu-worker-0")).body.status)}`);
  });
  assert(cell.includes("proj-a/ui-gpu-worker-0") && cell.includes("1000 milli"), `cell names the task: ${cell}`);
  await check(page, "cluster"); // while the job holds its GPUs
  const tApi2 = await until("API shows GPUs free", async () => ((await allocated()) === 0 ? Date.now() : 0), 30000, 20);
  const tDom2 = await until("GPU map frees them", async () => ((await usedInDom()) === 0 ? Date.now() : 0), 5000, 20);
  console.log(`  gpu map: end shown ${tDom2 - tApi2} ms after the API`);
  const st = (await api("GET", "/projects/proj-a/tasks/ui-gpu-worker-0")).body.status;
  assert(st.phase === "Succeeded", `the task ran to its end: ${JSON.stringify(st)}`);
  assert(tDom2 - tApi2 <= 1000, `end shown within a second (${tDom2 - tApi2} ms)`);
  const free = await page.textContent("[data-free-model='A100-80GB']");
  assert(free === "4", `free A100s by model: ${free}`);
  await page.context().close();
});

flow("the queue shows why a job waits", async () => {
  // 6 GPUs in one task; the largest node has 4: Inadmissible, and why
  const r = await api("POST", "/projects/proj-a/jobs", simpleJob("ui-too-big", "proj-a", ["/bin/true"], 6));
  assert(r.status === 201, JSON.stringify(r.body));
  const page = await session(env.tokens.alice);
  await page.goto(`${env.url}/#/queue`);
  const row = await page.waitForSelector("tr:has-text('proj-a/ui-too-big') .reason", { timeout: 20000 });
  const why = await until("the scheduler's reason", async () => {
    const t = await row.textContent();
    return /^Inadmissible: NoNodeLargeEnough: .*nvidia\.com\/gpu 6.* has 4/.test(t) && t;
  });
  const verdict = await until("the Inadmissible mark", async () => {
    const el = await page.$("tr:has-text('proj-a/ui-too-big') .reason.inadmissible");
    return el && (await el.getAttribute("data-inadmissible"));
  });
  assert(verdict === "NoNodeLargeEnough", `marked with the verdict's reason: ${verdict}`);
  console.log(`  queue reason: ${why}`);
  await check(page, "queue");
  await api("DELETE", "/projects/proj-a/jobs/ui-too-big");
  await page.context().close();
});

flow("an admin cordons and uncordons a node", async () => {
  const page = await session(env.tokens.admin);
  await page.goto(`${env.url}/#/cluster`);
  await page.click("button:has-text('Cordon n2')");
  await page.waitForSelector("[data-node=n2] .badge:has-text('Cordoned')");
  const n = await api("GET", "/nodes/n2");
  assert(n.body.spec.unschedulable === true, "node n2 unschedulable");
  await page.click("button:has-text('Uncordon n2')");
  await page.waitForSelector("[data-node=n2] button:text-is('Cordon n2')");
  assert(!(await api("GET", "/nodes/n2")).body.spec.unschedulable, "n2 schedulable again");
  await page.context().close();
});

flow("an admin edits a department's quota", async () => {
  const page = await session(env.tokens.admin);
  await page.goto(`${env.url}/#/departments`);
  await page.waitForSelector("[data-department=dept-b] .bar");
  await check(page, "departments");
  await page.click("summary:has-text('Edit quota of dept-b')");
  await page.fill("[data-department=dept-b] input[name='nvidia.com/gpu-quota']", "3");
  await page.click("button:has-text('Save quota of dept-b')");
  await page.waitForSelector(".status-area:has-text('Quota of dept-b saved')");
  const d = await api("GET", "/departments/dept-b");
  assert(d.body.spec.quota["nvidia.com/gpu"] === 3, `quota now ${JSON.stringify(d.body.spec.quota)}`);
  await page.waitForSelector("[data-department=dept-b] [data-res='nvidia.com/gpu'] :text('guarantee 3')");
  await page.context().close();
});

flow("a project admin adds and removes a member", async () => {
  const page = await session(env.tokens.alice);
  await page.goto(`${env.url}/#/projects`);
  await page.waitForSelector("[data-project=proj-a]");
  await check(page, "projects");
  await page.fill("[data-project=proj-a] input[name=user]", "erin");
  await page.selectOption("[data-project=proj-a] select[name=role]", "viewer");
  await page.click("[data-project=proj-a] button:has-text('Add member')");
  await page.waitForSelector("[data-project=proj-a] td:text-is('erin')");
  let p = await api("GET", "/projects/proj-a");
  assert(p.body.spec.members.some((m) => m.user === "erin" && m.role === "viewer"), "erin added");
  await page.click("button:has-text('Remove erin')");
  await page.waitForSelector("[data-project=proj-a] td:text-is('erin')", { state: "detached" });
  p = await api("GET", "/projects/proj-a");
  assert(!p.body.spec.members.some((m) => m.user === "erin"), "erin removed");
  await page.context().close();
});

flow("a member does not see another project's jobs", async () => {
  const page = await session(env.tokens.dave);
  await page.goto(`${env.url}/#/jobs`);
  await page.waitForSelector("table.jobs");
  const text = await page.textContent("table.jobs");
  assert(text.includes("dave-job") && !text.includes("ui-train"), `dave's list: ${text.slice(0, 200)}`);
  const options = await page.$$eval("#main select[name=project] option", (os) => os.map((o) => o.value));
  assert(!options.includes("proj-a"), `no proj-a filter for dave: ${options}`);
  await page.goto(`${env.url}/#/job/proj-a/ui-train`);
  await page.waitForSelector(".error:has-text('not allowed')");
  await page.context().close();
});

flow("a viewer has no write controls", async () => {
  const page = await session(env.tokens.carol);
  await page.goto(`${env.url}/#/job/proj-a/ui-train`);
  await page.waitForSelector("[data-condition=Succeeded]");
  for (const b of ["Stop", "Delete", "Resubmit"]) {
    assert((await page.$$(`#main .actions :text-is('${b}')`)).length === 0, `no ${b} for a viewer`);
  }
  assert(await page.$("button:has-text('Download manifest')"), "download still offered");
  await page.goto(`${env.url}/#/new`);
  await page.waitForSelector("text=You may not create jobs");
  await page.goto(`${env.url}/#/projects`);
  await page.waitForSelector("[data-project=proj-a]");
  assert(!(await page.$("button:has-text('Add member')")), "no Add member for a viewer");
  await page.goto(`${env.url}/#/cluster`);
  await page.waitForSelector("[data-node=n1]");
  assert(!(await page.$("button:has-text('Cordon')")), "no Cordon for a viewer");
  // the server refuses anyway, and says so
  const r = await api("DELETE", "/projects/proj-a/jobs/ui-train", undefined, env.tokens.carol);
  assert(r.status === 403, `viewer delete: ${r.status}`);
  await page.context().close();
});

flow("a member creates a volume, sees its usage, is refused over quota, deletes it", async () => {
  const d = await api("GET", "/departments/dept-a");
  delete d.body.status;
  d.body.spec.quota.storage = "96Mi";
  d.body.spec.limit.storage = "96Mi";
  assert((await api("PUT", "/departments/dept-a", d.body)).status === 200, "storage quota set");
  const page = await session(env.tokens.alice);
  await page.goto(`${env.url}/#/volumes`);
  await page.waitForSelector("form[aria-label='Create a volume']");
  await page.selectOption("#v-project", "proj-a");
  await page.fill("#v-name", "ui-data");
  await page.fill("#v-size", "64Mi");
  await page.click("button:has-text('Create volume')");
  await page.waitForSelector(".status-area:has-text('Volume ui-data created')");
  await page.waitForSelector("table.volumes td:text-is('ui-data')");
  const row = await page.textContent("table.volumes tr:has-text('ui-data')");
  assert(row.includes("64 MiB") && row.includes("ReadWriteOnce") && row.includes("Available"), `row: ${row}`);
  await check(page, "volumes");
  // over the quota: the server's message at the size field, nothing made
  await page.fill("#v-name", "ui-more");
  await page.fill("#v-size", "64Mi");
  await page.click("button:has-text('Create volume')");
  await page.waitForSelector("#v-size-error:has-text('exceeds the storage quota of department')");
  assert((await page.getAttribute("#v-size", "aria-invalid")) === "true", "size marked invalid");
  assert((await api("GET", "/projects/proj-a/volumes/ui-more")).status === 404, "nothing made");
  await page.click("button:has-text('Delete ui-data')");
  await page.waitForSelector(".status-area:has-text('Volume ui-data deleted')");
  await page.waitForSelector("table.volumes td:text-is('ui-data')", { state: "detached" });
  await page.context().close();
});

flow("models and their versions are listed with stage and metrics; a member promotes one", async () => {
  const m = { apiVersion: "gantry.dev/v1", kind: "Model", metadata: { name: "ui-digits", project: "proj-a" }, spec: { framework: "pytorch", description: "digits" } };
  assert((await api("POST", "/projects/proj-a/models", m, env.tokens.alice)).status === 201, "model made");
  for (let i = 0; i < 2; i++) {
    const mv = {
      apiVersion: "gantry.dev/v1",
      kind: "ModelVersion",
      metadata: { name: "x", project: "proj-a" },
      spec: { model: "ui-digits", source: { hostPath: env.modelFile }, metrics: { accuracy: 0.9 + i / 100 } },
    };
    const r = await api("POST", "/projects/proj-a/modelversions", mv, env.tokens.alice);
    assert(r.status === 201, `version ${i + 1}: ${r.status} ${JSON.stringify(r.body)}`);
  }
  const page = await session(env.tokens.alice);
  await page.goto(`${env.url}/#/models`);
  await page.waitForSelector("table.models td:text-is('ui-digits')");
  await page.waitForSelector("table.modelversions tr:has-text('accuracy=0.91')");
  await check(page, "models");
  await page.selectOption("select[aria-label='Stage of ui-digits-v2']", "Production");
  await page.waitForSelector(".status-area:has-text('ui-digits-v2 is now Production')");
  const v2 = await api("GET", "/projects/proj-a/modelversions/ui-digits-v2");
  assert(v2.body.spec.stage === "Production", `stage ${v2.body.spec.stage}`);
  await page.waitForSelector("table.models tr:has-text('ui-digits') td:text-is('v2')");
  await page.context().close();
});

flow("events stream live and filter by reason", async () => {
  const page = await session(env.tokens.admin);
  await page.goto(`${env.url}/#/events`);
  await page.waitForSelector("table.events tbody tr");
  await check(page, "events");
  const before = await page.$$eval("table.events tbody tr", (r) => r.length);
  await api("POST", "/projects/proj-a/jobs", simpleJob("ui-event", "proj-a", ["/bin/true"], 50));
  await page.waitForSelector("table.events td:has-text('ui-event')", { timeout: 20000 });
  const reason = await page.textContent("table.events tr:has-text('ui-event') td:nth-child(3)");
  await page.selectOption("select[name=reason]", reason.trim());
  const rows = await page.$$eval("table.events tbody tr td:nth-child(3)", (c) => c.map((x) => x.textContent));
  assert(rows.length > 0 && rows.every((x) => x === reason.trim()), `only ${reason} shown: ${rows}`);
  await page.fill("input[name=object]", "ui-event");
  await page.waitForFunction(() => [...document.querySelectorAll("table.events tbody tr")].every((r) => r.textContent.includes("ui-event")));
  console.log(`  events: ${before} at first, filtered to reason ${reason}`);
  await api("DELETE", "/projects/proj-a/jobs/ui-event");
  await page.context().close();
});

flow(`page through ${env.bulkJobs} jobs`, async () => {
  const page = await session(env.tokens.admin, env.bulkUrl);
  await page.goto(`${env.bulkUrl}/#/jobs`);
  await page.waitForSelector(`.range:has-text('of ${env.bulkJobs}')`);
  assert((await page.textContent(".range")).startsWith("Jobs 1–50"), await page.textContent(".range"));
  await check(page, "jobs");
  const times = [];
  for (let i = 2; i <= 4; i++) {
    const t0 = Date.now();
    await page.click("button:has-text('Next page')");
    await page.waitForSelector(`.range:has-text('Jobs ${(i - 1) * 50 + 1}–${i * 50} of ${env.bulkJobs}')`);
    times.push(Date.now() - t0);
  }
  const names = await page.$$eval("table.jobs tbody tr td:first-child", (c) => c.map((x) => x.textContent));
  assert(names.length === 50 && names[0] === "bulk-00150", `page 4 starts at bulk-00150: ${names[0]}`);
  await page.click("button:has-text('Previous page')");
  await page.waitForSelector(`.range:has-text('Jobs 101–150')`);
  console.log(`  paging: next page in ${times.join(", ")} ms`);
  assert(Math.max(...times) < 2000, "each page within 2 s");
  // filtered by text across all 10,000: the scan pages through the API
  await page.fill("input[name=q]", "bulk-09999");
  await page.click("button:has-text('Apply')");
  await page.waitForSelector("table.jobs td:has-text('bulk-09999')");
  await page.context().close();
});

flow("create a notebook, open Jupyter through the proxy, stop and start it", async () => {
  const home = join(env.storage, "ui-nb-home");
  mkdirSync(home, { recursive: true });
  chownSync(home, env.uids.bob, env.uids.bob);
  const page = await session(env.tokens.bob);
  await page.goto(`${env.url}/#/notebooks`);
  await page.waitForSelector("form.new-notebook");
  await page.selectOption("form.new-notebook select[name=project]", "proj-a");
  await page.fill("form.new-notebook input[name=name]", "ui-nb");
  await page.fill("form.new-notebook input[name=gpus]", "1");
  await page.fill("form.new-notebook input[name=home]", home);
  await page.click("button:has-text('Create notebook')");
  const row = "table.notebooks tr:has-text('ui-nb')";
  await page.waitForSelector(`${row} .badge:has-text('Running')`, { timeout: 40000 });
  await page.waitForSelector(`${row} .idle:has-text('idle')`, { timeout: 40000 });
  await check(page, "notebooks");
  // Open: the Jupyter page loads through gantryd's proxy (the link's token becomes a cookie)
  const href = await page.getAttribute(`${row} a:has-text('Open')`, "href");
  assert(href.startsWith("/projects/proj-a/notebooks/ui-nb/"), `Open goes through the proxy: ${href}`);
  const jp = await page.context().newPage();
  open.add(jp);
  await until("Jupyter's tree page through the proxy", async () => {
    await jp.goto(env.url + href);
    return (await jp.title()).includes("Home Page") && jp.url().includes("/projects/proj-a/notebooks/ui-nb/tree");
  }, 40000, 500);
  await jp.waitForSelector("#notebook_list");
  assert(!(await jp.content()).includes(env.tokens.bob), "the page holds no token");
  await jp.screenshot({ path: join(env.shots, "notebook-jupyter.png") });
  await jp.close();
  // Stop frees the GPU; Start brings it back on the same home
  await page.click("button[aria-label='Stop ui-nb']");
  await page.waitForSelector(`${row} .badge:has-text('Stopped')`, { timeout: 40000 });
  const held = async () => (await api("GET", "/nodes/n1")).body.status.allocated.gpus
    .concat((await api("GET", "/nodes/n2")).body.status.allocated.gpus)
    .filter((g) => (g.task ?? "").includes("nb-ui-nb"));
  await until("the notebook's GPU free", async () => (await held()).length === 0);
  await page.click("button[aria-label='Start ui-nb']");
  await page.waitForSelector(`${row} .badge:has-text('Running')`, { timeout: 40000 });
  await page.context().close();
});

flow("a job's training curves and utilisation are plotted live; usage shows the ledger", async () => {
  // the job writes TensorBoard event files (the example's writer) into its working directory
  const script = [
    "import sys, time",
    `sys.path.insert(0, ${JSON.stringify(env.example)})`,
    "from tfevents import SummaryWriter",
    "w = SummaryWriter('tb')",
    "for step in range(1, 13):",
    "    w.add_scalar('loss', 2.0 / step, step)",
    "    w.add_scalar('accuracy', 1 - 1.0 / (step + 1), step)",
    "    end = time.time() + 0.5",
    "    while time.time() < end: pass",
    "time.sleep(3)",
  ].join("\n");
  const r = await api("POST", "/projects/proj-a/jobs", simpleJob("ui-curves", "proj-a", ["/usr/bin/python3", "-c", script], 1, { tensorboard: { logDir: "tb" } }), env.tokens.bob);
  assert(r.status === 201, `job created: ${JSON.stringify(r.body)}`);
  const page = await session(env.tokens.bob);
  await page.goto(`${env.url}/#/job/proj-a/ui-curves`);
  await page.waitForSelector("[data-scalars] path[data-series=loss]", { timeout: 30000 });
  // live: more points arrive while the page is open
  const points = () => page.evaluate(() => (document.querySelector("[data-scalars] path[data-series=loss]")?.getAttribute("d") ?? "").split("L").length);
  const first = await points();
  await until("more loss points", async () => (await points()) > first, 20000, 200);
  await page.waitForSelector("[data-history] [data-current]", { timeout: 20000 });
  await until("all 12 loss points", async () => (await points()) === 12, 30000, 200);
  const cap = await page.textContent("[data-scalars] figure:has(path[data-series=loss]) figcaption");
  assert(/loss/.test(cap) && /latest loss 0\.167/.test(cap), `caption: ${cap}`);
  await page.waitForSelector("[data-history] path[data-series='GPU %']", { state: "attached", timeout: 20000 });
  await check(page, "job-curves");
  await page.waitForSelector("[data-phase=Succeeded]", { timeout: 40000 });
  // the run is in the ledger: the usage page shows it by project
  await page.goto(`${env.url}/#/usage?by=project`);
  await page.waitForSelector("table.usage td:has-text('proj-a')", { timeout: 20000 });
  await page.waitForSelector("[data-bar=proj-a]");
  const rep = await api("GET", "/usage?by=project", undefined, env.tokens.bob);
  const shown = await page.textContent("table.usage tr:last-child td:nth-child(2)");
  const total = rep.body.total.gpuMilliSeconds;
  assert(shown === `${Math.floor(total / 1000)}.${String(total % 1000).padStart(3, "0")}`, `total ${shown} vs ${total}`);
  await check(page, "usage");
  await page.context().close();
});

flow("every page fits 375 px", async () => {
  const page = await session(env.tokens.admin, env.url, { width: 375, height: 800 });
  for (const p of ["cluster", "departments", "jobs", "new", "job/proj-a/ui-train", "queue", "projects", "volumes", "models", "events", "usage", "notebooks"]) {
    await page.goto(`${env.url}/#/${p}`);
    await page.waitForSelector("main h1");
    await page.waitForTimeout(300);
    const over = await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
    assert(over <= 1, `${p} is ${over} px wider than 375`);
  }
  await page.goto(`${env.url}/#/cluster`);
  await page.waitForSelector("[data-node=n1] li.gpu");
  await page.screenshot({ path: join(env.shots, "cluster-375.png"), fullPage: true });
  await page.goto(`${env.url}/#/new`);
  await page.waitForSelector("#f-name");
  await page.screenshot({ path: join(env.shots, "new-job-375.png"), fullPage: true });
  await page.context().close();
});

browser = await chromium.launch({ executablePath: env.chromium, args: ARGS });
let failed = 0;
const t0 = Date.now();
const only = process.env.GANTRY_UI_FLOWS ? new RegExp(process.env.GANTRY_UI_FLOWS) : null;
const run = flows.filter((x) => !only || only.test(x.name));
for (const [i, f] of run.entries()) {
  const t = Date.now();
  try {
    await f.fn();
    console.log(`ok   ${f.name} (${Date.now() - t} ms)`);
  } catch (e) {
    failed++;
    console.log(`FAIL ${f.name}: ${e.stack ?? e}`);
    for (const p of open) {
      await p.screenshot({ path: join(env.shots, `FAILED-${i + 1}.png`), fullPage: true }).catch((e2) => console.log(`  (no screenshot: ${e2.message})`));
      console.log(`  page ${p.url()}: ${(await p.textContent("body").catch(() => "")).slice(0, 1500)}`);
      await p.context().close().catch(() => {});
    }
  }
}
await browser.close();
console.log(`axe serious/critical violations per page: ${JSON.stringify(axeResults)}`);
console.log(`${run.length - failed} flows passed, ${failed} failed (${((Date.now() - t0) / 1000).toFixed(1)} s)`);
process.exit(failed ? 1 : 0);
