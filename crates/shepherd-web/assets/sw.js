// shepherd web: the service worker that makes the board an installable app (a phone's home
// screen). It keeps the shell (stylesheet, script, icons) for when the board cannot be reached,
// and then answers a page with a short note saying so. Everything else goes to the network as
// it would without it: the board is live or says it is not, never an old copy.
"use strict";

const SHELL = "shepherd-shell-v1";
const ASSETS = ["/assets/style.css", "/assets/app.js", "/assets/icon-192.png", "/assets/icon-512.png"];
const OFFLINE = '<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1"><title>shepherd</title><link rel="stylesheet" href="/assets/style.css"></head><body><main><p class="error">The board cannot be reached: is <code>shepherd web</code> running, and is the way to it (an SSH forward) open? Reload once it is.</p></main></body></html>';

self.addEventListener("install", (event) => {
  event.waitUntil(caches.open(SHELL).then((cache) => cache.addAll(ASSETS)).then(() => self.skipWaiting()));
});

self.addEventListener("activate", (event) => {
  event.waitUntil(
    caches.keys()
      .then((keys) => Promise.all(keys.filter((key) => key !== SHELL).map((key) => caches.delete(key))))
      .then(() => self.clients.claim()),
  );
});

self.addEventListener("fetch", (event) => {
  const request = event.request;
  const url = new URL(request.url);
  if (request.method !== "GET" || url.origin !== self.location.origin) return;
  if (ASSETS.includes(url.pathname)) {
    // The network first, so a newer shepherd's script is used at once; the copy when offline.
    event.respondWith(fetch(request).catch(() => caches.match(request)));
  } else if (request.mode === "navigate") {
    event.respondWith(
      fetch(request).catch(() => new Response(OFFLINE, { headers: { "Content-Type": "text/html; charset=utf-8" } })),
    );
  }
});
