import assert from "node:assert/strict";
import { createChainClient } from "../../chain/client.ts";
import { ChainConfigError, type ChainConfigFailure } from "../../chain/errors.ts";
import { startAnvil } from "../../devnet/anvil.ts";

async function rejects(promise: Promise<unknown>, reason: ChainConfigFailure, text?: string) {
  await assert.rejects(promise, (error: unknown) => {
    assert.ok(error instanceof ChainConfigError, `expected ChainConfigError, got ${error}`);
    assert.equal(error.reason, reason, error.message);
    if (text) assert.ok(error.message.includes(text), `"${error.message}" lacks "${text}"`);
    return true;
  });
}

Deno.test("malformed options are refused before any request", async () => {
  let calls = 0;
  const fetch = (() => {
    calls++;
    throw new Error("no request expected");
  }) as typeof globalThis.fetch;
  await rejects(createChainClient("not a url", { fetch }), "invalid_option", "not a URL");
  await rejects(createChainClient("ws://127.0.0.1:8545", { fetch }), "invalid_option", "ws:");
  await rejects(
    createChainClient("http://127.0.0.1:8545", { chainId: 0, fetch }),
    "invalid_option",
    "chainId",
  );
  await rejects(
    createChainClient("http://127.0.0.1:8545", { timeoutMs: 1.5, fetch }),
    "invalid_option",
    "timeoutMs",
  );
  await rejects(
    createChainClient("http://127.0.0.1:8545", { retryCount: -1, fetch }),
    "invalid_option",
    "retryCount",
  );
  await rejects(
    createChainClient("http://127.0.0.1:8545", {
      multicallAddress: "0x12" as `0x${string}`,
      fetch,
    }),
    "invalid_option",
    "multicallAddress",
  );
  assert.equal(calls, 0);
});

Deno.test("a closed port is unreachable: a typed error, not a hang", async () => {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const { port } = listener.addr as Deno.NetAddr;
  listener.close();
  await rejects(
    createChainClient(`http://127.0.0.1:${port}`, {
      timeoutMs: 2_000,
      retryCount: 1,
      retryDelayMs: 1,
    }),
    "unreachable",
    "did not answer eth_chainId",
  );
});

Deno.test("a server that never answers times out with a typed error", async () => {
  // Accepts connections and reads nothing back: a black hole.
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const { port } = listener.addr as Deno.NetAddr;
  const held: Deno.Conn[] = [];
  const accepting = (async () => {
    for await (const conn of listener) held.push(conn);
  })();
  try {
    const error = await createChainClient(`http://127.0.0.1:${port}`, {
      timeoutMs: 150,
      retryCount: 1,
      retryDelayMs: 1,
    }).catch((e) => e);
    assert.ok(error instanceof ChainConfigError, String(error));
    assert.equal(error.reason, "unreachable");
    assert.ok(error.details?.includes("2 attempt(s), 150 ms each"), error.details);
    assert.ok(held.length >= 1, "the client did connect");
  } finally {
    listener.close();
    await accepting.catch(() => {});
    for (const conn of held) conn.close();
  }
});

Deno.test("the chain id is checked", async (t) => {
  await using anvil = await startAnvil({ chainId: 31337 });
  await t.step("a wrong chain is refused", async () => {
    await rejects(
      createChainClient(anvil.rpcUrl, { chainId: 1 }),
      "wrong_chain",
      "chain id is 31337, expected 1",
    );
  });
  await t.step("the right chain gives a client on that chain", async () => {
    const multicall = "0x00000000000000000000000000000000000000aa";
    const client = await createChainClient(anvil.rpcUrl, {
      chainId: 31337,
      multicallAddress: multicall,
    });
    assert.equal(client.chain.id, 31337);
    assert.equal(client.chain.contracts?.multicall3?.address.toLowerCase(), multicall);
    assert.equal(await client.getChainId(), 31337);
  });
  await t.step("without an expected id any chain is accepted", async () => {
    const client = await createChainClient(anvil.rpcUrl);
    assert.equal(client.chain.id, 31337);
    assert.equal(client.chain.contracts?.multicall3, undefined);
  });
});
