// Starts the built catchbox binary on loopback ports chosen by the OS, with a
// fresh data directory, and reads its addresses from its "ready" log line.
import { spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, dirname } from "node:path";
import { fileURLToPath } from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
export const binary = process.env.CATCHBOX_BIN || join(root, "bin", "catchbox");

export async function startCatchbox(extraEnv = {}) {
  const dataDir = mkdtempSync(join(tmpdir(), "catchbox-e2e-"));
  const apiKey = "cbx_e2e_" + Math.random().toString(36).slice(2);
  const env = {
    ...process.env,
    CATCHBOX_DATA_DIR: dataDir,
    CATCHBOX_HTTP_ADDR: "127.0.0.1:0",
    CATCHBOX_SMTP_ADDR: "127.0.0.1:0",
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
