// A deliverability report for a mail sent over SMTP, read as a team's tests
// would: the npm client has no call for it, so it goes through fetch. The
// server's DNS server is a closed port on loopback, so every lookup fails at
// once (the report must still complete, its lookups marked as failed); spamd
// is the one .ci/run starts, when CATCHBOX_TEST_SPAMD_ADDR names it.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { createSocket } from "node:dgram";
import nodemailer from "nodemailer";
import { startCatchbox } from "./harness.mjs";

let server;
const spamd = process.env.CATCHBOX_TEST_SPAMD_ADDR || "";

// A UDP port nothing listens on: bound, then closed.
async function closedUDPPort() {
  const s = createSocket("udp4");
  await new Promise((r) => s.bind(0, "127.0.0.1", r));
  const { port } = s.address();
  await new Promise((r) => s.close(r));
  return port;
}

before(async () => {
  server = await startCatchbox({
    CATCHBOX_DNS_SERVER: `127.0.0.1:${await closedUDPPort()}`,
    CATCHBOX_SPAMD_ADDR: spamd,
  });
});

after(async () => {
  await server?.stop();
});

async function api(method, path) {
  const res = await fetch(server.baseUrl + path.replace(/^\//, ""), { method, headers: { "X-Api-Key": server.apiKey } });
  return { status: res.status, body: await res.json() };
}

async function sendAndFind(subject) {
  const [host, port] = server.smtp.split(":");
  const transport = nodemailer.createTransport({ host, port: Number(port), secure: false });
  const to = `report-${Date.now()}@default.localhost`;
  await transport.sendMail({
    from: "Shop <orders@shop.example>",
    to,
    subject,
    text: "Your order has shipped: https://shop.example/orders/7",
    html: '<p>Your order has <a href="https://shop.example/orders/7">shipped</a>.</p>',
  });
  transport.close();
  const { body } = await api("GET", `/api/emails/default/inbox?to_addr_prefix=${encodeURIComponent(to)}&wait=true`);
  assert.equal(body.total_count, 1);
  return body.data[0];
}

const sectionNames = ["spf", "dkim", "dmarc", "blocklists", "spamassassin", "content", "dns"];

test("a report for a mail sent over SMTP completes with every section", async () => {
  const email = await sendAndFind("Your order has shipped");
  const path = `/api/emails/${email.id}/deliverability-report`;

  const missing = await api("GET", path);
  assert.equal(missing.status, 404);

  const started = await api("POST", path);
  assert.equal(started.status, 202);
  assert.equal(started.body.status, "pending");
  assert.equal(started.body.analysis_version, "1.1.0");
  assert.match(started.body.expires_at, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);

  let res;
  for (let i = 0; i < 600; i++) {
    res = await api("GET", path);
    assert.equal(res.status, 200);
    if (res.body.status === "completed" || res.body.status === "failed") break;
    await new Promise((r) => setTimeout(r, 100));
  }
  assert.equal(res.body.status, "completed", JSON.stringify(res.body));
  const report = res.body.report;
  assert.ok(["no_issues", "warning", "issue_detected"].includes(report.overall_status));
  assert.deepEqual(report.source, { namespace: "default", email_id: email.id, received_timestamp: email.received_timestamp });
  for (const name of sectionNames) {
    const section = report[name];
    assert.ok(["pass", "warning", "fail"].includes(section.status), `${name}.status`);
    assert.ok(Array.isArray(section.issues) && section.issues.length > 0, `${name}.issues`);
    for (const issue of section.issues) {
      assert.equal(typeof issue.code, "string");
      assert.match(issue.code, /^[a-z][a-z0-9_]*$/);
      assert.ok(issue.message.length > 20, `${name} ${issue.code} message`);
      assert.ok(["pass", "warning", "fail"].includes(issue.severity));
    }
  }
  // The envelope the SMTP session recorded, and no DNS: lookups failed.
  assert.equal(report.spf.client_ip, "127.0.0.1");
  assert.equal(report.spf.result, "temperror");
  assert.equal(report.dns.client_ip, "127.0.0.1");
  assert.ok(report.dkim.issues.some((i) => i.code === "dkim_none"));
  assert.ok(report.blocklists.issues.some((i) => i.code === "blocklist_lookup_failed"));
  assert.equal(report.content.has_text, true);
  assert.equal(report.content.has_html, true);
  assert.equal(report.content.link_count, 1);
  // The content section refers to the HTML check: the same score, no issue of its own.
  const check = await fetch(`${server.baseUrl}api/emails/${email.id}/html-check`, { headers: { "X-Api-Key": server.apiKey } }).then((r) => r.json());
  assert.equal(report.content.html_check.score, check.data.score);
  assert.equal(report.content.html_check.feature_count, check.data.features.length);
  if (spamd) {
    assert.equal(report.spamassassin.available, true);
    assert.equal(typeof report.spamassassin.score, "number");
    assert.ok(Array.isArray(report.spamassassin.rules));
  } else {
    assert.equal(report.spamassassin.available, false);
    assert.equal(report.spamassassin.issues[0].code, "spamassassin_not_configured");
  }

  // Asked again once completed, the report is refreshed.
  const again = await api("POST", path);
  assert.equal(again.status, 202);
});

test("spam_score is filled in after the 250 when spamd is configured", { skip: !spamd && "CATCHBOX_TEST_SPAMD_ADDR not set" }, async () => {
  const email = await sendAndFind("Lunch on Friday");
  let score;
  for (let i = 0; i < 600 && score === undefined; i++) {
    const { body } = await api("GET", `/api/emails/${email.id}`);
    score = body.data.spam_score;
    if (score === undefined) await new Promise((r) => setTimeout(r, 100));
  }
  assert.equal(typeof score, "number");
  assert.ok(score < 5, `score ${score}`);
});
