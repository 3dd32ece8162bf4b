// The time from the SMTP 250 to the row shown in the browser: the built
// binary, Debian's chromium on the inbox page (signed in, its event stream
// open), and nodemailer sending one message at a time over SMTP. The page
// records when each row appears (a MutationObserver, Date.now()); the sender
// records when the 250 to DATA came back (sendMail resolving). Prints p50, p90,
// p99 and max in milliseconds. Not a test: run it by hand,
//
//   make build && cd e2e && node bench/live.mjs [COUNT]
import { execFileSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import nodemailer from "nodemailer";
import { chromium } from "playwright-core";
import { startCatchbox, binary } from "../harness.mjs";

const count = Number(process.argv[2] || 50);
const password = "bench dashboard password";
const server = await startCatchbox({ CATCHBOX_MAIL_DOMAIN: "mail.test" });
execFileSync(binary, ["admin", "user", "create", "bench@example.com", "--org", "default"], {
  env: { ...process.env, CATCHBOX_DATA_DIR: server.dataDir }, input: password + "\n" });
const dir = mkdtempSync(join(tmpdir(), "catchbox-chromium-"));
const context = await chromium.launchPersistentContext(dir, {
  executablePath: process.env.CATCHBOX_CHROMIUM || "/usr/bin/chromium", headless: true,
  args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync"],
});
try {
  const page = context.pages()[0] || (await context.newPage());
  await page.goto(server.baseUrl);
  await page.fill("#email", "bench@example.com");
  await page.fill("#password", password);
  await Promise.all([page.waitForURL((u) => !u.pathname.startsWith("/signin")), page.click("button[type=submit]")]);
  await page.goto(server.baseUrl + "inboxes/default");
  await page.waitForSelector("[data-live-status]:not([hidden])");
  await page.evaluate(() => {
    window.__seen = {};
    const rows = document.getElementById("rows");
    new MutationObserver(() => {
      const now = Date.now();
      for (const el of rows.querySelectorAll(".mail-subject")) {
        const s = el.textContent.trim();
        if (!(s in window.__seen)) window.__seen[s] = now;
      }
    }).observe(rows, { childList: true, subtree: true });
  });
  const [host, port] = server.smtp.split(":");
  const transport = nodemailer.createTransport({ host, port: Number(port), secure: false, ignoreTLS: true });
  const lat = [];
  for (let i = 0; i < count; i++) {
    const subject = `live ${i}`;
    await transport.sendMail({ from: "s@example.com", to: "x@default.mail.test", subject, text: "hi" });
    const at250 = Date.now();
    await page.waitForFunction((s) => s in window.__seen, subject, { polling: 10 });
    const seen = await page.evaluate((s) => window.__seen[s], subject);
    lat.push(seen - at250);
  }
  lat.sort((a, b) => a - b);
  const q = (p) => lat[Math.min(lat.length - 1, Math.floor(lat.length * p))];
  console.log(`messages ${count}: SMTP 250 to row shown, ms: p50 ${q(0.5)} p90 ${q(0.9)} p99 ${q(0.99)} max ${lat[lat.length - 1]} min ${lat[0]}`);
} finally {
  await context.close();
  rmSync(dir, { recursive: true, force: true });
  await server.stop();
}
