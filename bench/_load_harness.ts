/**
 * What the load benchmark drives (private): the network, the daemon and the plaintext relay each
 * in a process of its own (so each one's CPU time and memory can be read from `/proc`), and
 * closed-loop clients that run a number of chats at a given concurrency and measure them.
 *
 * @module
 */

const ROOT = new URL("../", import.meta.url);

/** A process the bench started, with the first line it printed. */
export interface Child {
  /** Its process id. */
  readonly pid: number;
  /** The first line it printed that matched. */
  readonly line: string;
  /** Stops it and waits for it. */
  stop(): Promise<void>;
}

/**
 * Starts `deno run -A <args>` in the project, waits for a stdout line matching `ready`, and
 * keeps reading its output (so it never blocks on a full pipe); `env` is added to this process's
 * environment.
 */
export async function spawn(
  args: string[],
  ready: RegExp,
  env?: Record<string, string>,
): Promise<Child> {
  const child = new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", "--quiet", ...args],
    cwd: ROOT,
    ...(env ? { env } : {}),
    stdin: "piped",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  const lines = child.stdout.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = "";
  let line: string | undefined;
  while (line === undefined) {
    const { done, value } = await lines.read();
    if (done) {
      const err = await new Response(child.stderr).text();
      throw new Error(`Cannot start ${args.join(" ")}: it exited before it was ready\n${err}`);
    }
    buffer += value;
    line = buffer.split("\n").find((l) => ready.test(l));
  }
  const drain = async () => {
    while (!(await lines.read()).done) { /* keep the pipe flowing */ }
  };
  const drained = Promise.all([drain(), child.stderr.pipeTo(new WritableStream())]);
  return {
    pid: child.pid,
    line,
    stop: async () => {
      await child.stdin.close().catch(() => {});
      try {
        child.kill("SIGTERM");
      } catch { /* already gone */ }
      await child.status;
      await drained.catch(() => {});
    },
  };
}

/** CPU time a process has used so far (user + system), in ms, from `/proc/<pid>/stat`. */
export function cpuMs(pid: number): number {
  const stat = Deno.readTextFileSync(`/proc/${pid}/stat`);
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  return (Number(fields[11]) + Number(fields[12])) * 10; // utime + stime, 100 ticks per second
}

/** Read and write system calls a process has made so far, from `/proc/<pid>/io`. */
export function syscalls(pid: number): { reads: number; writes: number } {
  const io = Deno.readTextFileSync(`/proc/${pid}/io`);
  const field = (name: string) => Number(new RegExp(`^${name}: (\\d+)$`, "m").exec(io)?.[1] ?? NaN);
  return { reads: field("syscr"), writes: field("syscw") };
}

/** Resident memory of a process, in MiB, from `/proc/<pid>/status`. */
export function rssMiB(pid: number): number {
  const status = Deno.readTextFileSync(`/proc/${pid}/status`);
  return Number(/VmRSS:\s+(\d+) kB/.exec(status)?.[1] ?? NaN) / 1024;
}

/** What one run of chats came to. */
export interface CellResult {
  ok: number;
  failed: number;
  /** Latency of a whole chat, in ms. */
  p50: number;
  p99: number;
  /** Completion tokens received, over every chat. */
  tokens: number;
  /** Wall time of the run, in s. */
  seconds: number;
  /** CPU time the relaying process (daemon or plaintext relay) used, in ms. */
  cpuMs: number;
  /** Read and write system calls the relaying process made (sockets included). */
  reads: number;
  writes: number;
  /** A failure, for the report. */
  sample?: string;
  /** The latency of every successful chat, in ms, sorted. */
  times: number[];
}

/** The percentile `q` (0–1) of sorted `times`. */
function percentile(times: readonly number[], q: number): number {
  return times[Math.min(times.length - 1, Math.floor(times.length * q))] ?? NaN;
}

/** Several runs of the same cell (e.g. alternated with another system's) as one. */
export function merge(results: readonly CellResult[]): CellResult {
  const times = results.flatMap((r) => r.times).sort((a, b) => a - b);
  const sum = (f: (r: CellResult) => number) => results.reduce((n, r) => n + f(r), 0);
  return {
    ok: sum((r) => r.ok),
    failed: sum((r) => r.failed),
    p50: percentile(times, 0.5),
    p99: percentile(times, 0.99),
    tokens: sum((r) => r.tokens),
    seconds: sum((r) => r.seconds),
    cpuMs: sum((r) => r.cpuMs),
    reads: sum((r) => r.reads),
    writes: sum((r) => r.writes),
    sample: results.find((r) => r.sample)?.sample,
    times,
  };
}

/** The completion tokens in a reply's body (an event stream, or one completion). */
function tokensOf(body: string, stream: boolean): number {
  if (!stream) return JSON.parse(body).usage?.completion_tokens ?? 0;
  let tokens = 0;
  for (const line of body.split("\n")) {
    if (!line.startsWith("data: {")) continue;
    if (JSON.parse(line.slice(6)).choices?.[0]?.delta?.content) tokens++;
  }
  return tokens;
}

/** One chat; its latency and tokens, or why it failed. */
async function one(
  url: string,
  request: { stream: boolean; content: string },
  client: Deno.HttpClient,
): Promise<{ ms: number; tokens: number } | { error: string }> {
  const started = performance.now();
  try {
    const response = await fetch(`${url}/v1/chat/completions`, {
      client,
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({
        model: "net/verified/devnet/echo",
        stream: request.stream,
        messages: [{ role: "user", content: request.content }],
      }),
    });
    const body = await response.text();
    const complete = request.stream ? body.endsWith("data: [DONE]\n\n") : response.ok;
    if (!response.ok || !complete) return { error: `${response.status} ${body.slice(0, 160)}` };
    return { ms: performance.now() - started, tokens: tokensOf(body, request.stream) };
  } catch (error) {
    // `fetch failed` says little: its cause says what the connection did.
    const cause = (error as { cause?: unknown }).cause;
    return { error: cause === undefined ? String(error) : `${error} (${cause})` };
  }
}

/**
 * `requests` chats at concurrency `c` (closed loop) against `url`; `pid` is the relay's. Each
 * cell has connections of its own (its own HTTP client, closed at its end): a connection left
 * idle by an earlier cell, which the server closed at its keep-alive timeout meanwhile, is never
 * taken for a chat (on a saturated machine the client could send on it before seeing it closed:
 * `fetch failed`).
 */
export async function cell(
  url: string,
  pid: number,
  options: { c: number; requests: number; stream: boolean; content: string },
): Promise<CellResult> {
  const times: number[] = [];
  let tokens = 0;
  let failed = 0;
  let sample: string | undefined;
  let next = 0;
  const client = Deno.createHttpClient({});
  const cpu0 = cpuMs(pid);
  const io0 = syscalls(pid);
  const t0 = performance.now();
  try {
    await Promise.all(Array.from({ length: options.c }, async () => {
      while (next < options.requests) {
        next++;
        const result = await one(url, options, client);
        if ("error" in result) {
          failed++;
          sample ??= result.error;
        } else {
          times.push(result.ms);
          tokens += result.tokens;
        }
      }
    }));
  } finally {
    client.close();
  }
  const seconds = (performance.now() - t0) / 1000;
  times.sort((a, b) => a - b);
  return {
    ok: times.length,
    failed,
    p50: percentile(times, 0.5),
    p99: percentile(times, 0.99),
    tokens,
    seconds,
    cpuMs: cpuMs(pid) - cpu0,
    reads: syscalls(pid).reads - io0.reads,
    writes: syscalls(pid).writes - io0.writes,
    sample,
    times,
  };
}

/** `n` words: devnet/echo answers with about `n` + 12 tokens. */
export function prompt(n: number): string {
  return Array.from({ length: n }, (_, i) => `word${i}`).join(" ");
}
