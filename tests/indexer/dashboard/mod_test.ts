/**
 * The dashboard's served assets: built from the current sources, each with its media type and a
 * strong ETag of its bytes, 304 on `If-None-Match`, routable on the HTTP layer, and self-contained
 * (no URL that would make a browser fetch anything from elsewhere; uPlot's license kept).
 */

import assert from "node:assert/strict";
import { createService } from "../../../http/mod.ts";
import { ASSETS, INPUTS_SHA256 } from "../../../indexer/dashboard/_assets.ts";
import {
  DASHBOARD_CSP,
  DASHBOARD_PATHS,
  dashboardAsset,
  dashboardResponse,
  dashboardRoutes,
  IMMUTABLE,
} from "../../../indexer/dashboard/mod.ts";
import { etagOf, inputsHash } from "../../../tools/dashboard.ts";
import { assertRoutesDocumented } from "../../_routes.ts";

const url = (path: string) => `http://127.0.0.1:8088${path}`;

Deno.test("the committed assets were built from the current sources (else: deno task dashboard)", async () => {
  assert.equal(
    INPUTS_SHA256,
    await inputsHash(),
    "indexer/dashboard/_assets.ts is older than its sources: run `deno task dashboard` and commit it",
  );
});

Deno.test("every asset has its media type and the SHA-256 of its bytes as a strong ETag", async () => {
  assert.deepEqual(DASHBOARD_PATHS, [
    "/",
    "/dashboard.js",
    "/dashboard.css",
    "/dashboard.svg",
    "/dashboard-licenses.txt",
  ]);
  const types = DASHBOARD_PATHS.map((path) => dashboardAsset(path)!.contentType);
  assert.deepEqual(types, [
    "text/html; charset=utf-8",
    "text/javascript; charset=utf-8",
    "text/css; charset=utf-8",
    "image/svg+xml",
    "text/plain; charset=utf-8",
  ]);
  for (const asset of ASSETS) {
    assert.match(asset.etag, /^"[A-Za-z0-9_-]{43}"$/);
    assert.equal(asset.etag, await etagOf(asset.text), asset.path);
    assert.deepEqual(dashboardAsset(asset.path)!.body, new TextEncoder().encode(asset.text));
  }
  assert.equal(new Set(ASSETS.map((a) => a.etag)).size, ASSETS.length);
  assert.equal(dashboardAsset("/stats"), undefined);
  assert.equal(dashboardAsset("/index.html"), undefined);
});

Deno.test("If-None-Match with the ETag is a 304; HEAD has no body; the page has a strict CSP", async () => {
  const page = dashboardAsset("/")!;
  const ok = dashboardResponse(page, new Request(url("/")));
  assert.equal(ok.status, 200);
  assert.equal(ok.headers.get("etag"), page.etag);
  assert.equal(ok.headers.get("cache-control"), "no-cache");
  assert.equal(ok.headers.get("x-content-type-options"), "nosniff");
  assert.equal(ok.headers.get("content-security-policy"), DASHBOARD_CSP);
  assert.equal(ok.headers.get("content-length"), String(page.body.byteLength));
  assert.equal(await ok.text(), new TextDecoder().decode(page.body));
  const head = dashboardResponse(page, new Request(url("/"), { method: "HEAD" }));
  assert.equal(head.status, 200);
  assert.equal(await head.text(), "");
  for (const tag of [page.etag, `W/${page.etag}`, `"x", ${page.etag}`, "*"]) {
    const again = dashboardResponse(
      page,
      new Request(url("/"), { headers: { "if-none-match": tag } }),
    );
    assert.equal(again.status, 304, tag);
    assert.equal(again.headers.get("etag"), page.etag);
    assert.equal(await again.text(), "");
  }
  const other = dashboardResponse(
    page,
    new Request(url("/"), { headers: { "if-none-match": '"x"' } }),
  );
  assert.equal(other.status, 200);
  const js = dashboardAsset("/dashboard.js")!;
  const script = dashboardResponse(js, new Request(url("/dashboard.js")));
  assert.equal(script.headers.get("content-security-policy"), null);
  assert.equal(script.headers.get("cache-control"), "no-cache");
  await script.body?.cancel();
  // Asked for with its current version (as the page does), an asset is cached for good.
  const versioned = dashboardResponse(js, new Request(url(`/dashboard.js?v=${js.version}`)));
  assert.equal(versioned.headers.get("cache-control"), IMMUTABLE);
  await versioned.body?.cancel();
  const old = dashboardResponse(js, new Request(url("/dashboard.js?v=AAAAAAAAAAAAAAAA")));
  assert.equal(old.headers.get("cache-control"), "no-cache");
  await old.body?.cancel();
  for (
    const directive of [
      "default-src 'none'",
      "script-src 'self'",
      "connect-src 'self'",
      "frame-ancestors 'none'",
    ]
  ) {
    assert.ok(DASHBOARD_CSP.includes(directive), directive);
  }
});

Deno.test("one declared route per asset, served and documented on the HTTP layer", async () => {
  const service = createService({
    info: { title: "dashboard", version: "0" },
    routes: dashboardRoutes(),
    renderError: () => new Response("error", { status: 500 }),
  });
  assertRoutesDocumented(service);
  for (const path of DASHBOARD_PATHS) {
    const response = await service.fetch(new Request(url(path)));
    assert.equal(response.status, 200, path);
    assert.equal(response.headers.get("content-type"), dashboardAsset(path)!.contentType);
    await response.body?.cancel();
    const head = await service.fetch(new Request(url(path), { method: "HEAD" }));
    assert.equal(head.status, 200, `HEAD ${path}`);
    await head.body?.cancel();
  }
  const cached = await service.fetch(
    new Request(url("/dashboard.js"), {
      headers: { "if-none-match": dashboardAsset("/dashboard.js")!.etag },
    }),
  );
  assert.equal(cached.status, 304);
  const paths = Object.keys(service.document().paths ?? {});
  assert.deepEqual(paths.filter((p) => p !== "/openapi.json").sort(), [...DASHBOARD_PATHS].sort());
});

Deno.test("the assets fetch nothing from elsewhere and keep uPlot's license", () => {
  const text = (path: string) => new TextDecoder().decode(dashboardAsset(path)!.body);
  const html = text("/");
  const links = [...html.matchAll(/\b(?:src|href)="([^"]*)"/g)].map((m) => m[1]);
  assert.ok(links.length >= 5, links.join());
  for (const link of links) {
    assert.doesNotMatch(link, /^([a-z]+:|\/\/|\/)/i, `absolute link ${link}`);
  }
  for (const path of ["/dashboard.js", "/dashboard.css", "/dashboard.svg"]) {
    const reference = `${path.slice(1)}?v=${dashboardAsset(path)!.version}`;
    assert.ok(links.includes(reference), `the page does not name ${reference}`);
  }
  const everything = ASSETS.map((a) => a.text).join("\n");
  const absolute = [...everything.matchAll(/(?:https?:)?\/\/[a-z0-9.-]+\.[a-z]{2,}[^\s"'`)]*/gi)]
    .map((m) => m[0]);
  const allowed = /^(http:\/\/www\.w3\.org\/2000\/svg|https:\/\/github\.com\/leeoniya\/uPlot\)?)$/;
  assert.deepEqual(absolute.filter((u) => !allowed.test(u)), []);
  assert.doesNotMatch(text("/dashboard.css"), /@import|url\(\s*["']?(https?:|\/\/)/);
  // The page's own calls are relative: "stats", not "/stats" (it works under any path prefix).
  const script = text("/dashboard.js");
  for (const path of ['"health"', '"stats"', "epochs?order=desc&limit="]) {
    assert.ok(script.includes(path), path);
  }
  for (const path of ["/health", "/stats", "/epochs", "/models", "/providers"]) {
    assert.ok(
      !script.includes(`"${path}`) && !script.includes(`\`${path}`),
      `root-relative ${path}`,
    );
  }
  assert.match(script, /^\/\*! .*uPlot .*MIT License/);
  const licenses = text("/dashboard-licenses.txt");
  assert.match(licenses, /Copyright \(c\) \d{4}.*Leon Sorokin/);
  assert.match(licenses, /Permission is hereby granted, free of charge/);
});
