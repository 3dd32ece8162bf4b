// The dashboard in a real browser: Debian's chromium driven by playwright-core
// against the built binary. A person signs in, creates an inbox, sees mail sent
// over SMTP appear without reloading, opens it (its script does not run, its
// remote images do not load until allowed), downloads an attachment, reads its
// code, creates and revokes an API key and signs out; a second organisation's
// user sees none of it. dashboard_pages.test.mjs checks every page's
// accessibility, layout at phone width and title.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { createServer } from "node:http";
import nodemailer from "nodemailer";
import { startCatchbox, binary } from "./harness.mjs";
import { browser, closeBrowsers, signIn as signInAt, skip } from "./browser.mjs";

const password = "e2e dashboard password";

let server;
let tracker; // a "remote" server: any request to it means something loaded
let trackerHits = [];
let trackerURL;

function admin(args, input) {
  return execFileSync(binary, ["admin", ...args], {
    env: { ...process.env, CATCHBOX_DATA_DIR: server.dataDir },
    input: input ?? "",
    stdio: ["pipe", "pipe", "pipe"],
  }).toString();
}

const signIn = (page, email) => signInAt(page, server.baseUrl, email, password);

before(async () => {
  tracker = createServer((req, res) => {
    trackerHits.push(req.url);
    res.writeHead(200, { "Content-Type": "image/gif" });
    res.end(Buffer.from("R0lGODlhAQABAAAAACw=", "base64"));
  });
  await new Promise((r) => tracker.listen(0, "127.0.0.1", r));
  trackerURL = `http://127.0.0.1:${tracker.address().port}`;
  server = await startCatchbox({ CATCHBOX_MAIL_DOMAIN: "mail.test" });
  admin(["user", "create", "alice@example.com", "--org", "default"], password + "\n");
  admin(["org", "create", "beta"]);
  admin(["user", "create", "bob@example.com", "--org", "beta"], password + "\n");
});

after(async () => {
  await closeBrowsers();
  await new Promise((r) => tracker?.close(r));
  await server?.stop();
});

test("chromium is installed", { skip }, () => {});

test("a person's day with the dashboard, and another organisation's user sees none of it", { skip }, async () => {
  const { page } = await browser();
  await page.setViewportSize({ width: 1280, height: 800 });

  // Signed out, / is the sign-in page.
  await page.goto(server.baseUrl);
  assert.equal(await page.title(), "Sign in · Catchbox");
  await signIn(page, "alice@example.com");
  assert.match(await page.textContent("h1"), /Inboxes/);

  // Create an inbox.
  await page.fill("#ns-name", "e2e");
  await Promise.all([page.waitForURL("**/inboxes/e2e**"), page.click("text=Create inbox")]);
  await page.waitForSelector("[data-live-status]:not([hidden])"); // the event stream is open
  await page.evaluate(() => { window.__notReloaded = true; });

  // Mail over SMTP appears without a reload.
  const [host, port] = server.smtp.split(":");
  const transport = nodemailer.createTransport({ host, port: Number(port), secure: false, ignoreTLS: true });
  const attachment = "id,name\n1,catchbox\n";
  await transport.sendMail({
    from: "Sender <sender@example.com>",
    to: "signup-1@e2e.mail.test",
    subject: "Welcome, your code is 739204",
    text: "Your code is 739204.",
    html: `<h1>Welcome</h1><p>Your code is <b>739204</b>.</p>
      <script>document.title = "pwned"; new Image().src = "${trackerURL}/script-ran";</script>
      <img src="${trackerURL}/pixel.gif" alt="tracking pixel">
      <img src="x" onerror="new Image().src='${trackerURL}/onerror-ran'">`,
    attachments: [{ filename: "report.csv", content: attachment, contentType: "text/csv" }],
  });
  const row = page.locator(".mail-row", { hasText: "Welcome, your code is 739204" });
  await row.waitFor();
  assert.equal(await page.evaluate(() => window.__notReloaded), true, "the page reloaded");
  assert.equal(await row.locator(".code-chip").textContent(), "739204");

  // Open it: the HTML is in a sandboxed frame; no script runs, no remote image loads.
  await Promise.all([page.waitForURL("**/emails/**"), row.locator("a").click()]);
  const emailURL = page.url();
  const frame = page.frameLocator("iframe.body");
  await frame.locator("h1", { hasText: "Welcome" }).waitFor();
  assert.equal(await page.locator("code.otp").first().textContent(), "739204");
  await page.waitForTimeout(300); // give a script or an image the chance to fail the test
  assert.deepEqual(trackerHits, [], "the email's script ran or its remote image loaded");
  assert.equal(await page.title().then((t) => t.includes("pwned")), false);

  // Remote images load once allowed (so the check above can fail); scripts still do not run.
  await Promise.all([page.waitForURL("**images=1**"), page.click("text=Show images")]);
  await page.frameLocator("iframe.body").locator("h1").waitFor();
  await page.waitForFunction(() => true);
  for (let i = 0; i < 50 && !trackerHits.includes("/pixel.gif"); i++) await page.waitForTimeout(100);
  assert.ok(trackerHits.includes("/pixel.gif"), "the allowed image did not load: " + trackerHits);
  assert.ok(!trackerHits.some((h) => h.includes("ran")), "a script ran: " + trackerHits);

  // Download the attachment.
  const [download] = await Promise.all([page.waitForEvent("download"), page.click("a.att")]);
  assert.equal(download.suggestedFilename(), "report.csv");
  assert.equal(readFileSync(await download.path(), "utf8").replace(/\r\n/g, "\n"), attachment);

  // Create an API key: shown once, works; revoke it: refused.
  await page.goto(server.baseUrl + "organisation");
  await page.fill("#key-label", "from the browser");
  await Promise.all([page.waitForURL("**/organisation"), page.click("text=Create key")]);
  const key = await page.textContent("#new-key");
  assert.match(key, /^cbx_/);
  const check = (k) => fetch(server.baseUrl + "api/test", { headers: { "X-Api-Key": k } }).then((r) => r.status);
  assert.equal(await check(key), 200);
  await page.goto(server.baseUrl + "organisation");
  assert.equal(await page.locator("#new-key").count(), 0, "the key is shown again");
  await page.locator("tr", { hasText: "from the browser" }).locator("text=Revoke").click();
  await page.waitForSelector("text=API key revoked");
  assert.equal(await check(key), 401);

  // A second organisation's user sees none of it.
  const other = await browser();
  await signIn(other.page, "bob@example.com");
  assert.equal(await other.page.locator("text=e2e").count(), 0);
  for (const path of ["inboxes/e2e", new URL(emailURL).pathname.slice(1)]) {
    const res = await other.page.goto(server.baseUrl + path);
    assert.equal(res.status(), 404, path);
  }
  await other.page.goto(server.baseUrl + "organisation");
  assert.equal(await other.page.locator("text=from the browser").count(), 0);

  // Sign out: the pages are closed to this browser.
  await page.click("text=Sign out");
  await page.waitForURL("**/signin**");
  await page.goto(server.baseUrl + "inboxes/e2e");
  assert.match(new URL(page.url()).pathname, /^\/signin/);
});
