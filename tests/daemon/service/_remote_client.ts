/**
 * The client side of `auth_network_test.ts`, run from another network namespace (another
 * host, as far as the daemon can tell): the real `openai` and `ollama` clients and two raw
 * requests against a daemon that requires a key. It prints one JSON object of outcomes.
 *
 * The order matters: the requests with the right key go first, then the five failures (no key,
 * a spoofed loopback `Host`, no key with ollama, a wrong key with each client), which lock this
 * address out, so the last request — with the right key — must be refused with 429.
 *
 * Usage: deno run -A tests/daemon/service/_remote_client.ts <daemon base URL> <key>
 *
 * @module
 */

import OpenAI from "openai";
import { Ollama } from "ollama";

const MODEL = "net/verified/devnet/echo";
const MESSAGES = [{ role: "user" as const, content: "hello from another host" }];

/** The status of a client call: 200 when it succeeded, else the status of its error. */
async function statusOf(call: () => Promise<unknown>): Promise<{ status: number; text: string }> {
  try {
    const value = await call();
    return { status: 200, text: JSON.stringify(value).slice(0, 300) };
  } catch (error) {
    const e = error as { status?: number; status_code?: number; message?: string };
    return { status: e.status ?? e.status_code ?? -1, text: String(e.message ?? error) };
  }
}

/** A raw HTTP/1.1 request with the given Host header; returns the status line's code. */
async function rawStatus(base: string, path: string, host: string): Promise<number> {
  const url = new URL(base);
  const conn = await Deno.connect({ hostname: url.hostname, port: Number(url.port) });
  try {
    const request = `GET ${path} HTTP/1.1\r\nHost: ${host}\r\nConnection: close\r\n\r\n`;
    await conn.write(new TextEncoder().encode(request));
    let text = "";
    const buffer = new Uint8Array(4096);
    while (!text.includes("\r\n")) {
      const n = await conn.read(buffer);
      if (n === null) break;
      text += new TextDecoder().decode(buffer.subarray(0, n));
    }
    return Number(text.split(" ")[1]);
  } finally {
    conn.close();
  }
}

if (import.meta.main) {
  const [base, key] = Deno.args;
  const openai = (apiKey: string) => new OpenAI({ baseURL: `${base}/v1`, apiKey, maxRetries: 0 });
  const ollama = (headers?: Record<string, string>) => new Ollama({ host: base, headers });
  const out: Record<string, { status: number; text: string }> = {};
  const port = new URL(base).port;

  // The right key, in both dialects, with both clients.
  out.openaiRightKey = await statusOf(async () =>
    (await openai(key).chat.completions.create({ model: MODEL, messages: MESSAGES }))
      .choices[0].message.content
  );
  out.openaiModelsRightKey = await statusOf(async () => (await openai(key).models.list()).data);
  out.ollamaRightKey = await statusOf(async () =>
    (await ollama({ Authorization: `Bearer ${key}` }).chat({
      model: MODEL,
      messages: MESSAGES,
      stream: false,
    })).message.content
  );
  // Discovery needs no key.
  out.versionNoKey = await statusOf(() => ollama().version());

  // Five failures.
  out.rawNoKey = {
    status: await fetch(`${base}/v1/chat/completions`, {
      method: "POST",
      body: JSON.stringify({ model: MODEL, messages: MESSAGES }),
    }).then(async (r) => (await r.body?.cancel(), r.status)),
    text: "",
  };
  out.spoofedHostNoKey = {
    status: await rawStatus(base, "/v1/verdicts", `127.0.0.1:${port}`),
    text: "",
  };
  out.ollamaNoKey = await statusOf(() =>
    ollama().chat({ model: MODEL, messages: MESSAGES, stream: false })
  );
  out.openaiWrongKey = await statusOf(() =>
    openai(`${key}-wrong`).chat.completions.create({ model: MODEL, messages: MESSAGES })
  );
  out.ollamaWrongKey = await statusOf(() =>
    ollama({ Authorization: "Bearer net_not-the-key-0123456789" }).chat({
      model: MODEL,
      messages: MESSAGES,
      stream: false,
    })
  );
  // Locked out now: even the right key waits.
  out.openaiRightKeyWhileLockedOut = await statusOf(() => openai(key).models.list());
  console.log(JSON.stringify(out));
}
