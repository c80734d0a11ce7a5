import assert from "node:assert/strict";
import { ephemeralRange, freeHostPort } from "../../packaging/host_port.ts";

Deno.test("ephemeralRange reads the kernel's range, and falls back on what it cannot read", () => {
  assert.deepEqual(ephemeralRange(() => "32768\t60999\n"), [32768, 60999]);
  assert.deepEqual(ephemeralRange(() => "49152 65535"), [49152, 65535]);
  for (const bad of ["", "junk", "80 90", "60000 50000"]) {
    assert.deepEqual(ephemeralRange(() => bad), [32768, 60999], bad);
  }
  assert.deepEqual(
    ephemeralRange(() => {
      throw new Deno.errors.NotFound("no /proc");
    }),
    [32768, 60999],
  );
});

Deno.test("freeHostPort: below the ephemeral range, free, never the same port twice", () => {
  const [low] = ephemeralRange();
  const ports = Array.from({ length: 50 }, () => freeHostPort());
  assert.equal(new Set(ports).size, ports.length);
  for (const port of ports) {
    assert.ok(port >= 10_000 && port < low, `${port} is not in 10000–${low - 1}`);
    Deno.listen({ hostname: "127.0.0.1", port }).close();
  }
});

Deno.test("freeHostPort skips a port in use and one it handed out before", () => {
  const [low] = ephemeralRange();
  const span = low - 1 - 10_000 + 1;
  // The candidate for a port: the random value that picks it.
  const pick = (port: number) => (port - 10_000 + 0.5) / span;
  // A port held by a listener of its own (not one freeHostPort handed out).
  let listener: Deno.Listener | undefined;
  for (let port = 20_000; !listener; port++) {
    try {
      listener = Deno.listen({ hostname: "127.0.0.1", port });
    } catch { /* in use: the next */ }
  }
  const busy = (listener.addr as Deno.NetAddr).port;
  try {
    const given = freeHostPort();
    // Offered the busy port, then the one handed out: both are skipped (then chance decides).
    const candidates = [pick(busy), pick(given)];
    const port = freeHostPort(() => candidates.shift() ?? Math.random());
    assert.deepEqual(candidates, []);
    assert.ok(port !== busy && port !== given, `${port} was busy or handed out before`);
    Deno.listen({ hostname: "127.0.0.1", port }).close();
  } finally {
    listener.close();
  }
});
