// Webhooks, received by a Node http server that verifies every request with
// the standardwebhooks package (an implementation of the specification
// independent of Catchbox's): email.received for mail sent over SMTP,
// sms.received for a virtual SMS, outbound.event and outbound.status for an
// outbound email sent and cancelled. The receiver answers 500 to its first
// requests; the events then arrive in the order they happened, each id
// accepted once.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import http from "node:http";
import { execFileSync } from "node:child_process";
import nodemailer from "nodemailer";
import { Webhook } from "standardwebhooks";
import { startCatchbox, binary } from "./harness.mjs";

const phone = "+15550002222";
const failFirst = 5;

let server;
let receiver;
const requests = []; // every request: {id, type, status}
const accepted = []; // the verified events answered 204, in arrival order
const verifiers = []; // one per secret the receiver knows, oldest first
let waiters = [];

function api(method, path, body) {
  return fetch(server.baseUrl + path, {
    method,
    headers: { "X-Api-Key": server.apiKey, "Content-Type": "application/json" },
    body: body === undefined ? undefined : JSON.stringify(body),
  }).then(async (res) => ({ status: res.status, body: res.status === 204 ? null : await res.json() }));
}

function until(cond) {
  if (cond()) return Promise.resolve();
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error("gave up waiting: " + JSON.stringify(requests))), 60000);
    waiters.push(() => {
      if (!cond()) return false;
      clearTimeout(timer);
      resolve();
      return true;
    });
  });
}

before(async () => {
  receiver = http.createServer((req, res) => {
    const chunks = [];
    req.on("data", (c) => chunks.push(c));
    req.on("end", () => {
      const body = Buffer.concat(chunks).toString("utf8");
      let event;
      const verifiedWith = [];
      verifiers.forEach((v, i) => {
        try {
          event = v.verify(body, req.headers);
          verifiedWith.push(i);
        } catch {
          // not signed with this secret
        }
      });
      if (!event) {
        requests.push({ id: req.headers["webhook-id"], status: 401 });
        res.writeHead(401).end("bad signature");
        return;
      }
      const status = requests.length < failFirst ? 500 : 204;
      requests.push({ id: req.headers["webhook-id"], type: event.type, status, verifiedWith });
      if (status === 204) accepted.push({ id: req.headers["webhook-id"], ...event });
      res.writeHead(status).end(status === 500 ? "not yet" : undefined);
      waiters = waiters.filter((w) => !w());
    });
  });
  await new Promise((r) => receiver.listen(0, "127.0.0.1", r));
  server = await startCatchbox({ CATCHBOX_WEBHOOK_BACKOFF: "100ms", CATCHBOX_WEBHOOK_MAX_BACKOFF: "400ms" });
  execFileSync(binary, ["admin", "sms-number", "add", "--org", "default", "--phone", phone, "--status", "active"], {
    env: { ...process.env, CATCHBOX_DATA_DIR: server.dataDir },
    stdio: ["ignore", "pipe", "pipe"],
  });
});

after(async () => {
  await server?.stop();
  receiver?.close();
});

test("events are signed, retried through 500s, and arrive in order once each", async () => {
  const { port } = receiver.address();
  const created = await api("POST", "api/webhooks", { url: `http://127.0.0.1:${port}/hooks`, description: "e2e" });
  assert.equal(created.status, 201);
  assert.match(created.body.data.secret, /^whsec_[A-Za-z0-9+/]+=*$/);
  verifiers.push(new Webhook(created.body.data.secret));
  const endpointId = created.body.data.id;

  const [host, smtpPort] = server.smtp.split(":");
  const transport = nodemailer.createTransport({ host, port: Number(smtpPort), secure: false });
  await transport.sendMail({ from: "shop@example.com", to: "alice@default.localhost", subject: "first", text: "one" });
  await transport.sendMail({ from: "shop@example.com", to: "bob@default.localhost", subject: "second", text: "two" });
  transport.close();
  const sms = await api("POST", "api/sms/virtual", { from_number: "+15557654321", to_number: phone, body: "code 112233" });
  assert.equal(sms.status, 201);
  const sent = await api("POST", "api/emails/send?namespace=default", { to: ["carol@default.localhost"], subject: "out", text: "x" });
  assert.equal(sent.status, 202);
  const cancelled = await api("POST", `api/emails/outbound/${sent.body.id}/cancel`);
  // The delivery job may store carol's copy before the cancel reaches it: then
  // nothing is cancelled and the message is sent. Either way it ends.
  let final;
  for (let i = 0; i < 600; i++) {
    final = (await api("GET", `api/emails/outbound/${sent.body.id}`)).body;
    if (final.status === "sent" || final.status === "failed") break;
    await new Promise((r) => setTimeout(r, 50));
  }
  assert.ok(final.status === "sent" || final.status === "failed", `outbound status ${final.status}`);
  const delivered = final.status === "sent";
  const outboundEvents = () => accepted.filter((e) => e.type === "outbound.event");
  await until(
    () =>
      outboundEvents().length === final.events.length &&
      accepted.some((e) => e.type === "outbound.status" && e.data.status === final.status) &&
      (!delivered || accepted.some((e) => e.type === "email.received" && e.data.subject === "out")),
  );

  const fixed = ["email.received", "email.received", "sms.received", "outbound.event"];
  assert.deepEqual(accepted.slice(0, 4).map((e) => e.type), fixed, "in the order they happened");
  assert.equal(new Set(accepted.map((e) => e.id)).size, accepted.length, "each id accepted once");
  assert.ok(requests.filter((r) => r.status === 500).length === failFirst, "the first requests were refused");
  assert.ok(requests.every((r) => r.status !== 401), "every signature verified");
  // Retries carry the id of the message being retried: nothing newer went out meanwhile.
  assert.ok(requests.slice(0, failFirst).every((r) => r.id === accepted[0].id));

  const [first, second, smsEvent, queued] = accepted;
  assert.equal(first.data.subject, "first");
  assert.equal(first.data.namespace, "default");
  assert.equal(first.data.to[0].address, "alice@default.localhost");
  assert.equal(second.data.subject, "second");
  assert.equal(smsEvent.data.id, sms.body.data.id);
  assert.equal(smsEvent.data.body, "code 112233");
  assert.equal(queued.data.outbound_email_id, sent.body.id);
  assert.equal(queued.data.event.event_type, "queued");
  assert.equal(queued.data.event.recipients[0].email, "carol@default.localhost");
  // The outbound events arrive in the order the message's detail lists them.
  assert.deepEqual(
    outboundEvents().map((e) => e.data.event.event_type),
    final.events.map((e) => e.event_type),
  );
  const statuses = accepted.filter((e) => e.type === "outbound.status");
  assert.equal(statuses.at(-1).data.status, final.status);
  if (cancelled.status === 200 && !delivered) {
    assert.equal(outboundEvents().at(-1).data.event.event_type, "cancelled");
    assert.equal(statuses.at(-1).data.previous_status, "queued");
  }
  const want = accepted.map((e) => e.type);

  // The receiver answers before the attempts are recorded: read the log once they are.
  let log;
  for (let i = 0; i < 600; i++) {
    log = await api("GET", `api/webhooks/${endpointId}/deliveries?limit=100&state=delivered`);
    if (log.status !== 200 || log.body.data.length === want.length) break;
    await new Promise((r) => setTimeout(r, 50));
  }
  assert.equal(log.status, 200);
  assert.equal(log.body.data.length, want.length);
  const oldest = log.body.data.at(-1);
  assert.equal(oldest.state, "delivered");
  assert.equal(oldest.attempts.length, failFirst + 1);
  assert.equal(oldest.attempts[0].status_code, 500);
  assert.equal(oldest.attempts[0].response, "not yet");
  assert.equal(oldest.attempts.at(-1).status_code, 204);
});

test("the test event and a redelivery keep their webhook-id", async () => {
  const list = await api("GET", "api/webhooks");
  const id = list.body.data[0].id;
  const before = accepted.length;
  const t = await api("POST", `api/webhooks/${id}/test`);
  assert.equal(t.status, 202);
  await until(() => accepted.length > before);
  assert.equal(accepted.at(-1).type, "webhook.test");
  assert.equal(accepted.at(-1).id, t.body.data.id);
  const again = await api("POST", `api/webhooks/${id}/deliveries/${t.body.data.id}/redeliver`);
  assert.equal(again.status, 202);
  await until(() => accepted.length > before + 1);
  assert.equal(accepted.at(-1).id, t.body.data.id);
});

test("after a rotation each message verifies with the old secret and the new one", async () => {
  const list = await api("GET", "api/webhooks");
  const id = list.body.data[0].id;
  const rotated = await api("POST", `api/webhooks/${id}/rotate-secret`);
  assert.equal(rotated.status, 200);
  assert.ok(rotated.body.data.previous_secret_expires_at);
  verifiers.push(new Webhook(rotated.body.data.secret));
  const before = accepted.length;
  await api("POST", `api/webhooks/${id}/test`);
  await until(() => accepted.length > before);
  assert.deepEqual(requests.at(-1).verifiedWith, [0, 1]);
});
