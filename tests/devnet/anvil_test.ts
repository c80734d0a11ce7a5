import assert from "node:assert/strict";
import { startAnvil } from "../../devnet/anvil.ts";

function portIsFree(port: number): boolean {
  try {
    Deno.listen({ hostname: "127.0.0.1", port }).close();
    return true;
  } catch {
    return false;
  }
}

Deno.test("anvil starts on a random loopback port and frees it when disposed", async () => {
  let port = 0;
  {
    await using anvil = await startAnvil({ chainId: 777 });
    port = anvil.port;
    assert.match(anvil.rpcUrl, /^http:\/\/127\.0\.0\.1:\d+$/);
    assert.equal(portIsFree(port), false, "anvil holds the port");
    const response = await fetch(anvil.rpcUrl, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "eth_chainId", params: [] }),
    });
    assert.equal(response.status, 200);
    assert.equal((await response.json()).result, "0x309");
  }
  assert.equal(portIsFree(port), true, "the port is released after dispose");
});

Deno.test("a failing test body still stops anvil", async () => {
  let port = 0;
  await assert.rejects(async () => {
    await using anvil = await startAnvil();
    port = anvil.port;
    throw new Error("test failed");
  }, /test failed/);
  assert.equal(portIsFree(port), true);
});

Deno.test("two instances run side by side; stop is idempotent", async () => {
  await using a = await startAnvil();
  await using b = await startAnvil();
  assert.notEqual(a.port, b.port);
  await a.stop();
  await a.stop();
});

Deno.test("startup problems are clear errors", async () => {
  await assert.rejects(startAnvil({ binary: "/nonexistent/anvil" }));
  // anvil refuses an unknown option and exits; the error carries its output.
  await assert.rejects(
    startAnvil({ gasLimit: -1n }),
    /Cannot start anvil: it exited with code/,
  );
});

Deno.test("a fixed port restarts a chain at the same URL", async () => {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const port = (listener.addr as Deno.NetAddr).port;
  listener.close();
  {
    await using anvil = await startAnvil({ port });
    assert.equal(anvil.port, port);
    assert.equal(anvil.rpcUrl, `http://127.0.0.1:${port}`);
  }
  await using again = await startAnvil({ port });
  assert.equal(again.rpcUrl, `http://127.0.0.1:${port}`);
});
