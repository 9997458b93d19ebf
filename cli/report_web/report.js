// memtrail report: draws the page from the JSON `memtrail report` embedded in it. Every number
// shown comes from that JSON (the CLI's own --json output, or the pictures reduced in C++);
// this script only formats and draws. When everything is drawn it sets
// window.__memtrailDrawnMs (milliseconds since navigation) for the tests and the benchmark.
//
// [SECTION] formatting, as the CLI formats
// [SECTION] building the DOM
// [SECTION] facts: the file and the totals at the peak
// [SECTION] the OOM verdict and its remedies
// [SECTION] the timeline stacked by category (uPlot)
// [SECTION] canvases: the segment map and the flame graph
// [SECTION] tables: categories, top stacks, ranks
// [SECTION] the page
"use strict";

//-------------------------------------------------------------------------------------------------
// [SECTION] formatting, as the CLI formats
//-------------------------------------------------------------------------------------------------

// analysis::format_bytes: "1.5GiB", two decimals at most, rounded as printf("%.2f") rounds
// (to even on an exact tie, which toFixed rounds up).
function formatBytes(bytes) {
  const names = ["B", "KiB", "MiB", "GiB", "TiB"];
  let value = bytes, index = 0;
  while (value >= 1024 && index + 1 < names.length) { value /= 1024; ++index; }
  if (index === 0) return String(bytes) + "B";
  const scaled = value * 100, floor = Math.floor(scaled);
  let text;
  if (scaled - floor === 0.5) {
    text = ((floor % 2 === 0 ? floor : floor + 1) / 100).toFixed(2);
  } else {
    text = value.toFixed(2);
  }
  text = text.replace(/0+$/, "").replace(/\.$/, "");
  return text + names[index];
}

// cli::percent: "12.5%".
function formatPercent(fraction) { return (fraction * 100).toFixed(1) + "%"; }

// cli::position_label: the state after the first p entries is "entry p-1".
function positionLabel(p) { return p === 0 ? "start" : "entry " + (p - 1); }

function hexAddress(a) { return "0x" + a.toString(16); }

const categoryColors = {
  parameter: "#4e79a7", optimizer_state: "#f28e2b", gradient: "#e15759", activation: "#76b7b2",
  temporary: "#59a14f", input: "#edc948", autograd_detail: "#b07aa1", kv_cache: "#ff9da7",
  workspace: "#9c755f", collective: "#17becf", unknown: "#bab0ac",
};

//-------------------------------------------------------------------------------------------------
// [SECTION] building the DOM
//-------------------------------------------------------------------------------------------------

// el("td", {class: "number", "data-bytes": 5}, "5B"): attributes, then text or child nodes.
function el(tag, attributes, ...children) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attributes || {})) {
    if (value !== undefined && value !== null) node.setAttribute(name, String(value));
  }
  for (const child of children.flat()) {
    if (child === null || child === undefined) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

function bytesCell(bytes) { return el("td", {class: "number", "data-bytes": bytes}, formatBytes(bytes)); }

function table(headers, rows, attributes) {
  return el("table", attributes,
    el("thead", null, el("tr", null, headers.map((h) => el("th", {class: h.number ? "number" : null}, h.text ?? h)))),
    el("tbody", null, rows));
}

function framesList(frames) {
  return el("ol", {class: "frames"}, frames.map((f) => el("li", null, f)));
}

// A canvas sized for the screen's pixel ratio; returns its 2D context in CSS pixels.
function sizedCanvas(canvas, width, height) {
  const ratio = window.devicePixelRatio || 1;
  canvas.width = Math.max(1, Math.round(width * ratio));
  canvas.height = Math.max(1, Math.round(height * ratio));
  canvas.style.height = height + "px";
  const context = canvas.getContext("2d");
  context.setTransform(ratio, 0, 0, ratio, 0, 0);
  return context;
}

//-------------------------------------------------------------------------------------------------
// [SECTION] facts: the file and the totals at the peak
//-------------------------------------------------------------------------------------------------

function factsSection(file) {
  const rank = file.summary.ranks[0], facts = file.facts, t = rank.totals;
  const fileRows = [
    ["file", file.path], ["kind", facts.kind], ["producer", facts.producer || "-"],
    ["host", facts.host || "-"], ["process", facts.pid || "-"], ["device", String(file.device)],
    ["trace entries", rank.entries + (rank.dropped ? " (" + rank.dropped + " dropped before them)" : "")],
  ];
  for (const d of facts.devices) {
    fileRows.push(["device " + d.device, d.name + ", " + formatBytes(d.total_memory) + ", compute " + d.compute_capability]);
  }
  const s = facts.settings;
  fileRows.push(["allocator settings", s.conf ? s.conf : "(PYTORCH_CUDA_ALLOC_CONF unset)"]);
  fileRows.push(["expandable segments", String(s.expandable_segments)]);
  if (s.max_split_size >= 0) fileRows.push(["max split size", formatBytes(s.max_split_size)]);
  if (s.garbage_collection_threshold > 0) fileRows.push(["garbage collection threshold", String(s.garbage_collection_threshold)]);
  const totalsRows = [
    ["reserved", t.reserved, t.segments + " segments"],
    ["allocated", t.allocated, t.allocated_blocks + " blocks"],
    ["pending free", t.pending_free, t.pending_free_blocks + " blocks waiting for other streams"],
    ["free in segments", t.free, t.free_blocks + " blocks, largest " + formatBytes(t.largest_free)],
    ["requested", t.requested, "by callers, of the active blocks"],
    ["rounding waste", t.rounding_waste, "block size - requested"],
  ].map(([name, bytes, note]) => el("tr", {"data-key": name}, el("th", null, name), bytesCell(bytes), el("td", null, note)));
  totalsRows.push(el("tr", {"data-key": "fragmentation"}, el("th", null, "fragmentation"),
    el("td", {class: "number"}, formatPercent(t.fragmentation)), el("td", null, "1 - largest free / free")));
  for (const name of ["allocated", "active", "reserved"]) {
    const peak = rank.peaks[name];
    totalsRows.push(el("tr", {"data-key": "peak " + name}, el("th", null, "peak " + name),
      bytesCell(peak.bytes), el("td", null, "at " + peak.label)));
  }
  return el("div", {class: "facts"},
    el("div", null, el("h3", null, "The file"),
      table(["", ""], fileRows.map(([k, v]) => el("tr", {"data-key": k}, el("th", null, k), el("td", null, v))), {class: "file-facts"})),
    el("div", null, el("h3", {class: "totals-heading"}, "At the " + rank.at.label),
      table(["", {text: "bytes", number: true}, ""], totalsRows, {class: "totals"})));
}

//-------------------------------------------------------------------------------------------------
// [SECTION] the OOM verdict and its remedies
//-------------------------------------------------------------------------------------------------

function oomSection(file) {
  if (!file.oom) return null;
  const reports = file.oom.ooms.map((r) => {
    const remedies = r.remedies;
    let remedyList;
    if (!remedies) {
      remedyList = el("p", {class: "note"}, "remedies not checked (--no-remedies)");
    } else if (!remedies.checked) {
      remedyList = el("p", {class: "note remedies-unchecked"}, remedies.heading);
    } else {
      // The sentences are memtrail oom's own (its --json carries them), never re-worded here.
      remedyList = el("div", null,
        el("div", {class: "remedies-heading"}, remedies.heading),
        el("ul", {class: "remedies"}, remedies.tried.map((m) =>
          el("li", {class: m.avoids ? "remedy avoids" : "remedy", "data-avoids": m.avoids}, m.text))),
        remedies.conclusion ? el("p", {class: "remedies-conclusion"}, remedies.conclusion) : null);
    }
    return el("div", {class: "oom", "data-entry": r.entry},
      el("div", {class: "oom-headline"}, "OOM at entry " + r.entry + ": " + formatBytes(r.requested) +
        " (" + r.requested + " bytes) on stream " + r.stream + ", " + r.pool + " pool"),
      el("div", {class: "verdict"}, "verdict: ",
        el("span", {class: "verdict-text"}, r.verdict_text),
        r.secondary_text ? " (secondary: " + r.secondary_text + ")" : ""),
      el("p", {class: "explanation"}, r.explanation),
      r.unknown.map((u) => el("p", {class: "note unknown"}, "unknown: " + u)),
      remedyList,
      el("p", {class: "note"}, "allocated at:"), framesList(r.stack));
  });
  return el("div", null, reports,
    el("details", {class: "oom-text", open: ""}, el("summary", null,
      "what memtrail oom prints for this file: the blockers and the largest holders"),
      el("pre", null, file.oom_text)));
}

//-------------------------------------------------------------------------------------------------
// [SECTION] the timeline stacked by category (uPlot)
//-------------------------------------------------------------------------------------------------

// Tick steps for a bytes axis: powers of two (512MiB, 1GiB, 2GiB...), never 76.84MiB.
const byteIncrements = Array.from({length: 52}, (_, k) => 2 ** k);

// Vertical lines at the peak and the OOMs, drawn over the plot.
function markersPlugin(markers) {
  return {hooks: {draw: (u) => {
    const context = u.ctx;
    context.save();
    for (const m of markers) {
      const x = Math.round(u.valToPos(m.position, "x", true));
      if (x < u.bbox.left || x > u.bbox.left + u.bbox.width) continue;
      context.strokeStyle = m.color;
      context.lineWidth = 2 * (window.devicePixelRatio || 1);
      context.setLineDash(m.dash);
      context.beginPath();
      context.moveTo(x, u.bbox.top);
      context.lineTo(x, u.bbox.top + u.bbox.height);
      context.stroke();
    }
    context.restore();
  }}};
}

function timelineSection(file, container) {
  const t = file.timeline;
  const note = el("p", {class: "note"});
  const chart = el("div", {class: "chart timeline"});
  container.append(chart, note);
  // Layers drawn as running totals, the top one first, so each fills down to the one below.
  const totals = [];
  let running = t.x.map(() => 0);
  for (const layer of t.layers) {
    running = running.map((v, i) => v + layer.bytes[i]);
    totals.push(running);
  }
  const data = [t.x];
  const series = [{label: "position", value: (u, v) => (v === null ? "" : positionLabel(v))}];
  for (let i = t.layers.length - 1; i >= 0; --i) {
    const layer = t.layers[i], color = categoryColors[layer.category] || "#999";
    data.push(totals[i]);
    series.push({label: layer.category, stroke: color, fill: color, width: 0, points: {show: false},
      value: (u, v, s, index) => (index === null ? "" : formatBytes(layer.bytes[index]))});
  }
  for (const [name, curve, color] of [["allocated", t.allocated, "#1d2230"], ["reserved", t.reserved, "#7a5bd0"]]) {
    data.push(curve.max);
    series.push({label: name + " (min-max)", stroke: color, width: 1.5, points: {show: false},
      value: (u, v, s, index) => (index === null ? "" : formatBytes(curve.min[index]) + " - " + formatBytes(curve.max[index]))});
  }
  const markers = [{position: t.peak_position, color: "#c0392b", dash: [6, 4]}];
  for (const p of t.oom_positions) markers.push({position: p, color: "#000", dash: []});
  const width = () => Math.max(400, chart.clientWidth || 900);
  const plot = new uPlot({
    width: width(), height: 320, series, plugins: [markersPlugin(markers)],
    scales: {x: {time: false}},
    cursor: {drag: {x: true, y: false}},
    axes: [{values: (u, ticks) => ticks.map((v) => Math.round(v))},
           {size: 70, incrs: byteIncrements, values: (u, ticks) => ticks.map(formatBytes)}],
  }, data, chart);
  window.addEventListener("resize", () => plot.setSize({width: width(), height: 320}));
  note.append(...[ "x: trace position (the state after that many entries); " + t.x.length + " columns over " +
    t.entries + " entries, each the min and max of its entries; drag to zoom, double-click to reset. ",
    el("span", {class: "peak-marker"}, "dashed red: peak allocated " + formatBytes(t.peak_allocated) + " at " + positionLabel(t.peak_position)),
    t.oom_positions.length ? el("span", {class: "oom-marker"}, "; black: OOM at " +
      t.oom_positions.map((p) => "entry " + (p - 1)).join(", ")) : null].filter((part) => part !== null));
}

//-------------------------------------------------------------------------------------------------
// [SECTION] canvases: the segment map and the flame graph
//-------------------------------------------------------------------------------------------------

const blockStates = [["allocated", "#3b6fd8"], ["pending free", "#e08a2b"], ["free", "#d9dee7"]];

// One row per segment, to scale: the largest segment fills the width.
function segmentMapSection(file, container) {
  const map = file.segment_map, segments = map.segments;
  const canvas = el("canvas", {class: "map"}), hover = el("div", {class: "hover"});
  container.append(el("p", {class: "note"}, segments.length + " segments at " + positionLabel(map.position) +
      ", one row each, to scale. ", blockStates.map(([name, color]) =>
        el("span", null, el("span", {class: "legend-key", style: "background:" + color}), name + " "))),
    canvas, hover);
  if (segments.length === 0) return;
  const largest = Math.max(...segments.map((s) => s.size));
  const rowHeight = Math.max(1, Math.min(10, Math.floor(400 / segments.length)));
  const draw = () => {
    const width = canvas.clientWidth || 900;
    const context = sizedCanvas(canvas, width, rowHeight * segments.length);
    segments.forEach((s, row) => {
      for (const [offset, size, state] of s.blocks) {
        context.fillStyle = blockStates[state][1];
        context.fillRect(offset / largest * width, row * rowHeight,
          Math.max(size / largest * width, 0.5), rowHeight - (rowHeight > 3 ? 1 : 0));
      }
    });
  };
  draw();
  window.addEventListener("resize", draw);
  canvas.addEventListener("mousemove", (event) => {
    const s = segments[Math.floor(event.offsetY / rowHeight)];
    if (!s) return;
    const offset = event.offsetX / canvas.clientWidth * largest;
    const block = s.blocks.find(([o, size]) => offset >= o && offset < o + size);
    hover.textContent = "segment " + hexAddress(s.address) + ", " + formatBytes(s.size) + ", " + s.pool +
      " pool" + (s.private ? " (private)" : "") + (s.expandable ? ", expandable" : "") + ", stream " +
      hexAddress(s.stream) + (block ? ": " + formatBytes(block[1]) + " " + blockStates[block[2]][0] +
      " at +" + formatBytes(block[0]) : "");
  });
}

// An icicle: the root (every live byte) on top, callers above callees; click a frame to zoom.
function flameSection(file, container) {
  const flame = file.flame, rowHeight = 18;
  const nodes = flame.nodes.map(([name, parent, bytes, self]) =>
    ({name: flame.names[name], parent, bytes, self, children: [], depth: 0}));
  nodes.forEach((n, i) => { if (n.parent >= 0) { nodes[n.parent].children.push(i); n.depth = nodes[n.parent].depth + 1; } });
  nodes.forEach((n) => n.children.sort((a, b) => nodes[b].bytes - nodes[a].bytes));
  const depth = nodes.reduce((m, n) => Math.max(m, n.depth), 0) + 1;
  const canvas = el("canvas", {class: "flame"}), hover = el("div", {class: "hover"});
  container.append(el("p", {class: "note"}, formatBytes(flame.total) + " allocated at " + file.peak_label +
    "; frames under 1/4096 of it left out. Click a frame to zoom in, the top row to zoom out."), canvas, hover);
  if (nodes.length === 0) return;
  let focus = 0, boxes = [];
  const draw = () => {
    const width = canvas.clientWidth || 900;
    const context = sizedCanvas(canvas, width, depth * rowHeight);
    context.font = "12px system-ui, sans-serif";
    context.textBaseline = "middle";
    boxes = [];
    const place = (index, x, w, row) => {
      if (w < 0.5) return;
      const n = nodes[index];
      let hue = 0;
      for (let i = 0; i < n.name.length; ++i) hue = (hue * 31 + n.name.charCodeAt(i)) % 360;
      context.fillStyle = index === 0 ? "#c9ced8" : "hsl(" + (hue % 50 + 10) + ",75%," + (62 + hue % 12) + "%)";
      context.fillRect(x, row * rowHeight, Math.max(w - 1, 0.5), rowHeight - 1);
      if (w > 40) {
        context.fillStyle = "#1d2230";
        context.save();
        context.beginPath();
        context.rect(x, row * rowHeight, w - 2, rowHeight);
        context.clip();
        context.fillText(n.name, x + 3, row * rowHeight + rowHeight / 2);
        context.restore();
      }
      boxes.push({index, x, w, row});
      let childX = x;
      for (const c of n.children) {
        const cw = nodes[c].bytes / n.bytes * w;
        place(c, childX, cw, row + 1);
        childX += cw;
      }
    };
    place(focus, 0, width, nodes[focus].depth);
  };
  draw();
  window.addEventListener("resize", draw);
  const boxAt = (event) => boxes.find((b) => Math.floor(event.offsetY / rowHeight) === b.row &&
    event.offsetX >= b.x && event.offsetX < b.x + b.w);
  canvas.addEventListener("mousemove", (event) => {
    const b = boxAt(event);
    if (!b) return;
    const n = nodes[b.index];
    hover.textContent = n.name + ": " + formatBytes(n.bytes) + " (" + formatPercent(n.bytes / flame.total) +
      "), " + formatBytes(n.self) + " allocated in this frame itself";
  });
  canvas.addEventListener("click", (event) => {
    const b = boxAt(event);
    if (!b) return;
    focus = b.index === focus ? Math.max(nodes[focus].parent, 0) : b.index;
    draw();
  });
}

//-------------------------------------------------------------------------------------------------
// [SECTION] tables: categories, top stacks, ranks
//-------------------------------------------------------------------------------------------------

function categoriesSection(file) {
  const c = file.categories;
  const rows = Object.entries(c.categories).filter(([, bytes]) => bytes > 0)
    .sort((a, b) => b[1] - a[1])
    .map(([name, bytes]) => el("tr", {"data-category": name},
      el("td", null, el("span", {class: "legend-key", style: "background:" + (categoryColors[name] || "#999")}), name),
      bytesCell(bytes), el("td", {class: "number"}, formatPercent(c.allocated ? bytes / c.allocated : 0)),
      el("td", {class: "number"}, c.details[name].blocks),
      el("td", {class: "number"}, c.details[name].confidence.toFixed(2))));
  rows.push(el("tr", {"data-category": "all"}, el("th", null, "allocated"), bytesCell(c.allocated)));
  return el("div", null,
    el("p", {class: "note"}, "at " + c.at.label + "; the job looks like " + c.kind +
      (c.steps.source !== "none" ? ", " + (c.steps.boundaries.length + 1) + " steps (from " + c.steps.source + ")" : "")),
    table(["category", {text: "bytes", number: true}, {text: "share", number: true},
      {text: "blocks", number: true}, {text: "confidence", number: true}], rows, {class: "categories"}),
    c.contradictions.map((x) => el("p", {class: "note contradiction"}, "note: " + (x.text ?? JSON.stringify(x)))));
}

function topSection(file) {
  const rank = file.top.ranks[0];
  const rows = rank.stacks.map((s, i) => el("tr", {class: "stack"},
    el("td", {class: "number"}, "#" + (i + 1)), bytesCell(s.bytes),
    el("td", {class: "number"}, formatPercent(s.share)), el("td", {class: "number"}, s.blocks),
    bytesCell(s.largest_block), el("td", null, framesList(s.frames))));
  return el("div", null,
    el("p", {class: "note"}, formatBytes(rank.live_bytes) + " allocated at " + rank.at.label +
      "; stacks folded as memtrail top folds them"),
    table(["", {text: "bytes", number: true}, {text: "share", number: true}, {text: "blocks", number: true},
      {text: "largest", number: true}, "allocated at"], rows, {class: "top"}));
}

// One cell of a ranks row, whatever the ranks analysis puts there: a size (keys that name
// bytes), a peak ({bytes, label}), a list, an object of fields, or text.
function rankCell(key, value) {
  if (value === null || value === undefined) return el("td", null, "-");
  if (typeof value === "object" && !Array.isArray(value) && "bytes" in value && "label" in value) {
    return el("td", {class: "number", "data-bytes": value.bytes}, formatBytes(value.bytes) + " at " + value.label);
  }
  if (typeof value === "number" && /allocated|reserved|bytes|memory/.test(key) && !/allocations/.test(key)) {
    return bytesCell(value);
  }
  if (Array.isArray(value)) return el("td", null, value.map((v) => (typeof v === "object" ? JSON.stringify(v) : v)).join(", "));
  if (typeof value === "object") {
    return el("td", null, Object.entries(value).map(([k, v]) => k + ": " + (typeof v === "object" ? JSON.stringify(v) : v)).join("; "));
  }
  return el("td", {class: typeof value === "number" ? "number" : null}, value);
}

// Every job of `memtrail ranks --json`: its rows with every field they carry, its totals and
// its explanation.
function ranksSection(ranks) {
  return el("div", null, ranks.warnings.map((w) => el("p", {class: "note warning"}, "warning: " + w)),
    ranks.jobs.map((job) => {
      const keys = [];
      for (const row of job.ranks) for (const k of Object.keys(row)) if (!keys.includes(k) && k !== "path") keys.push(k);
      const rows = job.ranks.map((row) => el("tr", {"data-rank": row.rank}, keys.map((k) => rankCell(k, row[k]))));
      rows.push(el("tr", {"data-rank": "total"}, keys.map((k) => (k === "rank" ? el("th", null, "total") : rankCell(k, job.total[k])))));
      return el("div", {class: "job"}, el("h3", null, "job " + job.name),
        el("div", {class: "scroll"}, table(keys.map((k) => k.replace(/_/g, " ")), rows, {class: "ranks"})),
        el("p", {class: "highest"}, "rank " + job.highest_peak.rank + " peaks highest: " +
          formatBytes(job.highest_peak.peak_reserved) + " reserved"),
        job.explanation ? el("p", {class: "explanation"}, job.explanation.summary) : null);
    }));
}

//-------------------------------------------------------------------------------------------------
// [SECTION] the page
//-------------------------------------------------------------------------------------------------

function fileSection(file, index) {
  const id = "file-" + index;
  const section = el("section", {class: "file", id, "data-path": file.path},
    el("h2", null, file.path + ", device " + file.device));
  const part = (name, title, content) => {
    const div = el("div", {class: "part " + name, id: id + "-" + name}, el("h3", null, title));
    if (content) div.append(content);
    section.append(div);
    return div;
  };
  section.append(factsSection(file));
  if (file.oom) part("oom", "Out of memory", oomSection(file));
  timelineSection(file, part("timeline", "Timeline, stacked by category"));
  segmentMapSection(file, part("segments", "Segments at the " + file.peak_label));
  part("categories", "Categories at the " + file.peak_label, categoriesSection(file));
  part("top", "Top stacks at the " + file.peak_label, topSection(file));
  flameSection(file, part("flame", "Flame graph at the " + file.peak_label));
  return section;
}

function drawReport() {
  const data = JSON.parse(document.getElementById("memtrail-data").textContent);
  const main = document.getElementById("report"), nav = document.getElementById("nav");
  document.title = "memtrail report: " + data.files.map((f) => f.path.split("/").pop()).join(", ");
  document.getElementById("title").textContent = document.title;
  if (data.ranks) {
    main.append(el("section", {class: "ranks", id: "ranks"}, el("h2", null, "Ranks"), ranksSection(data.ranks)));
    nav.append(el("a", {href: "#ranks"}, "ranks"));
  }
  data.files.forEach((file, i) => {
    main.append(fileSection(file, i));
    nav.append(el("a", {href: "#file-" + i}, file.path.split("/").pop()));
  });
  document.getElementById("footer").append(el("p", {class: "note"}, "memtrail " + data.memtrail_version +
    "; the numbers are what memtrail summary, oom, categories, top and ranks print with --json."));
  requestAnimationFrame(() => {
    window.__memtrailDrawnMs = performance.now();
    document.body.setAttribute("data-drawn", "true");
  });
}

drawReport();
