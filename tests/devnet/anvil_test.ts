import assert from "node:assert/strict";
import { anvilArgs, startAnvil } from "../../devnet/anvil.ts";
import { anvilBinary } from "../../tools/setup.ts";

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

Deno.test("a long chain writes no past states to disk (anvil's tmp dir once filled the disk)", async () => {
  // anvil keeps past states under $HOME/.foundry/anvil/tmp: the child gets a home of its own (the
  // test process's environment is shared with the files running beside it).
  const home = await Deno.makeTempDir({ prefix: "anvil-home-" });
  const child = new Deno.Command(anvilBinary(), {
    args: anvilArgs({}, 0, "127.0.0.1"),
    env: { HOME: home },
    stdout: "piped",
    stderr: "null",
  }).spawn();
  try {
    const url = await listeningUrl(child.stdout);
    const rpc = async (method: string, params: unknown[]) => {
      const response = await fetch(url, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ jsonrpc: "2.0", id: 1, method, params }),
      });
      assert.equal(response.status, 200);
      return (await response.json()) as { result?: unknown; error?: unknown };
    };
    // Past anvil's in-memory window (a few hundred states): by default the rest go to disk.
    assert.equal((await rpc("anvil_mine", ["0x600"])).error, undefined);
    const recent = await rpc("eth_getBalance", [ANVIL_FIRST, "0x5f0"]);
    assert.equal(
      typeof recent.result,
      "string",
      `a recent state is still readable: ${JSON.stringify(recent)}`,
    );
    const written = await statesOnDisk(`${home}/.foundry/anvil/tmp`);
    assert.deepEqual(written, [], "no anvil-state-* directory holds past states");
  } finally {
    child.kill("SIGKILL");
    await child.status;
    await Deno.remove(home, { recursive: true });
  }
});

/** anvil's first dev account. */
const ANVIL_FIRST = "0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266";

/** The URL anvil prints once it listens; the rest of its output is drained. */
async function listeningUrl(stdout: ReadableStream<Uint8Array>): Promise<string> {
  const reader = stdout.pipeThrough(new TextDecoderStream()).getReader();
  let seen = "";
  for (let read = await reader.read(); !read.done; read = await reader.read()) {
    seen += read.value;
    const match = seen.match(/Listening on [^\s:]+:(\d+)/);
    if (!match) continue;
    (async () => {
      while (!(await reader.read()).done);
    })();
    return `http://127.0.0.1:${match[1]}`;
  }
  throw new Error(`anvil exited before listening; it printed:\n${seen}`);
}

/** Files under anvil's state directories in `tmp`, none when it does not exist. */
async function statesOnDisk(tmp: string): Promise<string[]> {
  const files: string[] = [];
  try {
    for await (const dir of Deno.readDir(tmp)) {
      for await (const file of Deno.readDir(`${tmp}/${dir.name}`)) files.push(file.name);
    }
  } catch (error) {
    if (!(error instanceof Deno.errors.NotFound)) throw error;
  }
  return files;
}
