// The warpgym run viewer. Data arrive as scripts calling warpgymView.receive(doc): data/index.js (the
// run, its summary, every episode) and data/episode-<id>.js (one episode's turns). Everything in them
// comes from the run and is untrusted text: it reaches the page through textContent and attributes
// set one by one, never as markup.
"use strict";

(function () {
  const FILTERS = [
    ["task", "task"], ["category", "category"], ["agent", "agent"], ["model", "model"],
    ["context", "context level"], ["status", "status"], ["outcome", "outcome"],
  ];
  const view = {
    index: null,
    episodeId: null,
    episodeVersion: null,
    timer: null,
    filters: {},
  };

  function el(tag, attrs, ...children) {
    const node = document.createElement(tag);
    for (const [key, value] of Object.entries(attrs || {})) {
      if (value === null || value === undefined || value === false) continue;
      if (key === "class") node.className = value;
      else if (key === "text") node.textContent = String(value);
      else node.setAttribute(key, value === true ? "" : String(value));
    }
    for (const child of children) {
      if (child === null || child === undefined) continue;
      node.append(child instanceof Node ? child : document.createTextNode(String(child)));
    }
    return node;
  }

  function load(src) {
    const script = el("script", { src: src + "?t=" + Date.now() });
    const done = () => script.remove();
    script.addEventListener("load", done);
    script.addEventListener("error", () => {
      done();
      if (src.endsWith("index.js")) {
        setState("no data yet: run warpgym view on the run to write it", "error");
        schedule(5);
      } else {
        showEpisodeError("this episode's data could not be read");
      }
    });
    document.head.append(script);
  }

  function setState(text, kind) {
    const state = document.getElementById("state");
    state.textContent = text;
    state.className = "state " + (kind || "");
  }

  function schedule(seconds) {
    clearTimeout(view.timer);
    view.timer = setTimeout(() => load("data/index.js"), Math.max(1, seconds) * 1000);
  }

  // ------------------------------------------------------------------ generic pieces
  function table(t) {
    const wrap = el("figure", { class: "table" });
    if (t.title) wrap.append(el("figcaption", { text: t.title }));
    if (!t.rows.length) {
      if (t.note) wrap.append(el("p", { class: "note", text: t.note }));
      return wrap;
    }
    const tab = el("table");
    const plain = t.headers.every((h) => h === "");
    if (!plain) tab.append(el("thead", {}, el("tr", {}, ...t.headers.map((h) => el("th", { text: h })))));
    const body = el("tbody");
    for (const row of t.rows) {
      body.append(el("tr", {}, ...row.map((cell, i) => el(plain && i === 0 ? "th" : "td", { text: cell }))));
    }
    tab.append(body);
    wrap.append(tab);
    if (t.note) wrap.append(el("p", { class: "note", text: t.note }));
    return wrap;
  }

  function textBlock(t, cls) {
    const box = el("div", { class: "text " + (cls || "") });
    box.append(el("pre", { text: t.text }));
    if (t.cut) box.append(el("p", { class: "note", text: `… ${t.cut} more characters not shown (warpgym export has them all)` }));
    return box;
  }

  function fold(title, open, ...content) {
    return el("details", { open: open }, el("summary", { text: title }), ...content);
  }

  // ------------------------------------------------------------------ the index
  function onIndex(doc) {
    view.index = doc;
    document.title = "warpgym view: " + doc.name;
    document.getElementById("title").textContent = "warpgym view: " + doc.name;
    setState(
      `${doc.state} · last change read ${doc.generated}` +
        (doc.live ? ` · checked every ${doc.refresh_s} s` : " · not refreshing (the run is not going on)"),
      doc.live ? "live" : "",
    );
    renderSummary(doc);
    renderFilters(doc);
    renderEpisodes();
    const open = view.index.episodes.find((e) => e.id === view.episodeId);
    if (open && open.version !== view.episodeVersion) load(`data/episode-${open.id}.js`);
    if (doc.live) schedule(doc.refresh_s);
  }

  function renderSummary(doc) {
    document.getElementById("summary-tables").replaceChildren(...doc.summary.map(table));
    const plots = doc.plots.map((p) =>
      el("figure", { class: "plot" }, el("img", { src: p.src, alt: p.title }),
        el("figcaption", { text: `${p.title} (drawn ${p.drawn})` })));
    const links = [];
    if (doc.report) links.push(el("p", {}, el("a", { href: doc.report, text: "the full report" })));
    if (!doc.plots.length) links.push(el("p", { class: "note", text: "No figures yet: they are drawn once a turn is stored." }));
    document.getElementById("plots").replaceChildren(...plots, ...links);
  }

  function outcomeOf(e) {
    if (!e.turns.length) return "no turn yet";
    return e.turns.some((t) => t.outcome === "correct") ? "solved" : "unsolved";
  }

  function value(e, key) {
    return key === "outcome" ? outcomeOf(e) : String(e[key]);
  }

  function renderFilters(doc) {
    const form = document.getElementById("filters");
    const controls = FILTERS.map(([key, name]) => {
      const values = [...new Set(doc.episodes.map((e) => value(e, key)))].sort();
      const select = el("select", { id: "filter-" + key, name: key, "aria-label": name });
      select.append(el("option", { value: "", text: `every ${name}` }));
      for (const v of values) select.append(el("option", { value: v, text: v }));
      select.value = values.includes(view.filters[key]) ? view.filters[key] : "";
      select.addEventListener("change", () => {
        view.filters[key] = select.value;
        renderEpisodes();
      });
      return el("label", {}, select);
    });
    form.replaceChildren(...controls);
  }

  function renderEpisodes() {
    const shown = view.index.episodes.filter((e) =>
      FILTERS.every(([key]) => !view.filters[key] || value(e, key) === view.filters[key]));
    const rows = shown.map((e) => {
      const chips = el("span", { class: "chips" }, ...e.turns.map((t) =>
        el("span", { class: "chip " + t.outcome.replace(" ", "-"), title: `turn ${t.turn}: ${t.label}`, text: t.label })));
      const row = el("tr", { "data-id": e.id, class: e.id === view.episodeId ? "selected" : null, tabindex: 0 },
        el("td", { text: e.id }), el("td", { text: e.task }), el("td", { text: e.category }),
        el("td", { text: e.agent }), el("td", { text: e.model }), el("td", { text: e.context }),
        el("td", { text: e.sample }), el("td", { class: "status " + e.status, text: e.status, title: e.error || null }),
        el("td", {}, chips), el("td", { text: e.heldout }), el("td", { class: "r", text: e.tokens }),
        el("td", { class: "r", text: e.cost }));
      const open = () => { location.hash = "episode-" + e.id; };
      row.addEventListener("click", open);
      row.addEventListener("keydown", (ev) => { if (ev.key === "Enter") open(); });
      return row;
    });
    document.querySelector("#episodes tbody").replaceChildren(...rows);
    document.getElementById("episode-count").textContent = `(${shown.length} of ${view.index.episodes.length})`;
  }

  // ------------------------------------------------------------------ one episode
  function openFromHash() {
    const m = /^#episode-(\d+)$/.exec(location.hash);
    const panel = document.getElementById("episode");
    if (!m) {
      view.episodeId = null;
      panel.hidden = true;
      if (view.index) renderEpisodes();
      return;
    }
    view.episodeId = Number(m[1]);
    view.episodeVersion = null;
    panel.hidden = false;
    panel.replaceChildren(el("p", { class: "note", text: `loading episode ${view.episodeId}…` }));
    if (view.index) renderEpisodes();
    load(`data/episode-${view.episodeId}.js`);
  }

  function showEpisodeError(text) {
    document.getElementById("episode").replaceChildren(el("p", { class: "state error", text: text }));
  }

  function onEpisode(doc) {
    if (doc.id !== view.episodeId) return;
    const first = view.episodeVersion === null;
    view.episodeVersion = doc.version;
    const panel = document.getElementById("episode");
    const close = el("a", { href: "#", class: "close", text: "close" });
    const parts = [el("h2", {}, `Episode ${doc.id} `, close), table(doc.header)];
    if (doc.heldout) parts.push(fold("Heldout check of the best candidate: " + doc.heldout.label, false, verdictBlock(doc.heldout)));
    if (!doc.turns.length) parts.push(el("p", { class: "note", text: "No turn stored yet." }));
    for (const turn of doc.turns) parts.push(turnBlock(turn));
    panel.replaceChildren(...parts);
    if (first) panel.scrollIntoView();
  }

  function verdictBlock(v) {
    const box = el("div", { class: "verdict " + v.outcome.replace(" ", "-") });
    box.append(el("p", { class: "verdict-label", text: "Verdict: " + v.label }));
    for (const t of v.tables) box.append(table(t));
    for (const list of v.lists) {
      box.append(el("h5", { text: list.title }), el("ul", {}, ...list.items.map((i) => el("li", {}, textBlock(i)))));
    }
    return box;
  }

  function diffBlock(turn) {
    if (!turn.candidate) return el("p", { class: "note", text: "No candidate at this turn." });
    const d = turn.diff;
    if (!d || d.against === null) {
      return fold("Candidate (the first of this episode: nothing to compare)", false, textBlock(turn.candidate));
    }
    if (d.same) {
      return el("div", { class: "diff" }, el("p", { class: "note", text: `Same candidate as turn ${d.against}.` }));
    }
    const pre = el("pre", { class: "diff-lines" });
    for (const line of d.lines) {
      const kind = line.startsWith("@@") ? "hunk" : line.startsWith("+++") || line.startsWith("---") ? "file"
        : line.startsWith("+") ? "add" : line.startsWith("-") ? "del" : "ctx";
      pre.append(el("span", { class: kind, text: line }), "\n");
    }
    const box = el("div", { class: "diff" }, el("h4", { text: `Diff from turn ${d.against}'s candidate` }), pre);
    if (d.cut_lines) box.append(el("p", { class: "note", text: `… ${d.cut_lines} more diff lines not shown` }));
    box.append(fold("The whole candidate", false, textBlock(turn.candidate)));
    return box;
  }

  function turnBlock(turn) {
    const section = el("section", { class: "turn", "data-turn": turn.turn });
    section.append(el("h3", { text: `Turn ${turn.turn} (${turn.phase}): ${turn.verdict.label}` }));
    const prompt = el("div", { class: "messages" });
    if (turn.carried) prompt.append(el("p", { class: "note", text: `${turn.carried} earlier messages carried over (shown at earlier turns)` }));
    for (const m of turn.messages) {
      const title = m.resent_answer_of ? `${m.kind}: the answer of turn ${m.resent_answer_of}, sent again` : m.kind;
      prompt.append(fold(title, m.kind === "feedback", textBlock(m, "message " + m.kind)));
    }
    const n = turn.messages.length;
    section.append(fold(`Prompt: ${n} new message${n === 1 ? "" : "s"}`, turn.turn !== 1, prompt));
    section.append(fold("Answer", false, textBlock(turn.answer, "answer")));
    if (turn.extraction_problem) section.append(el("p", { class: "state error", text: "No candidate: " + turn.extraction_problem }));
    section.append(diffBlock(turn));
    section.append(verdictBlock(turn.verdict));
    section.append(fold("The judge's feedback on this candidate", false, textBlock(turn.feedback, "feedback")));
    section.append(table(turn.usage));
    return section;
  }

  window.warpgymView = {
    receive(doc) {
      if (doc && doc.kind === "index") onIndex(doc);
      else if (doc && doc.kind === "episode") onEpisode(doc);
    },
  };
  window.addEventListener("hashchange", openFromHash);
  load("data/index.js");
  openFromHash();
})();
