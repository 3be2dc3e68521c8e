// shepherd web: the page's only script, served from the binary (no CDN, no inline script).
// 1. A region with data-live="URL" takes the HTML each "html" server event carries; the server
//    sends it when the herd (or the file) changes, so nothing here polls or reloads.
// 2. A form with class "act" is sent with fetch, carrying the page's CSRF token in a header, and
//    the server's answer (what changed, or why not) is shown in #said. Each form carries a
//    random "once" value from its first send until one succeeds, so a second send of the same
//    change (a double click, a retry after a lost answer) is recognised as a repeat.
"use strict";

const csrf = document.querySelector('meta[name="csrf-token"]').content;
const said = document.getElementById("said");

function typingIn(region) {
  const active = document.activeElement;
  return active && active.tagName === "INPUT" && active.type === "text" && region.contains(active) && active.value !== "";
}

for (const region of document.querySelectorAll("[data-live]")) {
  let pending = null;
  const apply = (html) => {
    // Compared as the browser writes it, so an event that changes nothing replaces nothing.
    const incoming = document.createElement("template");
    incoming.innerHTML = html;
    if (region.innerHTML !== incoming.innerHTML) region.replaceChildren(incoming.content);
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
  const events = new EventSource(region.dataset.live);
  events.addEventListener("html", (event) => {
    if (typingIn(region)) pending = event.data;
    else apply(event.data);
  });
  events.addEventListener("open", () => { document.body.dataset.live = "open"; });
  events.addEventListener("error", () => { document.body.dataset.live = "retrying"; });
}

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
