/* The book's only script (coursetools/book/assets/book.js, served as static/book.js).
   No library, no network: the pages' Content-Security-Policy allows this file and
   static/search-index.js (the index written at build time) and nothing else.
   - the phone menu (the Menu button shows and hides the sidebar);
   - a Copy button on every code block;
   - printing: solutions are printed open unless "Print solutions" is unticked (remembered);
   - search: the sidebar's box opens search.html?q=...; search.html ranks the sections of
     window.BOOK_SEARCH (a title's words weigh most, then the phrase, then each word; chapters before the API reference). */
(function () {
  "use strict";
  var root = document.documentElement;
  root.classList.add("js");

  // ---------------------------------------------------------------- print switch (remembered)
  var PRINT_KEY = "book-print-solutions";
  function storedPrint() {
    try { return window.localStorage.getItem(PRINT_KEY) !== "no"; } catch (e) { return true; }
  }
  root.classList.toggle("print-no-solutions", !storedPrint());

  function ready(fn) {
    if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", fn);
    else fn();
  }

  // ---------------------------------------------------------------- search (pure functions)
  function normalise(text) {
    return (text || "").toLowerCase().normalize("NFKD").replace(/[\u0300-\u036f]/g, "")
      .replace(/[^a-z0-9]+/g, " ").trim();
  }
  function count(haystack, needle) {
    if (!needle) return 0;
    var n = 0, at = 0, pattern = " " + needle;
    haystack = " " + haystack + " ";
    while ((at = haystack.indexOf(pattern, at)) !== -1) { n += 1; at += pattern.length; }
    return n;
  }
  function lastName(title) {
    var names = (title || "").split(/[^A-Za-z0-9_]+/).filter(Boolean);
    return names.length ? names[names.length - 1].toLowerCase() : "";
  }
  var WEIGHT = { chapter: 1, guide: 0.8, api: 0.6, page: 0.5 };
  function rank(index, query, limit) {
    var phrase = normalise(query);
    if (!phrase) return [];
    var words = phrase.split(" ").filter(function (w) { return w.length > 1 || /\d/.test(w); });
    if (!words.length) words = [phrase];
    var results = [];
    for (var i = 0; i < index.length; i++) {
      var entry = index[i];
      var title = entry.nt || (entry.nt = normalise(entry.t));
      var body = entry.nx || (entry.nx = normalise(entry.x));
      var score = 0, missing = 0;
      for (var w = 0; w < words.length; w++) {
        var inTitle = count(title, words[w]), inBody = count(body, words[w]);
        if (!inTitle && !inBody) missing += 1;
        score += 8 * Math.min(inTitle, 2) + Math.min(inBody, 6);
      }
      if (missing === words.length) continue;
      score -= 6 * missing;
      if (words.length > 1 || phrase.indexOf(" ") === -1) {
        score += 30 * Math.min(count(title, phrase), 1) + 4 * Math.min(count(body, phrase), 5);
      }
      if (lastName(entry.t) === query.trim().toLowerCase()) score += 25;  // the name itself
      score *= WEIGHT[entry.k] || 1;  // a chapter that teaches it first, the reference next
      if (score > 0) results.push({ entry: entry, score: score, order: i });
    }
    results.sort(function (a, b) { return b.score - a.score || a.order - b.order; });
    return results.slice(0, limit || 30);
  }
  function snippet(text, query) {
    var words = normalise(query).split(" ").filter(Boolean);
    var lower = text.toLowerCase(), at = -1;
    var loose = normalise(query).replace(/ /g, "[^a-z0-9]+");
    var m = loose ? new RegExp(loose).exec(lower) : null;
    if (m) at = m.index;
    for (var i = 0; at < 0 && i < words.length; i++) at = lower.indexOf(words[i]);
    var start = Math.max(0, at - 80), end = Math.min(text.length, (at < 0 ? 0 : at) + 180);
    return (start > 0 ? "… " : "") + text.slice(start, end).replace(/\s+/g, " ") +
      (end < text.length ? " …" : "");
  }
  window.BookSearch = { rank: rank, normalise: normalise, snippet: snippet };

  function el(tag, attrs, text) {
    var node = document.createElement(tag);
    for (var k in attrs || {}) node.setAttribute(k, attrs[k]);
    if (text) node.textContent = text;
    return node;
  }
  function highlightInto(node, text, query) {
    var words = normalise(query).split(" ").filter(function (w) { return w.length > 1; });
    if (!words.length) { node.textContent = text; return; }
    var re = new RegExp("(" + words.map(function (w) {
      return w.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
    }).join("|") + ")", "gi");
    var last = 0, m;
    while ((m = re.exec(text)) !== null) {
      node.appendChild(document.createTextNode(text.slice(last, m.index)));
      node.appendChild(el("mark", {}, m[0]));
      last = m.index + m[0].length;
    }
    node.appendChild(document.createTextNode(text.slice(last)));
  }

  function searchPage() {
    var list = document.getElementById("search-results");
    if (!list) return;
    var input = document.getElementById("search-page-input");
    var status = document.getElementById("search-status");
    var index = window.BOOK_SEARCH || [];
    function run(query, push) {
      list.textContent = "";
      var found = rank(index, query, 30);
      if (!normalise(query)) status.textContent = "Type a word or a phrase.";
      else status.textContent = found.length
        ? found.length + (found.length === 30 ? "+" : "") + " section(s) match \u201c" + query + "\u201d."
        : "Nothing matches \u201c" + query + "\u201d.";
      found.forEach(function (r) {
        var li = el("li");
        var a = el("a", { href: r.entry.u });
        highlightInto(a, r.entry.t, query);
        li.appendChild(a);
        li.appendChild(el("div", { "class": "where" }, r.entry.p));
        var p = el("p", { "class": "snippet" });
        highlightInto(p, snippet(r.entry.x, query), query);
        li.appendChild(p);
        list.appendChild(li);
      });
      if (push) {
        try { history.replaceState(null, "", "?q=" + encodeURIComponent(query)); } catch (e) {}
      }
    }
    var q = new URLSearchParams(window.location.search).get("q") || "";
    input.value = q;
    run(q, false);
    input.addEventListener("input", function () { run(input.value, true); });
    input.form.addEventListener("submit", function (ev) { ev.preventDefault(); run(input.value, true); });
    if (!q) input.focus();
  }

  ready(function () {
    // ------------------------------------------------------------ menu on a phone
    var button = document.querySelector(".topbar button.menu");
    var nav = document.getElementById("book-nav");
    if (button && nav) {
      button.addEventListener("click", function () {
        var open = nav.classList.toggle("open");
        button.setAttribute("aria-expanded", open ? "true" : "false");
        button.textContent = open ? "Close" : "Menu";
        // the menu comes after the chapter in the page: the keyboard goes to it when it opens
        var first = open && nav.querySelector("a, input, button, summary");
        if (first) first.focus();
      });
      nav.addEventListener("click", function (ev) {
        if (ev.target.closest("a") && nav.classList.contains("open")) button.click();
      });
      nav.addEventListener("keydown", function (ev) {
        if (ev.key === "Escape" && nav.classList.contains("open")) {
          button.click();  // closes the menu, and the keyboard is back on its button
          button.focus();
        }
      });
    }
    // ------------------------------------------------------------ the sidebar's search box
    document.querySelectorAll("form.search:not(.search-page)").forEach(function (form) {
      form.addEventListener("submit", function (ev) {
        ev.preventDefault();
        var value = form.querySelector("input").value;
        window.location.href = "search.html?q=" + encodeURIComponent(value);
      });
    });
    // ------------------------------------------------------------ copy buttons
    document.querySelectorAll("main .highlight, main pre.copyable").forEach(function (block) {
      var pre = block.tagName === "PRE" ? block : block.querySelector("pre");
      if (!pre) return;
      var copy = el("button", { "class": "copy", type: "button", "aria-label": "Copy the code" }, "Copy");
      copy.addEventListener("click", function () {
        var text = pre.innerText.replace(/\n$/, "");
        function done(ok) {
          copy.textContent = ok ? "Copied" : "Press Ctrl+C";
          setTimeout(function () { copy.textContent = "Copy"; }, 1500);
        }
        function fallback() {
          var area = el("textarea");
          area.value = text;
          area.setAttribute("readonly", "");
          area.style.position = "fixed"; area.style.opacity = "0";
          document.body.appendChild(area);
          area.select();
          var ok = false;
          try { ok = document.execCommand("copy"); } catch (e) {}
          document.body.removeChild(area);
          done(ok);
        }
        if (navigator.clipboard && window.isSecureContext) {
          navigator.clipboard.writeText(text).then(function () { done(true); }, fallback);
        } else fallback();
      });
      (block.tagName === "PRE" ? block.parentNode : block).style.position = "relative";
      (block.tagName === "PRE" ? block.parentNode : block).appendChild(copy);
    });
    // ------------------------------------------------------------ printing
    var toggle = document.getElementById("print-solutions");
    if (toggle) {
      toggle.checked = storedPrint();
      toggle.addEventListener("change", function () {
        try { window.localStorage.setItem(PRINT_KEY, toggle.checked ? "yes" : "no"); } catch (e) {}
        root.classList.toggle("print-no-solutions", !toggle.checked);
      });
    }
    var opened = [];
    window.addEventListener("beforeprint", function () {
      if (root.classList.contains("print-no-solutions")) return;
      document.querySelectorAll("details:not([open])").forEach(function (d) {
        d.open = true; opened.push(d);
      });
    });
    window.addEventListener("afterprint", function () {
      opened.forEach(function (d) { d.open = false; });
      opened = [];
    });
    // "/" puts the cursor in the search box (as on Jupyter Book and most documentation sites).
    document.addEventListener("keydown", function (ev) {
      var target = ev.target, tag = target && target.tagName;
      if (ev.key !== "/" || ev.ctrlKey || ev.metaKey || ev.altKey) return;
      if (tag === "INPUT" || tag === "TEXTAREA" || (target && target.isContentEditable)) return;
      var box = document.getElementById("search-page-input") ||
        document.querySelector("nav.sidebar form.search input");
      if (box && box.offsetParent !== null) { ev.preventDefault(); box.focus(); }
    });
    searchPage();
  });
})();
