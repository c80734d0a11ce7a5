/**
 * The address scope of a URL's host: whether an IP literal is loopback, private, link-local,
 * unspecified, otherwise reserved or public. The network's rules about where a peer may send us
 * (`docs/protocol.md` §3) are written in these terms:
 *
 * - **link-local** (169.254.0.0/16, fe80::/10: cloud metadata services live there),
 *   **unspecified** (0.0.0.0/8, `::`: "this host") and **reserved** (multicast, 240.0.0.0/4,
 *   broadcast) are never a gateway or provider of the network;
 * - **loopback** and **private** addresses may only be introduced by a peer that is itself at
 *   least as private (the browser's Private Network Access rule): see {@linkcode scopeRank}.
 *
 * Only IP literals are classified. A DNS name is `"name"` (its addresses are not looked up:
 * `fetch` resolves it again at connect time, so a check here could not bind what is reached),
 * except `localhost` and `*.localhost`, which are loopback by definition (RFC 6761 §6.3).
 * IPv4 addresses embedded in IPv6 (IPv4-mapped `::ffff:0:0/96`, IPv4-compatible `::/96`,
 * NAT64 `64:ff9b::/96`) are classified by their IPv4 address.
 *
 * @example
 * ```ts
 * import { hostScope } from "./host_scope.ts";
 *
 * console.assert(hostScope(new URL("http://169.254.169.254/").hostname) === "link_local");
 * console.assert(hostScope(new URL("http://[::ffff:127.0.0.1]/").hostname) === "loopback");
 * console.assert(hostScope("gateway.example") === "name");
 * ```
 *
 * @module
 */

/** The scope of a host (see the module documentation). */
export type HostScope =
  | "unspecified"
  | "loopback"
  | "link_local"
  | "private"
  | "reserved"
  | "public"
  | "name";

/** Scopes that are never a destination of the network: requests to them are refused. */
export const FORBIDDEN_SCOPES: ReadonlySet<HostScope> = new Set<HostScope>([
  "unspecified",
  "link_local",
  "reserved",
]);

/**
 * How private a scope is, for the Private Network Access rule: a peer may only introduce
 * addresses whose rank is at most its own. `public` and DNS names are 0, `private` is 1,
 * `loopback` is 2. Forbidden scopes have no rank (`undefined`).
 */
export function scopeRank(scope: HostScope): number | undefined {
  switch (scope) {
    case "public":
    case "name":
      return 0;
    case "private":
      return 1;
    case "loopback":
      return 2;
    default:
      return undefined;
  }
}

/**
 * Classifies a host as found in `URL.hostname` (IPv6 literals in brackets; IPv4 in the dotted
 * form the URL parser normalizes every IPv4 spelling to). A host that is not in that form is
 * normalized through the URL parser first.
 */
export function hostScope(hostname: string): HostScope {
  let host = hostname.toLowerCase();
  if (!isCanonicalIpv4(host) && !host.startsWith("[")) {
    // Not in URL.hostname form yet (e.g. "0x7f.1" or a bare IPv6 literal): let the URL parser
    // apply its IPv4 and IPv6 rules, so every spelling of an address lands on one form.
    try {
      host = new URL(`http://${host.includes(":") ? `[${host}]` : host}/`).hostname;
    } catch {
      return "name";
    }
  }
  if (host.startsWith("[") && host.endsWith("]")) {
    const words = parseIpv6(host.slice(1, -1));
    return words === undefined ? "name" : ipv6Scope(words);
  }
  if (isCanonicalIpv4(host)) return ipv4Scope(host.split(".").map(Number));
  if (host === "localhost" || host.endsWith(".localhost")) return "loopback";
  return "name";
}

function isCanonicalIpv4(host: string): boolean {
  return /^(25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)(\.(25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)){3}$/.test(host);
}

function ipv4Scope([a, b]: number[]): HostScope {
  if (a === 0) return "unspecified"; // 0.0.0.0/8, "this network" (RFC 791, RFC 1122)
  if (a === 127) return "loopback"; // RFC 1122
  if (a === 169 && b === 254) return "link_local"; // RFC 3927
  if (a === 10) return "private"; // RFC 1918
  if (a === 172 && b >= 16 && b <= 31) return "private"; // RFC 1918
  if (a === 192 && b === 168) return "private"; // RFC 1918
  if (a === 100 && b >= 64 && b <= 127) return "private"; // RFC 6598 shared address space
  if (a >= 224) return "reserved"; // multicast, 240.0.0.0/4, 255.255.255.255
  return "public";
}

/** Eight 16-bit words, or `undefined` when the text is not an IPv6 address. */
function parseIpv6(text: string): number[] | undefined {
  const halves = text.split("::");
  if (halves.length > 2) return undefined;
  const parse = (part: string): number[] | undefined => {
    if (part === "") return [];
    const out: number[] = [];
    const groups = part.split(":");
    for (const [i, group] of groups.entries()) {
      if (i === groups.length - 1 && group.includes(".")) {
        if (!isCanonicalIpv4(group)) return undefined;
        const [a, b, c, d] = group.split(".").map(Number);
        out.push((a << 8) | b, (c << 8) | d);
      } else if (/^[0-9a-f]{1,4}$/.test(group)) {
        out.push(parseInt(group, 16));
      } else return undefined;
    }
    return out;
  };
  const head = parse(halves[0]);
  const tail = halves.length === 2 ? parse(halves[1]) : [];
  if (head === undefined || tail === undefined) return undefined;
  if (halves.length === 1) return head.length === 8 ? head : undefined;
  if (head.length + tail.length > 7) return undefined;
  return [...head, ...Array(8 - head.length - tail.length).fill(0), ...tail];
}

function ipv6Scope(w: number[]): HostScope {
  const zeroUpTo = (n: number) => w.slice(0, n).every((x) => x === 0);
  const embedded = () => ipv4Scope([w[6] >> 8, w[6] & 0xff, w[7] >> 8, w[7] & 0xff]);
  if (zeroUpTo(8)) return "unspecified"; // ::
  if (zeroUpTo(7) && w[7] === 1) return "loopback"; // ::1
  if (zeroUpTo(5) && w[5] === 0xffff) return embedded(); // IPv4-mapped
  if (zeroUpTo(6)) return embedded(); // IPv4-compatible (deprecated)
  if (w[0] === 0x64 && w[1] === 0xff9b && w.slice(2, 6).every((x) => x === 0)) return embedded();
  if ((w[0] & 0xffc0) === 0xfe80) return "link_local"; // fe80::/10
  if ((w[0] & 0xfe00) === 0xfc00) return "private"; // fc00::/7, unique local
  if ((w[0] & 0xffc0) === 0xfec0) return "private"; // fec0::/10, old site-local
  if ((w[0] & 0xff00) === 0xff00) return "reserved"; // multicast
  return "public";
}
