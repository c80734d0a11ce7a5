/**
 * A recording TCP proxy for tests: everything that crosses it, in both directions, is kept,
 * so a test can search the real bytes on the wire (e.g. for a prompt that must never appear),
 * and every connection is tracked, so a test can count the sockets a client left open.
 *
 * @module
 */

/** One client connection through the proxy. */
export interface ProxiedConnection {
  /** Whether both sides are still open. */
  readonly open: boolean;
  /** The bytes this client sent towards the target. */
  sent(): Uint8Array;
}

/** A running proxy. */
export interface TcpProxy extends AsyncDisposable {
  /** `http://127.0.0.1:<port>`. */
  readonly url: string;
  /** All bytes sent by clients towards the target, concatenated. */
  sent(): Uint8Array;
  /** All bytes the target sent back, concatenated. */
  received(): Uint8Array;
  /** Every connection accepted so far, in order, open or closed. */
  connections(): readonly ProxiedConnection[];
  /** Stops the proxy. */
  close(): Promise<void>;
}

/** Proxies 127.0.0.1:<free port> to `target` (`host:port`). */
export function tcpProxy(target: { hostname: string; port: number }): TcpProxy {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const up: Uint8Array[] = [];
  const down: Uint8Array[] = [];
  const conns = new Set<Deno.Conn>();
  const pipes: Promise<void>[] = [];
  const tracked: { open: boolean; up: Uint8Array[] }[] = [];
  const pump = async (
    from: Deno.Conn,
    to: Deno.Conn,
    log: Uint8Array[],
    own?: Uint8Array[],
  ) => {
    const buffer = new Uint8Array(64 * 1024);
    try {
      while (true) {
        const n = await from.read(buffer);
        if (n === null) break;
        const chunk = buffer.slice(0, n);
        log.push(chunk);
        own?.push(chunk);
        let written = 0;
        while (written < n) written += await to.write(chunk.subarray(written));
      }
    } catch {
      // a side closed
    } finally {
      await Promise.resolve().then(() => to.closeWrite()).catch(() => {/* already closed */});
    }
  };
  const accepting = (async () => {
    for await (const client of listener) {
      let server: Deno.Conn;
      try {
        server = await Deno.connect(target);
      } catch {
        client.close();
        continue;
      }
      conns.add(client);
      conns.add(server);
      const state = { open: true, up: [] as Uint8Array[] };
      tracked.push(state);
      const both = Promise.all([
        pump(client, server, up, state.up),
        pump(server, client, down),
      ]).then(() => {
        state.open = false;
        for (const c of [client, server]) {
          try {
            c.close();
          } catch { /* closed */ }
          conns.delete(c);
        }
      });
      pipes.push(both);
    }
  })();
  const join = (parts: Uint8Array[]) => {
    const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
    let at = 0;
    for (const p of parts) {
      out.set(p, at);
      at += p.length;
    }
    return out;
  };
  let closed: Promise<void> | undefined;
  const close = () =>
    closed ??= (async () => {
      listener.close();
      for (const c of conns) {
        try {
          c.close();
        } catch { /* closed */ }
      }
      await accepting.catch(() => {});
      await Promise.allSettled(pipes);
    })();
  return {
    url: `http://127.0.0.1:${(listener.addr as Deno.NetAddr).port}`,
    sent: () => join(up),
    received: () => join(down),
    connections: () =>
      tracked.map((state) => ({
        get open() {
          return state.open;
        },
        sent: () => join(state.up),
      })),
    close,
    [Symbol.asyncDispose]: close,
  };
}

/** Whether `needle` occurs in `haystack` (bytes). */
export function containsBytes(haystack: Uint8Array, needle: Uint8Array): boolean {
  outer: for (let i = 0; i + needle.length <= haystack.length; i++) {
    for (let j = 0; j < needle.length; j++) if (haystack[i + j] !== needle[j]) continue outer;
    return true;
  }
  return false;
}
