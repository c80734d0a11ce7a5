/**
 * The set of approved enclave measurement ids (architecture §7). The daemon builds it from the
 * Registry (through `chain/`) or from a file an operator writes; an empty set refuses every
 * TEE request.
 *
 * File format (`measurements.json`):
 *
 * ```json
 * { "measurements": ["0x<32 bytes of hex>", "0x…"] }
 * ```
 *
 * Ids are `0x` followed by 64 hex digits (either case); unknown fields are refused. Compute an
 * id with {@linkcode tdxMeasurementId} or {@linkcode snpMeasurementId}.
 *
 * @example
 * ```ts
 * import { ApprovedMeasurements } from "@net/consumer/tee";
 *
 * const approved = ApprovedMeasurements.fromList(["0x" + "ab".repeat(32)]);
 * console.assert(approved.has("0x" + "AB".repeat(32)));
 * ```
 *
 * @module
 */

import { NetError } from "../../errors.ts";
import { to0x } from "../_bytes.ts";
import type { MeasurementId } from "./measurement_id.ts";

/** Thrown when an approved measurement set cannot be built or read. */
export class MeasurementSetError extends NetError {
  /** The error's name, a literal to tell it apart. */
  override readonly name = "MeasurementSetError" as const;
}

const ID_PATTERN = /^0x[0-9a-fA-F]{64}$/;

function normalize(id: string | Uint8Array, where: string): MeasurementId {
  if (id instanceof Uint8Array) {
    if (id.length !== 32) {
      throw new MeasurementSetError(
        `Cannot build the approved measurement set: ${where} must be 32 bytes, found ${id.length}`,
      );
    }
    return to0x(id);
  }
  if (typeof id !== "string" || !ID_PATTERN.test(id)) {
    throw new MeasurementSetError(
      `Cannot build the approved measurement set: ${where} must be 0x followed by 64 hex ` +
        `digits, found ${JSON.stringify(id)?.slice(0, 80)}`,
    );
  }
  return id.toLowerCase() as MeasurementId;
}

/** An immutable set of approved measurement ids. */
export class ApprovedMeasurements {
  readonly #ids: ReadonlySet<MeasurementId>;
  /** Where the set came from, for messages (e.g. a file path or "registry"). */
  readonly source: string;

  private constructor(ids: ReadonlySet<MeasurementId>, source: string) {
    this.#ids = ids;
    this.source = source;
  }

  /**
   * Builds the set from ids (`0x` + 64 hex digits, or 32 bytes). Duplicates collapse.
   *
   * @throws {MeasurementSetError} naming the first invalid entry.
   */
  static fromList(
    ids: Iterable<string | Uint8Array>,
    options: { source?: string } = {},
  ): ApprovedMeasurements {
    const set = new Set<MeasurementId>();
    let index = 0;
    for (const id of ids) set.add(normalize(id, `entry ${index++}`));
    return new ApprovedMeasurements(set, options.source ?? "list");
  }

  /**
   * Parses the JSON file format `{"measurements":["0x…"]}`.
   *
   * @throws {MeasurementSetError} when the text is not that format.
   */
  static fromJson(text: string, options: { source?: string } = {}): ApprovedMeasurements {
    const source = options.source ?? "JSON";
    let value: unknown;
    try {
      value = JSON.parse(text);
    } catch (cause) {
      throw new MeasurementSetError(
        `Cannot read the approved measurement set from ${source}: it is not JSON`,
        { cause },
      );
    }
    if (typeof value !== "object" || value === null || Array.isArray(value)) {
      throw new MeasurementSetError(
        `Cannot read the approved measurement set from ${source}: expected an object ` +
          `{"measurements":[…]}`,
      );
    }
    const record = value as Record<string, unknown>;
    for (const key of Object.keys(record)) {
      if (key !== "measurements") {
        throw new MeasurementSetError(
          `Cannot read the approved measurement set from ${source}: unknown field "${key}"`,
        );
      }
    }
    if (!Array.isArray(record.measurements)) {
      throw new MeasurementSetError(
        `Cannot read the approved measurement set from ${source}: "measurements" must be an array`,
      );
    }
    try {
      return ApprovedMeasurements.fromList(record.measurements as string[], { source });
    } catch (cause) {
      throw new MeasurementSetError(
        `Cannot read the approved measurement set from ${source}: ${
          (cause as MeasurementSetError).shortMessage.replace(
            "Cannot build the approved measurement set: ",
            "",
          )
        }`,
        { cause },
      );
    }
  }

  /**
   * Reads the JSON file format from a path.
   *
   * @throws {MeasurementSetError} when the file cannot be read or parsed.
   */
  static async fromFile(path: string | URL): Promise<ApprovedMeasurements> {
    let text: string;
    try {
      text = await Deno.readTextFile(path);
    } catch (cause) {
      throw new MeasurementSetError(
        `Cannot read the approved measurement set: ${String(path)} cannot be read (${
          cause instanceof Error ? cause.message : String(cause)
        })`,
        { cause },
      );
    }
    return ApprovedMeasurements.fromJson(text, { source: String(path) });
  }

  /** Number of approved ids. */
  get size(): number {
    return this.#ids.size;
  }

  /** Whether an id (hex in either case, or 32 bytes) is approved. Malformed ids are not. */
  has(id: string | Uint8Array): boolean {
    try {
      return this.#ids.has(normalize(id, "id"));
    } catch {
      return false;
    }
  }

  /** The ids, lower case, sorted. */
  list(): MeasurementId[] {
    return [...this.#ids].sort();
  }
}
