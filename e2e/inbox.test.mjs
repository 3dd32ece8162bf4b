// The seed's inbound flow, driven exactly as a team's end-to-end tests would: the
// official npm client pointed at Catchbox by its base URL, nothing else changed.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { MailiskClient } from "mailisk";
import axios from "axios";
import nodemailer from "nodemailer";
import { startCatchbox } from "./harness.mjs";

let server;
let client;
const namespace = "default";

before(async () => {
  server = await startCatchbox({ CATCHBOX_WAIT_HOLD: "1s" });
  client = new MailiskClient({ apiKey: server.apiKey, baseUrl: server.baseUrl });
});

after(async () => {
  await server?.stop();
});

test("listNamespaces shows the bootstrap namespace", async () => {
  const res = await client.listNamespaces();
  assert.equal(res.total_count, 1);
  assert.equal(res.data[0].namespace, namespace);
  assert.match(res.data[0].id, /^[0-9a-f-]{36}$/);
});

test("sendVirtualEmail, then searchInbox with its default wait finds it", async () => {
  const to = `reset-${Date.now()}@${namespace}.localhost`;
  await client.sendVirtualEmail(namespace, {
    from: "App <app@example.com>",
    to,
    subject: "Reset your password",
    text: "Follow https://app.example/reset?token=abc123 to reset.",
    html: '<p><a href="https://app.example/reset?token=abc123">Reset</a></p>',
    headers: { "X-Test-Run": "e2e" },
  });
  const res = await client.searchInbox(namespace, { to_addr_prefix: to });
  assert.equal(res.total_count, 1);
  const email = res.data[0];
  assert.equal(email.subject, "Reset your password");
  assert.deepEqual(email.from, { address: "app@example.com", name: "App" });
  assert.equal(email.to[0].address, to);
  assert.match(email.text, /token=abc123/);
  assert.match(email.html, /token=abc123/);
  assert.equal(email.headers["x-test-run"], "e2e");
  assert.equal(typeof email.received_timestamp, "number");
  assert.equal(email.expires_timestamp, email.received_timestamp + 86400);
  assert.match(email.received_date, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
  assert.equal(res.options.wait, true);
});

test("a wait held before the mail is sent is answered when it arrives, across 307 redirects", async () => {
  const to = `late-${Date.now()}@${namespace}.localhost`;
  const started = Date.now();
  const search = client.searchInbox(namespace, { to_addr_prefix: to });
  // Longer than the 1 s hold: the client must follow at least two redirects.
  await new Promise((r) => setTimeout(r, 2500));
  await client.sendVirtualEmail(namespace, { from: "a@example.com", to, subject: "Late arrival", text: "x" });
  const res = await search;
  assert.equal(res.total_count, 1);
  assert.equal(res.data[0].subject, "Late arrival");
  assert.ok(Date.now() - started >= 2500);
});

test("attachments: getAttachment metadata and downloadAttachment bytes", async () => {
  const to = `files-${Date.now()}@${namespace}.localhost`;
  const content = Buffer.from("%PDF-1.4 catchbox e2e attachment \u00e9\u00e8");
  await client.sendVirtualEmail(namespace, {
    from: "files@example.com",
    to,
    subject: "Your invoice",
    text: "Attached.",
    attachments: [{ filename: "invoice.pdf", content, contentType: "application/pdf" }],
  });
  const { data } = await client.searchInbox(namespace, { to_addr_prefix: to });
  const summary = data[0].attachments[0];
  assert.equal(summary.filename, "invoice.pdf");
  assert.equal(summary.content_type, "application/pdf");
  assert.equal(summary.size, content.length);
  const meta = await client.getAttachment(summary.id);
  assert.equal(meta.data.id, summary.id);
  assert.ok(meta.data.download_url.startsWith(server.baseUrl));
  assert.ok(new Date(meta.data.expires_at) > new Date());
  const bytes = await client.downloadAttachment(summary.id);
  assert.deepEqual(bytes, content);
});

test("plain SMTP to the MX side, without AUTH, is received", async () => {
  const [host, port] = server.smtp.split(":");
  const transport = nodemailer.createTransport({ host, port: Number(port), secure: false });
  const to = `mx-${Date.now()}@${namespace}.localhost`;
  await transport.sendMail({ from: "mx@example.com", to, subject: "MX delivery", text: "hello" });
  transport.close();
  const res = await client.searchInbox(namespace, { to_addr_prefix: to, wait: false });
  assert.equal(res.total_count, 1);
});

test("mail to an unknown namespace is caught in local mode's catch-all namespace", async () => {
  const [host, port] = server.smtp.split(":");
  const transport = nodemailer.createTransport({ host, port: Number(port), secure: false });
  await transport.sendMail({ from: "a@example.com", to: "x@nosuchns.localhost", subject: "caught by default", text: "t" });
  transport.close();
  const res = await client.searchInbox("default", { to_addr_prefix: "x@nosuchns.localhost", wait: false });
  assert.equal(res.total_count, 1);
  assert.equal(res.data[0].subject, "caught by default");
});

test("errors use the contract's body", async () => {
  const http = axios.create({ baseURL: server.baseUrl, headers: { "X-Api-Key": server.apiKey }, validateStatus: () => true });
  const bad = await http.get(`api/emails/${namespace}/inbox`, { params: { limit: 50 } });
  assert.equal(bad.status, 400);
  assert.equal(bad.data.statusCode, 400);
  assert.equal(bad.data.code, "invalid_parameter");
  assert.equal(bad.data.errors[0].field, "limit");
  const noKey = await axios.get(server.baseUrl + "api/test", { validateStatus: () => true });
  assert.equal(noKey.status, 401);
  assert.ok(noKey.headers["x-request-id"]);
  const other = await http.get("api/emails/00000000-0000-7000-8000-000000000000");
  assert.equal(other.status, 404);
});
