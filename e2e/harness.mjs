// Starts the built catchbox binary on loopback ports chosen by the OS, with a
// fresh data directory, and reads its addresses from its "ready" log line.
import { spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, dirname } from "node:path";
import { fileURLToPath } from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
export const binary = process.env.CATCHBOX_BIN || join(root, "bin", "catchbox");
export const benchBinary = process.env.CATCHBOX_BENCH_BIN || join(root, "bin", "catchbox-bench");

// Starts an SMTP relay sink (catchbox-bench relay) on a loopback port: it
// requires AUTH, answers 250 for most recipients, 451 for local parts
// starting with "defer" and 550 for "bounce", and prints each message it
// accepts, which received collects.
export async function startRelay() {
  const child = spawn(benchBinary, ["relay"], { stdio: ["pipe", "pipe", "pipe"] });
  const received = [];
  const waiters = [];
  let buffered = "";
  let errors = "";
  child.stderr.on("data", (chunk) => (errors += chunk));
  const first = await new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error("the relay did not start:\n" + errors)), 30000);
    child.stdout.on("data", (chunk) => {
      buffered += chunk;
      let nl;
      while ((nl = buffered.indexOf("\n")) >= 0) {
        const line = JSON.parse(buffered.slice(0, nl));
        buffered = buffered.slice(nl + 1);
        if (line.url) {
          clearTimeout(timer);
          resolve(line);
          continue;
        }
        received.push(line);
        for (const w of waiters.splice(0)) w();
      }
    });
    child.on("exit", (code) => reject(new Error(`the relay exited with ${code}:\n${errors}`)));
  });
  return {
    url: first.url,
    received,
    // waitFor resolves with the first message matching pred.
    async waitFor(pred, timeout = 15000) {
      const deadline = Date.now() + timeout;
      for (;;) {
        const m = received.find(pred);
        if (m) return m;
        if (Date.now() > deadline) throw new Error("the relay received no such message: " + JSON.stringify(received));
        await new Promise((r) => {
          waiters.push(r);
          setTimeout(r, 100);
        });
      }
    },
    async stop() {
      child.stdin.end();
      await new Promise((r) => (child.exitCode !== null ? r() : child.once("exit", r)));
    },
  };
}

export async function startCatchbox(extraEnv = {}) {
  const dataDir = mkdtempSync(join(tmpdir(), "catchbox-e2e-"));
  const apiKey = "cbx_e2e_" + Math.random().toString(36).slice(2);
  const env = {
    ...process.env,
    CATCHBOX_DATA_DIR: dataDir,
    CATCHBOX_HTTP_ADDR: "127.0.0.1:0",
    CATCHBOX_SMTP_ADDR: "127.0.0.1:0",
    CATCHBOX_IMAP_ADDR: "127.0.0.1:0",
    CATCHBOX_POP3_ADDR: "127.0.0.1:0",
    CATCHBOX_API_KEY: apiKey,
    CATCHBOX_LOG_FORMAT: "json",
    ...extraEnv,
  };
  const child = spawn(binary, ["serve"], { env, stdio: ["ignore", "pipe", "pipe"] });
  let log = "";
  const ready = await new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error("catchbox did not start:\n" + log)), 30000);
    child.stderr.on("data", (chunk) => {
      log += chunk;
      for (const line of log.split("\n")) {
        if (!line.includes('"Catchbox is ready"')) continue;
        clearTimeout(timer);
        resolve(JSON.parse(line));
        return;
      }
    });
    child.on("exit", (code) => reject(new Error(`catchbox exited with ${code}:\n${log}`)));
  });
  return {
    apiKey,
    dataDir, // for admin commands against the running server's store
    baseUrl: ready.http + "/",
    smtp: ready.smtp[0],
    imap: ready.imap, // host:port of the IMAP listener
    pop3: ready.pop3,
    log: () => log,
    async stop() {
      child.kill("SIGTERM");
      await new Promise((r) => child.once("exit", r));
      rmSync(dataDir, { recursive: true, force: true });
    },
    // kill ends the process at once (SIGKILL), as a crash would, and leaves
    // the data directory for a restart on it (startCatchbox with CATCHBOX_DATA_DIR).
    async kill() {
      child.kill("SIGKILL");
      await new Promise((r) => child.once("exit", r));
    },
  };
}
