/**
 * The URLs a client can use to reach a server, for its start-up lines. A server bound to a
 * wildcard address (`0.0.0.0`, `::`) listens on every interface, but no client can connect to
 * `http://0.0.0.0:PORT`: the lines name loopback first (what a program on this machine uses),
 * then each interface's address (what other hosts use). A specific address is itself.
 *
 * @example
 * ```ts
 * import { listenUrls } from "./listen_urls.ts";
 *
 * const urls = listenUrls({ hostname: "0.0.0.0", port: 8088 }, {
 *   interfaces: () => [{ family: "IPv4", address: "192.168.1.5" } as Deno.NetworkInterfaceInfo],
 * });
 * console.assert(urls.join(" ") === "http://127.0.0.1:8088 http://192.168.1.5:8088");
 * ```
 *
 * @module
 */

/** Options of {@linkcode listenUrls}. */
export interface ListenUrlsOptions {
  /** The machine's interfaces. @default {Deno.networkInterfaces} */
  interfaces?: () => Deno.NetworkInterfaceInfo[];
}

function url(address: string, port: number): string {
  return `http://${address.includes(":") ? `[${address}]` : address}:${port}`;
}

function isLoopback(address: string): boolean {
  return address === "::1" || address.startsWith("127.");
}

/**
 * The URLs that reach a server bound to `bound.hostname:bound.port`: loopback first, then each
 * non-loopback address of the machine (IPv6 link-local ones left out: they need a zone).
 */
export function listenUrls(
  bound: { hostname: string; port: number },
  options: ListenUrlsOptions = {},
): string[] {
  const { hostname, port } = bound;
  const wildcard4 = hostname === "0.0.0.0";
  const wildcard6 = hostname === "::" || hostname === "[::]";
  if (!wildcard4 && !wildcard6) return [url(hostname.replace(/^\[|\]$/g, ""), port)];
  let interfaces: Deno.NetworkInterfaceInfo[] = [];
  try {
    interfaces = (options.interfaces ?? Deno.networkInterfaces)();
  } catch {
    // Not allowed to list them (--allow-sys): loopback alone.
  }
  const out = [url(wildcard6 ? "::1" : "127.0.0.1", port)];
  for (const info of interfaces) {
    if (isLoopback(info.address)) continue;
    if (info.family === "IPv6" && (!wildcard6 || /^fe80:/i.test(info.address))) continue;
    const candidate = url(info.address, port);
    if (!out.includes(candidate)) out.push(candidate);
  }
  return out;
}
