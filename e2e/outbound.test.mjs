// Outbound email driven as cypress-mailisk (3.3.1) drives it: its commands
// mailiskSendEmail, mailiskGetOutboundEmail, mailiskReplyToEmail and
// mailiskForwardEmail send exactly these requests (URL, headers, JSON body)
// through cy.request; Cypress itself is not needed to reproduce them. The
// inbound mail they start from arrives through the official mailisk client.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import nodemailer from "nodemailer";
import { MailiskClient } from "mailisk";
import { binary, startCatchbox, startRelay } from "./harness.mjs";

let server;
let client;
let relay;
const namespace = "default";

before(async () => {
  relay = await startRelay();
  server = await startCatchbox({ CATCHBOX_WAIT_HOLD: "1s", CATCHBOX_RELAY_URL: relay.url });
  client = new MailiskClient({ apiKey: server.apiKey, baseUrl: server.baseUrl });
});

after(async () => {
  await server?.stop();
  await relay?.stop();
});

// request is cypress-mailisk's Request: the API URL joined with the path, its
// four headers, a JSON body, and the status handled by the caller.
async function request(method, path, body) {
  const res = await fetch(`${server.baseUrl}${path}`, {
    method,
    headers: {
      Accept: "application/json",
      "Content-Type": "application/json",
      "X-Api-Key": server.apiKey,
      "User-Agent": "cypress-mailisk/3.3.1",
    },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return { status: res.status, headers: res.headers, body: await res.json() };
}

// The commands, as src/mailiskCommands.js builds their requests.
const mailiskSendEmail = (ns, input) =>
  request("POST", `api/emails/send?${new URLSearchParams({ namespace: ns.trim() })}`, input);
const mailiskGetOutboundEmail = (id) => request("GET", `api/emails/outbound/${encodeURIComponent(id.trim())}`);
const mailiskReplyToEmail = (id, input) => request("POST", `api/emails/${encodeURIComponent(id.trim())}/reply`, input);
const mailiskForwardEmail = (id, input) => request("POST", `api/emails/${encodeURIComponent(id.trim())}/forward`, input);

// cypress-mailisk turns a 400 into "(field) description" lines: the error body
// must carry them.
function cypressMessage(res) {
  return res.body.errors.map((err) => `(${err.field}) ${err.detail[0].description}`).join("\r\n");
}

const ISO = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/;

// An inbound email from a teammate in the namespace, so that a reply to it
// stays in the namespace.
async function receive(subject) {
  const to = `inbound-${Date.now()}-${Math.random().toString(36).slice(2, 6)}@${namespace}.localhost`;
  await client.sendVirtualEmail(namespace, {
    from: `Alice Teammate <alice@${namespace}.localhost>`,
    to,
    subject,
    text: "The numbers are in.",
    html: "<p>The numbers are <b>in</b>.</p>",
    attachments: [{ filename: "numbers.csv", content: Buffer.from("q,total\n3,42\n"), contentType: "text/csv" }],
  });
  const res = await client.searchInbox(namespace, { to_addr_prefix: to });
  assert.equal(res.total_count, 1);
  return res.data[0];
}

test("mailiskSendEmail to the namespace is 202 with the summary and its Location; mailiskGetOutboundEmail reads it", async () => {
  const to = `outbound-${Date.now()}@${namespace}.localhost`;
  const res = await mailiskSendEmail(namespace, {
    from: { email: `reports@${namespace}.localhost`, name: "Reports" },
    reply_to: { email: `help@${namespace}.localhost` },
    to: [to],
    bcc: [`archive@${namespace}.localhost`],
    subject: "Your weekly report",
    text: "The report is attached.",
    html: '<p>The report is <b>attached</b>.<img src="cid:chart"></p>',
    attachments: [
      { filename: "report.pdf", content_type: "application/pdf", content_base64: Buffer.from("%PDF-1.4 report").toString("base64") },
      { filename: "chart.png", content_type: "image/png", content_base64: "iVBORw0KGgo=", content_id: "chart", disposition: "inline" },
    ],
  });
  assert.equal(res.status, 202);
  const sent = res.body;
  assert.equal(res.headers.get("location"), `/api/emails/outbound/${sent.id}`);
  assert.equal(sent.type, "new");
  assert.equal(sent.status, "queued");
  assert.deepEqual(sent.from, { email: `reports@${namespace}.localhost`, name: "Reports" });
  assert.deepEqual(sent.reply_to, { email: `help@${namespace}.localhost` });
  assert.equal(sent.recipient_count, 2);
  assert.equal(sent.attachment_count, 2);
  assert.equal(sent.message_id, `<${sent.id}@localhost>`);
  assert.match(sent.queued_at, ISO);
  assert.equal(sent.recipients, undefined, "the summary form has no recipients");

  const got = await mailiskGetOutboundEmail(sent.id);
  assert.equal(got.status, 200);
  const detail = got.body;
  assert.equal(detail.id, sent.id);
  assert.ok(["queued", "sending", "sent"].includes(detail.status), detail.status);
  assert.equal(detail.text, "The report is attached.");
  assert.deepEqual(
    detail.recipients.map((r) => [r.type, r.email]),
    [["to", to], ["bcc", `archive@${namespace}.localhost`]],
  );
  assert.equal(typeof detail.recipients[0].attempt_count, "number");
  assert.deepEqual(
    detail.attachments.map((a) => [a.filename, a.content_type, a.disposition, a.content_id]),
    [["report.pdf", "application/pdf", "attachment", undefined], ["chart.png", "image/png", "inline", "chart"]],
  );
  assert.equal(Object.keys(detail.delivery_summary).length, 15);
  assert.equal(detail.events[0].event_type, "queued");
  assert.deepEqual(
    detail.events[0].recipients.map((r) => r.outbound_email_recipient_id),
    detail.recipients.map((r) => r.id),
  );

  const content = await request("GET", `api/emails/outbound/${sent.id}/attachments/${detail.attachments[0].id}`);
  assert.equal(content.status, 200);
  assert.equal(Buffer.from(content.body.content_base64, "base64").toString(), "%PDF-1.4 report");

  const list = await request("GET", "api/emails/outbound?type=new&limit=1");
  assert.equal(list.status, 200);
  assert.equal(list.body.data[0].id, sent.id);
  assert.deepEqual(list.body.options, { limit: 1, offset: 0, status: null, type: "new" });
});

test(
  "a send to the namespace is delivered: found by the inbox search, the recipient delivered",
  async () => {
    const to = `delivered-${Date.now()}@${namespace}.localhost`;
    const res = await mailiskSendEmail(namespace, { to: [to], subject: "Delivered inside", text: "hello" });
    assert.equal(res.status, 202);
    const found = await client.searchInbox(namespace, { to_addr_prefix: to }, { timeout: 15000 });
    assert.equal(found.total_count, 1);
    assert.equal(found.data[0].subject, "Delivered inside");
    assert.equal(found.data[0].from.address, `outbound-delivery@${namespace}.localhost`);
    assert.equal(found.data[0].headers["message-id"], res.body.message_id);
    const detail = (await mailiskGetOutboundEmail(res.body.id)).body;
    assert.equal(detail.status, "sent");
    assert.equal(detail.provider, "internal");
    assert.equal(detail.recipients[0].delivery_status, "delivered");
  },
);

// External recipients go through the relay the suite started
// (catchbox-bench relay): it answers 250 for most addresses and 550 for those
// starting with "bounce". They must be verified destinations first, which
// catchbox admin destination add makes.
test("a send to verified external addresses goes through the relay: sent with its queue id, or bounced with its reply", async (t) => {
  const stamp = Date.now();
  const ok = `partner-${stamp}@example.com`;
  const bounce = `bounce-${stamp}@example.com`;
  for (const addr of [ok, bounce]) {
    execFileSync(binary, ["admin", "destination", "add", addr, "--org", "default"], {
      env: { ...process.env, CATCHBOX_DATA_DIR: server.dataDir },
      stdio: ["ignore", "pipe", "pipe"],
    });
  }
  const res = await mailiskSendEmail(namespace, { to: [ok], cc: [bounce], subject: "Through the relay", text: "hello" });
  assert.equal(res.status, 202, JSON.stringify(res.body));
  const got = await relay.waitFor((m) => m.to.includes(ok));
  assert.deepEqual(got.to, [ok]);
  assert.equal(got.message_id, res.body.message_id);
  assert.match(got.from, /^bounce\+[0-9a-f-]+\.[0-9a-f]{16}@localhost$/);
  let detail;
  for (let i = 0; i < 200; i++) {
    detail = (await mailiskGetOutboundEmail(res.body.id)).body;
    if (detail.status === "sent") break;
    await new Promise((r) => setTimeout(r, 50));
  }
  assert.equal(detail.status, "sent");
  assert.equal(detail.provider, "smtp");
  assert.equal(detail.provider_message_id, got.queue_id);
  const [sent, bounced] = detail.recipients;
  assert.equal(sent.delivery_status, "sent");
  assert.equal(sent.last_smtp_code, "250");
  assert.equal(sent.attempt_count, 1);
  assert.equal(bounced.delivery_status, "bounced");
  assert.equal(bounced.last_smtp_code, "550");
  assert.equal(bounced.last_enhanced_status_code, "5.1.1");
  assert.equal(bounced.bounce_type, "hard");
  assert.deepEqual(detail.delivery_summary.sent, 1);
  assert.equal(relay.received.filter((m) => m.to.includes(bounce)).length, 0);

  // Later, the recipient's mail system bounces it: a Postfix DSN sent over SMTP
  // to the return path the relay saw as MAIL FROM, with the null sender.
  const [host, port] = server.smtp.split(":");
  const transport = nodemailer.createTransport({ host, port: Number(port), secure: false });
  const dsn = readFileSync(new URL("../internal/outbound/returns/testdata/postfix-bounce.eml", import.meta.url), "utf8")
    .replaceAll("{{RETURN_PATH}}", got.from)
    .replaceAll("{{RCPT}}", ok)
    .replaceAll("{{MESSAGE_ID}}", res.body.message_id)
    .replaceAll("\n", "\r\n");
  const forged = got.from.replace(/\.[0-9a-f]{16}@/, ".0000000000000000@");
  await assert.rejects(transport.sendMail({ envelope: { from: "", to: [forged] }, raw: dsn }), (err) => err.responseCode === 550);
  await transport.sendMail({ envelope: { from: "", to: [got.from] }, raw: dsn });
  transport.close();
  detail = (await mailiskGetOutboundEmail(res.body.id)).body;
  const later = detail.recipients[0];
  assert.equal(later.delivery_status, "bounced");
  assert.equal(later.bounce_type, "hard");
  assert.equal(later.last_enhanced_status_code, "5.1.1");
  const event = detail.events.at(-1);
  assert.equal(event.event_type, "bounced");
  assert.equal(event.recipients[0].action, "failed");
  assert.match(event.recipients[0].diagnostic_code, /^smtp; 550 5\.1\.1 /);

  // Both addresses are suppressed now: the next send records them so, and
  // nothing more reaches the relay for them.
  const sups = await request("GET", "api/suppressions?limit=100");
  assert.deepEqual(sups.body.data.map((x) => x.address).filter((a) => a === ok || a === bounce).sort(), [bounce, ok].sort());
  const again = await mailiskSendEmail(namespace, { to: [ok], subject: "Again", text: "hello" });
  assert.equal(again.status, 202);
  const againDetail = (await mailiskGetOutboundEmail(again.body.id)).body;
  assert.equal(againDetail.recipients[0].delivery_status, "suppressed");
  assert.equal(againDetail.status, "failed");
});

test("mailiskReplyToEmail answers the sender, threaded; mailiskForwardEmail carries the email", async () => {
  const inbound = await receive("Quarterly numbers");

  const reply = await mailiskReplyToEmail(inbound.id, { text: "Thanks, looks good.", cc: [`boss@${namespace}.localhost`] });
  assert.equal(reply.status, 202, JSON.stringify(reply.body));
  assert.equal(reply.headers.get("location"), `/api/emails/outbound/${reply.body.id}`);
  assert.equal(reply.body.type, "reply");
  assert.equal(reply.body.subject, "Re: Quarterly numbers");
  assert.deepEqual(reply.body.from, { email: `outbound-delivery@${namespace}.localhost` });
  const replied = (await mailiskGetOutboundEmail(reply.body.id)).body;
  assert.deepEqual(
    replied.recipients.map((r) => [r.type, r.email, r.name]),
    [["to", `alice@${namespace}.localhost`, "Alice Teammate"], ["cc", `boss@${namespace}.localhost`, undefined]],
  );

  const forward = await mailiskForwardEmail(inbound.id, { to: [`qa@${namespace}.localhost`], text: "FYI, see below." });
  assert.equal(forward.status, 202, JSON.stringify(forward.body));
  assert.equal(forward.body.type, "forward");
  assert.equal(forward.body.subject, "Fwd: Quarterly numbers");
  assert.equal(forward.body.attachment_count, 1);
  const forwarded = (await mailiskGetOutboundEmail(forward.body.id)).body;
  assert.match(forwarded.text, /^FYI, see below\.\n\n---------- Forwarded message ---------\nFrom: Alice Teammate <alice@default\.localhost>\n/);
  assert.match(forwarded.text, /Subject: Quarterly numbers\n/);
  assert.match(forwarded.html, /The numbers are <b>in<\/b>\./);
  assert.deepEqual(forwarded.attachments.map((a) => a.filename), ["numbers.csv"]);
});

test("refusals carry what cypress-mailisk prints", async () => {
  const bad = await mailiskSendEmail(namespace, { to: ["not-an-address"], subject: "x" });
  assert.equal(bad.status, 400);
  assert.equal(bad.body.code, "invalid_parameter");
  assert.equal(
    cypressMessage(bad),
    '(to[0]) must be an email address, not "not-an-address"\r\n(html) or text is required',
  );

  const external = await mailiskSendEmail(namespace, { to: ["someone@example.com"], subject: "x", text: "y" });
  assert.equal(external.status, 403);
  assert.equal(external.body.code, "recipient_not_verified");
  assert.equal(external.body.errors[0].field, "to[0]");

  const sender = await mailiskSendEmail(namespace, { from: { email: "noreply@example.com" }, to: [`a@${namespace}.localhost`], subject: "x", text: "y" });
  assert.equal(sender.status, 403);
  assert.equal(sender.body.code, "sender_not_in_namespace");

  assert.equal((await mailiskSendEmail("nosuchnamespace", { to: ["a@nosuchnamespace.localhost"], subject: "x", text: "y" })).status, 404);
  assert.equal((await mailiskGetOutboundEmail("00000000-0000-7000-8000-000000000000")).status, 404);
  assert.equal((await mailiskReplyToEmail("00000000-0000-7000-8000-000000000000", { text: "x" })).status, 404);
  assert.equal((await mailiskForwardEmail("00000000-0000-7000-8000-000000000000", { to: ["a@default.localhost"] })).status, 404);
});

test("cancel stops the recipients not yet attempted", async () => {
  const sent = await mailiskSendEmail(namespace, { to: [`later@${namespace}.localhost`], subject: "Never mind", text: "x" });
  assert.equal(sent.status, 202);
  const res = await request("POST", `api/emails/outbound/${sent.body.id}/cancel`);
  // The delivery job may have delivered it first; then there is nothing left to cancel.
  if (res.status === 409) {
    assert.equal(res.body.code, "not_cancellable");
    return;
  }
  assert.equal(res.status, 200);
  assert.equal(res.body.status, "failed");
  assert.equal(res.body.recipients[0].delivery_status, "cancelled");
  assert.equal(res.body.events.at(-1).event_type, "cancelled");
});
