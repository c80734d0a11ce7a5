/**
 * Answers written straight to a socket, for the requests Node's HTTP server does not hand to a
 * request listener: a `CONNECT`, a method its parser does not know, a head it cannot parse. The
 * answer is a whole `Response` (the service's own, in its error shape, or a bare one), sent
 * with `Content-Length` and `Connection: close`; the connection is then closed.
 *
 * Private to `http/` (`serve.ts`).
 *
 * @module
 */

import { STATUS_CODES } from "node:http";
import type { Duplex } from "node:stream";

/** The method, target and headers of a request head that Node's parser refused. */
export interface RawHead {
  /** The method token, as sent. */
  method: string;
  /** The request target (a path, or what the client sent). */
  target: string;
  /** The header lines that could be read. */
  headers: Headers;
}

const TOKEN = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;
const REQUEST_LINE = /^(\S+) (\S+) HTTP\/1\.[01]$/;
const HEADER_LINE = /^([!#$%&'*+.^_`|~0-9A-Za-z-]+):[ \t]*(.*?)[ \t]*$/;

/**
 * The head of a refused request, when its request line is well formed (`TOKEN SP target SP
 * HTTP/1.x`); header lines that cannot be read are left out. `undefined` otherwise.
 */
export function readRawHead(packet: Uint8Array | undefined): RawHead | undefined {
  if (!packet || packet.length === 0) return undefined;
  const text = new TextDecoder("latin1").decode(packet);
  const end = text.indexOf("\r\n\r\n");
  const lines = (end < 0 ? text : text.slice(0, end)).split("\r\n");
  const line = REQUEST_LINE.exec(lines[0] ?? "");
  if (!line || !TOKEN.test(line[1])) return undefined;
  const headers = new Headers();
  for (const header of lines.slice(1)) {
    const parsed = HEADER_LINE.exec(header);
    if (!parsed) continue;
    try {
      headers.append(parsed[1], parsed[2]);
    } catch {
      // A value the Fetch API refuses (a control character): left out.
    }
  }
  return { method: line[1], target: line[2], headers };
}

/** Writes `response` whole on `socket`, then closes it. */
export async function writeRawAnswer(socket: Duplex, response: Response): Promise<void> {
  const body = new Uint8Array(await response.arrayBuffer());
  if (socket.destroyed || !socket.writable) return;
  const lines = [`HTTP/1.1 ${response.status} ${STATUS_CODES[response.status] ?? "Unknown"}`];
  for (const [name, value] of response.headers) {
    if (name === "content-length" || name === "connection" || name === "transfer-encoding") {
      continue;
    }
    lines.push(`${name}: ${value}`);
  }
  lines.push(`content-length: ${body.length}`, "connection: close", "", "");
  socket.write(lines.join("\r\n"));
  socket.end(body, () => socket.destroy());
}

/** A bare answer with a short text, for a request no service can be asked about. */
export function bareAnswer(status: number, text: string): Response {
  return new Response(`${text}\n`, {
    status,
    headers: { "content-type": "text/plain; charset=utf-8" },
  });
}
