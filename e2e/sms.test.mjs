// SMS numbers and messages, driven through the official npm client: a number
// added with the admin command line, virtual messages, the search with its
// default wait (which follows 307s until the message is there), and a real
// provider's inbound webhook signed as Twilio signs it.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { createHmac } from "node:crypto";
import { MailiskClient } from "mailisk";
import axios from "axios";
import { startCatchbox, binary } from "./harness.mjs";

const phone = "+15550001111";
const twilioToken = "e2e-twilio-auth-token";

let server;
let client;

before(async () => {
  server = await startCatchbox({ CATCHBOX_WAIT_HOLD: "1s", CATCHBOX_TWILIO_AUTH_TOKEN: twilioToken });
  client = new MailiskClient({ apiKey: server.apiKey, baseUrl: server.baseUrl });
  execFileSync(binary, ["admin", "sms-number", "add", "--org", "default", "--phone", phone, "--status", "active"], {
    env: { ...process.env, CATCHBOX_DATA_DIR: server.dataDir },
    stdio: ["ignore", "pipe", "pipe"],
  });
});

after(async () => {
  await server?.stop();
});

test("listSmsNumbers shows the number added by the admin command", async () => {
  const res = await client.listSmsNumbers();
  assert.equal(res.total_count, 1);
  const n = res.data[0];
  assert.equal(n.phone_number, phone);
  assert.equal(n.status, "active");
  assert.equal(n.country, "US");
  assert.equal(n.is_test_number, false);
  assert.match(n.id, /^[0-9a-f-]{36}$/);
  assert.match(n.created_at, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
});

test("sendVirtualSms, then searchSmsMessages with its default wait finds it", async () => {
  const sent = await client.sendVirtualSms({ from_number: "+15557654321", to_number: phone, body: "Your code is 246810" });
  assert.equal(sent.data.direction, "inbound");
  assert.equal(sent.data.to_number, phone);
  assert.equal(sent.data.from_number, "+15557654321");
  const res = await client.searchSmsMessages(phone, { body: "246810" });
  assert.equal(res.total_count, 1);
  assert.equal(res.data[0].id, sent.data.id);
  assert.equal(res.options.wait, true);
  assert.ok(res.options.from_date, "the client's default from_date is echoed");
});

test("a waiting search is answered by a message sent later, across redirects", async () => {
  const pending = client.searchSmsMessages(phone, { body: "later-135790", from_number: "+1555" });
  // Longer than the 1 s hold: the client follows at least one 307 first.
  await new Promise((r) => setTimeout(r, 2500));
  const sent = await client.sendVirtualSms({ from_number: "+1 555 765 4321", to_number: "15550001111", body: "later-135790" });
  const res = await pending;
  assert.equal(res.total_count, 1);
  assert.equal(res.data[0].id, sent.data.id);
});

test("a message to a number that is not the caller's is 404", async () => {
  await assert.rejects(
    client.sendVirtualSms({ from_number: "+15557654321", to_number: "+15559999999", body: "x" }),
    (err) => err.response?.status === 404,
  );
});

function twilioSignature(url, params) {
  let s = url;
  for (const k of Object.keys(params).sort()) s += k + params[k];
  return createHmac("sha1", twilioToken).update(s).digest("base64");
}

test("an inbound webhook signed as Twilio signs it is stored once; a forged one is refused", async () => {
  const url = server.baseUrl + "webhooks/twilio/sms";
  const params = {
    MessageSid: "SM" + "e2e".padEnd(32, "0"),
    AccountSid: "AC" + "0".repeat(32),
    From: "+14155550100",
    To: phone,
    Body: "Twilio says 97531",
    NumMedia: "0",
  };
  const post = (signature, body = params) =>
    axios.post(url, new URLSearchParams(body).toString(), {
      headers: { "Content-Type": "application/x-www-form-urlencoded", "X-Twilio-Signature": signature },
      validateStatus: () => true,
    });

  const forged = await post(twilioSignature(url, { ...params, Body: "something else" }));
  assert.equal(forged.status, 403);

  for (let i = 0; i < 2; i++) {
    const ok = await post(twilioSignature(url, params));
    assert.equal(ok.status, 200);
    assert.match(ok.headers["content-type"], /^text\/xml/);
    assert.equal(ok.data, '<?xml version="1.0" encoding="UTF-8"?><Response></Response>');
  }
  const res = await client.searchSmsMessages(phone, { from_number: "+1415" });
  assert.equal(res.total_count, 1);
  assert.equal(res.data[0].body, "Twilio says 97531");
  assert.equal(res.data[0].provider_message_id, params.MessageSid);
});
