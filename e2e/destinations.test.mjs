// Verified destinations and suppressions, driven over HTTP against the built
// binary: a send to an external address is refused as cypress-mailisk shows
// it until the address is a destination; the operator's admin command makes
// one verified at once; POST /api/destinations mails a link through the
// relay (a small SMTP server here, requiring AUTH PLAIN), and following the
// link verifies it.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { createServer } from "node:net";
import { execFileSync } from "node:child_process";
import { startCatchbox, binary } from "./harness.mjs";

let server;
let relay;
const relayed = [];
let waiting = [];

// startRelay is an SMTP relay on loopback: EHLO, AUTH PLAIN relay/secret
// (refusing MAIL before it), MAIL, RCPT, DATA; each message is kept.
function startRelay() {
  const srv = createServer((sock) => {
    let buf = "";
    let inData = false;
    let authed = false;
    let msg = { rcpt: [], data: "" };
    const say = (line) => sock.write(line + "\r\n");
    say("220 relay.test ESMTP");
    sock.on("data", (chunk) => {
      buf += chunk.toString("utf8");
      let i;
      while ((i = buf.indexOf("\r\n")) >= 0) {
        const line = buf.slice(0, i);
        buf = buf.slice(i + 2);
        if (inData) {
          if (line === ".") {
            inData = false;
            relayed.push(msg);
            const woken = waiting;
            waiting = [];
            woken.forEach((w) => w());
            msg = { rcpt: [], data: "" };
            say("250 2.0.0 queued as E2E");
          } else {
            msg.data += (line.startsWith("..") ? line.slice(1) : line) + "\n";
          }
          continue;
        }
        const cmd = line.toUpperCase();
        if (cmd.startsWith("EHLO")) {
          sock.write("250-relay.test\r\n250-AUTH PLAIN\r\n250 8BITMIME\r\n");
        } else if (cmd.startsWith("AUTH PLAIN ")) {
          const [, user, pass] = Buffer.from(line.slice(11), "base64").toString().split("\0");
          authed = user === "relay" && pass === "secret";
          say(authed ? "235 2.7.0 Authentication successful" : "535 5.7.8 Authentication credentials invalid");
        } else if (cmd.startsWith("MAIL FROM:")) {
          if (!authed) say("530 5.7.0 Authentication required");
          else {
            msg.from = line.slice(10).replace(/^<|>.*$/g, "");
            say("250 2.1.0 Ok");
          }
        } else if (cmd.startsWith("RCPT TO:")) {
          msg.rcpt.push(line.slice(8).replace(/^<|>.*$/g, ""));
          say("250 2.1.5 Ok");
        } else if (cmd === "DATA") {
          inData = true;
          say("354 End data with <CR><LF>.<CR><LF>");
        } else if (cmd === "QUIT") {
          say("221 2.0.0 Bye");
          sock.end();
        } else if (cmd === "RSET" || cmd === "NOOP") {
          say("250 2.0.0 Ok");
        } else {
          say("502 5.5.2 Command not recognized");
        }
      }
    });
    sock.on("error", () => {});
  });
  return new Promise((resolve) => srv.listen(0, "127.0.0.1", () => resolve(srv)));
}

// relayedTo waits for the first message the relay accepted for rcpt (sends
// to verified destinations go through it too, since delivery runs).
function relayedTo(rcpt) {
  const find = () => relayed.find((m) => m.rcpt.includes(rcpt));
  const found = find();
  if (found) return Promise.resolve(found);
  return new Promise((resolve) => {
    const check = () => {
      const m = find();
      if (m) resolve(m);
      else waiting.push(check);
    };
    waiting.push(check);
  });
}

async function request(method, path, body) {
  const res = await fetch(`${server.baseUrl}${path}`, {
    method,
    headers: { Accept: "application/json", "Content-Type": "application/json", "X-Api-Key": server.apiKey },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  return { status: res.status, headers: res.headers, body: text ? JSON.parse(text) : undefined };
}

const send = (to) => request("POST", "api/emails/send?namespace=default", { to: [to], subject: "Hello", text: "Hi" });

before(async () => {
  relay = await startRelay();
  const { port } = relay.address();
  server = await startCatchbox({ CATCHBOX_RELAY_URL: `smtp://relay:secret@127.0.0.1:${port}?tls=none` });
});

after(async () => {
  await server?.stop();
  relay?.close();
});

test("the admin command adds a verified destination, and a send to it is accepted", async () => {
  let res = await send("ops@example.net");
  assert.equal(res.status, 403);
  assert.equal(res.body.code, "recipient_not_verified");
  assert.equal(res.body.errors[0].field, "to[0]");

  const out = execFileSync(binary, ["admin", "--json", "destination", "add", "Ops@Example.net", "--org", "default"], {
    env: { ...process.env, CATCHBOX_DATA_DIR: server.dataDir },
  }).toString();
  const added = JSON.parse(out);
  assert.equal(added.email, "ops@example.net");
  assert.equal(added.status, "verified");

  res = await send("ops@example.net");
  assert.equal(res.status, 202);
});

test("POST /api/destinations mails a link through the relay; following it verifies the address", async () => {
  let res = await request("POST", "api/destinations", { email: "partner@example.org" });
  assert.equal(res.status, 202);
  assert.equal(res.body.data.status, "pending");
  const id = res.body.data.id;

  const mail = await relayedTo("partner@example.org");
  assert.equal(mail.from, "no-reply@localhost");
  assert.deepEqual(mail.rcpt, ["partner@example.org"]);
  assert.equal(relayed.filter((m) => m.from === "no-reply@localhost").length, 1);
  assert.match(mail.data, /^Subject: Verify partner@example\.org as a Catchbox destination$/m);
  const link = mail.data.match(/http:\/\/\S+\/verify\/destinations\/\S+/)[0];

  assert.equal((await send("partner@example.org")).status, 403);
  const followed = await fetch(link);
  assert.equal(followed.status, 200);
  assert.equal((await followed.json()).data.status, "verified");
  assert.equal((await send("partner@example.org")).status, 202);

  res = await request("GET", "api/destinations");
  assert.deepEqual(res.body.data.map((d) => [d.email, d.status]).sort(), [
    ["ops@example.net", "verified"],
    ["partner@example.org", "verified"],
  ]);
  res = await request("DELETE", `api/destinations/${id}`);
  assert.equal(res.status, 204);
  assert.equal((await send("partner@example.org")).status, 403);
});

test("suppressions start empty and an unknown one cannot be removed", async () => {
  let res = await request("GET", "api/suppressions");
  assert.equal(res.status, 200);
  assert.deepEqual(res.body, { total_count: 0, options: { limit: 20, offset: 0 }, data: [] });
  res = await request("DELETE", "api/suppressions/nobody%40example.org");
  assert.equal(res.status, 404);
  assert.equal(res.body.code, "not_found");
});
