// A newcomer's first minutes, as make run gives them: the built binary started
// with the defaults on a fresh store (loopback listeners, no key chosen, no
// public URL: local mode), mail sent over SMTP to an address that names no
// namespace (someone@example.com), then found through the API with the key
// the start printed, and on the dashboard in Debian's chromium after following
// the sign-in link the start printed. The same start in server mode refuses
// that mail with a 550 that says which addresses are taken.
//
// Only the listen ports differ from make run's (127.0.0.1:0: the tests of
// several developers share this machine).
import { test, after } from "node:test";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { mkdtempSync, rmSync, existsSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import nodemailer from "nodemailer";
import { MailiskClient } from "mailisk";
import { chromium } from "playwright-core";
import { binary } from "./harness.mjs";

const chromiumPath = process.env.CATCHBOX_CHROMIUM || "/usr/bin/chromium";
const cleanups = [];
after(async () => {
  for (const c of cleanups.reverse()) await c();
});

// start runs catchbox serve as make run does, with only the ports and the
// data directory changed, and resolves with its addresses and what it printed
// on standard output once that is complete.
async function start(extraEnv = {}) {
  const dataDir = mkdtempSync(join(tmpdir(), "catchbox-firstrun-"));
  const env = {};
  for (const [k, v] of Object.entries(process.env)) if (!k.startsWith("CATCHBOX_")) env[k] = v;
  Object.assign(env, { CATCHBOX_DATA_DIR: dataDir, CATCHBOX_HTTP_ADDR: "127.0.0.1:0", CATCHBOX_SMTP_ADDR: "127.0.0.1:0",
    CATCHBOX_IMAP_ADDR: "127.0.0.1:0", CATCHBOX_POP3_ADDR: "127.0.0.1:0", ...extraEnv });
  const child = spawn(binary, ["serve"], { env, stdio: ["ignore", "pipe", "pipe"] });
  let out = "";
  let log = "";
  child.stderr.on("data", (c) => (log += c));
  const printed = await new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error("catchbox printed no start note:\n" + out + log)), 30000);
    child.stdout.on("data", (c) => {
      out += c;
      // The note ends with the key's line on a first start.
      if (/^export CATCHBOX_API_KEY=\S+\n/m.test(out)) {
        clearTimeout(timer);
        resolve(out);
      }
    });
    child.on("exit", (code) => reject(new Error(`catchbox exited with ${code}:\n${out}${log}`)));
  });
  const stop = async () => {
    if (child.exitCode === null) {
      child.kill("SIGTERM");
      await new Promise((r) => child.once("exit", r));
    }
    rmSync(dataDir, { recursive: true, force: true });
  };
  cleanups.push(stop);
  const smtp = printed.match(/^ {2}SMTP +(\S+?):? /m)[1];
  const api = printed.match(/^ {2}API +(\S+)\/api$/m)[1];
  const key = printed.match(/^export CATCHBOX_API_KEY=(\S+)$/m)[1];
  const link = printed.match(/^ {2}Dashboard +(\S+\/signin\/link\/\S+)$/m)?.[1];
  return { printed, smtp, api, key, link, log: () => log, stop };
}

function mailTo(smtp, to, subject) {
  const [host, port] = smtp.split(":");
  const transport = nodemailer.createTransport({ host, port: Number(port), secure: false, ignoreTLS: true });
  return transport.sendMail({ from: "app@example.org", to, subject, text: "Welcome aboard." }).finally(() => transport.close());
}

test("local mode: mail to any address is found through the API and on the dashboard after the printed link",
  { skip: existsSync(chromiumPath) ? false : `no ${chromiumPath}` }, async () => {
  const server = await start();
  assert.match(server.printed, /ready in local mode/);
  assert.ok(server.link, "no sign-in link printed:\n" + server.printed);

  await mailTo(server.smtp, "someone@example.com", "Welcome to the app");

  // Through the API, as the README shows it, with the printed key.
  const client = new MailiskClient({ apiKey: server.key, baseUrl: server.api + "/" });
  const { data } = await client.searchInbox("default", { to_addr_prefix: "someone@example.com" });
  assert.equal(data.length, 1);
  assert.equal(data[0].subject, "Welcome to the app");
  assert.deepEqual(data[0].to.map((a) => a.address), ["someone@example.com"]);

  // On the dashboard: the link signs the browser in and opens the inbox.
  const dir = mkdtempSync(join(tmpdir(), "catchbox-chromium-"));
  const context = await chromium.launchPersistentContext(dir, {
    executablePath: chromiumPath,
    headless: true,
    args: ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking",
      "--disable-component-update", "--disable-sync"],
  });
  cleanups.push(async () => {
    await context.close();
    rmSync(dir, { recursive: true, force: true });
  });
  const page = context.pages()[0] || (await context.newPage());
  await page.goto(server.link);
  assert.equal(new URL(page.url()).pathname, "/inboxes/default");
  const row = page.locator(".mail-row", { hasText: "Welcome to the app" });
  await row.waitFor();
  await row.click();
  await page.waitForURL("**/emails/**");
  assert.match(await page.textContent("body"), /someone@example\.com/);

  // The link works once: signed out, the browser following it again is
  // shown the sign-in page with how to get a new one.
  await context.clearCookies();
  const resp = await page.goto(server.link);
  assert.equal(resp.status(), 401);
  assert.match(await page.textContent("body"), /expired or was already used/);
});

test("server mode: mail to an address of no namespace gets a 550 naming the accepted form", async () => {
  const server = await start({ CATCHBOX_MODE: "server" });
  assert.match(server.printed, /ready in server mode/);
  assert.equal(server.link, undefined, "server mode printed a sign-in link");
  await assert.rejects(mailTo(server.smtp, "someone@example.com", "Refused"), (err) => {
    assert.equal(err.responseCode, 550);
    assert.match(err.response, /^550 5\.1\.1 .*<anything>@<namespace>\.localhost/);
    return true;
  });
});
