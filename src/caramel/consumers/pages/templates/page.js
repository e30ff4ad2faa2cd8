// caramel's page script: draws the plots with plotly.js (when they scroll into view), applies the
// filters, writes hover texts with each point's parameters and provenance, sorts tables and
// downloads the data behind a plot as CSV. Everything it shows from the data is escaped.
(function () {
  "use strict";
  var D = JSON.parse(document.getElementById("caramel-data").textContent);
  var runs = D.runs, plots = {}, drawn = {};
  var CI = D.level + " % CI";  // each point's interval of its mean: Student's t (pages/figures.py)
  // a series' name: its system and its configuration (the data carries them apart, once each)
  function seriesName(s) { return s.config ? s.group + " · " + s.config : s.group; }
  // a series' half-widths: each one (ci), or its sd times one factor (cf: every figure n samples)
  function ci(s, k) { return s.ci ? s.ci[k] : (s.cf && s.sd[k] ? s.sd[k] * s.cf : 0); }
  function ciLow(s, k) { return ci(s, k) ? s.y[k] - ci(s, k) : null; }
  function ciHigh(s, k) { return ci(s, k) ? s.y[k] + ci(s, k) : null; }
  D.plots.forEach(function (p) { plots[p.id] = p; });
  var COLOURS = ["#1f77b4", "#ff7f0e", "#2ca02c", "#9467bd", "#8c564b", "#e377c2", "#17becf",
      "#bcbd22", "#7f7f7f", "#aec7e8"];
  var SYMBOLS = ["circle", "square", "diamond", "triangle-up", "cross", "star", "hexagon",
      "triangle-down"];
  var groups = Array.from(new Set(runs.map(function (r) { return r.g; }))).sort();

  function esc(s) {
    return String(s).replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;");
  }
  function fmt(v) {
    if (v === null || v === undefined) { return ""; }
    return Number(v).toPrecision(5).replace(/\.?0+$/, "").replace(/\.?0+e/, "e");
  }
  // dates in ISO 8601, UTC (as the page's tables): never the viewer's locale's `11/24/26`
  function day(t) { return new Date(t).toISOString().slice(0, 16).replace("T", " "); }
  function instant(t) { return new Date(t).toISOString().slice(0, 19).replace("T", " "); }
  // Legend entries of at most LONGEST characters: what the names of one plot share at their start
  // is left out ("…"), then a name still too long loses its middle; the whole name is in the hover.
  var LONGEST = 60;
  function shortNames(names) {
    var long = names.some(function (n) { return n.length > LONGEST; }), cut = 0;
    if (long && names.length > 1) {
      var first = names[0];
      while (cut < first.length && names.every(function (n) { return n[cut] === first[cut]; })) {
        cut += 1;
      }
      // back to a key=value boundary
      while (cut > 0 && ",· ".indexOf(first[cut - 1]) < 0) { cut -= 1; }
      if (cut < 12) { cut = 0; }
    }
    return names.map(function (n) {
      var s = cut ? "…" + n.slice(cut) : n;
      return s.length > LONGEST ? s.slice(0, 18) + "…" + s.slice(s.length - (LONGEST - 19)) : s;
    });
  }

  // --- filters --------------------------------------------------------------------------------
  function checked(name) {
    var boxes = document.querySelectorAll('fieldset[data-filter="' + name + '"] input');
    var checked = Array.from(boxes).filter(function (b) { return b.checked; });
    return new Set(checked.map(function (b) { return b.value; }));
  }
  var state;
  function readFilters() {
    var from = document.getElementById("date-from").value,
        to = document.getElementById("date-to").value;
    // YYYY-MM-DD (ISO 8601, UTC days as the page shows them); anything else is no limit
    var iso = /^\d{4}-\d{2}-\d{2}$/;
    state = {bench: checked("bench"), group: checked("group"), tag: checked("tag"),
             from: iso.test(from) ? Date.parse(from) : -Infinity, to: iso.test(to) ?
                 Date.parse(to) + 86400000 : Infinity};
  }
  function allowed(i) {
    var r = runs[i];
    return state.bench.has(r.b) && state.group.has(r.g) && r.t >= state.from && r.t < state.to &&
      r.tags.some(function (t) { return state.tag.has(t); });
  }

  // --- traces ---------------------------------------------------------------------------------
  function hover(p, s, k) {
    var r = runs[s.run[k]], lines = [];
    var config = s.configs ? s.configs[k] : s.config;
    if (config) {
      config.split(",").forEach(function (kv) { lines.push("<b>" + esc(kv) + "</b>"); });
    }
    if (s.params) {  // the parameters that are the same throughout, a few per line
      var rest = s.params.split(",");
      for (var i = 0; i < rest.length; i += 4) { lines.push('<span style="font-size:10px">' +
          esc(rest.slice(i, i + 4).join(", ")) + "</span>"); }
    }
    var y = p.yaxis.title.text;
    lines.push(esc(y) + ": <b>" + fmt(s.y[k]) + "</b>" +
        (s.sd[k] ? " ± " + fmt(s.sd[k]) + " (sd)" : ""));
    if (ciLow(s, k) !== null) {  // as the summary's column: low … high
      lines.push(CI + ": " + fmt(ciLow(s, k)) + " … " + fmt(ciHigh(s, k)) +
                 " (Student's t of the mean)");
    }
    lines.unshift("<b>" + esc(seriesName(s)) + "</b>");
    if (p.kind !== "history" && p.kind !== "latest") {
      lines.push(esc(p.xaxis.title.text) + ": " + fmt(s.x[k]));
    }
    lines.push("run " + day(r.t) + (r.site ? " at site " + esc(r.site) : ""));
    [["job", r.job], ["nodes", r.nodes], ["hardware", r.fp], ["container", r.ctr],
        ["git commit", r.git],
     ["caramel", r.ver], ["failed rows", r.fail]].forEach(function (kv) {
      if (kv[1]) { lines.push(kv[0] + ": " + esc(kv[1])); }
    });
    if (s.bad.indexOf(k) >= 0) {
      lines.push('<span style="color:#c4320a">regressed against the run before</span>');
    }
    // the first run after a change point: the change on the point's own hover too (the marker
    // drawn on it would hide its own)
    (s.changes || []).forEach(function (c) {
      if (c.run === s.run[k]) { lines = lines.concat(changeLines(c)); }
    });
    return lines.join("<br>");
  }
  // a change point of the whole series (pages/marks.py): kind, size with its interval, p-value,
  // the runs either side and the likely causes
  var KIND_COLOURS = {regression: "#b42318", improvement: "#067647", changed: "#475467"};
  function pct(v) { return (v >= 1 ? "+" : "") + ((v - 1) * 100).toFixed(1) + " %"; }
  function changeHover(s, c) {
    return ["<b>" + esc(s.name) + "</b>"].concat(changeLines(c)).join("<br>");
  }
  function changeLines(c) {
    var lines = ['<b style="color:' + KIND_COLOURS[c.kind] + '">change point: ' +
      esc(c.kind) + " " + pct(c.ratio) + "</b>",
      "interval " + pct(c.low) + " … " + pct(c.high) + " (mean after / before), p = " + fmt(c.p),
      "last run before: " + day(runs[c.before].t) + ", first after: " + day(runs[c.run].t)];
    var causes = D.causes[c.causes] || [];  // the lists of causes, once each (pages/marks.py)
    if (causes.length) {
      lines.push("likely causes:");
      causes.slice(0, 8).forEach(function (x) { lines.push("&nbsp;&nbsp;" + esc(x)); });
      if (causes.length > 8) { lines.push("&nbsp;&nbsp;… " + (causes.length - 8) + " more"); }
    } else { lines.push("nothing in the runs' provenance changed"); }
    return lines;
  }
  function changeTrace(p) {
    var marks = {x: [], y: [], text: [], colour: []};
    p.series.forEach(function (s) {
      (s.changes || []).forEach(function (c) {
        if (!allowed(c.run)) { return; }
        marks.x.push(instant(runs[c.run].t)); marks.y.push(c.y); marks.text.push(changeHover(s, c));
        marks.colour.push(KIND_COLOURS[c.kind]);
      });
    });
    if (!marks.x.length) { return []; }
    return [{type: "scatter", mode: "markers", name: "change point", x: marks.x, y: marks.y,
      text: marks.text, hovertemplate: "%{text}<extra></extra>",
      marker: {symbol: "diamond-open", size: 17, color: marks.colour,
               line: {width: 3, color: marks.colour}}}];
  }
  function traces(p) {
    var out = [], bad = {x: [], y: [], text: []}, ideal = [], rests = [];
    var legendNames = shortNames(p.series.map(seriesName));
    // a plot of one system's configurations alone: each configuration its own colour (twenty
    // lines in one colour, told apart by marker and dash only, cannot be read)
    var oneGroup = p.series.every(function (s) { return s.group === p.series[0].group; });
    p.series.forEach(function (s, n) {
      var keep = [];
      for (var k = 0; k < s.run.length; k++) { if (allowed(s.run[k])) { keep.push(k); } }
      if (!keep.length) { return; }
      if (rests.indexOf(s.config) < 0) { rests.push(s.config); }
      var variant = p.kind === "sweep" ? rests.indexOf(s.config) : 0;
      // where several systems share a plot, a system keeps its colour in every plot and its
      // configurations differ by marker and dash
      var shade = p.kind === "history" ? n : (p.kind === "sweep" && oneGroup ? variant :
          groups.indexOf(s.group));
      var colour = COLOURS[shade % COLOURS.length];
      var xs = keep.map(function (k) {
        return p.kind === "history" ? instant(runs[s.run[k]].t) : s.x[k];
      });
      var ys = keep.map(function (k) { return s.y[k]; });
      var text = keep.map(function (k) { return hover(p, s, k); });
      out.push({type: "scatter", mode: p.lines === false ? "markers" : "lines+markers",
          name: esc(legendNames[n]),
        legendgroup: esc(s.group), x: xs, y: ys, text: text,
            hovertemplate: "%{text}<extra></extra>",
        error_y: {type: "data", array: keep.map(function (k) { return s.sd[k]; }), visible: true,
            thickness: 1, width: 3},
        marker: {color: colour, size: 7, symbol: SYMBOLS[variant % SYMBOLS.length]},
        line: {color: colour, width: 2, dash: ["solid", "dot", "dashdot", "longdash"][variant % 4]},
        meta: {group: s.group, config: s.config}});
      keep.forEach(function (k, j) {
        if (s.bad.indexOf(k) >= 0) { bad.x.push(xs[j]); bad.y.push(ys[j]); bad.text.push(text[j]); }
      });
      if (p.ideal && keep.length > 1) {
        var x0 = xs[0], y0 = ys[0];
        ideal.push({type: "scatter", mode: "lines", name: "ideal scaling", legendgroup: "ideal",
            showlegend: !ideal.length,
          x: xs, y: xs.map(function (x) { return p.higher ? y0 * x / x0 : y0 * x0 / x; }),
              hoverinfo: "skip",
          line: {color: colour, width: 1, dash: "dash"}, opacity: 0.6});
      }
    });
    if (bad.x.length) {
      out.push({type: "scatter", mode: "markers", name: "regressed", x: bad.x, y: bad.y,
          text: bad.text,
        hovertemplate: "%{text}<extra></extra>", marker: {symbol: "x-thin-open", size: 15,
            color: "#c4320a", line: {width: 3}}});
    }
    return out.concat(ideal, p.kind === "history" ? changeTrace(p) : []);
  }
  // Rows a horizontal legend of these names takes in `width` pixels (plotly wraps its entries: a
  // symbol of about 40 px and the text at 11 px, about 6.4 px a character).
  function legendRows(names, width) {
    var rows = 1, used = 0;
    names.forEach(function (name) {
      var w = 46 + 6.4 * name.length;
      if (used > 0 && used + w > width) { rows += 1; used = 0; }
      used += w;
    });
    return rows;
  }
  function layout(p, t, width) {
    // the legend goes under the plot, where the toolbar (top right) never covers it, and the plot
    // grows by its rows, so a dozen long entries are neither cut off nor squeeze the plot
    // (entries counted, not traces: the ideal-scaling lines of 20 series are one entry);
    // plotly's own cap on a legend's height (a share of the plot's) would make a long one a
    // scroll box cut off at the card's bottom, so the cap is the legend's whole height
    var shown = t.filter(function (x) { return x.showlegend !== false; });
    var names = shown.map(function (x) { return x.name; });
    var legend = names.length > 1 && names.length <= 24, rows = legend ?
        legendRows(names, width - 20) : 0;
    var below = legend ? 20 * rows + 8 : 0;
    return {height: 330 + below, margin: {l: 64, r: 12, t: 28, b: 48 + below},
      xaxis: Object.assign({automargin: true, gridcolor: "#eef0f3"}, p.xaxis),
      yaxis: Object.assign({automargin: true, gridcolor: "#eef0f3"}, p.yaxis), hovermode: "closest",
      showlegend: legend, legend: {font: {size: 11}, orientation: "h", x: 0, xanchor: "left",
          xref: "container",
        y: 0, yanchor: "bottom", yref: "container", tracegroupgap: 4, maxheight: 100000},
      font: {family: "system-ui, -apple-system, 'Segoe UI', Roboto, sans-serif", size: 12,
          color: "#1d2330"},
      paper_bgcolor: "#ffffff", plot_bgcolor: "#ffffff",
      hoverlabel: {align: "left", bgcolor: "#ffffff", bordercolor: "#98a2b3",
          font: {color: "#1d2330", size: 12}}};
  }
  function draw(id) {
    var p = plots[id], t = traces(p), el = document.getElementById(id);
    var shape = layout(p, t, el.clientWidth || 460);
    Plotly.react(el, t, shape, {displaylogo: false, responsive: true,
      modeBarButtonsToRemove: ["select2d", "lasso2d"]});
    // the estimate of the legend's rows made room; the legend drawn tells its real height
    var legend = shape.showlegend && el.querySelector(".legend");
    if (legend) {
      var below = Math.ceil(legend.getBoundingClientRect().height) + 8;
      if (Math.abs(below - (shape.margin.b - 48)) > 2) {
        Plotly.relayout(el, {height: 330 + below, "margin.b": 48 + below});
      }
    }
    el.closest("figure").classList.toggle("hidden", !t.length);
    drawn[id] = true;
  }

  // --- what is shown --------------------------------------------------------------------------
  function visibleNow(el) {
    var r = el.getBoundingClientRect();
    return r.top < window.innerHeight + 300 && r.bottom > -300;
  }
  function apply() {
    readFilters();
    document.querySelectorAll("[data-bench]").forEach(function (el) {
      var run = el.getAttribute("data-run"), group = el.getAttribute("data-group");
      var show = state.bench.has(el.getAttribute("data-bench")) &&
          (group === null || state.group.has(group)) &&
        (run === null || allowed(+run));
      el.classList.toggle("hidden", !show);
    });
    Object.keys(drawn).forEach(function (id) { drawn[id] = false; });
    Object.keys(plots).forEach(function (id) {
      var el = document.getElementById(id);
      if (!el.closest("section.hidden") && visibleNow(el)) { draw(id); }
    });
    drawRest();
  }
  // the plots out of view are drawn one at a time when the browser is idle, so the page paints
  // at once and is complete for printing or a full-page screenshot soon after
  var pending = null;
  function drawRest() {
    if (pending !== null) { return; }
    var idle = window.requestIdleCallback || function (f) { return setTimeout(f, 1); };
    pending = idle(function step() {
      var next = Object.keys(plots).find(function (id) {
        return !drawn[id] && !document.getElementById(id).closest("section.hidden");
      });
      if (next === undefined) {
        pending = null;
        document.documentElement.setAttribute("data-drawn", "1");
        return;
      }
      draw(next);
      pending = idle(step);
    });
  }
  var observer = new IntersectionObserver(function (entries) {
    entries.forEach(function (e) {
      if (e.isIntersecting && !drawn[e.target.id]) { draw(e.target.id); }
    });
  }, {rootMargin: "300px"});
  document.querySelectorAll(".plot").forEach(function (el) { observer.observe(el); });
  // a date: when typed and left
  document.getElementById("filters").addEventListener("change", function () {
    document.documentElement.removeAttribute("data-drawn"); apply();
  });
  document.getElementById("reset").addEventListener("click", function () {
    var boxes = document.querySelectorAll("#filters input[type=checkbox]");
    boxes.forEach(function (b) { b.checked = true; });
    document.getElementById("date-from").value = ""; document.getElementById("date-to").value = "";
    apply();
  });

  // --- sortable tables ------------------------------------------------------------------------
  document.querySelectorAll("table.sortable thead th").forEach(function (th, col) {
    th.addEventListener("click", function () {
      var table = th.closest("table"), body = table.tBodies[0],
          index = Array.from(th.parentNode.children).indexOf(th);
      var up = th.getAttribute("aria-sort") !== "ascending";
      th.parentNode.querySelectorAll("th").forEach(function (h) {
        h.removeAttribute("aria-sort");
      });
      th.setAttribute("aria-sort", up ? "ascending" : "descending");
      function key(row) {
        var cell = row.children[index], v = cell.getAttribute("data-v"),
            text = cell.textContent.trim();
        var n = v !== null && v !== "" ? parseFloat(v) : parseFloat(text.replace(/,/g, ""));
        return isNaN(n) || (v === null && !/^[-+]?[\d,.]+(e[-+]?\d+)?$/i.test(text)) ?
            text.toLowerCase() : n;
      }
      Array.from(body.rows).sort(function (a, b) {
        var x = key(a), y = key(b), c = typeof x === typeof y ? (x < y ? -1 : x > y ? 1 : 0) :
            (typeof x === "number" ? -1 : 1);
        return up ? c : -c;
      }).forEach(function (row) { body.appendChild(row); });
    });
  });

  // --- CSV of a plot's data (what the filters show) ---------------------------------------------
  function csvCell(v) {
    v = v === undefined || v === null ? "" : String(v);
    return /[",\n]/.test(v) ? '"' + v.replace(/"/g, '""') + '"' : v;
  }
  document.querySelectorAll("button.csv").forEach(function (button) {
    button.addEventListener("click", function () {
      readFilters();
      var p = plots[button.getAttribute("data-plot")];
      var head = ["series", "system", "configuration", p.kind === "history" ? "date" :
          p.xaxis.title.text,
                  p.yaxis.title.text, "sd", CI + " low", CI + " high", "run started", "site",
                  "job ids", "nodes", "git commit", "container", "regressed"];
      var lines = [head.map(csvCell).join(",")];
      p.series.forEach(function (s) {
        s.run.forEach(function (i, k) {
          if (!allowed(i)) { return; }
          var r = runs[i];
          lines.push([seriesName(s), s.group, s.configs ? s.configs[k] : s.config,
                      p.kind === "history" ? day(r.t) : s.x[k], s.y[k],
                      s.sd[k], ciLow(s, k), ciHigh(s, k), day(r.t), r.site, r.job, r.nodes, r.git,
                      r.ctr, s.bad.indexOf(k) >= 0 ? "yes" : ""].map(csvCell).join(","));
        });
      });
      var a = document.createElement("a");
      a.href = URL.createObjectURL(new Blob([lines.join("\n") + "\n"], {type: "text/csv"}));
      a.download = p.title.replace(/[^\w.-]+/g, "_") + ".csv";
      document.body.appendChild(a); a.click(); a.remove();
    });
  });

  apply();
  document.documentElement.setAttribute("data-ready", "1");
})();
