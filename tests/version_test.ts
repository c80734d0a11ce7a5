import assert from "node:assert/strict";
import config from "../deno.json" with { type: "json" };
import { VERSION } from "../version.ts";

Deno.test("version.ts matches deno.json", () => {
  assert.equal(VERSION, config.version);
});
