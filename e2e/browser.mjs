// A real browser for the dashboard tests: Debian's chromium driven by
// playwright-core, one throw-away profile per browser, and the checks every
// page must pass (axe-core, nothing cut off at phone width).
import assert from "node:assert/strict";
import { mkdtempSync, rmSync, existsSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { chromium } from "playwright-core";
import { AxeBuilder } from "@axe-core/playwright";

export const chromiumPath = process.env.CATCHBOX_CHROMIUM || "/usr/bin/chromium";
// skip is the node:test skip option of a test that needs the browser.
export const skip = existsSync(chromiumPath) ? false : `no ${chromiumPath}`;

const open = [];

// browser starts chromium with a fresh profile; options go to the context
// (timezoneId, locale, javaScriptEnabled, ...). Dialogs (confirmations) are
// accepted.
export async function browser(options = {}) {
  const dir = mkdtempSync(join(tmpdir(), "catchbox-chromium-"));
  const context = await chromium.launchPersistentContext(dir, {
    executablePath: chromiumPath,
    headless: true,
    acceptDownloads: true,
    args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
      "--disable-background-networking", "--disable-component-update", "--disable-sync"],
    ...options,
  });
  open.push({ context, dir });
  const page = context.pages()[0] || (await context.newPage());
  page.on("dialog", (d) => d.accept());
  return { context, page };
}

// closeBrowsers ends every browser started, and removes their profiles.
export async function closeBrowsers() {
  for (const b of open.splice(0)) {
    await b.context.close();
    rmSync(b.dir, { recursive: true, force: true });
  }
}

// signIn signs the page in with the sign-in form.
export async function signIn(page, base, email, password) {
  await page.goto(base + "signin");
  await page.fill("#email", email);
  await page.fill("#password", password);
  await Promise.all([page.waitForURL((u) => !u.pathname.startsWith("/signin")), page.click("button[type=submit]")]);
}

// axe runs axe-core on the page as it is: serious and critical violations fail
// the test. The email's own HTML (its frame) is the sender's, not the
// dashboard's, and is left out.
// Some pages reload themselves by design (an authenticator's code running out,
// a check under way), and a reload in the middle of axe's reading destroys the
// page it reads: the page is then read again once the reload has loaded.
export async function axe(page, what) {
  let res;
  for (let attempt = 1; !res; attempt++) {
    try {
      res = await new AxeBuilder({ page }).exclude("iframe.body").analyze();
    } catch (err) {
      if (attempt === 3 || !/Execution context was destroyed/.test(err.message)) throw err;
      await page.waitForLoadState();
    }
  }
  const bad = res.violations.filter((v) => v.impact === "serious" || v.impact === "critical");
  assert.deepEqual(bad.map((v) => `${v.id}: ${v.help} (${v.nodes.map((n) => n.target).join(", ")})`), [],
    `${what} has accessibility violations`);
}

// cutOff lists what the page hides or pushes out sideways: the page scrolling
// sideways, an element reaching past the viewport's edges, or a box whose
// content is wider than it without showing it (a table in a scrolling
// wrapper, a tab row that scrolls). Text cut with an ellipsis by design, form
// fields, the email's frame and content hidden for screen readers only are
// not counted.
export function cutOff(page) {
  return page.evaluate(() => {
    const vw = document.documentElement.clientWidth;
    const out = [];
    const name = (el) => el.tagName.toLowerCase() + (el.id ? "#" + el.id : "") +
      (el.className && typeof el.className === "string" ? "." + el.className.trim().split(/\s+/).join(".") : "") +
      ` "${(el.textContent || "").trim().slice(0, 30)}"`;
    const hiddenByDesign = (el) => {
      for (let e = el; e && e !== document.body; e = e.parentElement) {
        const cs = getComputedStyle(e);
        const r = e.getBoundingClientRect();
        if (cs.display === "none" || cs.visibility === "hidden" || e.hidden) return true;
        if (cs.position === "absolute" && (r.width <= 1 || r.height <= 1)) return true; // sr-only
        if (e.matches(".skip:not(:focus)")) return true; // the skip link waits off-screen
        if (e.matches("input, select, textarea, iframe")) return true;
      }
      return false;
    };
    if (document.documentElement.scrollWidth > vw + 1) {
      out.push(`the page scrolls sideways: ${document.documentElement.scrollWidth} px in ${vw}`);
    }
    for (const el of document.querySelectorAll("body *")) {
      if (hiddenByDesign(el)) continue;
      const r = el.getBoundingClientRect();
      if (r.width === 0 && r.height === 0) continue;
      const cs = getComputedStyle(el);
      if (r.right > vw + 1 || r.left < -1) out.push(`${name(el)} reaches ${Math.round(r.left)}..${Math.round(r.right)} of ${vw} px`);
      if (el.scrollWidth > el.clientWidth + 1 && cs.overflowX !== "visible" && cs.textOverflow !== "ellipsis") {
        out.push(`${name(el)} hides ${el.scrollWidth - el.clientWidth} px sideways`);
      }
    }
    return out;
  });
}
