/**
 * The caching-proxy test fixture: Debian's nginx (`.ci/run` installs it) as a reverse proxy with
 * `proxy_cache` in front of a given upstream, on a free loopback port, in a temporary directory
 * that holds its configuration, cache, temporary files and logs, removed afterwards. It caches
 * exactly what the upstream allows: nginx honours the upstream's `Cache-Control` (`max-age`,
 * `no-store`, `private`, `no-cache`) and `Expires`, and caches nothing without them (no
 * `proxy_cache_valid`). Expired entries are revalidated with the upstream (`If-None-Match`,
 * `proxy_cache_revalidate`). Every answer carries `X-Cache-Status` (`MISS`, `HIT`, `EXPIRED`,
 * `REVALIDATED`, `BYPASS`, ...).
 *
 * @example
 * ```ts ignore
 * import { startNginx } from "./_nginx.ts";
 *
 * await using proxy = await startNginx({ upstream: "http://127.0.0.1:8088" });
 * const response = await fetch(`${proxy.url}/stats`);
 * console.log(response.headers.get("x-cache-status")); // MISS, then HIT within max-age
 * ```
 *
 * @module
 */

import { HANG_AFTER_MS } from "./_wait.ts";

/** Environment variable naming another nginx binary. */
export const NGINX_ENV = "NET_NGINX";

/** Where Debian's `nginx` package puts the server. */
export const DEBIAN_NGINX = "/usr/sbin/nginx";

/** Options of {@linkcode startNginx}. */
export interface NginxOptions {
  /** The upstream's base URL, e.g. `http://127.0.0.1:8088` (no path). */
  upstream: string;
  /**
   * The nginx binary.
   *
   * @default {$NET_NGINX, else /usr/sbin/nginx}
   */
  binary?: string;
  /**
   * How long to wait for nginx to accept connections, milliseconds: only a hang fails the start
   * (a busy machine may take long; an exit fails it at once).
   *
   * @default {HANG_AFTER_MS}
   */
  readyTimeoutMs?: number;
}

/** A running nginx. */
export interface NginxProxy extends AsyncDisposable {
  /** The proxy's base URL, e.g. `http://127.0.0.1:41234`. */
  readonly url: string;
  /** Its loopback port. */
  readonly port: number;
  /** Its temporary directory (configuration, cache, logs). */
  readonly dir: string;
  /** The configuration it runs with. */
  readonly config: string;
  /** Its error log so far (for failure messages). */
  errorLog(): string;
  /** Stops nginx and removes its directory; idempotent. */
  stop(): Promise<void>;
}

/** Running proxies, killed when the process unloads. */
const running = new Set<Deno.ChildProcess>();
let unloadHooked = false;

function hookUnload(): void {
  if (unloadHooked) return;
  unloadHooked = true;
  globalThis.addEventListener("unload", () => {
    for (const child of running) {
      try {
        child.kill("SIGKILL");
      } catch {
        // already gone
      }
    }
  });
}

function freePort(): number {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const port = (listener.addr as Deno.NetAddr).port;
  listener.close();
  return port;
}

/** The configuration of a caching proxy on `port` in `dir` in front of `upstream`. */
export function nginxConfig(dir: string, port: number, upstream: string): string {
  const parsed = new URL(upstream);
  if (parsed.pathname !== "/" || parsed.search || !["http:", "https:"].includes(parsed.protocol)) {
    throw new RangeError(
      `Cannot proxy to ${
        JSON.stringify(upstream)
      }: expected an http or https origin without a path`,
    );
  }
  // As root, the master would hand the workers to `nobody`, who cannot write the cache here.
  const user = Deno.uid() === 0 ? "user root;\n" : "";
  return `${user}daemon off;
worker_processes 1;
pid ${dir}/nginx.pid;
error_log ${dir}/error.log info;
events { worker_connections 128; }
http {
  access_log ${dir}/access.log;
  client_body_temp_path ${dir}/client_body;
  proxy_temp_path ${dir}/proxy_temp;
  fastcgi_temp_path ${dir}/fastcgi_temp;
  uwsgi_temp_path ${dir}/uwsgi_temp;
  scgi_temp_path ${dir}/scgi_temp;
  proxy_cache_path ${dir}/cache levels=1:2 keys_zone=upstream:1m max_size=64m inactive=10m use_temp_path=off;
  server {
    listen 127.0.0.1:${port};
    location / {
      proxy_pass ${parsed.origin};
      proxy_http_version 1.1;
      proxy_set_header Connection "";
      proxy_cache upstream;
      proxy_cache_revalidate on;
      proxy_cache_lock on;
      add_header X-Cache-Status $upstream_cache_status always;
    }
  }
}
`;
}

async function listening(port: number): Promise<boolean> {
  try {
    const conn = await Deno.connect({ hostname: "127.0.0.1", port });
    conn.close();
    return true;
  } catch {
    return false;
  }
}

/**
 * Starts nginx as a caching reverse proxy in front of `options.upstream`.
 *
 * @throws {Error} when the binary is missing (the message says how to install it) or nginx
 * does not start (the message carries its error log).
 */
export async function startNginx(options: NginxOptions): Promise<NginxProxy> {
  const binary = options.binary ?? Deno.env.get(NGINX_ENV) ?? DEBIAN_NGINX;
  try {
    Deno.statSync(binary);
  } catch {
    throw new Error(
      `Cannot find nginx at ${binary}: install Debian's package (\`apt-get install -y nginx\`; ` +
        `\`.ci/run\` does this when it is missing) or point ${NGINX_ENV} at an nginx binary`,
    );
  }
  const dir = await Deno.makeTempDir({ prefix: "net-nginx-" });
  const port = freePort();
  const config = nginxConfig(dir, port, options.upstream);
  await Deno.writeTextFile(`${dir}/nginx.conf`, config);
  const errorLog = () => {
    try {
      return Deno.readTextFileSync(`${dir}/error.log`);
    } catch {
      return "";
    }
  };
  const child = new Deno.Command(binary, {
    args: ["-p", `${dir}/`, "-c", `${dir}/nginx.conf`, "-e", `${dir}/error.log`],
    stdin: "null",
    stdout: "null",
    stderr: "null",
  }).spawn();
  running.add(child);
  hookUnload();
  let exited = false;
  const status = child.status.then((s) => {
    exited = true;
    running.delete(child);
    return s;
  });
  let stopped: Promise<void> | undefined;
  const stop = () =>
    stopped ??= (async () => {
      if (!exited) {
        try {
          child.kill("SIGQUIT"); // graceful: finish the requests in flight
        } catch {
          // already gone
        }
        const timer = setTimeout(() => !exited && child.kill("SIGKILL"), 5_000);
        await status;
        clearTimeout(timer);
      }
      await Deno.remove(dir, { recursive: true }).catch(() => {});
    })();
  const deadline = Date.now() + (options.readyTimeoutMs ?? HANG_AFTER_MS);
  while (!(await listening(port))) {
    if (exited || Date.now() > deadline) {
      const log = errorLog();
      await stop();
      throw new Error(
        `Cannot start nginx on 127.0.0.1:${port}: ${
          exited ? `it exited with code ${(await status).code}` : "it did not listen in time"
        }\n${log.trim()}`,
      );
    }
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
  return {
    url: `http://127.0.0.1:${port}`,
    port,
    dir,
    config,
    errorLog,
    stop,
    [Symbol.asyncDispose]: stop,
  };
}
