// ui_load_ms for bench/ui.sh: the median time from navigating headless
// Chromium to the dashboard to its jobs list rendered (the pager showing
// the total), each run in a fresh context with the token already signed in.
// Usage: node ui_load.mjs URL TOKEN RUNS
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const require = createRequire(join(dirname(fileURLToPath(import.meta.url)), "..", "web", "package.json"));
const { chromium } = require("playwright-core");
const [url, token, runs = "7"] = process.argv.slice(2);
const browser = await chromium.launch({
  executablePath: "/usr/bin/chromium",
  args: ["--disable-background-networking", "--disable-component-update", "--disable-sync", "--no-first-run"],
});
const times = [];
for (let i = 0; i < Number(runs); i++) {
  const context = await browser.newContext();
  await context.addInitScript((t) => sessionStorage.setItem("gantry.token", t), token);
  const page = await context.newPage();
  const t0 = Date.now();
  await page.goto(`${url}/#/jobs`);
  await page.waitForSelector(".range:has-text(' of ')");
  times.push(Date.now() - t0);
  await context.close();
}
await browser.close();
times.sort((a, b) => a - b);
console.log(times[Math.floor(times.length / 2)]);
