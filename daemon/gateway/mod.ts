/**
 * Talking to gateways: the typed client of the gateway API (`gateway_client.ts`: models,
 * candidates, keys, attestations, the relay), the known gateway set and its gossip
 * (`gateway_set.ts`, `gateway_list.ts`, `gateway_peer.ts`, `gateway_url.ts`), its cache on disk
 * (`gateway_cache.ts`) and the resolver that picks the gateway to use (`gateway_resolver.ts`).
 * Uses `core/`.
 *
 * @module
 */

export { GatewayClient, GatewayError, ProviderBusyError, retryAfterMs } from "./gateway_client.ts";
export type { ProviderCandidate } from "./gateway_client.ts";
export { askPeer } from "./gateway_peer.ts";
export type { AskPeerOptions } from "./gateway_peer.ts";
export { DEFAULT_GOSSIP_INTERVAL_MS, GatewayResolver } from "./gateway_resolver.ts";
export type { GatewayResolverOptions, GossipOptions } from "./gateway_resolver.ts";
export { GatewaySet } from "./gateway_set.ts";
export type {
  AddGatewayOptions,
  GatewayCacheEntryJson,
  GatewayEntry,
  GatewayEntryJson,
  GatewaySetOptions,
  MergeListOptions,
} from "./gateway_set.ts";
export { GatewaySetError, normalizeGatewayUrl } from "./gateway_url.ts";
export type { GatewaySetFailure } from "./gateway_url.ts";
