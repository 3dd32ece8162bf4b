// IMAP and POP3 as a test suite uses them: imapflow (Node's IMAP client) idles
// on the namespace while mail is sent over SMTP, reads it byte for byte, flags
// and deletes it; the credentials and ports come from GET /api/smtp/{namespace}.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import nodemailer from "nodemailer";
import { ImapFlow } from "imapflow";
import { startCatchbox } from "./harness.mjs";

let server;
let settings;

async function api(method, path) {
  const res = await fetch(server.baseUrl + path.replace(/^\//, ""), { method, headers: { "X-Api-Key": server.apiKey } });
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : null };
}

before(async () => {
  server = await startCatchbox();
  const res = await api("GET", "/api/smtp/default");
  assert.equal(res.status, 200);
  settings = res.body.data;
});

after(async () => {
  await server?.stop();
});

// sendRaw sends exact bytes over SMTP, as an application under test would.
async function sendRaw(to, raw) {
  const [host, port] = server.smtp.split(":");
  const transport = nodemailer.createTransport({ host, port: Number(port), secure: false, ignoreTLS: true });
  await transport.sendMail({ envelope: { from: "app@example.org", to: [to] }, raw: Buffer.from(raw) });
  transport.close();
}

// idling waits until the client has gone into IDLE by itself (its
// autoIdleDelay after the last command).
async function idling(client) {
  const deadline = Date.now() + 15000;
  while (!client.idling) {
    if (Date.now() > deadline) throw new Error("imapflow did not go into IDLE within 15 s");
    await new Promise((r) => setTimeout(r, 20));
  }
}

function connect(pass = settings.password) {
  return new ImapFlow({
    host: "127.0.0.1",
    port: settings.imap_port,
    secure: false,
    auth: { user: settings.username, pass },
    logger: false,
    autoIdleDelay: 100,
  });
}

// nextEvent resolves with the next event of the client, or fails after 15 s.
function nextEvent(client, name, pred = () => true) {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no ${name} event within 15 s`)), 15000);
    const on = (ev) => {
      if (!pred(ev)) return;
      clearTimeout(timer);
      client.off(name, on);
      resolve(ev);
    };
    client.on(name, on);
  });
}

test("GET /api/smtp/{namespace} names the IMAP and POP3 ports", () => {
  assert.equal(settings.imap_port, Number(server.imap.split(":")[1]));
  assert.equal(settings.pop3_port, Number(server.pop3.split(":")[1]));
  assert.equal(settings.username, "default");
});

test("imapflow idles, is told of a message sent over SMTP, and reads its bytes exactly", async () => {
  const client = connect();
  await client.connect();
  try {
    const box = await client.mailboxOpen("INBOX");
    assert.ok(box.uidValidity > 0n);
    const before = box.exists;
    const exists = nextEvent(client, "exists", (ev) => ev.count === before + 1);
    // imapflow goes into IDLE by itself once it has nothing to do.
    await idling(client);
    const raw = [
      "From: App <app@example.org>",
      "To: idle-reader@default.localhost",
      "Subject: Sign in to Example",
      `Message-ID: <imapflow-${Date.now()}@example.org>`,
      "Content-Type: text/plain; charset=utf-8",
      "",
      "Your code is 482913.",
      ".a line that starts with a dot",
      "",
    ].join("\r\n");
    await sendRaw("idle-reader@default.localhost", raw);
    const ev = await exists;
    assert.equal(ev.path, "INBOX");

    const msg = await client.fetchOne("*", { source: true, uid: true, flags: true, envelope: true, size: true });
    assert.equal(msg.source.toString("utf8"), raw);
    assert.equal(msg.size, Buffer.byteLength(raw));
    assert.equal(msg.envelope.subject, "Sign in to Example");
    assert.ok(msg.uid > 0);

    // Flags are kept; deleting through IMAP deletes the email for the API.
    await client.messageFlagsAdd({ uid: msg.uid }, ["\\Flagged"], { uid: true });
    const again = await client.fetchOne(String(msg.uid), { flags: true }, { uid: true });
    assert.ok(again.flags.has("\\Flagged"));
    const list = await api("GET", "/api/emails/default/inbox?to_addr_prefix=idle-reader");
    assert.equal(list.body.total_count, 1);
    await client.messageDelete({ uid: msg.uid }, { uid: true });
    const gone = await api("GET", "/api/emails/default/inbox?to_addr_prefix=idle-reader");
    assert.equal(gone.body.total_count, 0);
  } finally {
    await client.logout();
  }
});

test("an email deleted through the API reaches an idle imapflow client as EXPUNGE", async () => {
  await sendRaw("api-delete@default.localhost", "Subject: to be deleted\r\nTo: api-delete@default.localhost\r\n\r\nbody\r\n");
  const client = connect();
  await client.connect();
  try {
    await client.mailboxOpen("INBOX");
    const expunge = nextEvent(client, "expunge");
    await idling(client);
    const list = await api("GET", "/api/emails/default/inbox?to_addr_prefix=api-delete");
    assert.equal(list.body.total_count, 1);
    const del = await api("DELETE", `/api/emails/${list.body.data[0].id}`);
    assert.equal(del.status, 204);
    await expunge;
  } finally {
    await client.logout();
  }
});

test("imapflow is refused with wrong credentials", async () => {
  const client = connect("not-the-password");
  await assert.rejects(client.connect(), (err) => err.authenticationFailed === true || /auth/i.test(String(err)));
});
