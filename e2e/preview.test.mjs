// The email page's previews and HTML check in a real browser (Debian's
// chromium driven by playwright-core, against the built binary): the HTML view
// at a phone's (375 px), a tablet's (768 px) and the desktop width, and in the
// dark colour scheme, where the email's own prefers-color-scheme: dark rules
// apply (and only there, whatever the browser's system prefers); the frame
// keeps its sandbox, its CSP and remote content blocked in every preview. The "Client support" tab lists what the HTML check found.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { createServer } from "node:http";
import nodemailer from "nodemailer";
import { startCatchbox, binary } from "./harness.mjs";
import { browser, closeBrowsers, signIn, axe, cutOff, skip, chromiumPath } from "./browser.mjs";

const password = "e2e preview password";
let server;
let tracker; // a "remote" server: any request to it means something loaded
const trackerHits = [];
let emailID;

before(async () => {
  tracker = createServer((req, res) => {
    trackerHits.push(req.url);
    res.writeHead(200, { "Content-Type": "image/gif" });
    res.end(Buffer.from("R0lGODlhAQABAAAAACw=", "base64"));
  });
  await new Promise((r) => tracker.listen(0, "127.0.0.1", r));
  const trackerURL = `http://127.0.0.1:${tracker.address().port}`;

  // The server renders screenshots with the same Chromium when there is one.
  server = await startCatchbox({ CATCHBOX_MAIL_DOMAIN: "mail.test", ...(skip ? {} : { CATCHBOX_CHROMIUM: chromiumPath }) });
  execFileSync(binary, ["admin", "user", "create", "alice@example.com", "--org", "default"], {
    env: { ...process.env, CATCHBOX_DATA_DIR: server.dataDir }, input: password + "\n",
  });
  const [host, port] = server.smtp.split(":");
  const transport = nodemailer.createTransport({ host, port: Number(port), secure: false, ignoreTLS: true });
  await transport.sendMail({
    from: "News <news@shop.example>",
    to: "reader@default.mail.test",
    subject: "Spring newsletter",
    text: "Our spring collection.",
    html: `<!doctype html><html><head><style>
      body { margin: 0; }
      #scheme { color: rgb(0, 0, 0); }
      @media (prefers-color-scheme: dark) { #scheme { color: rgb(255, 0, 0); } }
      #layout::after { content: "desktop"; }
      @media (max-width: 800px) { #layout::after { content: "tablet"; } }
      @media (max-width: 400px) { #layout::after { content: "phone"; } }
      </style></head><body>
      <h1 id="scheme">Spring collection</h1><p id="layout"></p>
      <div style="display:grid"><img src="${trackerURL}/hero.png" alt="hero"></div>
      </body></html>`,
  });
  const deadline = Date.now() + 15000;
  for (;;) {
    const res = await fetch(server.baseUrl + "api/emails/default/inbox?subject_includes=spring", {
      headers: { "X-Api-Key": server.apiKey },
    }).then((r) => r.json());
    if (res.data?.length) {
      emailID = res.data[0].id;
      break;
    }
    assert.ok(Date.now() < deadline, "the newsletter did not arrive");
    await new Promise((r) => setTimeout(r, 100));
  }
});

after(async () => {
  await closeBrowsers();
  await new Promise((r) => tracker?.close(r));
  await server?.stop();
});

// framed reads, inside the email's frame, its viewport width, the colour its
// dark-mode rule sets and which width rule applies.
async function framed(page) {
  const frame = page.frames().find((f) => f.url().includes(`/emails/${emailID}/body`));
  assert.ok(frame, "no email frame");
  await frame.waitForSelector("#scheme");
  return frame.evaluate(() => ({
    width: window.innerWidth,
    color: getComputedStyle(document.getElementById("scheme")).color,
    layout: getComputedStyle(document.getElementById("layout"), "::after").content,
  }));
}

test("the HTML view previews the email at phone, tablet and desktop widths, light and dark, with remote content still blocked", { skip }, async () => {
  const { page } = await browser();
  await page.setViewportSize({ width: 1280, height: 900 });
  await signIn(page, server.baseUrl, "alice@example.com", password);
  const bodyCSP = [];
  page.on("response", (r) => {
    if (r.url().includes(`/emails/${emailID}/body`)) bodyCSP.push(r.headers()["content-security-policy"] || "");
  });

  await page.goto(`${server.baseUrl}emails/${emailID}?tab=html`);
  let seen = await framed(page);
  assert.ok(seen.width > 800, `desktop frame is ${seen.width} px wide`);
  assert.deepEqual([seen.layout, seen.color], ['"desktop"', "rgb(0, 0, 0)"]);

  for (const [label, width, layout] of [["Phone, 375 px", 375, '"phone"'], ["Tablet, 768 px", 768, '"tablet"']]) {
    await Promise.all([page.waitForURL(`**width=${width}**`), page.click(`.preview-bar a:has-text("${label}")`)]);
    seen = await framed(page);
    assert.equal(seen.width, width, `${label}: the frame's viewport`);
    assert.equal(seen.layout, layout, `${label}: the email's media query`);
    assert.equal(await page.locator(`.preview-bar a[aria-current="true"]:has-text("${label}")`).count(), 1);
  }

  // Dark: the email's prefers-color-scheme: dark rules apply; the width stays.
  await Promise.all([page.waitForURL("**scheme=dark**"), page.click('.preview-bar a:has-text("Dark")')]);
  seen = await framed(page);
  assert.deepEqual([seen.width, seen.color], [768, "rgb(255, 0, 0)"]);
  await axe(page, "the dark tablet preview");

  // At a phone-sized window the page itself stays whole.
  await page.setViewportSize({ width: 375, height: 812 });
  assert.deepEqual(await cutOff(page), [], "the preview at 375 px");
  await page.setViewportSize({ width: 1280, height: 900 });

  // Back to light keeps the width, and stays light in a browser whose
  // system prefers dark; desktop keeps the scheme.
  await page.emulateMedia({ colorScheme: "dark" });
  await Promise.all([page.waitForURL((u) => !u.search.includes("scheme")), page.click('.preview-bar a:has-text("Light")')]);
  seen = await framed(page);
  assert.deepEqual([seen.width, seen.color], [768, "rgb(0, 0, 0)"]);
  await page.emulateMedia({ colorScheme: "light" });
  await Promise.all([page.waitForURL("**scheme=dark**"), page.click('.preview-bar a:has-text("Dark")')]);
  await Promise.all([page.waitForURL((u) => !u.search.includes("width")), page.click('.preview-bar a:has-text("Desktop")')]);
  seen = await framed(page);
  assert.ok(seen.width > 800 && seen.color === "rgb(255, 0, 0)", JSON.stringify(seen));

  // No preview loaded the remote image, and every frame had the same CSP.
  await page.waitForTimeout(300); // give a remote image the chance to fail the test
  assert.deepEqual(trackerHits, [], "a preview loaded remote content");
  assert.ok(bodyCSP.length >= 4, `${bodyCSP.length} frames seen`);
  for (const csp of bodyCSP) {
    assert.match(csp, /default-src 'none'/);
    assert.match(csp, /img-src data:;/);
    assert.match(csp, /sandbox allow-popups/);
    assert.doesNotMatch(csp, /allow-scripts/);
  }
  assert.equal(await page.locator("iframe.body").getAttribute("sandbox"), "allow-popups allow-popups-to-escape-sandbox");

  // The bar links the server's screenshot of the same preview: the session
  // fetches it, a PNG of the desktop width (its IHDR's width), and the
  // server's render fetched nothing either.
  const shot = await page.locator('.preview-bar a:has-text("Screenshot")').getAttribute("href");
  assert.match(shot, /preview\.png\?scheme=dark&width=1280$/);
  const res = await page.request.get(server.baseUrl + shot.slice(1));
  assert.equal(res.status(), 200);
  assert.equal(res.headers()["content-type"], "image/png");
  const png = await res.body();
  assert.equal(png.readUInt32BE(16), 1280, "the screenshot's width");
  assert.deepEqual(trackerHits, [], "the screenshot loaded remote content");

  // Showing images keeps the preview; then the image loads (so the check above can fail).
  await Promise.all([page.waitForURL("**images=1**"), page.click("text=Show images")]);
  assert.match(page.url(), /scheme=dark/);
  for (let i = 0; i < 50 && !trackerHits.includes("/hero.png"); i++) await page.waitForTimeout(100);
  assert.ok(trackerHits.includes("/hero.png"), "the allowed image did not load: " + trackerHits);
});

test("the Client support tab shows the HTML check", { skip }, async () => {
  const { page } = await browser();
  await page.setViewportSize({ width: 1280, height: 900 });
  await signIn(page, server.baseUrl, "alice@example.com", password);
  await page.goto(`${server.baseUrl}emails/${emailID}`);
  await Promise.all([page.waitForURL("**tab=clients**"), page.click('.tabs a:has-text("Client support")')]);
  const grid = page.locator(".check-feature", { hasText: "display:grid" });
  await grid.waitFor();
  assert.match(await grid.textContent(), /not supported.*Outlook Windows/s);
  assert.ok(await page.locator(".check-feature", { hasText: "@media (prefers-color-scheme)" }).count() === 1);
  assert.match(await page.locator("table.check-clients").textContent(), /Outlook/);
  const api = await fetch(`${server.baseUrl}api/emails/${emailID}/html-check`, { headers: { "X-Api-Key": server.apiKey } }).then((r) => r.json());
  assert.match(await page.locator("strong.score").textContent(), new RegExp(`^${api.data.score}$`));
  await axe(page, "the Client support tab");
  await page.setViewportSize({ width: 375, height: 812 });
  assert.deepEqual(await cutOff(page), [], "the Client support tab at 375 px");
});
