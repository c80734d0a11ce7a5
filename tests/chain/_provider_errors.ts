/**
 * The `eth_getLogs` refusals of the RPC providers people use, as they answer them: the HTTP
 * status, the JSON-RPC code and the words (with the `data` some put the words in), each with
 * where its wording was seen in public (issue threads and the test suites of other indexers),
 * and how its limit counts. The fault-injecting proxy (`tests/_fault_rpc.ts`) answers like one
 * of them in front of a real anvil, with the limit scaled to the test chain, so every row is
 * driven through the real reader and viem's real error classes — not matched as a string.
 *
 * `seen` is the message exactly as reported (numbers included); `answer` renders the same
 * words for the scaled limit and the range asked. The limit is in blocks when `counts` is
 * `blocks`, in `toBlock − fromBlock` when it is `difference`, and in logs for `results` refusals.
 *
 * @module
 */

/** The range asked and the limit the proxy enforces. */
export interface RefusalContext {
  /** First block asked. */
  from: bigint;
  /** Last block asked. */
  to: bigint;
  /** The limit (blocks, difference or logs, as the row counts). */
  limit: number;
  /** For `results` refusals: the longest range from `from` whose logs fit the limit. */
  fits: { from: bigint; to: bigint };
  /** For `results` refusals: how many logs the range holds. */
  results: number;
}

/** A JSON-RPC error object. */
export interface RpcErrorObject {
  /** The code. */
  code: number;
  /** The message. */
  message: string;
  /** Extra data, when the provider puts its words there. */
  data?: unknown;
}

/** One provider's refusal. */
export interface ProviderRefusal {
  /** A short id for test names. */
  id: string;
  /** Who answers this way. */
  provider: string;
  /** Where the wording was seen. */
  source: string;
  /** The message as reported (real numbers). */
  seen: string;
  /** The HTTP status of the answer. */
  status: number;
  /** What is limited: the block range, or the logs (results, size, time) of the answer. */
  limits: "range" | "results";
  /** How the limit counts (range refusals). */
  counts: "blocks" | "difference";
  /** The limit the proxy enforces on the test chain. */
  scaled: number;
  /** What the reader can learn: a range to use, a limit, or nothing (it halves). */
  names: "range" | "limit" | "nothing";
  /** The error object for the range asked. */
  answer(context: RefusalContext): RpcErrorObject;
}

const hex = (n: bigint) => `0x${n.toString(16)}`;
/** `1200` → `1,200`, as QuickNode, Blast and 1rpc print their limits. */
const grouped = (n: number) => n.toLocaleString("en-US");

/** The rows: every phrasing of the major providers, and of the nodes behind the others. */
export const PROVIDER_REFUSALS: readonly ProviderRefusal[] = [
  {
    id: "alchemy-payg",
    provider: "Alchemy (pay as you go)",
    source: "https://github.com/bancorprotocol/webapp/issues/523; ponder-sh/ponder " +
      "packages/utils/src/_test/alchemy.test.ts",
    seen: "Log response size exceeded. You can make eth_getLogs requests with up to a 2K block " +
      "range and no limit on the response size, or you can request any block range with a cap " +
      "of 10K logs in the response. Based on your parameters and the response size limit, this " +
      "block range should work: [0x6, 0x1311f1]",
    status: 200,
    limits: "results",
    counts: "blocks",
    scaled: 20,
    names: "range",
    answer: ({ fits }) => ({
      code: -32602,
      message: "Log response size exceeded. You can make eth_getLogs requests with up to a 2K " +
        "block range and no limit on the response size, or you can request any block range " +
        "with a cap of 10K logs in the response. Based on your parameters and the response " +
        `size limit, this block range should work: [${hex(fits.from)}, ${hex(fits.to)}]`,
    }),
  },
  {
    id: "alchemy-500",
    provider: "Alchemy (free): 500 blocks",
    source: "https://github.com/boundless-xyz/boundless/issues/838; " +
      "https://github.com/risc0/risc0-ethereum/pull/656",
    seen: "You can make eth_getLogs requests with up to a 500 block range. Based on your " +
      "parameters, this block range should work: [0x1a30dfd, 0x1a30ff0]",
    status: 400,
    limits: "range",
    counts: "blocks",
    scaled: 500,
    names: "range",
    answer: ({ from, limit }) => ({
      code: -32600,
      message: `You can make eth_getLogs requests with up to a ${limit} block range. Based on ` +
        `your parameters, this block range should work: [${hex(from)}, ${
          hex(from + BigInt(limit) - 1n)
        }]`,
    }),
  },
  {
    id: "alchemy-free",
    provider: "Alchemy (free tier): 10 blocks",
    source: "https://github.com/cartesi/rollups-node/pull/655 (the same wording); public test " +
      "fixtures quoting the free-tier answer",
    seen: "Under the Free tier plan, you can make eth_getLogs requests with up to a 10 block " +
      "range. Based on your parameters, this block range should work: [0x121eac0, 0x121eac9]. " +
      "Upgrade to PAYG for expanded block range.",
    status: 400,
    limits: "range",
    counts: "blocks",
    scaled: 300,
    names: "range",
    answer: ({ from, limit }) => ({
      code: -32600,
      message:
        `Under the Free tier plan, you can make eth_getLogs requests with up to a ${limit} ` +
        `block range. Based on your parameters, this block range should work: [${hex(from)}, ${
          hex(from + BigInt(limit) - 1n)
        }]. Upgrade to PAYG for expanded block range.`,
    }),
  },
  {
    id: "infura-results",
    provider: "Infura: results",
    source: "ponder-sh/ponder packages/utils/src/_test/infura.test.ts; " +
      "https://github.com/aurora-is-near/aurora-relayer/pull/327",
    seen: "query returned more than 10000 results. Try with this block range " +
      "[0x112a880, 0x112a907].",
    status: 200,
    limits: "results",
    counts: "blocks",
    scaled: 20,
    names: "range",
    answer: ({ fits, limit }) => ({
      code: -32005,
      message: `query returned more than ${limit} results. Try with this block range [${
        hex(fits.from)
      }, ${hex(fits.to)}].`,
    }),
  },
  {
    id: "infura-range",
    provider: "Infura: block range",
    source: "https://github.com/INFURA/infura/issues/237",
    seen: "range 1000000 exceeds limit of 10000",
    status: 200,
    limits: "range",
    counts: "difference",
    scaled: 1_000,
    names: "limit",
    answer: ({ from, to, limit }) => ({
      code: -32602,
      message: `range ${to - from} exceeds limit of ${limit}`,
    }),
  },
  {
    id: "quicknode",
    provider: "QuickNode",
    source: "https://github.com/OffchainLabs/arbitrum-sdk/issues/609; ponder-sh/ponder " +
      "packages/utils/src/_test/quicknode.test.ts",
    seen: "eth_getLogs is limited to a 10,000 range",
    status: 413,
    limits: "range",
    counts: "difference",
    scaled: 1_200,
    names: "limit",
    answer: ({ limit }) => ({
      code: -32614,
      message: `eth_getLogs is limited to a ${grouped(limit)} range`,
    }),
  },
  {
    id: "quicknode-filter",
    provider: "QuickNode (newer wording)",
    source: "public indexer code quoting QuickNode's -32614 answer",
    seen: "eth_getLogs and eth_newFilter are limited to a 10,000 blocks range",
    status: 413,
    limits: "range",
    counts: "difference",
    scaled: 1_200,
    names: "limit",
    answer: ({ limit }) => ({
      code: -32614,
      message: `eth_getLogs and eth_newFilter are limited to a ${grouped(limit)} blocks range`,
    }),
  },
  {
    id: "blast",
    provider: "Blast (public)",
    source: "ponder-sh/ponder packages/utils/src/_test/blast.test.ts (viem's HttpRequestError)",
    seen: "eth_getLogs is limited to a 10,000 range",
    status: 400,
    limits: "range",
    counts: "difference",
    scaled: 1_500,
    names: "limit",
    answer: ({ limit }) => ({
      code: -32600,
      message: `eth_getLogs is limited to a ${grouped(limit)} range`,
    }),
  },
  {
    id: "blast-paid",
    provider: "Blast (paid plan)",
    source: "erpc/erpc tests (a Blast answer replayed); ponder-sh/ponder getLogsRetryHelper " +
      "(blast paid)",
    seen: 'Invalid params; data: {"range":"the range 55074203 - 55124202 exceeds the range ' +
      'allowed for your plan (49999 > 2000)."}',
    status: 400,
    limits: "range",
    counts: "difference",
    scaled: 700,
    names: "limit",
    answer: ({ from, to, limit }) => ({
      code: -32602,
      message: "Invalid params",
      data: {
        range: `the range ${from} - ${to} exceeds the range allowed for your plan (${
          to - from
        } > ${limit}).`,
      },
    }),
  },
  {
    id: "drpc",
    provider: "dRPC (free tier)",
    source: "this issue (25); public indexer code quoting dRPC's code 35 answer",
    seen: "ranges over 10000 blocks are not supported on freetier",
    status: 400,
    limits: "range",
    counts: "blocks",
    scaled: 1_000,
    names: "limit",
    answer: ({ limit }) => ({
      code: 35,
      message: `ranges over ${limit} blocks are not supported on freetier`,
    }),
  },
  {
    id: "drpc-plan",
    provider: "dRPC (free plan, newer wording)",
    source: "a public survey of keyless endpoints (eth.drpc.org, code 35)",
    seen: "ranges over 10000 blocks are not supported on free plan",
    status: 400,
    limits: "range",
    counts: "blocks",
    scaled: 1_000,
    names: "limit",
    answer: ({ limit }) => ({
      code: 35,
      message: `ranges over ${limit} blocks are not supported on free plan`,
    }),
  },
  {
    id: "drpc-timeout",
    provider: "dRPC (free tier): timeout",
    source: "public adapter code listing dRPC's answers (code 30, status 408)",
    seen: "Request timeout on the free tier, please upgrade your tier to the paid one",
    status: 408,
    limits: "results",
    counts: "blocks",
    scaled: 20,
    names: "nothing",
    answer: () => ({
      code: 30,
      message: "Request timeout on the free tier, please upgrade your tier to the paid one",
    }),
  },
  {
    id: "chainstack",
    provider: "Chainstack",
    source: "ponder-sh/ponder packages/utils/src/_test/chainstack.test.ts",
    seen: "Block range limit exceeded.",
    status: 200,
    limits: "range",
    counts: "blocks",
    scaled: 100,
    names: "nothing",
    answer: () => ({ code: -32602, message: "Block range limit exceeded." }),
  },
  {
    id: "ankr",
    provider: "Ankr",
    source: "ponder-sh/ponder packages/utils/src/parseGetLogsError/parseGetLogsError.ts (Ankr)",
    seen: "block range is too wide",
    status: 200,
    limits: "range",
    counts: "difference",
    scaled: 1_500,
    names: "nothing",
    answer: () => ({ code: -32600, message: "block range is too wide" }),
  },
  {
    id: "reth-results",
    provider: "reth nodes (LlamaRPC, Base): results",
    source: "https://github.com/base/base/issues/2421; " +
      "https://github.com/tempoxyz/rpc-tester/pull/20",
    seen: "query exceeds max results 20000, retry with the range 24383075-24383096",
    status: 200,
    limits: "results",
    counts: "blocks",
    scaled: 20,
    names: "range",
    answer: ({ fits, limit }) => ({
      code: -32602,
      message: `query exceeds max results ${limit}, retry with the range ${fits.from}-${fits.to}`,
    }),
  },
  {
    id: "reth-range",
    provider: "reth nodes (Flashbots): block range",
    source: "a public survey of keyless endpoints (rpc.flashbots.net)",
    seen: "query exceeds max block range 100000",
    status: 200,
    limits: "range",
    counts: "blocks",
    scaled: 2_000,
    names: "limit",
    answer: ({ limit }) => ({ code: -32602, message: `query exceeds max block range ${limit}` }),
  },
  {
    id: "cloudflare",
    provider: "Cloudflare",
    source: "ponder-sh/ponder packages/utils/src/parseGetLogsError/parseGetLogsError.ts; a " +
      "public survey of keyless endpoints (code -32047)",
    seen: "Invalid eth_getLogs request. 'fromBlock'-'toBlock' range too large. Max range: 800",
    status: 200,
    limits: "range",
    counts: "blocks",
    scaled: 800,
    names: "limit",
    answer: ({ limit }) => ({
      code: -32047,
      message:
        `Invalid eth_getLogs request. 'fromBlock'-'toBlock' range too large. Max range: ${limit}`,
    }),
  },
  {
    id: "publicnode",
    provider: "PublicNode",
    source: "a public survey of keyless endpoints (optimism-rpc.publicnode.com, code -32701)",
    seen: "exceed maximum block range: 50000",
    status: 200,
    limits: "range",
    counts: "blocks",
    scaled: 2_500,
    names: "limit",
    answer: ({ limit }) => ({ code: -32701, message: `exceed maximum block range: ${limit}` }),
  },
  {
    id: "thirdweb",
    provider: "thirdweb",
    source: "a public survey of endpoints (optimism.rpc.thirdweb.com, code -32005); " +
      "ponder-sh/ponder getLogsRetryHelper (thirdweb)",
    seen: "Log response size exceeded. Maximum allowed number of requested blocks is 1000",
    status: 200,
    limits: "range",
    counts: "blocks",
    scaled: 1_000,
    names: "limit",
    answer: ({ limit }) => ({
      code: -32005,
      message: `Log response size exceeded. Maximum allowed number of requested blocks is ${limit}`,
    }),
  },
  {
    id: "1rpc",
    provider: "1RPC",
    source: "a public survey of keyless endpoints (1rpc.io, code -32602)",
    seen: "eth_getLogs is limited to 0 - 50 blocks range",
    status: 200,
    limits: "range",
    counts: "blocks",
    scaled: 400,
    names: "limit",
    answer: ({ limit }) => ({
      code: -32602,
      message: `eth_getLogs is limited to 0 - ${limit} blocks range`,
    }),
  },
  {
    id: "coinbase",
    provider: "Coinbase (Base node)",
    source: "public app code quoting the answer ({ code: -32005, … })",
    seen: "please limit the query to at most 1000 blocks",
    status: 200,
    limits: "range",
    counts: "blocks",
    scaled: 1_000,
    names: "limit",
    answer: ({ limit }) => ({
      code: -32005,
      message: `please limit the query to at most ${limit} blocks`,
    }),
  },
  {
    id: "tenderly",
    provider: "Tenderly",
    source: "https://github.com/bobanetwork/boba_legacy/issues/827",
    seen: 'invalid params; data: {"error_id":"4ed94073-…","payload":"range 9009594 is bigger ' +
      'than range limit 2000"}',
    status: 200,
    limits: "range",
    counts: "difference",
    scaled: 2_000,
    names: "limit",
    answer: ({ from, to, limit }) => ({
      code: -32602,
      message: "invalid params",
      data: {
        error_id: "4ed94073-0317-4648-a167-107fba5f44b3",
        payload: `range ${to - from} is bigger than range limit ${limit}`,
      },
    }),
  },
  {
    id: "optimism",
    provider: "Optimism (mainnet.optimism.io)",
    source: "a public survey of keyless endpoints (code -32062)",
    seen: "Block range is too large",
    status: 200,
    limits: "range",
    counts: "blocks",
    scaled: 1_000,
    names: "nothing",
    answer: () => ({ code: -32062, message: "Block range is too large" }),
  },
  {
    id: "geth-results",
    provider: "geth and Erigon nodes: results",
    source: "https://github.com/aurora-is-near/aurora-relayer/pull/327; " +
      "https://github.com/0xPolygon/zkevm-node/issues/3136",
    seen: "query returned more than 10000 results",
    status: 200,
    limits: "results",
    counts: "blocks",
    scaled: 20,
    names: "nothing",
    answer: ({ limit }) => ({ code: -32005, message: `query returned more than ${limit} results` }),
  },
  {
    id: "zkevm",
    provider: "Polygon zkEVM",
    source: "https://github.com/0xPolygon/zkevm-node/issues/3136",
    seen: "logs are limited to a 10000 block range",
    status: 200,
    limits: "range",
    counts: "blocks",
    scaled: 1_000,
    names: "limit",
    answer: ({ limit }) => ({
      code: -32602,
      message: `logs are limited to a ${limit} block range`,
    }),
  },
  {
    id: "moonbeam",
    provider: "Moonbeam (Frontier nodes)",
    source: "https://github.com/moonbeam-foundation/moonbeam/pull/3250",
    seen: "block range is too wide (maximum 1024)",
    status: 200,
    limits: "range",
    counts: "blocks",
    scaled: 1_024,
    names: "limit",
    answer: ({ limit }) => ({
      code: -32603,
      message: `block range is too wide (maximum ${limit})`,
    }),
  },
  {
    id: "morph",
    provider: "Morph (geth fork)",
    source: "https://github.com/enviodev/hyperindex/issues/605",
    seen: "block range is larger than max block range, block range = 5120, max block range = 5000",
    status: 200,
    limits: "range",
    counts: "blocks",
    scaled: 900,
    names: "limit",
    answer: ({ from, to, limit }) => ({
      code: -32000,
      message: `block range is larger than max block range, block range = ${
        to - from + 1n
      }, max block range = ${limit}`,
    }),
  },
  {
    id: "sei",
    provider: "Sei",
    source: "public indexer code quoting evm-rpc.sei-apis.com",
    seen: "block range too large (2000), maximum allowed is 1000 blocks",
    status: 200,
    limits: "range",
    counts: "blocks",
    scaled: 1_000,
    names: "limit",
    answer: ({ from, to, limit }) => ({
      code: -32000,
      message: `block range too large (${to - from + 1n}), maximum allowed is ${limit} blocks`,
    }),
  },
];

/** Whether the range `from`–`to` is over a range refusal's limit. */
export function overRange(refusal: ProviderRefusal, from: bigint, to: bigint): boolean {
  const span = refusal.counts === "blocks" ? to - from + 1n : to - from;
  return span > BigInt(refusal.scaled);
}
