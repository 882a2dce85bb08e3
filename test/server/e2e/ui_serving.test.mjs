// The web playground as izwi-server serves it (issue 15): GET / and the
// /ui/ files it links, with their content types, caching headers (ETag,
// If-None-Match -> 304, immutable only under the linked ?v=<digest>) and a
// Content-Security-Policy; open without the API key; --no-ui answers 404.
// /v1/models says which tasks each model serves (what the page enables).
import {after, before, test} from "node:test";
import assert from "node:assert/strict";
import crypto from "node:crypto";

import {MODEL_ID, authHeader, checkErrorEnvelope, request, startServer} from "./harness.mjs";

const KEY = "sk-ui-serving-test";
let server;
before(async () => {
  server = await startServer({apiKey: KEY});
});
after(async () => {
  const r = await server?.stop();
  if (r) assert.equal(r.code, 0, `izwi-server exited with ${JSON.stringify(r)}`);
});

const EXPECTED_TYPES = {css: /^text\/css; charset=utf-8$/, js: /^text\/javascript; charset=utf-8$/, svg: /^image\/svg\+xml$/};

function checkSecurityHeaders(r, what) {
  const csp = String(r.headers["content-security-policy"] ?? "");
  assert.ok(csp, `${what}: no Content-Security-Policy`);
  const directives = Object.fromEntries(csp.split(";").map((d) => d.trim().split(/\s+/)).map(([k, ...v]) => [k, v]));
  assert.deepEqual(directives["default-src"], ["'none'"], `${what}: ${csp}`);
  assert.deepEqual(directives["script-src"], ["'self'"], `${what}: scripts from this server only, no inline: ${csp}`);
  assert.deepEqual(directives["connect-src"], ["'self'"], `${what}: requests to this server only: ${csp}`);
  assert.deepEqual(directives["frame-ancestors"], ["'none'"], `${what}: ${csp}`);
  assert.ok(!csp.includes("unsafe-inline") && !csp.includes("unsafe-eval"), `${what}: ${csp}`);
  assert.equal(r.headers["x-content-type-options"], "nosniff", what);
}

/// The /ui/ links of the page: [{url, name, version}].
function linkedFiles(html) {
  const links = [...html.matchAll(/(?:src|href)="(\/ui\/([\w.-]+)\?v=([0-9a-f]+))"/g)];
  return links.map(([, url, name, version]) => ({url, name, version}));
}

test("GET / is the page, open without the API key, revalidated by its ETag", async () => {
  const r = await request(server, {path: "/"});
  assert.equal(r.status, 200, r.text.slice(0, 300));
  assert.equal(r.headers["content-type"], "text/html; charset=utf-8");
  assert.match(r.text, /^<!doctype html>/i);
  assert.equal(r.headers["cache-control"], "no-cache", "the page must be revalidated: a new build shows at once");
  const etag = r.headers.etag;
  assert.match(String(etag), /^"[0-9a-f]{16}"$/);
  assert.equal(etag, `"${crypto.createHash("sha256").update(r.body).digest("hex").slice(0, 16)}"`,
               "the ETag is the digest of the body served");
  checkSecurityHeaders(r, "/");
  // The API itself still wants the key.
  assert.equal((await request(server, {path: "/v1/models"})).status, 401);

  const again = await request(server, {path: "/", headers: {"if-none-match": etag}});
  assert.equal(again.status, 304);
  assert.equal(again.body.length, 0);
  assert.equal(again.headers.etag, etag);
  assert.equal(again.headers["content-length"], undefined, "a 304 has no Content-Length of its own");
  const listed = await request(server, {path: "/", headers: {"if-none-match": `"0000000000000000", W/${etag}`}});
  assert.equal(listed.status, 304, "a list of tags, and a weak one, match too");
  const other = await request(server, {path: "/", headers: {"if-none-match": "\"0000000000000000\""}});
  assert.equal(other.status, 200);

  const head = await request(server, {method: "HEAD", path: "/"});
  assert.equal(head.status, 200);
  assert.equal(head.body.length, 0);
  assert.equal(Number(head.headers["content-length"]), r.body.length);
});

test("every file the page links is served with its type, digest and a cache policy", async () => {
  const page = await request(server, {path: "/"});
  const files = linkedFiles(page.text);
  const names = files.map((f) => f.name);
  for (const wanted of ["style.css", "app.js", "chat.js", "speech.js", "transcribe.js", "server.js"])
    assert.ok(names.includes(wanted), `the page does not link /ui/${wanted}?v=... (links: ${names.join(", ")})`);
  for (const {url, name, version} of files) {
    const r = await request(server, {path: url});
    assert.equal(r.status, 200, url);
    const ext = name.split(".").pop();
    assert.match(String(r.headers["content-type"]), EXPECTED_TYPES[ext] ?? /./, `${url}: ${r.headers["content-type"]}`);
    const digest = crypto.createHash("sha256").update(r.body).digest("hex").slice(0, 16);
    assert.equal(version, digest, `${url}: the link's version is the digest of what is served`);
    assert.equal(r.headers.etag, `"${digest}"`, url);
    assert.equal(r.headers["cache-control"], "public, max-age=31536000, immutable", url);
    checkSecurityHeaders(r, url);
    // Without its version (or with an old one) the same file may change: revalidate.
    const bare = await request(server, {path: `/ui/${name}`});
    assert.equal(bare.status, 200);
    assert.equal(bare.headers["cache-control"], "no-cache", `/ui/${name}`);
    assert.ok(bare.body.equals(r.body));
    const stale = await request(server, {path: `/ui/${name}?v=0000000000000000`});
    assert.equal(stale.headers["cache-control"], "no-cache", `/ui/${name} with an old version`);
    const cached = await request(server, {path: url, headers: {"if-none-match": r.headers.etag}});
    assert.equal(cached.status, 304, url);
  }
});

test("an unknown /ui/ file is the API's 404; the UI routes take GET and HEAD only", async () => {
  checkErrorEnvelope(assert, await request(server, {path: "/ui/nope.js", headers: authHeader(KEY)}), 404, "unknown file");
  const post = await request(server, {method: "POST", path: "/", body: "x", headers: authHeader(KEY)});
  assert.equal(post.status, 405);
  assert.match(String(post.headers.allow), /GET/);
});

test("/v1/models says which tasks each model serves", async () => {
  const r = await request(server, {path: "/v1/models", headers: authHeader(KEY)});
  assert.equal(r.status, 200);
  const model = r.json.data.find((m) => m.id === MODEL_ID);
  assert.ok(model, r.text);
  assert.deepEqual(model.tasks, ["chat"], "a Qwen3 serves chat (and completions under it)");
  const one = await request(server, {path: `/v1/models/${MODEL_ID}`, headers: authHeader(KEY)});
  assert.deepEqual(one.json.tasks, ["chat"]);
});

test("--no-ui: no page, no files (404)", async () => {
  const plain = await startServer({args: ["--no-ui"]});
  try {
    for (const p of ["/", "/ui/app.js", "/ui/style.css"]) {
      const r = await request(plain, {path: p});
      checkErrorEnvelope(assert, r, 404, `${p} with --no-ui`);
      assert.equal(r.headers["content-security-policy"], undefined);
    }
    assert.equal((await request(plain, {path: "/v1/models"})).status, 200, "the API is served as before");
  } finally {
    await plain.stop();
  }
});
