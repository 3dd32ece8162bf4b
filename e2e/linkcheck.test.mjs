// A link check of a mail sent over SMTP with nodemailer, read through the API
// as a team's tests would (fetch: the npm client has no call for it). The
// links lead to a web site this test serves on loopback: a page, a moved page,
// a dead link, a page whose server refuses HEAD, an image. In local mode (the
// default on loopback) they are asked for; in server mode the same links are
// refused without a request, since loopback is not a public target.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { createServer } from "node:http";
import nodemailer from "nodemailer";
import { startCatchbox } from "./harness.mjs";

let site;
let siteURL;
const asked = []; // "METHOD /path" of every request the site answered
let gate = null; // while set, a promise every request waits for

before(async () => {
  site = createServer(async (req, res) => {
    asked.push(`${req.method} ${req.url}`);
    if (gate) await gate;
    switch (req.url) {
      case "/welcome":
        res.end("welcome");
        return;
      case "/old-welcome":
        res.writeHead(301, { Location: "/welcome" }).end();
        return;
      case "/get-only":
        if (req.method === "HEAD") {
          res.writeHead(405, { Allow: "GET" }).end();
          return;
        }
        res.end("only GET");
        return;
      case "/logo.png":
        res.writeHead(200, { "Content-Type": "image/png" }).end();
        return;
      default:
        res.writeHead(404).end("not here");
    }
  });
  await new Promise((r) => site.listen(0, "127.0.0.1", r));
  siteURL = `http://127.0.0.1:${site.address().port}`;
});

after(async () => {
  await new Promise((r) => site.close(r));
});

async function api(server, method, path) {
  const res = await fetch(server.baseUrl + path.replace(/^\//, ""), { method, headers: { "X-Api-Key": server.apiKey } });
  return { status: res.status, body: await res.json() };
}

// sendAndFind sends the newsletter over SMTP and returns the stored email.
async function sendAndFind(server) {
  const [host, port] = server.smtp.split(":");
  const transport = nodemailer.createTransport({ host, port: Number(port), secure: false });
  const to = `links-${Date.now()}@default.localhost`;
  await transport.sendMail({
    from: "Shop <news@shop.example>",
    to,
    subject: "Welcome aboard",
    text: `Welcome! Start here: ${siteURL}/welcome`,
    html: `<p><a href="${siteURL}/welcome">Start here</a> · <a href="${siteURL}/old-welcome">Old link</a> ·
      <a href="${siteURL}/retired">Retired page</a> · <a href="${siteURL}/get-only">Download</a>
      <img src="${siteURL}/logo.png" alt="Shop"> <a href="mailto:help@shop.example">Help</a></p>`,
  });
  transport.close();
  const { body } = await api(server, "GET", `/api/emails/default/inbox?to_addr_prefix=${encodeURIComponent(to)}&wait=true`);
  assert.equal(body.total_count, 1);
  return body.data[0];
}

// runCheck starts a link check and polls it to its end. With held, the site
// holds its answers until the run has been asked for again: a run that cannot
// end yet, which the second POST must answer as under way, not start anew.
async function runCheck(server, id, { held = false } = {}) {
  let release;
  if (held) gate = new Promise((r) => (release = r));
  const path = `/api/emails/${id}/link-check`;
  const missing = await api(server, "GET", path);
  assert.equal(missing.status, 404);
  assert.equal(missing.body.code, "link_check_not_found");

  const started = await api(server, "POST", path);
  assert.equal(started.status, 202);
  assert.equal(started.body.status, "pending");
  assert.match(started.body.started_at, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
  assert.deepEqual(started.body.links, []);
  if (held) {
    try {
      const again = await api(server, "POST", path);
      assert.equal(again.status, 200);
      assert.equal(again.body.started_at, started.body.started_at);
      assert.ok(["pending", "running"].includes(again.body.status), again.body.status);
    } finally {
      gate = null;
      release();
    }
  }

  let res;
  for (const deadline = Date.now() + 60000; Date.now() < deadline; ) {
    res = await api(server, "GET", path);
    assert.equal(res.status, 200);
    if (res.body.status !== "pending" && res.body.status !== "running") break;
    await new Promise((r) => setTimeout(r, 100));
  }
  assert.equal(res.body.status, "completed", JSON.stringify(res.body));
  assert.match(res.body.finished_at, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
  return Object.fromEntries(res.body.links.map((l) => [l.url.slice(siteURL.length), l]));
}

test("local mode: every link and image of a mail sent over SMTP is checked once", async () => {
  const server = await startCatchbox();
  try {
    const email = await sendAndFind(server);
    asked.length = 0;
    const links = await runCheck(server, email.id, { held: true });
    assert.deepEqual(Object.keys(links).sort(), ["/get-only", "/logo.png", "/old-welcome", "/retired", "/welcome"]);
    const plain = (l) => ({ kind: l.kind, status_code: l.status_code, final_url: l.final_url.slice(siteURL.length), redirects: l.redirects, error: l.error });
    assert.deepEqual(plain(links["/welcome"]), { kind: "link", status_code: 200, final_url: "/welcome", redirects: 0, error: undefined });
    assert.deepEqual(plain(links["/old-welcome"]), { kind: "link", status_code: 200, final_url: "/welcome", redirects: 1, error: undefined });
    assert.deepEqual(plain(links["/retired"]), { kind: "link", status_code: 404, final_url: "/retired", redirects: 0, error: "HTTP 404 Not Found" });
    assert.deepEqual(plain(links["/get-only"]), { kind: "link", status_code: 200, final_url: "/get-only", redirects: 0, error: undefined });
    assert.deepEqual(plain(links["/logo.png"]), { kind: "image", status_code: 200, final_url: "/logo.png", redirects: 0, error: undefined });
    for (const l of Object.values(links)) assert.ok(Number.isInteger(l.duration_ms) && l.duration_ms >= 0);
    // HEAD first, GET where HEAD failed; the text part's copy of /welcome
    // is not asked for again.
    assert.deepEqual(asked.slice().sort(), [
      "GET /get-only", "GET /retired", "HEAD /get-only", "HEAD /logo.png", "HEAD /old-welcome", "HEAD /retired", "HEAD /welcome", "HEAD /welcome",
    ]);
  } finally {
    await server.stop();
  }
});

test("server mode: loopback links are refused without a request", async () => {
  const server = await startCatchbox({ CATCHBOX_MODE: "server" });
  try {
    const email = await sendAndFind(server);
    asked.length = 0;
    const links = await runCheck(server, email.id);
    assert.equal(Object.keys(links).length, 5);
    for (const l of Object.values(links)) {
      assert.equal(l.status_code, undefined);
      assert.match(l.error, /is a loopback address; outgoing requests may reach public addresses only on this server \(CATCHBOX_ALLOW_PRIVATE_TARGETS\)/);
    }
    assert.deepEqual(asked, []);
  } finally {
    await server.stop();
  }
});
