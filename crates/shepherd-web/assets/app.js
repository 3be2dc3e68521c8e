// shepherd web: the page's only script, served from the binary (no CDN, no inline script).
// 1. A region with data-live="URL" takes the HTML each "html" server event carries; the server
//    sends it when the herd (or the file) changes, so nothing here polls or reloads.
// 2. #link says whether the page is live: live, reconnecting (the server is away; the browser
//    retries), the broker is gone (the server says so in the HTML), or this page's access
//    ended (the server refused the stream: a revoked session). The tab title counts the sheep
//    that need the person, and every age (a <time data-age>) ticks on by itself.
// 3. With the person's permission (asked by the "Notify me" button), the board shows a browser
//    notification when a sheep comes under "needs you": once per time it comes, naming it and
//    its question. No Web Push: the page must be open, in any tab.
// 4. A form with class "act" is sent with fetch, carrying the page's CSRF token in a header, and
//    the server's answer (what changed, or why not) is shown in #said. Each form carries a
//    random "once" value from its first send until one succeeds, so a second send of the same
//    change (a double click, a retry after a lost answer) is recognised as a repeat.
"use strict";

const csrf = document.querySelector('meta[name="csrf-token"]').content;
const said = document.getElementById("said");
const link = document.getElementById("link");
const title = document.title;

function setLink(state, text) {
  document.body.dataset.live = state;
  if (!link) return;
  link.dataset.state = state;
  link.textContent = text;
}

// The same words as the server's ages (board.rs, `elapsed`).
function elapsed(ms) {
  const secs = Math.max(0, Math.floor(ms / 1000));
  if (secs < 60) return secs + " s";
  if (secs < 3600) return Math.floor(secs / 60) + " min";
  return Math.floor(secs / 3600) + " h " + Math.floor((secs % 3600) / 60) + " min";
}

function tick() {
  for (const region of document.querySelectorAll("[data-live]")) {
    const since = performance.now() - Number(region.dataset.at || 0);
    for (const time of region.querySelectorAll("time[data-age]")) {
      const text = elapsed(Number(time.dataset.age) + since);
      if (time.textContent !== text) time.textContent = text;
    }
  }
}

// "(2) Board · shepherd" while two sheep wait under "needs you".
function countNeeds() {
  const column = document.getElementById("needs-you");
  if (!column) return;
  const waiting = column.querySelectorAll("article[data-agent]").length;
  document.title = waiting > 0 ? "(" + waiting + ") " + title : title;
}

const notify = document.getElementById("notify");
const canNotify = "Notification" in window;
if (notify && canNotify && Notification.permission === "default") {
  notify.hidden = false;
  notify.addEventListener("click", async () => {
    await Notification.requestPermission();
    notify.hidden = Notification.permission === "default";
  });
}

// The sheep under "needs you" when last looked at; null before the first look, so what is
// there when the page opens is not announced (the person is looking at it).
let needing = null;
function announce() {
  const column = document.getElementById("needs-you");
  if (!column) return;
  const cards = new Map();
  for (const card of column.querySelectorAll("article[data-agent]")) cards.set(card.dataset.agent, card);
  if (needing !== null && canNotify && Notification.permission === "granted") {
    for (const [agent, card] of cards) {
      if (needing.has(agent)) continue;
      const name = card.querySelector("a.name")?.textContent || agent;
      const question = card.querySelector(".question")?.textContent;
      const state = card.querySelector("header .state")?.textContent || "";
      const shown = new Notification(name + " needs you", { body: question || state, tag: "shepherd-" + agent });
      shown.onclick = () => { window.focus(); shown.close(); };
    }
  }
  needing = new Set(cards.keys());
}

function typingIn(region) {
  const active = document.activeElement;
  return active && active.tagName === "INPUT" && active.type === "text" && region.contains(active) && active.value !== "";
}

for (const region of document.querySelectorAll("[data-live]")) {
  let pending = null;
  // What the server last sent, as the browser writes it: the ages ticking in the page do not
  // make an unchanged event look new.
  let shown = region.innerHTML;
  region.dataset.at = String(performance.now());
  const apply = (html) => {
    const incoming = document.createElement("template");
    incoming.innerHTML = html;
    if (shown !== incoming.innerHTML) {
      shown = incoming.innerHTML;
      region.replaceChildren(incoming.content);
    }
    region.dataset.at = String(performance.now());
    tick();
    countNeeds();
    announce();
    const gone = region.querySelector('[data-herd="unreachable"]');
    if (gone) setLink("gone", "the broker is gone; still trying");
    else setLink("live", "live");
    document.body.dataset.updates = String(Number(document.body.dataset.updates || 0) + 1);
  };
  // Someone typing a reply keeps what they typed: the update waits until they leave the field.
  region.addEventListener("focusout", () => {
    if (pending !== null) {
      const html = pending;
      pending = null;
      setTimeout(() => typingIn(region) ? (pending = html) : apply(html), 0);
    }
  });
  let failures = 0;
  const events = new EventSource(region.dataset.live);
  events.addEventListener("html", (event) => {
    if (typingIn(region)) pending = event.data;
    else apply(event.data);
  });
  events.addEventListener("open", () => {
    failures = 0;
    if (!region.querySelector('[data-herd="unreachable"]')) setLink("live", "live");
  });
  events.addEventListener("error", () => {
    failures += 1;
    if (events.readyState === EventSource.CLOSED) {
      setLink("ended", "this page's access ended: open the URL `shepherd web` printed");
    } else if (failures > 3) {
      setLink("reconnecting", "the board is not answering (is `shepherd web` running?); still trying");
    } else {
      setLink("reconnecting", "reconnecting…");
    }
  });
}

countNeeds();
announce();
setInterval(tick, 1000);

// The board as an installable app: the service worker keeps the shell for when it is away.
if ("serviceWorker" in navigator) navigator.serviceWorker.register("/sw.js").catch(() => {});

document.addEventListener("submit", async (event) => {
  const form = event.target;
  if (!form.classList.contains("act")) return;
  event.preventDefault();
  if (!form.dataset.once) {
    const bytes = crypto.getRandomValues(new Uint8Array(16));
    form.dataset.once = Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");
  }
  const body = new URLSearchParams(new FormData(form));
  body.set("once", form.dataset.once);
  const button = form.querySelector("button");
  if (button) button.disabled = true;
  said.textContent = "…";
  said.className = "";
  try {
    const response = await fetch(form.getAttribute("action"), {
      method: "POST",
      body,
      headers: { "X-CSRF-Token": csrf },
      credentials: "same-origin",
    });
    said.textContent = (await response.text()).trim();
    said.className = response.ok ? "ok" : "failed";
    if (response.ok) {
      form.reset();
      delete form.dataset.once;
    }
  } catch (error) {
    said.textContent = "could not reach the server: " + error;
    said.className = "failed";
  } finally {
    if (button) button.disabled = false;
  }
});
