// Catchbox dashboard: the few things a page cannot do without script. Every
// page works without it; this adds live updates, copy buttons, confirmations,
// countdowns, and times in the browser's own zone.
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
      el.querySelectorAll("time[data-local]").forEach(localTime);
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

// Times are written in UTC with their date; they are shown in the browser's
// own zone and language, with the zone named ("Nov 28, 4:04 PM GMT+1"), the
// year only when it is not this one. The full time is the element's title.
function localTime(el) {
  const t = new Date(el.getAttribute("datetime"));
  if (isNaN(t)) return;
  const opts = { month: "short", day: "numeric", hour: "2-digit", minute: "2-digit", timeZoneName: "short" };
  if (el.dataset.local === "seconds") opts.second = "2-digit";
  if (t.getFullYear() !== new Date().getFullYear()) opts.year = "numeric";
  el.textContent = new Intl.DateTimeFormat(undefined, opts).format(t);
  el.title = new Intl.DateTimeFormat(undefined, { dateStyle: "full", timeStyle: "long" }).format(t);
}

// The name of the browser's zone as a time shows it ("GMT+1", "PST").
function zoneName() {
  const part = new Intl.DateTimeFormat(undefined, { timeZoneName: "short" }).formatToParts(new Date())
    .find((p) => p.type === "timeZoneName");
  return part ? part.value : "";
}

const pad = (n) => String(n).padStart(2, "0");

// The search's date and time fields are in UTC for the server (and without
// script); with it they are in the browser's zone, as the list's times are:
// shown converted, and sent as the Unix seconds they mean. An "until" field
// covers its whole minute.
function localFilters(form) {
  const fields = [...form.querySelectorAll("input[data-utc]")];
  for (const f of fields) {
    if (!f.value) continue;
    const t = new Date(f.value + ":00Z");
    if (isNaN(t)) continue;
    f.value = `${t.getFullYear()}-${pad(t.getMonth() + 1)}-${pad(t.getDate())}T${pad(t.getHours())}:${pad(t.getMinutes())}`;
  }
  const zone = zoneName();
  if (zone) form.querySelectorAll("[data-zone-label]").forEach((l) => { l.textContent = `(${zone})`; });
  form.addEventListener("submit", () => {
    for (const f of fields) {
      if (!f.value) continue;
      const t = new Date(f.value); // a datetime-local value is read in the browser's zone
      if (isNaN(t)) continue;
      const secs = Math.floor(t.getTime() / 1000) + (f.dataset.utc === "until" ? 59 : 0);
      const hidden = document.createElement("input");
      Object.assign(hidden, { type: "hidden", name: f.name, value: String(secs) });
      form.append(hidden);
      f.disabled = true;
    }
  });
}

// A search form leaves its empty fields out of the address, which then reads
// as the search it is (the server takes empty fields as absent anyway).
function dropEmpty(form) {
  form.addEventListener("submit", () => {
    for (const el of form.elements) {
      if (el.name && !el.disabled && el.value === "") el.disabled = true;
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
  document.querySelectorAll("time[data-local]").forEach(localTime);
  new Set([...document.querySelectorAll("input[data-utc]")].map((i) => i.form)).forEach(localFilters);
  document.querySelectorAll("form[data-drop-empty]").forEach(dropEmpty);
  // A page showing work under way (a deliverability report) looks again shortly.
  document.querySelectorAll("[data-refresh]").forEach((el) =>
    setTimeout(() => location.reload(), Number(el.dataset.refresh) * 1000));
  document.querySelectorAll("form[data-confirm]").forEach((f) =>
    f.addEventListener("submit", (e) => { if (!confirm(f.dataset.confirm)) e.preventDefault(); }));
  document.querySelectorAll("select[data-autosubmit]").forEach((s) =>
    s.addEventListener("change", () => s.form.submit()));
});
