/**
 * What the provider page (`#/providers/{address}`) shows, as data: the figures of one
 * `GET /providers/{address}` answer — tier, live status, the ad commitment's state, the TEE
 * evidence and its age (and where GPU evidence will be), stake, settled totals — each number a
 * value part with its `data-field` (the browser test compares them with the answer). Pure.
 *
 * @module
 */

import { formatCount } from "./format.ts";
import { type Figure, NOT_SYNCED, type Part, valueOf } from "./model.ts";
import type { ProviderDetail } from "./types.ts";

/** `#/providers/0x…` → the address (lower case), or `null` for any other location. */
export function providerRoute(hash: string): string | null {
  const match = /^#\/providers\/(0x[0-9a-fA-F]{40})$/.exec(hash);
  return match ? match[1].toLowerCase() : null;
}

/** How long ago, in words: `42 s`, `5 min`, `3 h`, `2 d`. */
export function ageText(secs: number): string {
  if (secs < 120) return `${secs} s`;
  if (secs < 7_200) return `${Math.floor(secs / 60)} min`;
  if (secs < 172_800) return `${Math.floor(secs / 3_600)} h`;
  return `${Math.floor(secs / 86_400)} d`;
}

const COMMITMENT: Record<string, string> = {
  verified: "verified against its live ad",
  rejected: "its entry was rejected",
  not_seen: "no router lists it now",
};

const EVIDENCE: Record<string, string> = {
  verified: "verified",
  refused: "refused",
  not_offered: "not offered",
  unreachable: "unreachable",
};

/** The TEE evidence figure's parts. */
function teeParts(detail: ProviderDetail): Part[] {
  const tee = detail.tee;
  if (!tee) return ["— (verified tier: no TEE evidence)"];
  const evidence = tee.evidence;
  if (!evidence) return ["not checked yet"];
  const parts: Part[] = [
    valueOf(detail, "tee.evidence.status", "text"),
    `: ${EVIDENCE[evidence.status] ?? evidence.status}, checked `,
    ageText(evidence.age_secs),
    " ago",
  ];
  if (evidence.format) parts.push(` (${evidence.format.toUpperCase()})`);
  if (evidence.message) parts.push(` — ${evidence.message}`);
  return parts;
}

/** The GPU evidence figure's parts: the GPUs its verified evidence attests. */
function gpuParts(detail: ProviderDetail): Part[] {
  if (!detail.tee) return ["—"];
  const gpu = detail.tee.gpu;
  if (!gpu) return ["not verified (the TEE evidence is not)"];
  if (gpu.count === 0) return ["none attested"];
  return [
    valueOf(detail, "tee.gpu.count", "count"),
    ` GPU${gpu.count === 1 ? "" : "s"} verified (driver ${[...new Set(gpu.drivers)].join(", ")})`,
  ];
}

/** The provider's figures. */
export function providerFigures(detail: ProviderDetail): Figure[] {
  const v = (field: string, format: "count" | "tokens" | "text" | "address") =>
    valueOf(detail, field, format);
  const verification = detail.verification;
  const commitment: Part[] = [
    v("verification.ad_commitment", "text"),
    `: ${COMMITMENT[verification.ad_commitment] ?? verification.ad_commitment}`,
  ];
  if (verification.ad_commitment === "verified") {
    commitment.push(" (", v("verification.routers", "count"), " routers)");
  } else if (verification.reason) {
    commitment.push(` (${verification.reason}: ${verification.message ?? ""})`);
  }
  const total = detail.settled.total;
  const figures: Figure[] = [
    {
      key: "tier",
      label: "Tier",
      parts: detail.registry ? [v("registry.tier", "text")] : ["not in the Registry"],
    },
    {
      key: "status",
      label: "Status",
      parts: [detail.live ? "live-verified" : "not live-verified now"],
    },
    { key: "commitment", label: "Ad commitment", parts: commitment },
    { key: "tee", label: "TEE evidence", parts: teeParts(detail) },
    { key: "gpu", label: "GPU evidence", parts: gpuParts(detail) },
    {
      key: "stake",
      label: "Stake (tokens)",
      parts: detail.registry
        ? [
          v("registry.stake", "tokens"),
          detail.registry.bonded ? " (bonded)" : " (not bonded)",
        ]
        : ["—"],
    },
    {
      key: "settled",
      label: "Settled in all (tokens)",
      parts: total === null ? [NOT_SYNCED] : [
        v("settled.total.amount", "tokens"),
        " in ",
        v("settled.total.settlements", "count"),
        ` settlements over ${formatCount(String(total.epochs))} epochs`,
      ],
    },
  ];
  if (detail.registry) {
    figures.push({
      key: "serving-key",
      label: "Serving key",
      parts: [v("registry.serving_key", "address")],
    });
  }
  return figures;
}
