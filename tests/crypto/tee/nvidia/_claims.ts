/**
 * The claims the source verifier (`confidential-containers/trustee`, commit 78962cd4)
 * extracted from a GPU report, rebuilt from our parse so that a test can compare them byte
 * for byte with `hopperAttestationReport-claims.txt`. The rendering conventions are the
 * source's: `measurements` maps each block index to its value's hex; `config` maps each
 * opaque item to a value — the versions as text, the measurement counts as an index → count
 * object, the text items (driver version, chip SKU and SKU mod, project and project SKU, chip
 * info, NVDEC0 and protected-PCIe status in that version) as UTF-8 up to their NUL padding,
 * every other item as hex — and the whole object is serialized with its keys sorted, as
 * serde_json writes a `Value`.
 *
 * @module
 */

import type { GpuReport } from "../../../../crypto/tee/mod.ts";

const NAMES: Record<number, string> = {
  1: "cert_issuer_name",
  2: "cert_authority_key_identifier",
  3: "driver_version",
  4: "gpu_info",
  5: "id_sku",
  6: "vbios_version",
  7: "manufacturer_id",
  8: "tamper_detection",
  9: "smc",
  10: "vpr",
  11: "nvdec0_status",
  12: "measurement_count",
  13: "cpr_info",
  14: "board_id",
  15: "chip_sku",
  16: "chip_sku_mod",
  17: "project",
  18: "project_sku",
  19: "project_sku_mod",
  20: "fwid",
  21: "protected_pcie_status",
};
const TEXT = new Set([3, 11, 15, 16, 17, 18, 21, 35]);

function hex(bytes: Uint8Array): string {
  return Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");
}

/** The source's claims JSON text for a report. */
export function sourceClaims(report: GpuReport, device: { arch: string; uuid: string }): string {
  const config: Record<string, unknown> = {};
  for (const [type, data] of report.opaque.items) {
    const name = NAMES[type] ?? `type_${type}`;
    if (type === 6) config[name] = report.opaque.vbiosVersion;
    else if (type === 12) {
      config[name] = Object.fromEntries(
        report.opaque.measurementCounts.map((count, i) => [String(i + 1), count]),
      );
    } else if (TEXT.has(type)) {
      config[name] = new TextDecoder().decode(data).replace(/\0+$/, "");
    } else config[name] = hex(data);
  }
  const measurements = Object.fromEntries(
    report.blocks.map((block) => [String(block.index), hex(block.value)]),
  );
  // JSON.stringify writes integer-like keys first in ascending order; serde_json sorts them as
  // strings ("1", "10", "11", …), so the text is assembled from sorted entries by hand.
  return stringifySorted({ arch: device.arch, config, measurements, uuid: device.uuid });
}

function stringifySorted(value: unknown): string {
  if (typeof value !== "object" || value === null) return JSON.stringify(value);
  if (Array.isArray(value)) return `[${value.map(stringifySorted).join(",")}]`;
  const record = value as Record<string, unknown>;
  const entries = Object.keys(record).sort().map((key) =>
    `${JSON.stringify(key)}:${stringifySorted(record[key])}`
  );
  return `{${entries.join(",")}}`;
}
