// A browser for the console's tests and screenshots: playwright-core driving Debian's Chromium,
// commanded over stdin/stdout, one JSON object per line: {"id", "op", ...} -> {"id", "ok", "value"|"error"}.
//   node tools/console/driver.js URL
// ops: click {selector} | fill {selector, value} | select {selector, value} | text {selector}
//      wait {selector, state: "visible"|"attached"|"detached"|"hidden", text?, timeout_ms}
//      count {selector} | attr {selector, name} | screenshot {path, selector?} | errors | quit
"use strict";
const readline = require("readline");
const { chromium } = require("playwright-core");

async function main() {
  const url = process.argv[2];
  const browser = await chromium.launch({
    executablePath: process.env.BROKER_EMU_CHROMIUM || "/usr/lib/chromium/chromium",
    args: ["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"],
  });
  const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
  const errors = [];
  page.on("pageerror", (e) => errors.push(String(e)));
  await page.goto(url);
  const out = (o) => process.stdout.write(JSON.stringify(o) + "\n");
  out({ id: 0, ok: true, value: "ready" });
  const rl = readline.createInterface({ input: process.stdin });
  for await (const line of rl) {
    const cmd = JSON.parse(line);
    try {
      let value = null;
      const timeout = cmd.timeout_ms ?? 15000;
      if (cmd.op === "click") await page.click(cmd.selector, { timeout });
      else if (cmd.op === "fill") await page.fill(cmd.selector, cmd.value, { timeout });
      else if (cmd.op === "select") await page.selectOption(cmd.selector, cmd.value, { timeout });
      else if (cmd.op === "text") value = await page.textContent(cmd.selector, { timeout });
      else if (cmd.op === "count") value = await page.locator(cmd.selector).count();
      else if (cmd.op === "attr") value = await page.getAttribute(cmd.selector, cmd.name, { timeout });
      else if (cmd.op === "wait") {
        if (cmd.text !== undefined) {
          await page.locator(cmd.selector).filter({ hasText: cmd.text }).first().waitFor({ state: cmd.state || "visible", timeout });
        } else {
          await page.waitForSelector(cmd.selector, { state: cmd.state || "visible", timeout });
        }
      } else if (cmd.op === "screenshot") {
        if (cmd.selector) await page.locator(cmd.selector).screenshot({ path: cmd.path });
        else await page.screenshot({ path: cmd.path, fullPage: true });
      } else if (cmd.op === "errors") value = errors;
      else if (cmd.op === "quit") { out({ id: cmd.id, ok: true }); break; }
      else throw new Error(`unknown op ${cmd.op}`);
      out({ id: cmd.id, ok: true, value });
    } catch (e) {
      out({ id: cmd.id, ok: false, error: String(e && e.message || e).slice(0, 2000) });
    }
  }
  await browser.close();
}

main().catch((e) => { process.stdout.write(JSON.stringify({ id: 0, ok: false, error: String(e) }) + "\n"); process.exit(1); });
