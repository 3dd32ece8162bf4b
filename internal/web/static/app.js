// Catchbox dashboard: the few things a page cannot do without script. Every
// page works without it; this adds live updates, copy buttons, confirmations
// and countdowns.
"use strict";

// Live rows: the server sends an event when mail lands; the rows are fetched
// again from the server, the way a reload would show them.
function live(el) {
  const rowsURL = el.dataset.liveRows;
  const status = document.querySelector("[data-live-status]");
  const seen = new Set([...el.querySelectorAll("[data-id]")].map((r) => r.dataset.id));
  let busy = false, again = false;
  async function refresh() {
    if (busy) { again = true; return; }
    busy = true;
    try {
      const res = await fetch(rowsURL, { credentials: "same-origin", headers: { Accept: "text/html" } });
      if (res.redirected || !res.ok) { if (res.status === 401 || res.redirected) location.reload(); return; }
      const html = await res.text();
      const tmp = document.createElement("div");
      tmp.innerHTML = html;
      for (const row of tmp.querySelectorAll("[data-id]")) {
        if (!seen.has(row.dataset.id)) { row.classList.add("new"); seen.add(row.dataset.id); }
      }
      el.replaceChildren(...tmp.childNodes);
    } finally {
      busy = false;
      if (again) { again = false; refresh(); }
    }
  }
  const es = new EventSource(el.dataset.liveEvents);
  es.addEventListener("open", () => { if (status) status.hidden = false; });
  es.addEventListener("error", () => { if (status) status.hidden = true; });
  es.addEventListener(el.dataset.liveEvent || "mail", refresh);
}

// Copy buttons: data-copy names the element whose text is copied.
function copy(btn) {
  btn.addEventListener("click", async () => {
    const src = document.querySelector(btn.dataset.copy);
    if (!src) return;
    const text = src.value !== undefined && src.tagName === "INPUT" ? src.value : src.textContent;
    try {
      await navigator.clipboard.writeText(text.trim());
      const old = btn.textContent;
      btn.textContent = "Copied";
      setTimeout(() => { btn.textContent = old; }, 1500);
    } catch (e) {
      const range = document.createRange();
      range.selectNodeContents(src);
      getSelection().removeAllRanges();
      getSelection().addRange(range);
    }
  });
}

// Countdowns to a code's expiry; when it runs out the page shows the next code.
function countdown(el) {
  const end = Date.parse(el.dataset.expires);
  function tick() {
    const left = Math.max(0, Math.ceil((end - Date.now()) / 1000));
    el.textContent = left + " s left";
    if (left <= 0) { location.reload(); return; }
    setTimeout(tick, 250);
  }
  tick();
}

document.addEventListener("DOMContentLoaded", () => {
  document.querySelectorAll("[data-live-rows]").forEach(live);
  document.querySelectorAll("[data-copy]").forEach(copy);
  document.querySelectorAll("[data-expires]").forEach(countdown);
  // A page showing work under way (a deliverability report) looks again shortly.
  document.querySelectorAll("[data-refresh]").forEach((el) =>
    setTimeout(() => location.reload(), Number(el.dataset.refresh) * 1000));
  document.querySelectorAll("form[data-confirm]").forEach((f) =>
    f.addEventListener("submit", (e) => { if (!confirm(f.dataset.confirm)) e.preventDefault(); }));
  document.querySelectorAll("select[data-autosubmit]").forEach((s) =>
    s.addEventListener("change", () => s.form.submit()));
});
