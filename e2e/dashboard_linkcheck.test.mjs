// The link check on the dashboard's email page, in a real browser (Debian's
// chromium driven by playwright-core): a person opens a mail sent over SMTP,
// starts the check from the Links tab, sees it run and then each URL's
// outcome (a working page, a moved one, a dead link, an image), at desktop
// and phone width, in both themes, and checks again.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { createServer } from "node:http";
import nodemailer from "nodemailer";
import { startCatchbox, binary } from "./harness.mjs";
import { axe, browser, closeBrowsers, cutOff, signIn, skip } from "./browser.mjs";

const password = "e2e link check password";

let server;
let site;
let siteURL;
let emailID;

before(async () => {
  site = createServer((req, res) => {
    if (req.url === "/pricing") return res.end("prices");
    if (req.url === "/plans") return res.writeHead(301, { Location: "/pricing" }).end();
    if (req.url === "/banner.png") return res.writeHead(200, { "Content-Type": "image/png" }).end();
    res.writeHead(404).end();
  });
  await new Promise((r) => site.listen(0, "127.0.0.1", r));
  siteURL = `http://127.0.0.1:${site.address().port}`;
  server = await startCatchbox();
  execFileSync(binary, ["admin", "user", "create", "carol@example.com", "--org", "default"], {
    env: { ...process.env, CATCHBOX_DATA_DIR: server.dataDir },
    input: password + "\n",
  });
  const [host, port] = server.smtp.split(":");
  const transport = nodemailer.createTransport({ host, port: Number(port), secure: false, ignoreTLS: true });
  await transport.sendMail({
    from: "Shop <news@shop.example>",
    to: "carol@default.localhost",
    subject: "New plans",
    html: `<p><img src="${siteURL}/banner.png" alt="New plans"></p>
      <p><a href="${siteURL}/pricing">See the prices</a>, <a href="${siteURL}/plans">compare plans</a>
      or <a href="${siteURL}/discontinued">the old offer</a>.</p>`,
  });
  transport.close();
  const res = await fetch(server.baseUrl + "api/emails/default/inbox?subject=New%20plans&wait=true", {
    headers: { "X-Api-Key": server.apiKey },
  });
  emailID = (await res.json()).data[0].id;
});

after(async () => {
  await closeBrowsers();
  await new Promise((r) => site?.close(r));
  await server?.stop();
});

test("the email page starts a link check and shows each URL's outcome", { skip }, async () => {
  const { page } = await browser();
  await page.setViewportSize({ width: 1280, height: 800 });
  await signIn(page, server.baseUrl, "carol@example.com", password);

  await page.goto(server.baseUrl + `emails/${emailID}?tab=links`);
  const section = page.locator("#link-check");
  assert.match(await section.textContent(), /A link check asks for every link and image/);
  await axe(page, "the Links tab before a check");

  await Promise.all([page.waitForURL((u) => u.searchParams.get("tab") === "links"), section.locator("button", { hasText: "Check links" }).click()]);
  assert.match(await page.locator("p.flash").textContent(), /Link check started/);
  // The page reloads itself while the check runs, until the results show.
  await page.waitForSelector("table.link-check", { timeout: 60000 });
  assert.match(await section.locator("p").first().textContent(), /completed.*1 broken.*4 URLs checked/s);

  const rows = await section.locator("tbody tr").evaluateAll((trs) => trs.map((tr) => ({
    url: tr.querySelector("td[data-label=URL] a").textContent,
    ends: tr.querySelector("td[data-label=URL] .muted")?.textContent ?? "",
    kind: tr.querySelector("td[data-label=Kind]").textContent,
    status: tr.querySelector("td[data-label=Status]").textContent,
    redirects: tr.querySelector("td[data-label=Redirects]").textContent,
    error: tr.querySelector("td[data-label=Error]").textContent,
    broken: tr.classList.contains("broken"),
  })));
  const path = (u) => u.slice(siteURL.length);
  assert.deepEqual(rows.map((r) => ({ ...r, url: path(r.url) })), [
    { url: "/banner.png", ends: "", kind: "image", status: "200", redirects: "0", error: "none", broken: false },
    { url: "/pricing", ends: "", kind: "link", status: "200", redirects: "0", error: "none", broken: false },
    { url: "/plans", ends: `ends at ${siteURL}/pricing`, kind: "link", status: "200", redirects: "1", error: "none", broken: false },
    { url: "/discontinued", ends: "", kind: "link", status: "404", redirects: "0", error: "HTTP 404 Not Found", broken: true },
  ]);
  await axe(page, "the Links tab with a link check");
  await page.emulateMedia({ colorScheme: "dark" });
  await axe(page, "the Links tab with a link check, dark");
  await page.emulateMedia({ colorScheme: "light" });

  // At phone width the table reflows: nothing is cut off.
  await page.setViewportSize({ width: 375, height: 800 });
  assert.deepEqual(await cutOff(page), []);

  // Checked again: a new run starts and completes.
  await page.setViewportSize({ width: 1280, height: 800 });
  await Promise.all([page.waitForURL((u) => u.searchParams.get("tab") === "links"), section.locator("button", { hasText: "Check again" }).click()]);
  await page.waitForSelector("table.link-check", { timeout: 60000 });
  assert.equal(await section.locator("tbody tr").count(), 4);
});
