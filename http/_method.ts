/**
 * Requests whose method the Fetch API cannot carry (`CONNECT`, `TRACE`, `TRACK`: `new Request`
 * refuses them; `get`: it would become `GET`) still reach a service, so that it answers them like any method its route does
 * not take — `405` with `Allow`, in its own error shape — instead of the connection being cut
 * (Node's server closes a `CONNECT` without a word). The server builds a stand-in request with
 * a placeholder method and remembers the real one; the route table reads it back.
 *
 * Private to `http/`: `serve.ts` makes stand-ins, `service.ts` reads them.
 *
 * @module
 */

/** Methods `new Request` refuses (Fetch's forbidden methods), in any case. */
const FORBIDDEN = new Set(["CONNECT", "TRACE", "TRACK"]);
/** Methods `new Request` upper-cases: `get` would become `GET`, a method the client did not send. */
const NORMALIZED = new Set(["DELETE", "GET", "HEAD", "OPTIONS", "POST", "PUT"]);

/**
 * The placeholder method of a stand-in: a valid token no route declares, so every service's
 * middleware treats it as an unknown method (never as an exempt `GET`).
 */
const PLACEHOLDER = "X-NET-UNSUPPORTED-METHOD";

const realMethods = new WeakMap<Request, string>();

/**
 * A `Request` for `method` on `url`: the real thing when the Fetch API can carry the method,
 * else a body-less stand-in whose real method {@linkcode methodOf} returns.
 */
export function requestFor(method: string, url: URL | string, init: RequestInit): Request {
  const upper = method.toUpperCase();
  const carried = !FORBIDDEN.has(upper) && (!NORMALIZED.has(upper) || method === upper);
  if (carried) return new Request(url, { ...init, method });
  const { body: _body, ...rest } = init;
  const request = new Request(url, { ...rest, method: PLACEHOLDER });
  realMethods.set(request, method);
  return request;
}

/** The method the client sent: a stand-in's real one, else the request's own. */
export function methodOf(request: Request): string {
  return realMethods.get(request) ?? request.method;
}
