import assert from "node:assert/strict";
import { duplicateKey } from "../../io/strict_json.ts";
import { fetchJson, FetchJsonError } from "../../io/fetch_json.ts";
import { AdError, parseAd } from "../../chain/ad.ts";
import { serve } from "../_http.ts";

Deno.test("duplicate keys are found in every object, after unescaping; others are not flagged", () => {
  const cases: [string, string | undefined][] = [
    ['{"a":1,"b":2}', undefined],
    ['{"a":1,"a":2}', "a"],
    ['{"a":1,"\\u0061":2}', "a"],
    ['{"x":{"a":1},"y":{"a":1}}', undefined], // the same key in different objects is fine
    ['[{"a":1},{"a":2}]', undefined],
    ['{"a":[{"k":1,"k":2}]}', "k"],
    ['{"a":"{\\"a\\":1,\\"a\\":2}"}', undefined], // inside a string value: not keys
    ['{"a":["a","a"],"b":"a"}', undefined],
    ['{"outer":{"inner":{"z":1}},"outer":0}', "outer"],
    ['"just a string"', undefined],
    ["[1,2,3]", undefined],
    ['{"":1,"":2}', ""],
    ['{"é":1,"\\u00e9":2}', "é"],
  ];
  for (const [text, expected] of cases) {
    JSON.parse(text); // every case is valid JSON
    assert.equal(duplicateKey(text), expected, text);
  }
});

Deno.test("a peer's answer with a repeated key is refused", async () => {
  await using server = serve(() =>
    new Response('{"ads":[{"ad":{"endpoint":"http://a","endpoint":"http://b"}}]}', {
      headers: { "content-type": "application/json" },
    })
  );
  await assert.rejects(fetchJson(server.url), (e: unknown) => {
    assert.ok(e instanceof FetchJsonError && e.reason === "invalid_json");
    assert.match(e.message, /"endpoint" appears twice/);
    return true;
  });
});

Deno.test("an ad with a repeated key is refused", () => {
  const ad =
    '{"version":1,"provider":"0x5b38da6a701c568545dcfcb03fcb875f56beddc4","tier":"verified",' +
    '"serving_key":"0xab8483f64d9c6d1ecf9b849ae677dd3315835cb2","endpoint":"http://127.0.0.1:9301",' +
    '"endpoint":"http://evil.example",' +
    '"models":[{"id":"devnet/echo","prices":{"input":"1","output":"2"},"context_length":8192}]}';
  assert.throws(() => parseAd(ad), (e: unknown) => {
    assert.ok(e instanceof AdError && e.reason === "invalid_json");
    assert.match(e.message, /"endpoint" appears twice/);
    return true;
  });
  assert.ok(parseAd(ad.replace('"endpoint":"http://evil.example",', "")));
});
