// A crash between commit and delivery loses no webhook event: the server is
// killed (SIGKILL) while its first delivery waits on the receiver, and the
// server started again on the same data directory delivers every event of
// the mail accepted before the crash, in order, each accepted once (the one
// in flight comes again with its webhook-id, once the killed server's lease
// on the delivery job has run out).
import { test, after } from "node:test";
import assert from "node:assert/strict";
import http from "node:http";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import nodemailer from "nodemailer";
import { Webhook } from "standardwebhooks";
import { startCatchbox } from "./harness.mjs";

const dataDir = mkdtempSync(join(tmpdir(), "catchbox-e2e-crash-"));
const apiKey = "cbx_e2e_crash_" + Math.random().toString(36).slice(2);
let server;
let receiver;

after(async () => {
  await server?.stop();
  receiver?.closeAllConnections?.();
  receiver?.close();
  rmSync(dataDir, { recursive: true, force: true });
});

test("events committed before a SIGKILL are delivered after the restart", { timeout: 120000 }, async () => {
  let hold = true; // while set, requests are left unanswered
  let verifier;
  const seen = []; // {id, subject, status}
  let notify = () => {};
  receiver = http.createServer((req, res) => {
    const chunks = [];
    req.on("data", (c) => chunks.push(c));
    req.on("end", () => {
      const event = verifier.verify(Buffer.concat(chunks).toString("utf8"), req.headers);
      if (hold) {
        seen.push({ id: req.headers["webhook-id"], subject: event.data.subject, status: "held" });
        notify();
        return; // never answered: the server is killed meanwhile
      }
      seen.push({ id: req.headers["webhook-id"], subject: event.data.subject, status: 204 });
      res.writeHead(204).end();
      notify();
    });
  });
  await new Promise((r) => receiver.listen(0, "127.0.0.1", r));
  const until = (cond) =>
    new Promise((resolve) => {
      notify = () => cond() && resolve();
      notify();
    });

  const env = { CATCHBOX_DATA_DIR: dataDir, CATCHBOX_API_KEY: apiKey, CATCHBOX_WEBHOOK_TIMEOUT: "60s" };
  server = await startCatchbox(env);
  const res = await fetch(server.baseUrl + "api/webhooks", {
    method: "POST",
    headers: { "X-Api-Key": apiKey, "Content-Type": "application/json" },
    body: JSON.stringify({ url: `http://127.0.0.1:${receiver.address().port}/hooks`, event_types: ["email.received"] }),
  });
  assert.equal(res.status, 201);
  verifier = new Webhook((await res.json()).data.secret);

  const [host, port] = server.smtp.split(":");
  const transport = nodemailer.createTransport({ host, port: Number(port), secure: false });
  for (const subject of ["one", "two", "three"]) {
    await transport.sendMail({ from: "a@example.com", to: "crash@default.localhost", subject, text: subject });
  }
  transport.close();
  await until(() => seen.length >= 1); // the first delivery is in flight
  await server.kill();

  hold = false;
  server = await startCatchbox(env);
  await until(() => seen.filter((s) => s.status === 204).length >= 3);
  const accepted = seen.filter((s) => s.status === 204);
  assert.deepEqual(accepted.map((s) => s.subject), ["one", "two", "three"]);
  assert.equal(new Set(accepted.map((s) => s.id)).size, 3);
  assert.equal(seen[0].id, accepted[0].id, "the event in flight at the crash came again with its id");
});
