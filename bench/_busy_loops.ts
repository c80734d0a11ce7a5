/**
 * Two busy loops competing for the CPU, for the load benchmark's saturated case: this process
 * spins on its main thread and on one worker until it is killed. It prints `busy` once both run.
 *
 * Run: `deno run -A bench/_busy_loops.ts`.
 *
 * @module
 */

/** Spins forever. */
function spin(): never {
  for (;;) { /* compete for the CPU */ }
}

if (import.meta.main) {
  if (self.name === "spinner") {
    spin();
  } else {
    const worker = new Worker(import.meta.url, { type: "module", name: "spinner" });
    worker.postMessage("start");
    console.log("busy");
    setTimeout(spin, 0);
  }
}
