/**
 * End-to-end helpers: the real daemon (`createDaemon`) served on loopback in front of the real
 * devnet, and a man-in-the-middle gateway that rewrites what a real gateway answers.
 *
 * @module
 */

import type { PrivateKeyAccount } from "viem/accounts";
import type { SpendCap } from "../../daemon/account/mod.ts";
import type { DaemonConfig } from "../../daemon/service/config.ts";
import {
  createDaemon,
  type CreateDaemonOptions,
  type Daemon,
} from "../../daemon/service/daemon.ts";
import { serveDaemon } from "../../daemon/service/serve.ts";
import type { Devnet } from "../../devnet/network.ts";
import type { Attester } from "../../devnet/provider.ts";
import { createTestIntelPki, type TestIntelPki } from "../crypto/tee/_synthetic.ts";
import { buildTdxBundle } from "../crypto/tee/_synthetic_bundle.ts";
import { createTestNvidiaPki } from "../crypto/tee/_synthetic_nvidia.ts";
import { serve, type TestServer } from "../_http.ts";

/** A daemon served on 127.0.0.1:0. */
export interface RunningDaemon extends AsyncDisposable {
  /** `http://127.0.0.1:<port>`. */
  readonly url: string;
  /** The port. */
  readonly port: number;
  /** Its parts. */
  readonly daemon: Daemon;
  /** Its data directory. */
  readonly dataDir: string;
}

/** Options of {@linkcode startDaemon}. */
export interface StartDaemonOptions extends Omit<CreateDaemonOptions, "port"> {
  /** Pin this gateway. */
  gateway?: string;
  /**
   * Read trust roots and measurements from this chain. Without it the daemon runs with
   * `insecureGatewayKeys` (keys as the gateway lists them), as these tests always did.
   */
  evm?: {
    rpcUrl: string;
    registry: `0x${string}`;
    staking: `0x${string}`;
    /** The Escrow: the daemon then pays with vouchers. @default {none: it pays nothing} */
    escrow?: `0x${string}`;
  };
  /** How long on-chain facts stay usable while the chain cannot be read, s. @default {600} */
  chainGraceSecs?: number;
  /** Require this API key. */
  apiKey?: string;
  /** Approved measurements file. */
  measurementsFile?: string;
  /** Named API keys' file (`--api-keys-file`). @default {none} */
  apiKeysFile?: string;
  /** The consumer key's file. @default {generated in the data directory} */
  consumerKeyFile?: string;
  /** The daemon's spend cap. @default {none} */
  maxSpend?: SpendCap;
  /** `--max-queue`. @default {512} */
  maxQueue?: number;
  /** `--queue-timeout-secs`. @default {120} */
  queueTimeoutSecs?: number;
}

/** The chain a devnet runs, as {@linkcode StartDaemonOptions.evm} (trust from its Registry). */
export function devnetEvm(
  devnet: Pick<Devnet, "rpcUrl" | "contracts">,
): NonNullable<StartDaemonOptions["evm"]> {
  return {
    rpcUrl: devnet.rpcUrl,
    registry: devnet.contracts.registry,
    staking: devnet.contracts.staking,
  };
}

/** Serves a real daemon on a free loopback port. */
export async function startDaemon(options: StartDaemonOptions): Promise<RunningDaemon> {
  const dataDir = await Deno.makeTempDir({ prefix: "net-daemon-" });
  let handler: (req: Request, info?: Deno.ServeHandlerInfo) => Promise<Response> = () =>
    Promise.resolve(new Response());
  // Served as `main.ts` serves it (`daemon/service/serve.ts`), so a client's leaving is seen as in production.
  const server = await serveDaemon((req, info) => handler(req, info), {
    hostname: "127.0.0.1",
    port: 0,
  });
  const { evm } = options;
  const config: DaemonConfig = {
    bind: { hostname: "127.0.0.1", port: server.port },
    gateway: options.gateway ?? null,
    dataDir,
    network: evm ? { name: "test", source: "the test" } : null,
    bootstrap: [],
    evm: evm
      ? {
        rpcUrls: [evm.rpcUrl],
        chainId: null,
        registry: evm.registry,
        staking: evm.staking,
        escrow: evm.escrow ?? null,
      }
      : null,
    insecureGatewayKeys: !evm,
    chainGraceSecs: options.chainGraceSecs ?? 600,
    auth: {
      required: options.apiKey !== undefined,
      apiKey: options.apiKey ?? null,
      apiKeyFile: null,
      apiKeysFile: options.apiKeysFile ?? null,
    },
    measurementsFile: options.measurementsFile ?? null,
    allowedOrigins: [],
    allowedHosts: [],
    maxBodyBytes: 4 << 20,
    maxQueue: options.maxQueue ?? 512,
    queueTimeoutSecs: options.queueTimeoutSecs ?? 120,
    logFormat: "human",
    consumerKeyFile: options.consumerKeyFile ?? null,
    maxSpend: options.maxSpend ?? null,
  };
  const daemon = createDaemon(config, { log: () => {}, ...options, port: server.port });
  handler = daemon.handler;
  return {
    url: `http://127.0.0.1:${server.port}`,
    port: server.port,
    daemon,
    dataDir,
    [Symbol.asyncDispose]: async () => {
      await server.close();
      await daemon.close();
      await Deno.remove(dataDir, { recursive: true });
    },
  };
}

/** Rewrites one answer of the real gateway. */
export type Rewrite = (
  req: Request,
  upstream: Response,
) => Response | Promise<Response>;

/**
 * A gateway in front of a real one that forwards everything and lets `rewrite` change the
 * answers: the attacker of the tests.
 */
export function maliciousGateway(real: string, rewrite: Rewrite): TestServer {
  return serve(async (req) => {
    const url = new URL(req.url);
    const upstream = await fetch(`${real}${url.pathname}${url.search}`, {
      method: req.method,
      headers: req.headers,
      body: req.body,
      // @ts-ignore: Deno needs duplex to stream a request body
      duplex: "half",
    });
    // Gossip must not leak the real gateway: answer it ourselves.
    if (url.pathname === "/v1/gateways") {
      await upstream.body?.cancel();
      return Response.json({ gateways: [] });
    }
    return await rewrite(req, upstream);
  });
}

/** A stream that passes bytes through, changing them with `edit(chunk, offset)`. */
export function editStream(
  body: ReadableStream<Uint8Array>,
  edit: (chunk: Uint8Array, offset: number) => Uint8Array | null,
): ReadableStream<Uint8Array> {
  let offset = 0;
  return body.pipeThrough(
    new TransformStream({
      transform(chunk, controller) {
        const out = edit(chunk, offset);
        offset += chunk.length;
        if (out === null) controller.terminate();
        else controller.enqueue(out);
      },
    }),
  );
}

/**
 * An Intel-shaped and an NVIDIA-shaped test PKI and an attester producing synthetic TDX
 * bundles with one GPU under them, binding the provider's models. `pki.roots` trusts both test
 * roots; `measurementIds` are the enclave's and the GPU's ids, to approve together. Each option
 * breaks one thing, for the tests of the daemon's refusals.
 */
export async function syntheticTee(
  options: {
    /** Sign the quote's key binding for another key than the provider's. */
    otherServingKey?: PrivateKeyAccount;
    /** Endorse the HPKE key with another key than the attested one. */
    endorsementSigner?: PrivateKeyAccount;
    /** Answer every request with the first bundle produced (a replay). */
    replay?: boolean;
    /** GPUs the enclave attaches. @default {1} */
    gpus?: number;
    /** The GPUs' evidence comes from a PKI whose root the daemon does not trust. */
    untrustedGpu?: boolean;
    /** The quote binds other models than the bundle names. */
    bindOtherModels?: boolean;
    /** The enclave attests (and binds) other weights than the ad names. */
    otherWeights?: boolean;
  } = {},
): Promise<{
  pki: TestIntelPki;
  attester: Attester;
  measurementId: string;
  measurementIds: string[];
}> {
  const intel = await createTestIntelPki({ now: new Date() });
  const gpuPki = await createTestNvidiaPki({ now: new Date() });
  const evidencePki = options.untrustedGpu
    ? await createTestNvidiaPki({ now: new Date() })
    : gpuPki;
  const pki = { ...intel, roots: { ...intel.roots, nvidia: gpuPki.roots.nvidia } };
  let first: unknown;
  const attester: Attester = async ({ nonce, servingKey, keyConfig, models }) => {
    if (options.replay && first) return first;
    const served = options.otherWeights
      ? models.map((m) => ({ ...m, weightsDigest: new Uint8Array(32).fill(0x0e) }))
      : models;
    const built = await buildTdxBundle({
      nonce,
      now: new Date(),
      pki,
      gpuPki: evidencePki,
      gpus: options.gpus,
      servingKey: options.otherServingKey ?? servingKey as PrivateKeyAccount,
      endorsementSigner: options.endorsementSigner,
      keyConfig,
      models: served,
      ...(options.bindOtherModels ? { boundModels: served.slice(1) } : {}),
    });
    first ??= built.json;
    return built.json;
  };
  // The ids depend only on the default registers and measurements: compute them once.
  const probe = await buildTdxBundle({ nonce: new Uint8Array(32), now: new Date(), pki, gpuPki });
  return {
    pki,
    attester,
    measurementId: probe.measurementId,
    measurementIds: [...probe.approvedIds],
  };
}

/** Writes an approved-measurements file and returns its path. */
export async function measurementsFile(ids: readonly string[]): Promise<string> {
  const path = await Deno.makeTempFile({ suffix: ".json" });
  await Deno.writeTextFile(path, JSON.stringify({ measurements: ids }));
  return path;
}
