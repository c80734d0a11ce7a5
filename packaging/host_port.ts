/**
 * Free loopback ports for containers on the host's network (`packaging/smoke.ts`,
 * `packaging/compose_smoke.ts`, `tests/packaging/image_test.ts`).
 *
 * A port found free by binding port 0 comes from the kernel's ephemeral range, and is handed
 * out again to the next port-0 bind or outgoing connection of any process: between the choice
 * and the container binding it (tens of seconds when a devnet container starts first, itself
 * binding a dozen port-0 servers), something else may take it, and the check then talks to
 * another server. So these ports come from below that range, where only a program that asks
 * for that exact number can collide, and each is handed out once per process.
 *
 * @module
 */

/** The lowest port handed out. */
const LOWEST = 10_000;

/** Ports already handed out by this process. */
const handedOut = new Set<number>();

/**
 * The kernel's ephemeral range (`/proc/sys/net/ipv4/ip_local_port_range` on Linux), or the
 * Linux default where it cannot be read.
 */
export function ephemeralRange(
  read: () => string = () => Deno.readTextFileSync("/proc/sys/net/ipv4/ip_local_port_range"),
): [number, number] {
  try {
    const [low, high] = read().trim().split(/\s+/).map(Number);
    if (Number.isInteger(low) && Number.isInteger(high) && low > 1024 && low <= high) {
      return [low, high];
    }
  } catch {
    // not Linux, or not readable: the default below
  }
  return [32_768, 60_999];
}

/**
 * A loopback port that is free now, below the ephemeral range, and not handed out before by
 * this process. `random` picks the candidates (tests pass their own).
 *
 * @throws {Error} when the range below the ephemeral one is too small, or 200 tries found
 * no free port in it.
 */
export function freeHostPort(random: () => number = Math.random): number {
  const [low] = ephemeralRange();
  const highest = low - 1;
  if (highest - LOWEST < 1_000) {
    throw new Error(
      `Cannot choose a host port: the ephemeral range starts at ${low}, leaving fewer than ` +
        `1000 ports above ${LOWEST}`,
    );
  }
  for (let attempt = 0; attempt < 200; attempt++) {
    const port = LOWEST + Math.floor(random() * (highest - LOWEST + 1));
    if (handedOut.has(port)) continue;
    try {
      Deno.listen({ hostname: "127.0.0.1", port }).close();
    } catch (error) {
      if (error instanceof Deno.errors.AddrInUse) continue;
      throw error;
    }
    handedOut.add(port);
    return port;
  }
  throw new Error(`Cannot choose a host port: 200 ports in ${LOWEST}–${highest} were in use`);
}
