// shepherd web: the page's only script, served from the binary (no CDN, no inline script).
// 1. A region with data-live="URL" takes the HTML each "html" server event carries; the server
//    sends it when the herd (or the file) changes, so nothing here polls or reloads. After its
//    first whole board, the board's stream sends "patch" events: only the cards, head and
//    closed list that changed, put in place here. Each column folds (kept in this browser),
//    and the filter box shows only the sheep whose card holds what it says.
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

// Each age is written from the broker's clock: the `now` a page was last sent (data-now),
// carried on by this browser's clock since.
function clock(region, now) {
  if (now === undefined) now = region.querySelector("[data-now]")?.dataset.now;
  if (now !== undefined) region.dataset.offset = String(Number(now) - Date.now());
}

function tick() {
  for (const region of document.querySelectorAll("[data-live]")) {
    const now = Date.now() + Number(region.dataset.offset || 0);
    for (const time of region.querySelectorAll("time[data-since]")) {
      const text = elapsed(now - Number(time.dataset.since));
      if (time.textContent !== text) time.textContent = text;
    }
  }
}

// Folded columns, by id, kept in this browser.
function folded() {
  try { return new Set(JSON.parse(localStorage.getItem("shepherd-folded") || "[]")); }
  catch { return new Set(); }
}

function showFolds() {
  const ids = folded();
  for (const column of document.querySelectorAll("section.column")) {
    const fold = ids.has(column.id);
    column.toggleAttribute("data-folded", fold);
    column.querySelector("button.fold")?.setAttribute("aria-expanded", String(!fold));
  }
}

document.addEventListener("click", (event) => {
  const button = event.target.closest?.("button.fold");
  if (!button) return;
  const id = button.closest("section.column").id;
  const ids = folded();
  if (ids.has(id)) ids.delete(id); else ids.add(id);
  localStorage.setItem("shepherd-folded", JSON.stringify([...ids]));
  showFolds();
});

// The filter: a card (or closed sheep's line) shows when its text holds every word typed.
const filter = document.getElementById("filter");
function showFiltered() {
  if (!filter) return;
  const words = filter.value.toLowerCase().split(/\s+/).filter((w) => w);
  for (const item of document.querySelectorAll("article.card, #closed li")) {
    const text = item.textContent.toLowerCase();
    item.hidden = !words.every((w) => text.includes(w));
  }
}
filter?.addEventListener("input", showFiltered);

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

// A patch from the board's stream, put in place: the cards that left go, the new and changed
// ones go to their place in their column; the head, the closed list and the counts follow.
function patchBoard(region, patch) {
  const board = region.querySelector(".board");
  if (!board) return;
  board.dataset.now = String(patch.now);
  if (patch.head !== undefined) board.querySelector("#head").innerHTML = patch.head;
  if (patch.runs !== undefined) board.querySelector("#runs-list").innerHTML = patch.runs;
  if (patch.closed !== undefined) board.querySelector("#closed-sheep").innerHTML = patch.closed;
  for (const key of patch.drop.concat(patch.set.map((card) => card.key))) {
    board.querySelector('article.card[data-agent="' + CSS.escape(key) + '"]')?.remove();
  }
  for (const card of patch.set.slice().sort((a, b) => a.index - b.index)) {
    const cards = board.querySelector("#" + card.column + " .cards");
    const incoming = document.createElement("template");
    incoming.innerHTML = card.html;
    cards.insertBefore(incoming.content, cards.children[card.index] || null);
  }
  for (const [column, count] of Object.entries(patch.counts)) {
    const shown = board.querySelector("#" + column + " .count");
    if (shown) shown.textContent = String(count);
  }
}

for (const region of document.querySelectorAll("[data-live]")) {
  // What arrived while someone was typing, applied in order once they leave the field.
  let pending = [];
  // What the server last sent, as the browser writes it: the ages ticking in the page do not
  // make an unchanged event look new.
  let shown = region.innerHTML;
  clock(region);
  const settle = () => {
    tick();
    countNeeds();
    announce();
    showFolds();
    showFiltered();
    const gone = region.querySelector('[data-herd="unreachable"]');
    if (gone) setLink("gone", "the broker is gone; still trying");
    else setLink("live", "live");
    document.body.dataset.updates = String(Number(document.body.dataset.updates || 0) + 1);
  };
  const apply = (kind, data) => {
    if (kind === "patch") {
      const patch = JSON.parse(data);
      patchBoard(region, patch);
      clock(region, patch.now);
      shown = region.innerHTML;
    } else {
      const incoming = document.createElement("template");
      incoming.innerHTML = data;
      if (shown !== incoming.innerHTML) {
        shown = incoming.innerHTML;
        region.replaceChildren(incoming.content);
      }
      clock(region);
    }
    settle();
  };
  const flush = () => {
    if (typingIn(region)) return;
    const waiting = pending;
    pending = [];
    for (const [kind, data] of waiting) apply(kind, data);
  };
  const arrive = (kind, data) => {
    // A whole page makes what waited before it moot.
    if (kind === "html") pending = [];
    pending.push([kind, data]);
    flush();
  };
  // Someone typing a reply keeps what they typed: updates wait until they leave the field, or
  // until what they typed was sent.
  region.addEventListener("focusout", () => setTimeout(flush, 0));
  document.addEventListener("shepherd-sent", flush);
  let failures = 0;
  const events = new EventSource(region.dataset.live);
  events.addEventListener("html", (event) => arrive("html", event.data));
  events.addEventListener("patch", (event) => arrive("patch", event.data));
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

tick();
countNeeds();
announce();
showFolds();
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
    document.dispatchEvent(new Event("shepherd-sent"));
  }
});
