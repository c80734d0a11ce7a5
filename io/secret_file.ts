/**
 * Secret files in a data directory (the daemon's API key, its consumer key): read with a warning
 * when other users can read them, or made on the first start — written atomically, mode 0600.
 *
 * @example
 * ```ts
 * import { readOrCreateSecret } from "./secret_file.ts";
 *
 * const dir = await Deno.makeTempDir();
 * const first = await readOrCreateSecret(`${dir}/token`, "token file", () => "s3cret");
 * const again = await readOrCreateSecret(`${dir}/token`, "token file", () => "other");
 * console.assert(first.generated && !again.generated && again.text === "s3cret");
 * await Deno.remove(dir, { recursive: true });
 * ```
 *
 * @module
 */

import { removeStaleTemporaryFiles, writeFileAtomic } from "./atomic_write.ts";

/** Options of {@linkcode readOrCreateSecret}. */
export interface SecretFileOptions {
  /** Random source for a generated secret. @default {crypto.getRandomValues} */
  randomBytes?: (length: number) => Uint8Array;
  /** Receives warnings (a key file others can read). @default {console.warn} */
  log?: (message: string) => void;
}

/** A secret's text and whether it was made now. */
export interface SecretText {
  /** The file's text, trimmed. */
  readonly text: string;
  /** Whether the file was written now. */
  readonly generated: boolean;
}

/**
 * Reads a secret file's text, trimmed, and warns through `log` when other users can read it
 * (`what` names the file in the warning, e.g. "API key file").
 *
 * @throws {Deno.errors.NotFound} when the file does not exist.
 */
export async function readSecretFile(
  path: string,
  what: string,
  log: (message: string) => void = (message) => console.warn(message),
): Promise<string> {
  const text = await Deno.readTextFile(path);
  if (Deno.build.os !== "windows") {
    const mode = (await Deno.stat(path)).mode ?? 0;
    if ((mode & 0o077) !== 0) {
      log(
        `daemon: the ${what} ${path} can be read by other users (mode ${
          (mode & 0o777).toString(8)
        }); chmod 600 it`,
      );
    }
  }
  return text.trim();
}

/**
 * The secret in `path`; when the file does not exist, a new one, `make(randomBytes)`, written
 * there first (atomically, mode 0600; a temporary file an earlier crash left is removed).
 */
export async function readOrCreateSecret(
  path: string,
  what: string,
  make: (randomBytes: (length: number) => Uint8Array) => string,
  options: SecretFileOptions = {},
): Promise<SecretText> {
  await removeStaleTemporaryFiles(path);
  try {
    return { text: await readSecretFile(path, what, options.log), generated: false };
  } catch (error) {
    if (!(error instanceof Deno.errors.NotFound)) throw error;
  }
  const random = options.randomBytes ?? ((n) => crypto.getRandomValues(new Uint8Array(n)));
  const text = make(random);
  await writeFileAtomic(path, `${text}\n`, { mode: 0o600 });
  return { text, generated: true };
}
