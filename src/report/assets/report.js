// tooltap report: renders the JSON in #tooltap-data. Holds no dialect knowledge: fragments,
// pieces and lanes arrive precomputed. Script errors are written into #errors (tests read it).
"use strict";
(function () {
  var started = performance.now();
  var errorsBox = document.getElementById("errors");
  function showError(message) {
    errorsBox.hidden = false;
    var line = document.createElement("div");
    line.className = "script-error";
    line.textContent = message;
    errorsBox.appendChild(line);
  }
  window.addEventListener("error", function (e) { showError("script error: " + e.message + " at " + e.lineno); });

  var PAGE = 50;
  var KIND_LABEL = { id: "id", name: "name", arguments: "args", content: "content", finish: "finish", other: "event" };
  var data = JSON.parse(document.getElementById("tooltap-data").textContent);
  var parsedMs = performance.now() - started;
  var all = data.exchanges;
  var byId = {};
  // Rows in the order the exchanges started (the file order breaks ties).
  all.forEach(function (x, i) { x.time = Date.parse(x.started) || 0; x.order = i; x.injected = x.injected || []; });
  all.sort(function (a, b) {
    return a.time - b.time || (a.started < b.started ? -1 : a.started > b.started ? 1 : 0) || a.order - b.order;
  });
  all.forEach(function (x, i) { byId[x.id] = i; });
  var state = { route: "", dialect: "", model: "", rule: "", severity: "", mode: "", outcome: "", injected: "", page: 0 };
  var filtered = all;

  function esc(text) {
    return String(text).replace(/[&<>"']/g, function (c) {
      return { "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" }[c];
    });
  }
  function short(text, n) { text = String(text); return text.length > n ? text.slice(0, n - 1) + "…" : text; }
  function distinct(pick) {
    var seen = {};
    all.forEach(function (x) { pick(x).forEach(function (v) { seen[v] = true; }); });
    return Object.keys(seen).sort();
  }
  function matches(x) {
    if (state.route && x.route !== state.route) return false;
    if (state.model && x.model !== state.model) return false;
    if (state.mode && x.mode !== state.mode) return false;
    if (state.outcome && x.outcome !== state.outcome) return false;
    if (state.dialect && x.dialect !== state.dialect) return false;
    if (state.injected === "(any)" && !x.injected.length) return false;
    if (state.injected === "(none)" && x.injected.length) return false;
    if (state.injected && state.injected[0] !== "(" && x.injected.indexOf(state.injected) < 0) return false;
    if (state.rule || state.severity) {
      return x.violations.some(function (v) {
        return (!state.rule || v.rule === state.rule) && (!state.severity || v.severity === state.severity);
      });
    }
    return true;
  }
  function violationMatches(v) {
    return (!state.rule || v.rule === state.rule) && (!state.severity || v.severity === state.severity);
  }

  function buildFilters() {
    var nav = document.getElementById("filters");
    var defs = [
      ["route", distinct(function (x) { return [x.route]; })],
      ["dialect", distinct(function (x) { return [x.dialect]; })],
      ["model", distinct(function (x) { return [x.model]; })],
      ["rule", distinct(function (x) { return x.violations.map(function (v) { return v.rule; }); })],
      ["severity", ["error", "warning"]],
      ["mode", ["stream", "buffered"]],
      ["outcome", distinct(function (x) { return [x.outcome]; })],
      ["injected", ["(any)", "(none)"].concat(distinct(function (x) { return x.injected; }))]
    ];
    defs.forEach(function (def) {
      var label = document.createElement("label");
      label.textContent = def[0];
      var select = document.createElement("select");
      select.id = "filter-" + def[0];
      select.innerHTML = '<option value="">all</option>' + def[1].map(function (v) {
        return '<option value="' + esc(v) + '">' + esc(v) + "</option>";
      }).join("");
      select.addEventListener("change", function () { state[def[0]] = select.value; state.page = 0; update(); });
      label.appendChild(select);
      nav.appendChild(label);
    });
  }

  function countTable(id, rows) {
    document.getElementById(id).innerHTML = rows.length ? rows.map(function (r) {
      return '<tr data-key="' + esc(r[0]) + '"><td>' + r[1] + '</td><td class="count">' + r[2] + "</td></tr>";
    }).join("") : '<tr><td class="muted">none</td></tr>';
  }
  function tally(list, key) {
    var counts = {};
    list.forEach(function (x) { counts[x[key]] = (counts[x[key]] || 0) + 1; });
    return Object.keys(counts).sort().map(function (k) { return [k, esc(k), counts[k]]; });
  }

  function overview() {
    countTable("by-route", tally(filtered, "route"));
    countTable("by-model", tally(filtered, "model"));
    countTable("by-outcome", tally(filtered, "outcome"));
    var rules = {};
    filtered.forEach(function (x) {
      x.violations.forEach(function (v) {
        if (!violationMatches(v)) return;
        var key = v.rule + " " + v.severity;
        rules[key] = rules[key] || { rule: v.rule, severity: v.severity, n: 0 };
        rules[key].n++;
      });
    });
    countTable("by-rule", Object.keys(rules).sort().map(function (k) {
      var r = rules[k];
      return [r.rule, esc(r.rule) + ' <span class="sev-' + r.severity + '">' + r.severity + "</span>", r.n];
    }));
    chart();
  }

  function chart() {
    var points = [];
    filtered.forEach(function (x) {
      x.violations.forEach(function (v) { if (violationMatches(v)) points.push([x.time, v.severity]); });
    });
    var box = document.getElementById("chart");
    if (!points.length) { box.innerHTML = '<p class="muted" id="chart-empty">no violations</p>'; return; }
    var min = Infinity, max = -Infinity;
    points.forEach(function (p) { min = Math.min(min, p[0]); max = Math.max(max, p[0]); });
    var buckets = 48, span = Math.max(max - min, 1), bins = [];
    for (var i = 0; i < buckets; i++) bins.push({ error: 0, warning: 0 });
    points.forEach(function (p) { bins[Math.min(buckets - 1, Math.floor((p[0] - min) / span * buckets))][p[1]]++; });
    var top = Math.max.apply(null, bins.map(function (b) { return b.error + b.warning; }));
    var w = 900, h = 140, bw = w / buckets;
    var svg = '<svg id="chart-svg" viewBox="0 0 ' + w + " " + (h + 20) + '" width="' + w + '" height="' + (h + 20) + '" role="img">';
    bins.forEach(function (b, i) {
      var he = b.error / top * h, hw = b.warning / top * h;
      if (b.error) svg += '<rect class="chart-bar-error" x="' + (i * bw + 1) + '" y="' + (h - he) + '" width="' + (bw - 2) + '" height="' + he + '"><title>' + b.error + " error</title></rect>";
      if (b.warning) svg += '<rect class="chart-bar-warning" x="' + (i * bw + 1) + '" y="' + (h - he - hw) + '" width="' + (bw - 2) + '" height="' + hw + '"><title>' + b.warning + " warning</title></rect>";
    });
    svg += '<text class="chart-axis" x="0" y="' + (h + 14) + '">' + esc(new Date(min).toISOString()) + "</text>";
    svg += '<text class="chart-axis" x="' + w + '" y="' + (h + 14) + '" text-anchor="end">' + esc(new Date(max).toISOString()) + "</text>";
    svg += '<text class="chart-axis" x="' + w + '" y="10" text-anchor="end">tallest bar: ' + top + " violations (" + buckets + " buckets)</text></svg>";
    box.innerHTML = svg;
  }

  function injectedBadge(x) {
    if (!x.injected.length) return "";
    var text = "injected by tooltap: " + x.injected.join(", ");
    return '<span class="injected" data-injected="' + esc(x.injected.join(" ")) + '" title="' + esc(text) + '">' + esc(text) + "</span>";
  }
  function cutNote(n, what) { return n ? '<p class="cut">cut: ' + n + " " + what + "</p>" : ""; }

  function list() {
    var pages = Math.max(1, Math.ceil(filtered.length / PAGE));
    state.page = Math.min(state.page, pages - 1);
    var from = state.page * PAGE;
    document.getElementById("count").textContent = "(" + filtered.length + " of " + all.length + ")";
    var rows = filtered.slice(from, from + PAGE).map(function (x) {
      var errs = x.violations.filter(function (v) { return v.severity === "error"; }).length;
      return '<tr class="exchange-row" data-id="' + esc(x.id) + '"><td><a href="#exchange=' + encodeURIComponent(x.id) + '">' + esc(x.id) +
        "</a></td><td>" + esc(x.started) + "</td><td>" + esc(x.route) + '</td><td class="dialect">' + esc(x.dialect) + "</td><td>" + esc(x.model) + "</td><td>" + x.mode +
        "</td><td>" + x.status + "</td><td>" + esc(x.outcome) + "</td><td>" + injectedBadge(x) + '</td><td class="count">' + x.violations.length +
        (errs ? ' <span class="sev-error">(' + errs + " error)</span>" : "") + "</td></tr>";
    });
    document.getElementById("list").innerHTML = "<tr><th>exchange</th><th>started</th><th>route</th><th>dialect</th><th>model</th><th>mode</th><th>status</th><th>outcome</th><th>injected</th><th>violations</th></tr>" + rows.join("");
    var pager = document.getElementById("pager-top");
    pager.innerHTML = '<button id="prev"' + (state.page ? "" : " disabled") + '>‹ prev</button><span id="page">page ' + (state.page + 1) + " of " + pages +
      '</span><button id="next"' + (state.page + 1 < pages ? "" : " disabled") + ">next ›</button>";
    document.getElementById("prev").onclick = function () { state.page--; list(); };
    document.getElementById("next").onclick = function () { state.page++; list(); };
  }

  // MCP conversations: the catalogue, then every exchange on a timeline; a violating message's
  // row is marked and links to its exchange.
  function mcpConversations() {
    var conversations = data.mcp || [];
    if (!conversations.length) return;
    document.getElementById("mcp-box").hidden = false;
    document.getElementById("mcp").innerHTML = conversations.map(function (c, ci) {
      var catalog = c.catalog.map(function (t) {
        return "<tr><td><code>" + esc(t.name) + '</code></td><td class="schema">' + esc(t.input_schema) + '</td><td class="schema">' +
          (t.output_schema === undefined ? "none" : esc(t.output_schema)) + "</td></tr>";
      }).join("");
      var calls = c.calls.map(function (k) {
        var marked = k.rules.length ? ' class="violating"' : "";
        return "<tr" + marked + ' data-exchange="' + esc(k.exchange) + '"><td>+' + k.t_ms + ' ms</td><td><a href="#exchange=' + encodeURIComponent(k.exchange) + '">' + esc(k.exchange) +
          "</a></td><td>" + esc(k.http) + " " + k.status + "</td><td>" + esc(k.method || "") + "</td><td>" + esc(k.name || "") + "</td><td>" +
          esc(k.id === undefined ? "" : JSON.stringify(k.id)) + "</td><td>" + esc(k.outcome) + '</td><td class="rules">' +
          (k.rules.length ? "⚠ " + k.rules.map(esc).join(", ") : "") + "</td></tr>";
      }).join("");
      return '<div class="mcp-conversation" id="mcp-' + ci + '"><h3>' + esc(c.key) + " · " + esc(c.upstream) + (c.version ? " · " + esc(c.version) : "") + "</h3>" +
        "<h4>Catalogue (" + (c.catalog_complete ? "complete" : "incomplete: no tools/list page without nextCursor") + ")</h4>" +
        '<table class="mcp-catalog"><tr><th>tool</th><th>inputSchema</th><th>outputSchema</th></tr>' + catalog + "</table>" +
        (c.tools_not_listed ? cutNote(c.tools_not_listed, "tools not listed") : "") +
        '<h4>Timeline</h4><table class="mcp-calls"><tr><th>at</th><th>exchange</th><th>HTTP</th><th>method</th><th>tool / cursor</th><th>id</th><th>outcome</th><th>violations</th></tr>' +
        calls + "</table>" + (c.calls_not_listed ? cutNote(c.calls_not_listed, "exchanges not listed") : "") + "</div>";
    }).join("");
  }

  function update() {
    filtered = all.filter(matches);
    overview();
    list();
  }

  // ---- one exchange ----
  function json(value) { return esc(JSON.stringify(value, null, 2)); }
  function laneOrder(lanes) {
    return lanes.sort(function (a, b) {
      var rank = function (l) { return l === "content" ? -2 : l === "other" ? 1e9 : Number(l); };
      return rank(a) - rank(b);
    });
  }
  function timeline(x) {
    var lanes = { content: [] };
    var chips = [];
    // A violation can point at a frame that completed no event (a cut stream, a frame that
    // failed to decode): it gets a placeholder fragment so the mark has a place.
    var frags = x.fragments.slice();
    var frameAt = {};
    x.frames.forEach(function (f) { frameAt[f.seq] = f; });
    x.violations.forEach(function (v) {
      if (v.seq === null || v.seq === undefined) return;
      if (frags.some(function (f) { return f.seq === v.seq; })) return;
      var frame = frameAt[v.seq] || x.frames[x.frames.length - 1] || { t_us: 0 };
      frags.push({ seq: v.seq, t_us: frame.t_us, data: "(frame #" + v.seq + " completed no event)", pieces: [] });
    });
    frags.sort(function (a, b) { return a.seq - b.seq; });
    x = { frames: x.frames, violations: x.violations, fragments: frags };
    x.fragments.forEach(function (f, i) {
      if (!f.pieces.length) {
        var text = (f.data || "") + (f.cut ? " … [cut: " + f.cut + " bytes not shown]" : "");
        chips.push({ lane: "other", kind: "other", text: text, frag: i, f: f, ptr: "" });
        return;
      }
      // A piece is [lane, kind, text, index into data.pointers].
      f.pieces.forEach(function (p) { chips.push({ lane: p[0], kind: p[1], text: p[2], frag: i, f: f, ptr: data.pointers[p[3]] }); });
    });
    chips.forEach(function (c) { lanes[c.lane] = lanes[c.lane] || []; lanes[c.lane].push(c); });
    x.violations.forEach(function (v) {
      if (v.tool_call !== null && v.tool_call !== undefined) lanes[String(v.tool_call)] = lanes[String(v.tool_call)] || [];
    });
    // Which chips each violation marks: the pieces at its seq in its tool call's lane (or all at that seq).
    var marks = [];
    x.violations.forEach(function (v, vi) {
      if (v.seq === null || v.seq === undefined) return;
      var at = chips.filter(function (c) { return c.f.seq === v.seq; });
      var lane = v.tool_call === null || v.tool_call === undefined ? null : String(v.tool_call);
      var inLane = lane === null ? at : at.filter(function (c) { return c.lane === lane; });
      var hit = inLane.filter(function (c) { return c.ptr && v.path.indexOf(c.ptr) === 0; });
      if (!hit.length) hit = inLane.filter(function (c) { return c.ptr && c.ptr.indexOf(v.path) === 0 && v.path !== ""; });
      if (!hit.length) hit = inLane.length ? [inLane[inLane.length - 1]] : at.slice(-1);
      hit.forEach(function (c) { c.violations = (c.violations || []).concat([vi]); });
      marks.push(vi);
    });
    // A fragment is as wide as its busiest lane (pieces side by side), keeps its arrival order
    // and time, and never overlaps the fragment before it.
    var slots = x.fragments.map(function () { return {}; });
    chips.forEach(function (c) {
      var s = slots[c.frag];
      c.slot = s[c.lane] = (s[c.lane] === undefined ? 0 : s[c.lane] + 1);
    });
    var t0 = x.frames.length ? x.frames[0].t_us : 0;
    var tEnd = x.frames.length ? x.frames[x.frames.length - 1].t_us : 0;
    var chipW = 100, gap = 6, left = 112, scale = 900 / Math.max(tEnd - t0, 1), next = 0, xs = [];
    x.fragments.forEach(function (f, i) {
      var want = (f.t_us - t0) * scale;
      xs[i] = Math.max(want, next);
      var wide = 1;
      Object.keys(slots[i]).forEach(function (l) { wide = Math.max(wide, slots[i][l] + 1); });
      next = xs[i] + wide * (chipW + gap);
    });
    var width = next + left + 40;
    var axis = '<div class="axis" style="width:' + width + 'px">' + x.fragments.map(function (f, i) {
      return i > 0 && xs[i] - xs[i - 1] < 60 ? "" : '<span style="left:' + (xs[i] + left) + 'px">' + ((f.t_us - t0) / 1000).toFixed(1) + " ms</span>";
    }).join("") + "</div>";
    var html = '<div class="legend">' + ["id", "name", "arguments", "content", "finish", "other"].map(function (k) {
      return '<span class="kind-' + k + '">' + KIND_LABEL[k] + "</span>";
    }).join("") + ' time → (ms after the request head; fragments in arrival order, each at the frame that completed it)</div><div class="timeline" class="timeline">' + axis;
    var markRows = [];
    laneOrder(Object.keys(lanes)).forEach(function (lane) {
      var title = lane === "content" ? "content" : lane === "other" ? "other events" : "tool call " + lane;
      html += '<div class="lane" data-lane="' + esc(lane) + '" style="width:' + width + 'px"><span class="lane-label">' + esc(title) + "</span>";
      lanes[lane].forEach(function (c) {
        var vs = c.violations || [];
        var rules = vs.map(function (vi) { return x.violations[vi].rule; });
        var at = xs[c.frag] + left + c.slot * (chipW + gap);
        html += '<span class="frag kind-' + c.kind + (vs.length ? " violating" : "") + '" data-seq="' + c.f.seq + '" data-kind="' + c.kind + '"' +
          (vs.length ? ' data-rule="' + esc(rules.join(" ")) + '"' : "") + ' style="left:' + at + 'px" title="' +
          esc("seq " + c.f.seq + " · " + (c.f.t_us / 1000).toFixed(1) + " ms · " + c.kind + (c.ptr ? " · " + c.ptr : "") + "\n" + c.text) + '">' +
          "<small>#" + c.f.seq + " " + KIND_LABEL[c.kind] + "</small>" + esc(short(c.text, 22)) + "</span>";
        vs.forEach(function (vi) { markRows.push([at, lane, x.violations[vi]]); });
      });
      html += "</div>";
    });
    markRows.forEach(function (m) {
      var v = m[2];
      html += '<div class="mark-row" style="width:' + width + 'px"><span class="mark sev-' + v.severity + '" data-rule="' + esc(v.rule) + '" data-lane="' + esc(m[1]) +
        '" data-seq="' + v.seq + '" style="left:' + m[0] + 'px">▲ <a href="' + esc(v.doc) + '">' + esc(v.rule) + "</a> <code>" + esc(v.path) + "</code> (#" + v.seq + ")</span></div>";
    });
    return html + "</div>";
  }

  // A conversation rule's violation (judged across the exchanges of its MCP conversation):
  // marked as such, naming its conversation and linking to it in the overview.
  function conversationMark(v) {
    if (!v.conversation) return "";
    var at = (data.mcp || []).findIndex(function (c) { return c.key === v.conversation.key && c.upstream === v.conversation.upstream; });
    var name = esc(v.conversation.key) + " · " + esc(v.conversation.upstream);
    return '<br><span class="conversation-rule">conversation rule, in ' +
      (at < 0 ? name : '<a href="#mcp-' + at + '" data-conversation="' + at + '">' + name + "</a>") + "</span>";
  }

  function violationsTable(x) {
    if (!x.violations.length) return '<p class="no-violations">No violations.</p>';
    return '<table class="violations"><tr><th>rule</th><th>severity</th><th>stage</th><th>JSON path</th><th>seq</th><th>tool call</th><th>detail</th></tr>' +
      x.violations.map(function (v) {
        return '<tr class="violation" data-rule="' + esc(v.rule) + '"><td><a href="' + esc(v.doc) + '">' + esc(v.rule) + "</a>" + conversationMark(v) + '</td><td class="sev-' + v.severity + '">' + v.severity +
          "</td><td>" + v.stage + "</td><td><code>" + esc(v.path || "(root)") + (v.schema_path ? "</code><br>schema <code>" + esc(v.schema_path) : "") + "</code></td><td>" +
          (v.seq === null || v.seq === undefined ? "" : '<a href="#" data-frame="' + v.seq + '">#' + v.seq + "</a>") + "</td><td>" +
          (v.tool_call === null || v.tool_call === undefined ? "" : v.tool_call) + "</td><td>" + esc(v.detail) + "</td></tr>";
      }).join("") + "</table>";
  }

  function frames(x) {
    return '<details class="raw"><summary>Raw frames, exactly as recorded (' + x.frames.length + ")</summary>" + x.frames.map(function (f) {
      return '<div class="frame" data-frame-seq="' + f.seq + '"><b>#' + f.seq + "</b> at " + (f.t_us / 1000).toFixed(1) + " ms" +
        (f.base64 !== undefined ? " (base64)" : "") + "<pre>" + esc(f.text !== undefined ? f.text : f.base64) + "</pre>" +
        cutNote(f.cut, "bytes not shown") + "</div>";
    }).join("") + cutNote(x.cut.frames, "frames not listed") + "</details>";
  }

  function showFrame(section, seq) {
    var raw = section.querySelector(".raw");
    var el = section.querySelector('[data-frame-seq="' + seq + '"]');
    if (!raw || !el) return;
    raw.open = true;
    document.querySelectorAll(".frame.focus").forEach(function (e) { e.classList.remove("focus"); });
    el.classList.add("focus");
    el.scrollIntoView({ block: "center" });
  }

  // Single-quotes a path for a POSIX shell when it holds anything but safe characters.
  function shellQuote(text) {
    return /^[A-Za-z0-9\/._+:=@,-]+$/.test(text) ? text : "'" + text.replace(/'/g, "'\\''") + "'";
  }
  function commands(x) {
    var cut = x.file.lastIndexOf("/");
    var folder = cut > 0 ? x.file.slice(0, cut) : ".";
    return "tooltap check " + shellQuote(x.file) + "\n" + "tooltap replay --recordings " + shellQuote(folder);
  }

  // What the bounds left out of one exchange, said where the reader looks first.
  function cuts(x) {
    var c = x.cut, lines = [];
    if (c.detail_bytes) lines.push("cut: fragments, frames and reassembled calls not shown: the page budget (--max-page-bytes) was spent (" + c.detail_bytes + " bytes); run tooltap report on this file alone");
    if (c.decoding) lines.push("cut: decoding stopped: " + c.decoding);
    if (c.decoded_bytes) lines.push("cut: " + c.decoded_bytes + " bytes of decoded text not shown (--max-shown-bytes)");
    if (c.raw_bytes) lines.push("cut: " + c.raw_bytes + " bytes of raw frames not shown (--max-shown-bytes)");
    if (c.fragments) lines.push("cut: " + c.fragments + " fragments not listed");
    if (c.frames) lines.push("cut: " + c.frames + " frames not listed");
    return lines.length ? '<div class="card wide cut-note">' + lines.map(function (l) { return '<p class="cut">' + esc(l) + "</p>"; }).join("") + "</div>" : "";
  }

  function detail(x) {
    var tools = data.tools[x.tools];
    var box = document.createElement("section");
    box.className = "exchange-detail";
    var toolNames = Array.isArray(tools) ? tools.map(function (t) {
      return (t && t["function"] && t["function"].name) || (t && t.name) || (t && t.type) || "?";
    }) : [];
    box.dataset.id = x.id;
    x.cut = x.cut || {};
    box.innerHTML = '<h2>Exchange <code>' + esc(x.id) + "</code> " + injectedBadge(x) + "</h2>" + cuts(x) +
      '<div class="cards"><div class="card"><dl class="facts">' +
      [["route", x.route], ["model", x.model], ["dialect", x.dialect], ["request", x.method + " " + x.path], ["started", x.started],
        ["status", x.status], ["mode", x.mode], ["outcome", x.outcome], ["inspection", x.completeness],
        ["dropped frames", x.dropped_frames], ["violations (live)", x.live_violations === null ? "no end line" : x.live_violations],
        ["injected", x.injected.length ? x.injected.join(", ") : "nothing"], ["file", x.file]].map(function (r) { return "<dt>" + r[0] + "</dt><dd>" + esc(r[1]) + "</dd>"; }).join("") + "</dl></div>" +
      '<div class="card"><h2>Declared tools</h2><p class="declared-tools">' + (toolNames.length ? toolNames.map(function (n) { return "<code>" + esc(n) + "</code>"; }).join(", ") : "none") +
      "</p><h2>tool_choice</h2><pre class=\"tool-choice\">" + json(x.tool_choice) + "</pre><details><summary>tools as sent</summary><pre>" + json(tools) + "</pre></details></div>" +
      '<div class="card"><h2>Commands</h2><pre class="commands">' + esc(commands(x)) + "</pre></div></div>" +
      '<div class="card wide"><h2>Violations (re-judged)</h2>' + violationsTable(x) + "</div>" +
      '<div class="card wide"><h2>Fragment timeline</h2>' + timeline(x) + "</div>" +
      '<div class="card wide"><h2>Reassembled calls (buffered-equivalent message per choice)</h2><pre class="reassembled">' + json(x.choices) + "</pre></div>" +
      '<div class="card wide">' + frames(x) + "</div>";
    box.querySelectorAll("[data-seq]").forEach(function (el) { el.onclick = function () { showFrame(box, el.dataset.seq); }; });
    box.querySelectorAll("[data-frame]").forEach(function (el) { el.onclick = function (e) { e.preventDefault(); showFrame(box, el.dataset.frame); }; });
    return box;
  }

  // #exchange=ID shows one exchange; #exchange=ID1,ID2 shows several one below the other.
  function route() {
    if (/^#f=/.test(location.hash)) { filtersFromHash(); update(); }
    var m = /^#exchange=(.*)$/.exec(location.hash);
    var ids = m ? m[1].split(",").map(decodeURIComponent).filter(function (id) { return byId[id] !== undefined; }) : [];
    var overviewBox = document.getElementById("overview"), box = document.getElementById("exchange");
    if (!ids.length) {
      box.hidden = true;
      overviewBox.hidden = false;
      // #mcp-N (a conversation rule's link): that conversation, once the overview shows.
      var conversation = /^#mcp-\d+$/.test(location.hash) && document.getElementById(location.hash.slice(1));
      if (conversation) conversation.scrollIntoView();
      return;
    }
    box.innerHTML = '<a class="back" href="#">← all exchanges</a>';
    ids.forEach(function (id) { box.appendChild(detail(all[byId[id]])); });
    overviewBox.hidden = true;
    box.hidden = false;
    window.scrollTo(0, 0);
  }

  // #f=rule=delta.id_changed;mode=stream preselects filters (a link that keeps a view).
  function filtersFromHash() {
    var m = /^#f=(.*)$/.exec(location.hash);
    if (!m) return;
    m[1].split(";").forEach(function (pair) {
      var kv = pair.split("=");
      var key = decodeURIComponent(kv[0]), value = decodeURIComponent(kv.slice(1).join("="));
      if (!Object.prototype.hasOwnProperty.call(state, key) || key === "page") return;
      var aliases = (data.filter_aliases || {})[key];
      if (aliases && Object.prototype.hasOwnProperty.call(aliases, value)) value = aliases[value];
      state[key] = value;
      var select = document.getElementById("filter-" + key);
      if (select) select.value = value;
    });
  }

  try {
    var total = all.reduce(function (n, x) { return n + x.violations.length; }, 0);
    document.getElementById("summary").textContent = all.length + " exchanges · " + total + " violations · " + data.generated_by +
      (data.omitted ? " · " + data.omitted + " more not shown (--max-exchanges)" : "");
    var pageCut = data.cut || {};
    if (pageCut.without_detail || pageCut.left_out || pageCut.shown_bytes || pageCut.conversations_unjudged) {
      var note = document.getElementById("page-cut");
      note.hidden = false;
      note.textContent = "cut: " + [
        pageCut.without_detail ? pageCut.without_detail + " exchanges shown without their detail (" + pageCut.detail_bytes + " bytes not shown; page budget " + pageCut.budget + " bytes, --max-page-bytes)" : "",
        pageCut.left_out ? pageCut.left_out + " exchanges left out (page budget)" : "",
        pageCut.shown_bytes ? pageCut.shown_bytes + " bytes of bodies and frames not shown (--max-shown-bytes)" : "",
        pageCut.conversations_unjudged ? "MCP conversation rules not judged on " + pageCut.conversations_unjudged + " exchanges (their observations did not fit the page budget, --max-page-bytes)" : ""
      ].filter(Boolean).join(" · ");
    }
    if (data.unreadable.length) {
      var u = document.getElementById("unreadable");
      u.hidden = false;
      u.textContent = "Unreadable inputs:\n" + data.unreadable.join("\n");
    }
    buildFilters();
    mcpConversations();
    filtersFromHash();
    update();
    window.addEventListener("hashchange", route);
    route();
    var ms = performance.now() - started;
    document.body.dataset.renderMs = ms.toFixed(1);
    document.body.dataset.loadMs = performance.now().toFixed(1);
    document.body.dataset.parseMs = parsedMs.toFixed(1);
    document.getElementById("perf").textContent = "rendered in " + ms.toFixed(0) + " ms";
    document.body.dataset.ready = "1";
  } catch (e) {
    showError("script error: " + (e && e.stack || e));
  }
})();
