/**
 * The `host:port` listen addresses of the services (`--bind`): `127.0.0.1:8088`,
 * `[::1]:11435`, `0.0.0.0:0`.
 *
 * @module
 */

import { NetError } from "../errors.ts";

/** A listen address. */
export interface BindAddress {
  /** Hostname or IP address (IPv6 without brackets), lower case. */
  readonly hostname: string;
  /** Port, 0 for any free port. */
  readonly port: number;
}

/** Thrown by {@linkcode parseBindAddress}; the message says what is wrong, not which setting. */
export class BindAddressError extends NetError {
  /** The error's name, a literal to tell it apart. */
  override readonly name = "BindAddressError" as const;
}

/**
 * Parses `host:port` (IPv6 in brackets).
 *
 * @throws {BindAddressError} naming the problem, e.g. "port 70000 is above 65535".
 */
export function parseBindAddress(value: string): BindAddress {
  const match = /^(?:\[([0-9A-Fa-f:.]+)\]|([A-Za-z0-9.-]+)):(\d{1,5})$/.exec(value);
  if (!match) throw new BindAddressError("not of the form host:port");
  const port = Number(match[3]);
  if (port > 65535) throw new BindAddressError(`port ${port} is above 65535`);
  if (match[1] !== undefined && !match[1].includes(":")) {
    throw new BindAddressError("brackets are for IPv6 addresses");
  }
  const hostname = match[1] ?? match[2];
  if (hostname.startsWith("-") || hostname.startsWith(".")) {
    throw new BindAddressError("the host is malformed");
  }
  return { hostname: hostname.toLowerCase(), port };
}
