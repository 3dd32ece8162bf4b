// Virtual authenticators through the HTTP API, with every code checked against an
// independent RFC 6238 implementation built on Node's crypto HMAC.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { createHmac } from "node:crypto";
import axios from "axios";
import { startCatchbox } from "./harness.mjs";

let server;
let http;

before(async () => {
  server = await startCatchbox();
  http = axios.create({ baseURL: server.baseUrl, headers: { "X-Api-Key": server.apiKey }, validateStatus: () => true });
});

after(async () => {
  await server?.stop();
});

function base32Decode(s) {
  const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567";
  let bits = "";
  for (const c of s.replace(/[\s=-]/g, "").toUpperCase()) bits += alphabet.indexOf(c).toString(2).padStart(5, "0");
  const out = [];
  for (let i = 0; i + 8 <= bits.length; i += 8) out.push(parseInt(bits.slice(i, i + 8), 2));
  return Buffer.from(out);
}

// RFC 6238 / RFC 4226 dynamic truncation.
function totp(secret, { algorithm = "sha1", digits = 6, period = 30, at = Date.now() } = {}) {
  const counter = Buffer.alloc(8);
  counter.writeBigUInt64BE(BigInt(Math.floor(at / 1000 / period)));
  const mac = createHmac(algorithm, base32Decode(secret)).update(counter).digest();
  const offset = mac[mac.length - 1] & 0x0f;
  const value = (mac.readUInt32BE(offset) & 0x7fffffff) % 10 ** digits;
  return String(value).padStart(digits, "0");
}

// The code is compared with the one valid at the start of its period, derived from
// the returned expiry, so a period boundary between request and check cannot flake.
function expected(secret, res, opts) {
  const period = opts?.period ?? 30;
  const at = Date.parse(res.expires) - period * 1000;
  return totp(secret, { ...opts, at });
}

const secret = "JBSWY3DPEHPK3PXP";

test("direct OTP from a shared secret matches Node's HMAC", async () => {
  const res = await http.post("api/devices/otp", { shared_secret: secret });
  assert.equal(res.status, 200);
  assert.match(res.data.code, /^\d{6}$/);
  assert.equal(res.data.code, expected(secret, res.data));
  assert.ok(Date.parse(res.data.expires) > Date.now() - 1000);
});

for (const [algorithm, digits, period] of [["SHA1", 6, 30], ["SHA256", 8, 60], ["SHA512", 8, 10]]) {
  test(`saved custom device ${algorithm}/${digits}/${period} matches Node's HMAC`, async () => {
    const created = await http.post("api/devices/custom", { secret, algorithm, digits, period, issuer: "Acme", username: "jo@example.com" });
    assert.equal(created.status, 201);
    assert.equal(created.data.name, "Acme (jo@example.com)");
    assert.ok(!JSON.stringify(created.data).includes(secret), "secret echoed in a response");
    const otp = await http.get(`api/devices/${created.data.id}/otp`);
    assert.equal(otp.status, 200);
    assert.equal(otp.data.code, expected(secret, otp.data, { algorithm: algorithm.toLowerCase(), digits, period }));
  });
}

test("otpauth URL values win over body values", async () => {
  const url = `otpauth://totp/Issuer%3Aalice%40example.com?secret=${secret}&issuer=Example&algorithm=SHA256&digits=8&period=60`;
  const res = await http.post("api/devices/otpauth-url", { otp_auth_url: url, digits: 6, username: "ignored" });
  assert.equal(res.status, 201);
  assert.equal(res.data.source, "otpauth_url");
  assert.equal(res.data.issuer, "Example");
  assert.equal(res.data.username, "alice@example.com");
  assert.equal(res.data.digits, 8);
  assert.equal(res.data.period, 60);
  assert.equal(res.data.algorithm, "SHA256");
  const otp = await http.get(`api/devices/${res.data.id}/otp`);
  assert.equal(otp.data.code, expected(secret, otp.data, { algorithm: "sha256", digits: 8, period: 60 }));
});

test("validation errors use the contract's body", async () => {
  const bad = await http.post("api/devices/custom", { secret, digits: 7 });
  assert.equal(bad.status, 400);
  assert.equal(bad.data.errors[0].field, "digits");
  const listed = await http.get("api/devices");
  assert.equal(listed.status, 200);
  assert.ok(listed.data.total_count >= 4);
  const del = await http.delete(`api/devices/${listed.data.items[0].id}`);
  assert.equal(del.status, 204);
});
