/**
 * The consumer key (`daemon/account/consumer_key.ts`): generated into the data directory on the
 * first start (a valid secp256k1 key, its address viem's), reused afterwards; a given file that
 * does not hold a key, or does not exist, is refused naming the file and never the key.
 */

import * as assert from "node:assert/strict";
import { privateKeyToAddress } from "viem/accounts";
import {
  CONSUMER_KEY_FILE_NAME,
  resolveConsumerKey,
} from "../../../daemon/account/consumer_key.ts";
import { SettingError } from "../../../settings/mod.ts";

Deno.test("consumer key: generated once into the data directory, then reused", async () => {
  const dir = await Deno.makeTempDir({ prefix: "net-consumer-key-" });
  try {
    const first = await resolveConsumerKey({ file: null, dataDir: dir });
    assert.ok(first.generated);
    assert.equal(first.source, `${dir}/${CONSUMER_KEY_FILE_NAME}`);
    assert.match(first.privateKey, /^0x[0-9a-f]{64}$/);
    assert.equal(first.address, privateKeyToAddress(first.privateKey).toLowerCase());
    if (Deno.build.os !== "windows") {
      assert.equal((await Deno.stat(first.source)).mode! & 0o777, 0o600);
    }
    assert.deepEqual(await resolveConsumerKey({ file: null, dataDir: dir }), {
      ...first,
      generated: false,
    });
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("consumer key: a given file is read; a bad or missing one is refused", async () => {
  const dir = await Deno.makeTempDir({ prefix: "net-consumer-key-" });
  try {
    const file = `${dir}/given`;
    const key = `0x${"ab".repeat(32)}` as const;
    await Deno.writeTextFile(file, `${key.toUpperCase().replace("0X", "0x")}\n`, { mode: 0o600 });
    const given = await resolveConsumerKey({ file, dataDir: dir });
    assert.deepEqual(given, {
      privateKey: key,
      address: privateKeyToAddress(key).toLowerCase(),
      source: file,
      generated: false,
    });
    const secret = `0x${"ff".repeat(32)}`; // above the curve's order: not a key
    await Deno.writeTextFile(file, secret);
    await assert.rejects(resolveConsumerKey({ file, dataDir: dir }), (e: unknown) => {
      assert.ok(e instanceof SettingError);
      assert.match(e.message, new RegExp(`consumer key in ${file}: expected 0x and 64 hex`));
      assert.ok(!e.message.includes(secret.slice(2, 20)));
      return true;
    });
    await assert.rejects(
      resolveConsumerKey({ file: `${dir}/missing`, dataDir: dir }),
      (e: unknown) => e instanceof SettingError && /missing does not exist/.test(e.message),
    );
    assert.deepEqual([...Deno.readDirSync(dir)].map((e) => e.name), ["given"]);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
