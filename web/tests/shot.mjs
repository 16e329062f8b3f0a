// One screenshot of a dashboard page, for scripts/demo: Playwright
// (playwright-core) driving Debian's chromium logs in with a token, opens
// the page, waits for a selector and saves the page as a PNG.
// Usage: node shot.mjs URL TOKEN ROUTE SELECTOR OUT.png [CHROMIUM]
import { chromium } from "playwright-core";

const [url, token, route, selector, out, exe = "/usr/bin/chromium"] = process.argv.slice(2);
if (!out) {
  console.error("usage: node shot.mjs URL TOKEN ROUTE SELECTOR OUT.png [CHROMIUM]");
  process.exit(2);
}
const browser = await chromium.launch({ executablePath: exe, args: ["--no-sandbox", "--headless=new"] });
try {
  const page = await (await browser.newContext({ viewport: { width: 1280, height: 900 } })).newPage();
  await page.goto(`${url}/#/jobs`);
  await page.fill("#token", token);
  await page.press("#token", "Enter");
  await page.waitForSelector("header.top");
  await page.goto(`${url}/#/${route}`);
  await page.waitForSelector(selector, { timeout: 30000 });
  await page.waitForTimeout(500);
  await page.screenshot({ path: out, fullPage: true });
} finally {
  await browser.close();
}
