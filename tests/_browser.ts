/**
 * The browser test fixture: Debian's Chromium (`/usr/bin/chromium`, installed by `.ci/run`),
 * driven through `playwright-core` — Playwright's own browser download does not work on our
 * machines. Each session gets a fresh user-data directory, records every console error and
 * uncaught page error, and every request that leaves loopback; `await using` closes the
 * browser and removes the directory, also when a test fails.
 *
 * Host names other than `localhost` resolve to nothing inside the browser
 * (`--host-resolver-rules`), so a page that reaches for the internet fails visibly in the
 * test instead of working by accident on a connected machine.
 *
 * @example
 * ```ts ignore
 * import { launchBrowser } from "./_browser.ts";
 *
 * Deno.test("a page loads offline", async () => {
 *   await using browser = await launchBrowser({ viewport: { width: 375, height: 800 } });
 *   await browser.page.goto("http://127.0.0.1:8088/");
 *   assert.deepEqual(browser.consoleErrors(), []);
 *   assert.deepEqual(browser.offLoopbackRequests(), []);
 * });
 * ```
 *
 * @module
 */

import { type BrowserContext, chromium, type Page } from "playwright-core";
import { HANG_AFTER_MS } from "./_wait.ts";

/** Environment variable naming another Chromium binary. */
export const CHROMIUM_ENV = "NET_CHROMIUM";

/** Where Debian's `chromium` package puts the browser. */
export const DEBIAN_CHROMIUM = "/usr/bin/chromium";

/** The flags every session starts Chromium with. */
export const CHROMIUM_ARGS: readonly string[] = [
  "--no-sandbox",
  "--disable-gpu",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
  "--no-first-run",
  "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE localhost, EXCLUDE 127.0.0.1, EXCLUDE [::1]",
];

/** Options of {@linkcode launchBrowser}. */
export interface BrowserOptions {
  /**
   * The viewport of the session's pages, CSS pixels.
   *
   * @default {{ width: 1280, height: 900 }}
   */
  viewport?: { width: number; height: number };
  /**
   * The Chromium binary.
   *
   * @default {$NET_CHROMIUM, else /usr/bin/chromium}
   */
  executablePath?: string;
  /**
   * The browser's color scheme (`prefers-color-scheme`).
   *
   * @default {"light"}
   */
  colorScheme?: "light" | "dark";
}

/** A console message of type `error`, or an uncaught error of a page. */
export interface ConsoleError {
  /** The message. */
  text: string;
  /** The URL it came from (`""` when unknown). */
  url: string;
}

/** A running browser session. */
export interface BrowserSession extends AsyncDisposable {
  /** The session's context (one profile, in its own temporary directory). */
  readonly context: BrowserContext;
  /** The session's first page. */
  readonly page: Page;
  /** Console errors and uncaught page errors so far, oldest first. */
  consoleErrors(): ConsoleError[];
  /** The URL of every request made so far to a host that is not loopback. */
  offLoopbackRequests(): string[];
  /** Forgets the errors and requests recorded so far. */
  clearRecords(): void;
  /** Closes the browser and removes its directory; idempotent. */
  close(): Promise<void>;
}

function installHint(path: string): string {
  return `Cannot find Chromium at ${path}: install Debian's package (\`apt-get install -y ` +
    `chromium\`; \`.ci/run\` does this when it is missing) or point ${CHROMIUM_ENV} at a ` +
    "Chromium binary";
}

/** Whether `url` stays on this machine (loopback, or no network at all: data:, blob:, about:). */
export function isLoopbackUrl(url: string): boolean {
  const parsed = new URL(url);
  if (!["http:", "https:", "ws:", "wss:"].includes(parsed.protocol)) return true;
  const host = parsed.hostname.replace(/^\[|\]$/g, "");
  return host === "localhost" || host === "::1" || /^127\.\d+\.\d+\.\d+$/.test(host);
}

/**
 * Starts Chromium with a fresh profile and one page.
 *
 * @throws {Error} when the binary is missing (the message says how to install it).
 */
export async function launchBrowser(options: BrowserOptions = {}): Promise<BrowserSession> {
  const executablePath = options.executablePath ?? Deno.env.get(CHROMIUM_ENV) ??
    DEBIAN_CHROMIUM;
  try {
    Deno.statSync(executablePath);
  } catch {
    throw new Error(installHint(executablePath));
  }
  const dir = await Deno.makeTempDir({ prefix: "net-chromium-" });
  let context: BrowserContext;
  try {
    context = await chromium.launchPersistentContext(dir, {
      executablePath,
      headless: true,
      args: [...CHROMIUM_ARGS],
      viewport: options.viewport ?? { width: 1280, height: 900 },
      colorScheme: options.colorScheme ?? "light",
      // A wait for the launch, not a budget: a busy machine may take long to start Chromium.
      timeout: HANG_AFTER_MS,
    });
  } catch (error) {
    await Deno.remove(dir, { recursive: true }).catch(() => {});
    throw error;
  }
  let errors: ConsoleError[] = [];
  let leaks: string[] = [];
  context.on("console", (message) => {
    if (message.type() === "error") {
      errors.push({ text: message.text(), url: message.location().url ?? "" });
    }
  });
  context.on("weberror", (error) => {
    errors.push({ text: String(error.error()), url: error.page()?.url() ?? "" });
  });
  context.on("request", (request) => {
    if (!isLoopbackUrl(request.url())) leaks.push(request.url());
  });
  const page = context.pages()[0] ?? await context.newPage();
  let closed: Promise<void> | undefined;
  const close = () =>
    closed ??= (async () => {
      try {
        await context.close();
      } finally {
        await Deno.remove(dir, { recursive: true }).catch(() => {});
      }
    })();
  return {
    context,
    page,
    consoleErrors: () => [...errors],
    offLoopbackRequests: () => [...leaks],
    clearRecords: () => {
      errors = [];
      leaks = [];
    },
    close,
    [Symbol.asyncDispose]: close,
  };
}
