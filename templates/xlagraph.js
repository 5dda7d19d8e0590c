// xlagraph pages: jumps between counterparts, operand definitions and collapsed runs.
// Inlined into every page; reads the page's data from the JSON block with id "xg-data".
// Rows built here mirror the `row` macro of _macros.html; every text goes through textContent.
(function () {
  "use strict";
  var DATA = { runs: {}, status: {} };
  var holder = document.getElementById("xg-data");
  if (holder) {
    try { DATA = JSON.parse(holder.textContent); } catch (err) { /* a page without data still works */ }
  }
  var RUNS = DATA.runs || {};
  var STATUS = DATA.status || {};

  function el(tag, cls, text) {
    var node = document.createElement(tag);
    if (cls) node.className = cls;
    if (text !== undefined && text !== null) node.textContent = text;
    return node;
  }

  function text(s) { return document.createTextNode(s); }

  // l = [text, href, ref, title], as Link.data() writes it
  function linkElement(l, cls) {
    var node;
    if (l[1]) {
      node = el("a", cls, l[0]);
      node.setAttribute("href", l[1]);
      if (l[2]) node.setAttribute("data-ref", l[2]);
    } else {
      node = el("span", cls, l[0]);
    }
    if (l[3]) node.title = l[3];
    return node;
  }

  function rowElement(d) {
    var st = d.st || "same";
    var info = STATUS[st] || ["", ""];
    var row = el("div", "row st-" + st);
    row.id = d.i;
    if (d.c) {
      row.setAttribute("data-cp-href", d.c[1]);
      if (d.c[2]) row.setAttribute("data-cp-ref", d.c[2]);
    }
    row.appendChild(el("span", "ln", d.l ? String(d.l) : ""));
    var mk = el("span", "mk", info[0]);
    mk.title = info[1];
    row.appendChild(mk);
    var code = el("span", "code");
    if (d.r) code.appendChild(el("span", "root", "ROOT "));
    code.appendChild(d.c ? linkElement(d.c, "nm") : el("span", "nm", d.n));
    code.appendChild(text(" = "));
    code.appendChild(el("span", "shape" + (d.sd ? " delta" : ""), d.s));
    code.appendChild(text(" "));
    code.appendChild(el("span", "op" + (d.od ? " delta" : ""), d.o));
    code.appendChild(text("("));
    if (d.a) {
      d.a.forEach(function (o, k) {
        if (k) code.appendChild(text(", "));
        code.appendChild(linkElement(o, "opnd"));
      });
    } else if (d.p) {
      code.appendChild(el("span", "payload", d.p));
    }
    code.appendChild(text(")"));
    (d.t || []).forEach(function (t) {
      code.appendChild(text(", "));
      var attr = el("span", "attr" + (t[3] ? " delta" : ""), t[0] + "=" + t[1]);
      if (t[2]) attr.title = t[2];
      code.appendChild(attr);
    });
    row.appendChild(code);
    var meta = el("span", "meta");
    var src = el("span", "src", d.src || "");
    if (d.stk) src.title = d.stk;
    meta.appendChild(src);
    meta.appendChild(el("span", "opname", d.on || ""));
    row.appendChild(meta);
    return row;
  }

  function omittedNote(d) {
    var run = el("div", "run mode-omitted");
    var n = d.omitted;
    var label = "\u2026 " + n.toLocaleString("en-US") + " instruction" + (n === 1 ? "" : "s");
    if (d.lines && d.lines.length) label += ", dump lines " + d.lines[0] + "\u2013" + d.lines[1];
    var button = el("button", "run-toggle", label + ": not included in this page");
    button.type = "button";
    button.disabled = true;
    run.appendChild(button);
    return run;
  }

  // Open (or close, or toggle when `open` is undefined) a run; build its rows from data first.
  function openRun(run, open) {
    var rows = null;
    for (var k = 0; k < run.children.length; k++) {
      if (run.children[k].classList.contains("run-rows")) rows = run.children[k];
    }
    if (!rows) {
      var d = RUNS[run.id];
      if (!d) return false;
      rows = el("div", "run-rows");
      rows.hidden = true;
      var frag = document.createDocumentFragment();
      d.rows.forEach(function (r, j) {
        if (j === d.head && d.omitted) frag.appendChild(omittedNote(d));
        frag.appendChild(rowElement(r));
      });
      rows.appendChild(frag);
      run.appendChild(rows);
    }
    var show = open === undefined ? rows.hidden : open;
    rows.hidden = !show;
    run.classList.toggle("open", show);
    return true;
  }

  // Make `node` visible: open every collapsed run and <details> around it.
  function reveal(node) {
    for (var p = node.parentElement; p; p = p.parentElement) {
      if (p.classList.contains("run-rows") && p.hidden) openRun(p.parentElement, true);
      if (p.tagName === "DETAILS" && !p.open) p.open = true;
    }
  }

  // The element a link means: its exact instruction (`ref`) when it exists or can be built,
  // else what `href` names (a run placeholder when the instruction is not in the page).
  function resolve(href, ref) {
    var target = ref ? document.getElementById(ref) : null;
    var named = href && href.charAt(0) === "#" ? document.getElementById(decodeURIComponent(href.slice(1))) : null;
    if (!target && named && named.classList.contains("run") && ref) {
      openRun(named, true);
      target = document.getElementById(ref);
    }
    target = target || named;
    if (target) reveal(target);
    return target;
  }

  var lit = [];
  function clear() {
    lit.forEach(function (n) { n.classList.remove("hl"); });
    lit = [];
  }
  function light(n) {
    n.classList.add("hl");
    lit.push(n);
  }

  // Scroll `n` to the middle of its pane, and the pane into the window.
  function center(n) {
    var pane = n.closest(".pane");
    if (pane) {
      var offset = n.getBoundingClientRect().top - pane.getBoundingClientRect().top;
      pane.scrollTop += offset - (pane.clientHeight - n.offsetHeight) / 2;
    }
    var r = n.getBoundingClientRect();
    if (r.top < 0.1 * window.innerHeight || r.bottom > 0.9 * window.innerHeight) {
      window.scrollBy(0, r.top - window.innerHeight / 2 + r.height / 2);
    }
  }

  // Highlight a row and its counterpart on the other side, and bring both into view.
  function select(row) {
    clear();
    light(row);
    var other = null;
    if (row.hasAttribute("data-cp-href")) {
      other = resolve(row.getAttribute("data-cp-href"), row.getAttribute("data-cp-ref"));
      if (other) light(other);
    }
    center(row);
    if (other) center(other);
    if (row.id && window.history && history.replaceState) history.replaceState(null, "", "#" + row.id);
  }

  function go(target) {
    if (target.classList.contains("row")) {
      select(target);
    } else {
      clear();
      if (target.classList.contains("run")) light(target);
      target.scrollIntoView({ block: target.classList.contains("run") ? "center" : "start" });
      if (target.id && window.history && history.replaceState) history.replaceState(null, "", "#" + target.id);
    }
  }

  document.addEventListener("click", function (e) {
    var a = e.target.closest("a[href^='#']");
    if (a) {
      var row = a.closest(".row");
      if (row && a.classList.contains("nm")) {
        e.preventDefault();
        select(row);
        return;
      }
      var target = resolve(a.getAttribute("href"), a.getAttribute("data-ref"));
      if (target) {
        e.preventDefault();
        go(target);
      }
      return;
    }
    var toggle = e.target.closest(".run-toggle");
    if (toggle) {
      openRun(toggle.parentElement);
      return;
    }
    var clicked = e.target.closest(".pane .row");
    if (clicked && !String(window.getSelection ? window.getSelection() : "")) select(clicked);
  });

  // The run whose data holds the row `id`, for links into rows not built yet.
  function runHolding(id) {
    for (var key in RUNS) {
      if (RUNS[key].rows.some(function (r) { return r.i === id; })) return document.getElementById(key);
    }
    return null;
  }

  function fromHash() {
    if (location.hash.length < 2) return;
    var id = decodeURIComponent(location.hash.slice(1));
    var target = resolve(location.hash, "");
    if (!target) {
      var run = runHolding(id);
      if (run) target = resolve("#" + run.id, id);
    }
    if (target) go(target);
  }
  window.addEventListener("hashchange", fromHash);
  fromHash();
  document.documentElement.setAttribute("data-ready", "1");
})();
