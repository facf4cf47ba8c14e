/**
 * The chart: one SVG with a panel per suite, each against its target, drawn
 * with Vega-Lite (compiled to Vega, rendered headless with `toSVG()`: pure
 * JS, no canvas, no native binaries). Both packages are devDependencies,
 * imported only here and only when a chart is drawn: without them the run
 * still writes its JSON and markdown, and says the chart was skipped.
 */
import { cpuContenders } from "../suites/cpu-batch.js";
import { dispatchContenders } from "../suites/dispatch-overhead.js";
import { harnessContenders } from "../suites/harness-load.js";
import { largeContenders } from "../suites/large-results.js";
import type { BenchReport } from "./report.js";

type Spec = Record<string, unknown>;

const panelWidth = 360;
const panelHeight = 190;
const targetColor = "#d62728";
const ourColor = "#1f77b4";
const peerColor = "#9e9e9e";

/** Short labels for the chart's axes. */
const shortNames: Record<string, string> = {
  [cpuContenders.pi]: "pi, in process",
  [cpuContenders.toolpool]: "toolpool",
  [cpuContenders.piOverPool]: "pi loop + toolpool tools",
  [cpuContenders.piscina]: "Piscina",
  [cpuContenders.tinypool]: "tinypool",
  [cpuContenders.workerpool]: "workerpool",
  [dispatchContenders.inProcess]: "in-process call",
  [dispatchContenders.piscina]: "Piscina",
  [dispatchContenders.batch]: "toolpool executeToolCalls",
  [dispatchContenders.agentTool]: "toolpool agentTools execute",
  [harnessContenders.pi]: "pi loop, tools in process",
};

const short = (name: string): string => shortNames[name] ?? name.replace(/^bare /, "");
const isOurs = (name: string): boolean => name.startsWith("toolpool") || name.includes("toolpool");

/** The Vega-Lite spec of the whole chart. */
export function createChartSpec(report: BenchReport): Spec {
  const panels = [
    speedupPanel(report),
    scalingPanel(report),
    dispatchPanel(report),
    loopDelayPanel(report),
    largeResultsPanel(report),
    harnessPanel(report),
  ].filter((panel): panel is Spec => panel !== undefined);
  const rows: Spec[] = [];
  // Every panel has its own colours and legend: concatenated views would share them otherwise.
  const resolve = { scale: { color: "independent", strokeDash: "independent", yOffset: "independent" }, legend: { color: "independent" } };
  for (let index = 0; index < panels.length; index += 2) rows.push({ hconcat: panels.slice(index, index + 2), spacing: 40, resolve });
  const met = report.targets.filter((t) => t.isMet).length;
  const m = report.machine;
  return {
    $schema: "https://vega.github.io/schema/vega-lite/v5.json",
    title: {
      text: `toolpool bench (${report.mode}) — ${m.cores} cores, Node ${m.nodeVersion}, ${report.date.slice(0, 16).replace("T", " ")} UTC`,
      subtitle: [
        `${m.cpuModel} · piscina ${m.piscinaVersion} · pi-agent-core ${m.piAgentCoreVersion} · medians of interleaved reps, whiskers = p25–p75 of the reps`,
        `Targets met: ${met} of ${report.targets.length}` +
          (met < report.targets.length
            ? ` (missed: ${report.targets
                .filter((t) => !t.isMet)
                .map((t) => t.target)
                .join("; ")})`
            : ""),
      ],
      anchor: "start",
      fontSize: 16,
      subtitleFontSize: 11,
    },
    vconcat: rows,
    spacing: 28,
    resolve,
    config: {
      font: "sans-serif",
      view: { stroke: null },
      axis: { labelFontSize: 10, titleFontSize: 11, labelLimit: 200 },
      legend: { labelFontSize: 10, titleFontSize: 10, orient: "bottom" },
      title: { fontSize: 13, subtitleFontSize: 10, anchor: "start" },
    },
  };
}

/** Renders the chart to an SVG string, or explains why it cannot. */
export async function renderChartSvg(report: BenchReport): Promise<{ svg: string } | { skipped: string }> {
  let vega: typeof import("vega");
  let vegaLite: typeof import("vega-lite");
  try {
    vega = await import("vega");
    vegaLite = await import("vega-lite");
  } catch (error) {
    return { skipped: `vega / vega-lite are not installed (${String((error as { code?: unknown }).code ?? error)}); \`npm install\` adds them` };
  }
  // Vega-Lite's own warnings (merged legends) would land between the progress lines.
  const compiled = vegaLite.compile(createChartSpec(report) as unknown as Parameters<typeof vegaLite.compile>[0], { logger: vega.logger(vega.None) });
  const view = new vega.View(vega.parse(compiled.spec), { renderer: "none" });
  try {
    return { svg: await view.toSVG() };
  } finally {
    view.finalize();
  }
}

/** What a horizontal bar (or dot) panel shows. */
interface BarPanel {
  title: string;
  subtitle: string;
  /** One row per bar: `label` is the category, `value` the bar, `low`/`high` the whisker, `text` the label after it. */
  rows: { label: string; group: string; value: number; low: number; high: number; text: string }[];
  axisTitle: string;
  /** The legend's title; no legend when there is only one group. */
  groupTitle: string | undefined;
  colors: string[];
  target?: { value: number; text: string } | undefined;
  /** Dots on a log scale instead of bars. */
  isLog?: boolean;
  /** Side by side bars per group within a row (default); false when each row has one group. */
  isOffsetByGroup?: boolean;
  /** Extra marks per row (e.g. a tick at the worst max), in the row's coordinates. */
  extraTicks?: { label: string; group: string; value: number }[];
}

function barPanel(panel: BarPanel): Spec {
  const groups = [...new Set(panel.rows.map((r) => r.group))];
  const labels = [...new Set(panel.rows.map((r) => r.label))];
  const maxValue = Math.max(
    ...panel.rows.map((r) => Math.max(r.high, r.value)),
    panel.target?.value ?? 0,
    ...(panel.extraTicks ?? []).map((t) => t.value),
  );
  const minValue = Math.min(...panel.rows.map((r) => Math.min(r.low, r.value)), panel.target?.value ?? Infinity);
  // Room on the right for the labels after the bars.
  const scale = panel.isLog ? { type: "log", domain: [Math.max(0.1, minValue / 1.5), maxValue * 8] } : { domain: [0, maxValue * 1.45], nice: false };
  const y = { field: "label", type: "nominal", title: null, sort: labels, scale: { type: "band", paddingInner: 0.25 }, axis: { labelLimit: 300 } };
  const yOffset = groups.length > 1 && panel.isOffsetByGroup !== false ? { field: "group", sort: groups, scale: { type: "band" } } : undefined;
  const color = {
    field: "group",
    type: "nominal",
    sort: groups,
    scale: { domain: groups, range: panel.colors },
    legend:
      groups.length > 1 && panel.groupTitle !== undefined
        ? { title: panel.groupTitle, orient: "bottom", direction: "horizontal", labelLimit: 250 }
        : null,
  };
  const rowEncoding = { y, color, ...(yOffset === undefined ? {} : { yOffset }) };
  const x = (field: string, withAxis = false) => ({
    field,
    type: "quantitative",
    scale,
    ...(withAxis ? { title: panel.axisTitle } : { title: null }),
  });
  const layers: Spec[] = [
    {
      data: { values: panel.rows },
      mark: panel.isLog ? { type: "point", filled: true, size: 70, opacity: 1 } : { type: "bar" },
      encoding: { ...rowEncoding, x: x("value", true) },
    },
    {
      data: { values: panel.rows },
      mark: { type: "rule", color: "#333", strokeWidth: 1.2 },
      encoding: { y, ...(yOffset === undefined ? {} : { yOffset }), x: x("low"), x2: { field: "high" } },
    },
    {
      data: { values: panel.rows },
      mark: { type: "text", align: "left", dx: 5, fontSize: 9.5, color: "#222" },
      encoding: { y, ...(yOffset === undefined ? {} : { yOffset }), x: x("high"), text: { field: "text" } },
    },
  ];
  if (panel.extraTicks !== undefined) {
    layers.push({
      data: { values: panel.extraTicks },
      mark: { type: "tick", orient: "vertical", thickness: 2, color: "#555" },
      encoding: { y, ...(yOffset === undefined ? {} : { yOffset }), x: x("value") },
    });
  }
  if (panel.target !== undefined) {
    layers.push(
      {
        data: { values: [panel.target] },
        mark: { type: "rule", color: targetColor, strokeDash: [5, 3], strokeWidth: 1.5 },
        encoding: { x: x("value") },
      },
      {
        data: { values: [panel.target] },
        mark: { type: "text", color: targetColor, align: "left", baseline: "bottom", dx: 3, y: -1, fontSize: 10, fontWeight: "bold" },
        encoding: { x: x("value"), text: { field: "text" } },
      },
    );
  }
  return {
    title: { text: panel.title, subtitle: panel.subtitle },
    width: panelWidth,
    height: panelHeight,
    layer: layers,
  };
}

const batchColors = ["#1f77b4", "#9ecae9", "#6baed6", "#08519c"];

function speedupPanel(report: BenchReport): Spec | undefined {
  const cpu = report.cpuBatch;
  if (cpu === undefined) return undefined;
  const ideal = Math.max(...cpu.batches.map((b) => b.ideal));
  return barPanel({
    title: "1. Speedup over pi's in-process loop (higher is better)",
    subtitle: `batches of ~${cpu.options.spin.measuredMs.toFixed(0)} ms CPU calls, pools of ${cpu.options.threads} threads; ideal = min(calls, cores) = ${ideal}`,
    rows: cpu.batches.flatMap((batch) =>
      batch.speedups.map((s) => ({
        label: short(s.name),
        group: `${batch.calls} calls`,
        value: s.ratioOfMedians,
        low: s.paired.p25,
        high: s.paired.p75,
        text: `${s.ratioOfMedians.toFixed(2)}× (${(s.efficiency * 100).toFixed(0)}%)`,
      })),
    ),
    axisTitle: "× pi's batch time",
    groupTitle: "batch",
    colors: batchColors,
    target: { value: 0.9 * ideal, text: `target ${(0.9 * ideal).toFixed(1)}×` },
  });
}

function scalingPanel(report: BenchReport): Spec | undefined {
  const scaling = report.scaling;
  if (scaling === undefined) return undefined;
  const series = ["toolpool", "bare Piscina", "ideal: min(threads, cores)"];
  const rows = scaling.points.flatMap((point) => [
    { threads: point.threads, series: series[0], speedup: point.speedup, low: point.pairedSpeedups.p25, high: point.pairedSpeedups.p75 },
    { threads: point.threads, series: series[1], speedup: point.controlSpeedup, low: point.controlSpeedup, high: point.controlSpeedup },
    { threads: point.threads, series: series[2], speedup: point.ideal, low: point.ideal, high: point.ideal },
  ]);
  const maxSpeedup = Math.max(...rows.map((r) => r.high));
  return {
    title: {
      text: "6. Scaling: speedup over pi by pool size",
      subtitle: `${scaling.options.calls} calls × ~${scaling.options.spin.measuredMs.toFixed(0)} ms on ${scaling.options.cores} cores; beyond the cores, threads only share them`,
    },
    width: panelWidth,
    height: panelHeight,
    data: { values: rows },
    layer: [
      {
        mark: { type: "line", point: { filled: true, size: 50 }, strokeWidth: 2 },
        encoding: {
          x: {
            field: "threads",
            type: "quantitative",
            title: "threads in the pool",
            axis: { values: scaling.points.map((p) => p.threads), format: "d" },
          },
          y: { field: "speedup", type: "quantitative", title: "× pi's batch time", scale: { domain: [0, maxSpeedup * 1.15], nice: false } },
          color: {
            field: "series",
            type: "nominal",
            sort: series,
            scale: { domain: series, range: [ourColor, peerColor, targetColor] },
            legend: { title: null, orient: "bottom", direction: "horizontal", labelLimit: 250 },
          },
          strokeDash: {
            field: "series",
            type: "nominal",
            sort: series,
            scale: {
              domain: series,
              range: [
                [1, 0],
                [1, 0],
                [5, 3],
              ],
            },
            legend: null,
          },
        },
      },
      {
        mark: { type: "rule", color: "#333" },
        encoding: { x: { field: "threads", type: "quantitative" }, y: { field: "low", type: "quantitative" }, y2: { field: "high" } },
      },
    ],
  };
}

function dispatchPanel(report: BenchReport): Spec | undefined {
  const dispatch = report.dispatchOverhead;
  if (dispatch === undefined) return undefined;
  const pinned = "skipped" in dispatch.pinnedSerial ? undefined : dispatch.pinnedSerial;
  const inFlightLabel = `${dispatch.options.concurrency} in flight`;
  const figure = (name: string, mode: "serial" | "inFlight") => dispatch.figures.find((f) => f.name === name && f.mode === mode)!;
  // One at a time, unpinned, the figure is mostly the VM's thread wake-up: the chart shows the pinned
  // run (only the call's own path), or else the fast chunks (p10).
  const serialLabel = pinned === undefined ? "one at a time (fast placement)" : "one at a time (pinned to 1 CPU)";
  const serialUs = (name: string) =>
    pinned === undefined ? (figure(name, "serial").chunkSummary?.p10 ?? NaN) : (pinned.figures.find((f) => f.name === name)?.summary.median ?? NaN);
  const names = [...new Set(dispatch.figures.map((f) => f.name))].filter(
    (name) => name !== dispatchContenders.inProcess && name !== dispatchContenders.piscina,
  );
  const rows = names.flatMap((name) => {
    const inFlight = dispatch.ratios.find((r) => r.contender === name && r.mode === "inFlight")!;
    const pinnedRatio = pinned?.ratios.find((r) => r.contender === name);
    const serialRatio = serialUs(name) / serialUs(dispatchContenders.piscina);
    return [
      {
        label: short(name),
        group: serialLabel,
        value: serialRatio,
        low: pinnedRatio?.paired.p25 ?? serialRatio,
        high: pinnedRatio?.paired.p75 ?? serialRatio,
        text: `${serialRatio.toFixed(2)}× (${serialUs(name).toFixed(0)} µs)`,
      },
      {
        label: short(name),
        group: inFlightLabel,
        value: inFlight.ratioOfMedians,
        low: inFlight.paired.p25,
        high: inFlight.paired.p75,
        text: `${inFlight.ratioOfMedians.toFixed(2)}× (${figure(name, "inFlight").summary.median.toFixed(0)} µs)`,
      },
    ];
  });
  return barPanel({
    title: "2. Per-call overhead ÷ bare Piscina, no-op calls (lower is better)",
    subtitle: `bare Piscina = 1× = ${serialUs(dispatchContenders.piscina).toFixed(0)} µs one at a time, ${figure(dispatchContenders.piscina, "inFlight").summary.median.toFixed(0)} µs/call with ${dispatch.options.concurrency} in flight`,
    rows,
    axisTitle: "× bare Piscina's time per call",
    groupTitle: "mode",
    colors: ["#4c78a8", "#f58518"],
    target: { value: 1.25, text: "target 1.25×" },
  });
}

function loopDelayPanel(report: BenchReport): Spec | undefined {
  const cpu = report.cpuBatch;
  if (cpu === undefined) return undefined;
  const floor = (ms: number) => Math.max(0.5, ms);
  return barPanel({
    title: "3. Main-thread event-loop delay during suite 1 (lower is better)",
    subtitle: "dot = p99 (median of reps), whisker = p99's p25–p75, tick = worst max; log scale",
    rows: cpu.batches.flatMap((batch) =>
      batch.contenders.map((c) => ({
        label: short(c.name),
        group: `${batch.calls} calls`,
        value: floor(c.loopDelayP99.median),
        low: floor(c.loopDelayP99.p25),
        high: floor(c.loopDelayP99.p75),
        text: `${c.loopDelayP99.median.toFixed(1)} ms`,
      })),
    ),
    extraTicks: cpu.batches.flatMap((batch) =>
      batch.contenders.map((c) => ({ label: short(c.name), group: `${batch.calls} calls`, value: floor(c.loopDelayMax.max) })),
    ),
    axisTitle: "ms (log scale)",
    groupTitle: "batch",
    colors: batchColors,
    target: { value: 10, text: "target 10 ms" },
    isLog: true,
  });
}

const largeNames: Record<string, string> = {
  [largeContenders.toolpoolText]: "toolpool: text (copied)",
  [largeContenders.toolpoolBinary]: "toolpool: Uint8Array (moved)",
  [largeContenders.piscinaText]: "Piscina: string (copied)",
  [largeContenders.piscinaCopy]: "Piscina: ArrayBuffer (copied)",
  [largeContenders.piscinaMove]: "Piscina: ArrayBuffer (Piscina.move)",
};

function largeResultsPanel(report: BenchReport): Spec | undefined {
  const large = report.largeResults;
  if (large === undefined) return undefined;
  return barPanel({
    title: `4. A ${(large.bytes / 2 ** 20).toFixed(0)} MiB result crossing to the main thread (lower is better)`,
    subtitle: "from the tool's return in the worker to the result in the caller's hands",
    rows: large.figures.map((f) => ({
      label: largeNames[f.name] ?? f.name,
      group: f.payload,
      value: f.crossing.median,
      low: f.crossing.p25,
      high: f.crossing.p75,
      text: `${f.crossing.median.toFixed(2)} ms`,
    })),
    axisTitle: "ms",
    groupTitle: "payload",
    colors: ["#54a24b", "#b279a2"],
    target: { value: 5, text: "target 5 ms (binary)" },
    isOffsetByGroup: false,
  });
}

function harnessPanel(report: BenchReport): Spec | undefined {
  const harness = report.harnessLoad;
  if (harness === undefined) return undefined;
  const o = harness.options;
  return barPanel({
    title: "5. Harness load: calls per second (higher is better)",
    subtitle: `${o.sessions} sessions × ${o.turns} turns × ${o.callsPerTurn} grep/hash/diff/patch calls; labels: batch p99, peak RSS`,
    rows: harness.contenders.map((c) => ({
      label: short(c.name),
      group: isOurs(c.name) ? "toolpool" : "others",
      value: c.callsPerSecond.median,
      low: c.callsPerSecond.p25,
      high: c.callsPerSecond.p75,
      text: `${c.callsPerSecond.median.toFixed(0)}/s · p99 ${c.batchP99.median.toFixed(0)} ms · ${c.peakRssMiB.median.toFixed(0)} MiB`,
    })),
    axisTitle: "tool calls per second",
    groupTitle: undefined,
    colors: [ourColor, peerColor],
    isOffsetByGroup: false,
  });
}
