/**
 * The Docker CLI for the packaging scripts (`smoke.ts`, `compose_smoke.ts`): run a command and
 * get its output or a clear error, wait for a state, read a container's state (free ports:
 * `host_port.ts`).
 *
 * @module
 */

import { NetError } from "../errors.ts";

/** What a finished command printed. */
export interface Output {
  /** Its exit code. */
  code: number;
  /** Its standard output. */
  stdout: string;
  /** Its standard error. */
  stderr: string;
}

/** Runs `command args…`; never throws for a non-zero exit (see {@linkcode must}). */
export async function exec(
  command: string,
  args: readonly string[],
  options: { env?: Record<string, string>; cwd?: string } = {},
): Promise<Output> {
  const out = await new Deno.Command(command, {
    args: [...args],
    env: options.env,
    cwd: options.cwd,
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).output();
  const text = (bytes: Uint8Array) => new TextDecoder().decode(bytes);
  return { code: out.code, stdout: text(out.stdout), stderr: text(out.stderr) };
}

/** Runs `command args…` and returns its standard output; throws with its output otherwise. */
export async function must(
  command: string,
  args: readonly string[],
  options: { env?: Record<string, string>; cwd?: string } = {},
): Promise<string> {
  const out = await exec(command, args, options);
  if (out.code !== 0) {
    throw new Error(
      `\`${command} ${args.join(" ")}\` exited with code ${out.code}\n${out.stderr}${out.stdout}`
        .trimEnd(),
    );
  }
  return out.stdout;
}

/** `docker args…`, its standard output. */
export function docker(...args: string[]): Promise<string> {
  return must("docker", args);
}

/** A container's state, from `docker inspect`. */
export interface ContainerState {
  /** `running`, `exited`, … */
  status: string;
  /** The exit code (0 while running). */
  exitCode: number;
  /** `starting`, `healthy`, `unhealthy`, or undefined without a health check. */
  health?: string;
  /** The last health probe's output. */
  lastProbe?: string;
}

/** Reads a container's state. */
export async function containerState(name: string): Promise<ContainerState> {
  const [state] = JSON.parse(
    await docker("inspect", "--format", "{{json .State}}", name)
      .then((s) => `[${s}]`),
  ) as [{
    Status: string;
    ExitCode: number;
    Health?: { Status: string; Log?: { Output: string }[] };
  }];
  return {
    status: state.Status,
    exitCode: state.ExitCode,
    health: state.Health?.Status,
    lastProbe: state.Health?.Log?.at(-1)?.Output.trim(),
  };
}

/**
 * What a {@linkcode waitFor} check throws when waiting longer cannot help (the container
 * exited, the store stopped for good): the wait ends at once with it.
 */
export class GiveUp extends NetError {
  override readonly name = "GiveUp";
}

/**
 * Waits until `check` returns a value (not undefined), polling every `everyMs`; throws
 * `what` with the last problem seen (what `check` threw) when `timeoutMs` passes, and at once
 * when `check` throws {@linkcode GiveUp}.
 */
export async function waitFor<T>(
  what: string,
  check: () => Promise<T | undefined>,
  timeoutMs: number,
  everyMs = 500,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown = "no answer yet";
  while (Date.now() < deadline) {
    try {
      const value = await check();
      if (value !== undefined) return value;
    } catch (error) {
      if (error instanceof GiveUp) throw new Error(`${what}: ${error.message}`);
      last = error instanceof Error ? error.message : error;
    }
    await new Promise((resolve) => setTimeout(resolve, everyMs));
  }
  throw new Error(`${what}: not within ${timeoutMs / 1000} s (last: ${last})`);
}

/** GET `url`: its status and body, within `timeoutMs`. */
export async function get(
  url: string,
  init: RequestInit = {},
  timeoutMs = 10_000,
): Promise<{ status: number; body: string }> {
  const response = await fetch(url, { ...init, signal: AbortSignal.timeout(timeoutMs) });
  return { status: response.status, body: await response.text() };
}

/** Prints one progress line. */
export function step(scope: string, line: string): void {
  console.log(`${scope}: ${line}`);
}

/** The consumer address of the daemon at `daemonUrl` (its `GET /v1/account`). */
export async function consumerOf(daemonUrl: string): Promise<string> {
  const account = await get(`${daemonUrl}/v1/account`, {}, 60_000);
  if (account.status !== 200) {
    throw new Error(`GET /v1/account: ${account.status} ${account.body.slice(0, 200)}`);
  }
  return JSON.parse(account.body).address as string;
}

/**
 * The command, run in the devnet's container, that deposits 1 ether into the Escrow for
 * `consumer` from the devnet's consumer account (`devnet/deposit.ts`): the devnet's requests are
 * paid by vouchers, so a daemon's consumer needs a deposit before its first chat.
 */
export function depositCommand(network: string, consumer: string): string[] {
  return [
    "deno",
    "run",
    "-A",
    "--config",
    "deno.runtime.json",
    "devnet/deposit.ts",
    "--network",
    network,
    "--to",
    consumer,
    "--amount",
    "1",
  ];
}
