import assert from "node:assert/strict";
import { LATENCY_BUCKETS, METRICS_CONTENT_TYPE, MetricsRegistry, OTHER } from "../../io/metrics.ts";
import { parsePrometheusText, sampleValue } from "../_prometheus.ts";

Deno.test("the exposition parses, with HELP and label values escaped", async () => {
  const metrics = new MetricsRegistry({ prefix: "net_test_" });
  const counter = metrics.counter({
    name: "odd_total",
    help: 'A help with a backslash \\ and a\nnewline and "quotes".',
    labels: ["path"],
  });
  const odd = 'a "quoted" back\\slash\nand newline';
  counter.inc({ path: odd }, 2);
  const text = await metrics.text();
  assert.ok(
    text.includes("# HELP net_test_odd_total A help with a backslash \\\\ and a\\nnewline"),
  );
  assert.ok(text.includes('path="a \\"quoted\\" back\\\\slash\\nand newline"'));
  const families = parsePrometheusText(text);
  const family = families.get("net_test_odd_total")!;
  assert.equal(family.type, "counter");
  assert.equal(family.help, 'A help with a backslash \\ and a\nnewline and "quotes".');
  assert.deepEqual(family.samples, [{
    name: "net_test_odd_total",
    labels: { path: odd },
    value: 2,
  }]);
  assert.equal(metrics.contentType, METRICS_CONTENT_TYPE);
  assert.equal(METRICS_CONTENT_TYPE, "text/plain; version=0.0.4; charset=utf-8");
});

Deno.test("counters, gauges and histograms: values, cumulative buckets, +Inf, sum and count", async () => {
  let clock = 1000;
  const metrics = new MetricsRegistry({ prefix: "net_test_", now: () => clock });
  const requests = metrics.counter({
    name: "requests_total",
    help: "Requests.",
    labels: ["status"],
  });
  const queue = metrics.gauge({ name: "queue_depth", help: "Queued." });
  const latency = metrics.histogram({
    name: "latency_seconds",
    help: "Latency.",
    labels: ["route"],
    buckets: [0.01, 0.5, 5],
  });
  requests.inc({ status: 200 });
  requests.inc({ status: "200" }, 4);
  requests.inc({ status: 503 });
  queue.inc();
  queue.inc(undefined, 5);
  queue.dec();
  for (const v of [0.004, 0.3, 0.3, 7]) latency.observe({ route: "/stats" }, v);
  const stop = latency.startTimer({ route: "/timed" });
  clock += 250;
  assert.equal(stop(), 0.25);
  const families = parsePrometheusText(await metrics.text());
  assert.equal(sampleValue(families, "net_test_requests_total", { status: "200" }), 5);
  assert.equal(sampleValue(families, "net_test_requests_total", { status: "503" }), 1);
  assert.equal(sampleValue(families, "net_test_queue_depth"), 5);
  assert.equal(families.get("net_test_latency_seconds")!.type, "histogram");
  const bucket = (le: string, route = "/stats") =>
    sampleValue(families, "net_test_latency_seconds_bucket", { route, le });
  assert.deepEqual(["0.01", "0.5", "5", "+Inf"].map((le) => bucket(le)), [1, 3, 3, 4]);
  assert.equal(sampleValue(families, "net_test_latency_seconds_sum", { route: "/stats" }), 7.604);
  assert.equal(sampleValue(families, "net_test_latency_seconds_count", { route: "/stats" }), 4);
  assert.deepEqual(["0.01", "0.5", "+Inf"].map((le) => bucket(le, "/timed")), [0, 1, 1]);
  assert.deepEqual(LATENCY_BUCKETS.at(0), 0.005);
});

Deno.test("label sets are bounded: undeclared values and series past the limit become other", async () => {
  const metrics = new MetricsRegistry();
  const rejected = metrics.counter({
    name: "rejected_total",
    help: "Rejections.",
    labels: ["reason"],
    values: { reason: ["malformed", "not_bonded"] },
  });
  rejected.inc({ reason: "malformed" });
  rejected.inc({ reason: "/etc/passwd" });
  rejected.inc({ reason: "x".repeat(10_000) });
  const paths = metrics.counter({
    name: "paths_total",
    help: "Paths.",
    labels: ["path", "m"],
    maxSeries: 3,
  });
  for (let i = 0; i < 100; i++) paths.inc({ path: `/p${i}`, m: "GET" });
  paths.inc({ path: "/p1", m: "GET" }); // an existing series keeps counting
  const families = parsePrometheusText(await metrics.text());
  assert.deepEqual(
    families.get("rejected_total")!.samples.map((s) => [s.labels.reason, s.value]),
    [["malformed", 1], [OTHER, 2]],
  );
  const series = families.get("paths_total")!.samples.map((
    s,
  ) => [s.labels.path, s.labels.m, s.value]);
  assert.deepEqual(series, [["/p0", "GET", 1], ["/p1", "GET", 2], ["/p2", "GET", 1], [
    OTHER,
    OTHER,
    97,
  ]]);
});

Deno.test("names follow the conventions, checked when declared", () => {
  const metrics = new MetricsRegistry({ prefix: "net_" });
  const refused: [() => unknown, RegExp][] = [
    [() => metrics.counter({ name: "requests", help: "h" }), /a counter's name ends with _total/],
    [() => metrics.gauge({ name: "queued_total", help: "h" }), /only counters end with _total/],
    [() => metrics.histogram({ name: "Latency-Seconds", help: "h" }), /snake_case/],
    [
      () => metrics.counter({ name: "a_total", help: "h", labels: ["le"] }),
      /not a valid label name/,
    ],
    [
      () => metrics.counter({ name: "b_total", help: "h", labels: ["__x"] }),
      /not a valid label name/,
    ],
    [
      () =>
        metrics.counter({ name: "c_total", help: "h", labels: ["a"], values: { b: [] } as never }),
      /values are given for b, which is not one of its labels \(a\)/,
    ],
    [() => metrics.histogram({ name: "d_seconds", help: "h", buckets: [1, 1] }), /ascending/],
    [() => metrics.gauge({ name: "e", help: "h", maxSeries: 0 }), /maxSeries must be a positive/],
    [() => new MetricsRegistry({ prefix: "Net" }), /prefix "Net" must be snake_case ending with _/],
  ];
  refused.push([() => metrics.gauge({ name: "f", help: " " }), /its help is empty/]);
  for (const [declare, message] of refused) assert.throws(declare, message);
  metrics.gauge({ name: "twice", help: "h" });
  assert.throws(
    () => metrics.gauge({ name: "twice", help: "h" }),
    /net_twice: it is declared already/,
  );
  const counter = metrics.counter({ name: "up_total", help: "h" });
  assert.throws(() => counter.inc(undefined, -1), /Cannot add -1 to counter net_up_total/);
});

Deno.test("a gauge's collect runs at each scrape; the process gauges read Deno", async () => {
  const metrics = new MetricsRegistry({ prefix: "net_test_" });
  let age = 0;
  metrics.gauge({
    name: "snapshot_age_seconds",
    help: "Age of the served snapshot.",
    collect: (gauge) => gauge.set({}, age),
  });
  metrics.processMetrics();
  metrics.processMetrics(); // idempotent
  age = 12;
  let families = parsePrometheusText(await metrics.text());
  assert.equal(sampleValue(families, "net_test_snapshot_age_seconds"), 12);
  age = 13;
  families = parsePrometheusText(await metrics.text());
  assert.equal(sampleValue(families, "net_test_snapshot_age_seconds"), 13);
  assert.ok(sampleValue(families, "process_resident_memory_bytes")! > 1_000_000);
  assert.ok(sampleValue(families, "process_heap_bytes")! > 0);
  const start = sampleValue(families, "process_start_time_seconds")!;
  assert.ok(Math.abs(start - Date.now() / 1000) < 3600, `start ${start}`);
});

Deno.test("the test's parser refuses what breaks the format", () => {
  const broken: [string, RegExp][] = [
    ["x_total 1\n", /has no # TYPE/],
    ['# TYPE x_total counter\nx_total{a="1" 1\n', /, or } is expected/],
    ["# TYPE x_total counter\nx_total{a=1} 1\n", /="…" is expected/],
    ["# TYPE x_total counter\nx_total one\n", /is not a number/],
    ["# TYPE x_total counter\nx_total 1", /does not end with a newline/],
    ["# TYPE x counter\nx 1\n", /does not end with _total/],
    ["# TYPE a gauge\na 1\n# TYPE b gauge\nb 1\na 2\n", /family a is split/],
    ['# TYPE a gauge\na{x="1"} 1\na{x="1"} 2\n', /appears twice/],
    ['# TYPE h histogram\nh_bucket{le="1"} 1\nh_sum 1\nh_count 1\n', /no le="\+Inf" bucket/],
    [
      '# TYPE h histogram\nh_bucket{le="1"} 2\nh_bucket{le="+Inf"} 1\nh_sum 1\nh_count 1\n',
      /not ascending and cumulative/,
    ],
    ['# TYPE h histogram\nh_bucket{le="+Inf"} 2\nh_sum 1\nh_count 1\n', /is not _count/],
    ['# TYPE g gauge\ng{a="\\t"} 1\n', /unknown escape/],
  ];
  for (const [text, message] of broken) {
    assert.throws(() => parsePrometheusText(text), message, text);
  }
  const ok = parsePrometheusText('# a comment\n# TYPE g gauge\ng{a="x",} +Inf 1700000000000\n\n');
  assert.equal(sampleValue(ok, "g"), Infinity);
});

Deno.test("a gauge's reset forgets its series (labelled: none shown; unlabelled: 0)", async () => {
  const metrics = new MetricsRegistry({ prefix: "net_test_" });
  const routers = metrics.gauge({
    name: "routers",
    help: "Routers by state.",
    labels: ["state"],
    values: { state: ["registered", "reachable"] },
  });
  const plain = metrics.gauge({ name: "plain", help: "A gauge without labels." });
  routers.set({ state: "registered" }, 3);
  routers.set({ state: "reachable" }, 2);
  plain.set({}, 7);
  let families = parsePrometheusText(await metrics.text());
  assert.equal(sampleValue(families, "net_test_routers", { state: "reachable" }), 2);
  routers.reset();
  plain.reset();
  families = parsePrometheusText(await metrics.text());
  assert.deepEqual(families.get("net_test_routers")!.samples, []);
  assert.equal(sampleValue(families, "net_test_plain"), 0);
  routers.set({ state: "registered" }, 4);
  families = parsePrometheusText(await metrics.text());
  assert.deepEqual(families.get("net_test_routers")!.samples.map((s) => s.value), [4]);
});
