/**
 * The embedded stores' processes (`indexer/store/_embedded_process.ts`) seen from `/proc`
 * (Linux): which of a process's children they are, and the CPU they used.
 */

/** The children of process `pid` (every thread's `children` list). */
export function childrenOf(pid: number | "self"): number[] {
  const children: number[] = [];
  for (const task of Deno.readDirSync(`/proc/${pid}/task`)) {
    try {
      const listed = Deno.readTextFileSync(`/proc/${pid}/task/${task.name}/children`).trim();
      if (listed) children.push(...listed.split(" ").map(Number));
    } catch {
      // the thread ended while listed
    }
  }
  return children;
}

/** Whether process `pid` is an embedded store's process (its command line names the module). */
export function isStoreProcess(pid: number): boolean {
  try {
    return Deno.readTextFileSync(`/proc/${pid}/cmdline`).includes("_embedded_process.ts");
  } catch {
    return false; // gone
  }
}

/** The store processes among `pid`'s children. */
export function storeProcesses(pid: number | "self" = "self"): number[] {
  return childrenOf(pid).filter(isStoreProcess);
}

/** Whether process `pid` exists (and is not a zombie). */
export function alive(pid: number): boolean {
  try {
    const stat = Deno.readTextFileSync(`/proc/${pid}/stat`);
    return stat.slice(stat.lastIndexOf(")") + 2, stat.lastIndexOf(")") + 3) !== "Z";
  } catch {
    return false;
  }
}

/** CPU time (user + system, clock ticks) of `/proc/<pid>/stat`; with `children`, that of its waited-for children. */
export function cpuTicks(pid: number | "self", children = false): number {
  try {
    const stat = Deno.readTextFileSync(`/proc/${pid}/stat`);
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    // utime, stime are fields 14 and 15 of stat(5), cutime and cstime 16 and 17.
    return children
      ? Number(fields[13]) + Number(fields[14])
      : Number(fields[11]) + Number(fields[12]);
  } catch {
    return 0; // gone
  }
}
