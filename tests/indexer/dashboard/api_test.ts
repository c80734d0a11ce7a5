import assert from "node:assert/strict";
import { failuresOf, type Fetcher, getJson } from "../../../indexer/dashboard/src/api.ts";
import { groupFailures } from "../../../indexer/dashboard/src/render.ts";

function answering(response: () => Response | Promise<Response>): Fetcher & { asked: string[] } {
  const asked: string[] = [];
  const fetcher = (input: string) => {
    asked.push(input);
    return Promise.resolve(response());
  };
  return Object.assign(fetcher, { asked });
}

const json = (body: unknown, status = 200, headers: Record<string, string> = {}) =>
  new Response(JSON.stringify(body), {
    status,
    headers: { "content-type": "application/json", ...headers },
  });

Deno.test("a 200 is data, asked for with a relative URL", async () => {
  const fetcher = answering(() => json({ models: [] }));
  const answer = await getJson(fetcher, "models?limit=25");
  assert.deepEqual(answer, {
    kind: "ok",
    path: "models?limit=25",
    status: 200,
    body: { models: [] },
  });
  assert.deepEqual(fetcher.asked, ["models?limit=25"]);
});

Deno.test("a 503 is a failure in the indexer's words, with its Retry-After", async () => {
  const body = { error: { code: "chain_unreachable", message: "Cannot reach the chain" } };
  const answer = await getJson(answering(() => json(body, 503, { "retry-after": "7" })), "stats");
  assert.deepEqual(answer, {
    kind: "failed",
    path: "stats",
    status: 503,
    code: "chain_unreachable",
    message: "Cannot reach the chain",
    retryAfterSecs: 7,
  });
});

Deno.test("/health's 503 is data when asked so", async () => {
  const health = { status: "unavailable", serving: false, refresh_secs: 30, error: null };
  const answer = await getJson(answering(() => json(health, 503)), "health", {
    dataStatuses: [200, 503],
  });
  assert.equal(answer.kind, "ok");
});

Deno.test("a 404 marks an endpoint this indexer does not serve", async () => {
  const body = { error: { code: "not_found", message: "No such path" } };
  assert.deepEqual(await getJson(answering(() => json(body, 404)), "epochs?limit=100"), {
    kind: "absent",
    path: "epochs?limit=100",
    status: 404,
    message: "No such path",
  });
  // Without an error body, no message.
  assert.deepEqual(
    await getJson(answering(() => new Response("gone", { status: 404 })), "epochs"),
    { kind: "absent", path: "epochs", status: 404 },
  );
});

Deno.test("no answer, a proxy's HTML 502 and a timeout are failures with a code and a message", async () => {
  const refused = await getJson(() => Promise.reject(new TypeError("Failed to fetch")), "stats");
  assert.equal(refused.kind, "failed");
  assert.deepEqual(
    refused.kind === "failed" && [refused.code, refused.status, refused.message],
    ["unreachable", null, "The indexer did not answer /stats: Failed to fetch"],
  );
  const proxy = await getJson(
    answering(() =>
      new Response("<html>Bad Gateway</html>", { status: 502, statusText: "Bad Gateway" })
    ),
    "stats",
  );
  assert.deepEqual(
    proxy.kind === "failed" && [proxy.code, proxy.message],
    ["http_502", "The indexer answered /stats with 502 Bad Gateway and a body that is not JSON"],
  );
  const slow: Fetcher = (_, init) =>
    new Promise((_, reject) =>
      init?.signal?.addEventListener("abort", () => reject(init.signal!.reason))
    );
  const timedOut = await getJson(slow, "stats", { timeoutMs: 10 });
  assert.deepEqual(timedOut.kind === "failed" && timedOut.code, "timeout");
  const garbled = await getJson(answering(() => new Response("{", { status: 200 })), "stats");
  assert.deepEqual(garbled.kind === "failed" && garbled.code, "http_200");
});

Deno.test("failures are listed once per cause, naming every path", async () => {
  const down = { error: { code: "chain_unreachable", message: "down" } };
  const answers = await Promise.all(
    ["stats", "models?limit=25", "providers?limit=25&cursor=x"].map((path) =>
      getJson(answering(() => json(down, 503)), path)
    ),
  );
  answers.push(await getJson(answering(() => json({ ok: 1 })), "health"));
  const failures = failuresOf(answers);
  assert.equal(failures.length, 3);
  assert.deepEqual(groupFailures(failures), [[
    ["/stats", "/models", "/providers"],
    "chain_unreachable",
    "down",
  ]]);
});
