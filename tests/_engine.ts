/**
 * The Docker engine, for the tests that need one or must prove they ran beside one: where it
 * listens, whether it answers `GET /_ping`, and what a test does when it does not — skip
 * with a message on a developer's machine, fail in CI (`CI=true`), where `.ci/run` starts one.
 *
 * @module
 */

/** Where the engine listens: `DOCKER_HOST` (`unix://…` or `tcp://…`), else the usual socket. */
export interface EngineAddress {
  /** The URL a request goes to (`http://docker/…` through a Unix socket). */
  base: string;
  /** The Unix socket, when it is one. */
  socket?: string;
  /** How to name it in a message. */
  label: string;
}

/** The engine's address, as the Docker CLI and testcontainers read it. */
export function engineAddress(
  env: { get(name: string): string | undefined } = Deno.env,
): EngineAddress {
  const host = env.get("DOCKER_HOST") ?? "unix:///var/run/docker.sock";
  if (host.startsWith("unix://")) {
    const socket = host.slice("unix://".length);
    return { base: "http://docker", socket, label: host };
  }
  if (host.startsWith("tcp://")) return { base: `http://${host.slice(6)}`, label: host };
  throw new Error(
    `Cannot read DOCKER_HOST: expected unix://<path> or tcp://<host:port>, found ${host}`,
  );
}

/** What `GET /_ping` gave: the engine's answer, or why there was none. */
export type EnginePing =
  | { answered: true; status: number; body: string; apiVersion: string | null; label: string }
  | { answered: false; why: string; label: string };

/** `GET path` of the engine's API: its status and body; throws when nothing answers. */
export function engineGet(
  path: string,
  timeoutMs = 5_000,
): Promise<{ status: number; body: string; headers: Headers; label: string }> {
  return engineRequest("GET", path, timeoutMs);
}

/** `method path` of the engine's API: its status and body; throws when nothing answers. */
export async function engineRequest(
  method: string,
  path: string,
  timeoutMs = 5_000,
): Promise<{ status: number; body: string; headers: Headers; label: string }> {
  const address = engineAddress();
  const client = address.socket
    ? Deno.createHttpClient({ proxy: { transport: "unix", path: address.socket } })
    : undefined;
  try {
    const response = await fetch(`${address.base}${path}`, {
      method,
      client,
      signal: AbortSignal.timeout(timeoutMs),
    });
    const body = await response.text();
    return { status: response.status, body, headers: response.headers, label: address.label };
  } finally {
    client?.close();
  }
}

/** Asks the engine `GET /_ping` within `timeoutMs`; never throws. */
export async function pingEngine(timeoutMs = 5_000): Promise<EnginePing> {
  let label = Deno.env.get("DOCKER_HOST") ?? "unix:///var/run/docker.sock";
  try {
    label = engineAddress().label;
    const answer = await engineGet("/_ping", timeoutMs);
    return {
      answered: true,
      status: answer.status,
      body: answer.body,
      apiVersion: answer.headers.get("api-version"),
      label,
    };
  } catch (error) {
    return { answered: false, why: (error as Error).message, label };
  }
}

/** Whether this run is CI's (`CI=true`, as `.ci/run` and every CI service set it). */
export function inCI(): boolean {
  return Deno.env.get("CI") === "true";
}

/** Whether the engine answered `/_ping` with 200 `OK`. */
export function engineUp(ping: EnginePing): boolean {
  return ping.answered && ping.status === 200 && ping.body === "OK";
}

/** One line saying what the ping found, for skip and failure messages. */
export function describePing(ping: EnginePing): string {
  return ping.answered
    ? `the Docker engine at ${ping.label} answered GET /_ping with ${ping.status} ${
      JSON.stringify(ping.body.slice(0, 80))
    } (expected 200 "OK")`
    : `no Docker engine answered GET /_ping at ${ping.label} (${ping.why})`;
}
