/**
 * Secret files (`io/secret_file.ts`): made once, atomically and readable by the owner only,
 * reused afterwards, a stale temporary file removed, a warning when others can read the file.
 */

import * as assert from "node:assert/strict";
import { readOrCreateSecret, readSecretFile } from "../../io/secret_file.ts";

Deno.test("secret file: made once with mode 0600, then read back trimmed", async () => {
  const dir = await Deno.makeTempDir({ prefix: "net-secret-" });
  try {
    const path = `${dir}/token`;
    await Deno.writeTextFile(`${dir}/.token.0123456789ab.tmp`, "half");
    let made = 0;
    const make = (random: (n: number) => Uint8Array) => {
      made++;
      return `t-${random(4).join(".")}`;
    };
    const first = await readOrCreateSecret(path, "token file", make, {
      randomBytes: (n) => new Uint8Array(n).fill(7),
    });
    assert.deepEqual(first, { text: "t-7.7.7.7", generated: true });
    assert.deepEqual([...Deno.readDirSync(dir)].map((e) => e.name), ["token"]);
    if (Deno.build.os !== "windows") {
      assert.equal((await Deno.stat(path)).mode! & 0o777, 0o600);
    }
    const warnings: string[] = [];
    const again = await readOrCreateSecret(path, "token file", make, {
      log: (line) => warnings.push(line),
    });
    assert.deepEqual(again, { text: "t-7.7.7.7", generated: false });
    assert.equal(made, 1);
    assert.deepEqual(warnings, []);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("secret file: a file others can read is read with a warning naming it", async () => {
  const dir = await Deno.makeTempDir({ prefix: "net-secret-" });
  try {
    const path = `${dir}/given`;
    await Deno.writeTextFile(path, "  value\n");
    await Deno.chmod(path, 0o644);
    const warnings: string[] = [];
    assert.equal(await readSecretFile(path, "key file", (line) => warnings.push(line)), "value");
    if (Deno.build.os !== "windows") {
      assert.deepEqual(warnings, [
        `daemon: the key file ${path} can be read by other users (mode 644); chmod 600 it`,
      ]);
    }
    await assert.rejects(readSecretFile(`${dir}/missing`, "key file"), Deno.errors.NotFound);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
