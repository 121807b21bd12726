/* MLM 代码训练模式: random cloze practice on the static site (no kernel, no framework, no CDN).
 *
 * Each card's data (the snippet cut into gaps and maskable tokens, and the number of blanks per
 * level) is written into the page at build time by agentrl_ref/teaching/cloze/cards.py through the Sphinx
 * extension in book/_ext. The PRNG and the blank choice below mirror agentrl_ref/teaching/cloze/cards.py bit for
 * bit, so the same seed hides the same tokens here and in the JupyterLab widget.
 *
 * URL parameters: ?seed=<uint32> fixes the first seed of every card, ?level=<name> the level.
 * Keyboard: Tab / Shift+Tab move between blanks, Enter checks.
 */
(function () {
  "use strict";

  function mulberry32(seed) {
    var a = seed >>> 0;
    return function () {
      a = (a + 0x6d2b79f5) | 0;
      var t = Math.imul(a ^ (a >>> 15), 1 | a);
      t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
      return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
    };
  }

  function chooseBlanks(n, k, seed) {
    if (!(k >= 0 && k <= n)) throw new RangeError("need 0 <= k <= n");
    var rand = mulberry32(seed);
    var order = [];
    for (var i = 0; i < n; i++) order.push(i);
    for (i = 0; i < k; i++) {
      var j = i + Math.floor(rand() * (n - i));
      var tmp = order[i]; order[i] = order[j]; order[j] = tmp;
    }
    return order.slice(0, k).sort(function (x, y) { return x - y; });
  }

  function nextSeed(seed) {
    return Math.floor(mulberry32(seed)() * 4294967296);
  }

  function sameList(a, b) {
    if (a.length !== b.length) return false;
    for (var i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
    return true;
  }

  function refreshSeed(n, k, seed) {
    var current = chooseBlanks(n, k, seed), candidate = seed;
    for (var tries = 0; tries < 64; tries++) {
      candidate = nextSeed(candidate);
      if (k > 0 && k < n && sameList(chooseBlanks(n, k, candidate), current)) continue;
      return candidate;
    }
    return candidate;
  }

  function randomSeed() {
    if (window.crypto && window.crypto.getRandomValues) {
      return window.crypto.getRandomValues(new Uint32Array(1))[0];
    }
    return Math.floor(Math.random() * 4294967296);
  }

  function parseSeed(text) {
    text = String(text === null || text === undefined ? "" : text).trim();
    if (!/^[0-9]+$/.test(text)) return null;
    var value = Number(text);
    return Number.isInteger(value) && value >= 0 && value <= 4294967295 ? value : null;
  }

  function el(tag, attrs, text) {
    var node = document.createElement(tag);
    for (var key in attrs || {}) node.setAttribute(key, attrs[key]);
    if (text !== undefined) node.textContent = text;
    return node;
  }

  function Cloze(card, data, seed, levelName) {
    this.card = card;
    this.data = data;
    this.answers = [];
    for (var i = 1; i < data.pieces.length; i += 2) this.answers.push(data.pieces[i]);
    this.level = data.levels.filter(function (l) { return l.name === levelName; })[0] ||
      data.levels.filter(function (l) { return l.name === data.defaultLevel; })[0] || data.levels[0];
    this.seed = seed;
    this.blanks = [];
    this.build();
    this.update();
  }

  Cloze.prototype.build = function () {
    var self = this, data = this.data, card = this.card;
    var old = card.querySelector(".cloze-static");
    var controls = el("div", { "class": "cloze-controls", role: "group", "aria-label": data.title + " 练习设置" });

    var levelLabel = el("label", {}, "难度 ");
    this.levelSelect = el("select", { "class": "cloze-level" });
    data.levels.forEach(function (l) {
      var option = el("option", { value: l.name }, l.name + "（" + l.k + " 空）");
      if (l.name === self.level.name) option.selected = true;
      self.levelSelect.appendChild(option);
    });
    levelLabel.appendChild(this.levelSelect);

    var seedLabel = el("label", {}, "种子 ");
    this.seedInput = el("input", { "class": "cloze-seed", type: "text", inputmode: "numeric",
      size: "10", "aria-label": "种子（同一个种子挖同样的空）" });
    seedLabel.appendChild(this.seedInput);

    this.refreshButton = el("button", { type: "button", "class": "cloze-refresh" }, "刷新");
    this.checkButton = el("button", { type: "button", "class": "cloze-check" }, "检查");
    this.revealButton = el("button", { type: "button", "class": "cloze-reveal" }, "显示答案");
    [levelLabel, seedLabel, this.refreshButton, this.checkButton, this.revealButton].forEach(function (c) {
      controls.appendChild(c);
    });

    // the build wrote: source line, counter, then the plain code (what a reader without JS sees)
    this.counter = card.querySelector(".cloze-counter");
    this.result = el("p", { "class": "cloze-result", "aria-live": "polite" });
    this.pre = el("pre", { "class": "cloze-code" });
    this.code = el("code", {});
    this.pre.appendChild(this.code);
    card.insertBefore(controls, this.counter);
    card.insertBefore(this.result, old);
    card.replaceChild(this.pre, old);
    card.classList.add("cloze-ready");

    this.levelSelect.addEventListener("change", function () {
      self.level = data.levels[self.levelSelect.selectedIndex];
      self.update();
    });
    this.seedInput.addEventListener("change", function () { self.applySeedInput(); });
    this.seedInput.addEventListener("keydown", function (event) {
      if (event.key === "Enter") { event.preventDefault(); self.applySeedInput(); }
    });
    this.refreshButton.addEventListener("click", function () { self.refresh(); });
    this.checkButton.addEventListener("click", function () { self.check(); });
    this.revealButton.addEventListener("click", function () { self.reveal(); });
    this.code.addEventListener("keydown", function (event) {
      if (event.key === "Enter" && event.target.classList.contains("cloze-blank")) {
        event.preventDefault();
        self.check();
      }
    });
  };

  Cloze.prototype.applySeedInput = function () {
    var seed = parseSeed(this.seedInput.value);
    if (seed === null) {
      this.seedInput.value = String(this.seed);
      return;
    }
    this.seed = seed;
    this.update();
  };

  Cloze.prototype.refresh = function () {
    this.seed = refreshSeed(this.answers.length, this.level.k, this.seed);
    this.update();
  };

  Cloze.prototype.update = function () {
    var n = this.answers.length, k = this.level.k, pieces = this.data.pieces;
    this.blanks = chooseBlanks(n, k, this.seed);
    this.seedInput.value = String(this.seed);
    this.card.setAttribute("data-seed", String(this.seed));
    this.counter.textContent = "共 " + n + " 个可挖空位 | 已挖 " + k + " 个";
    this.result.textContent = "";
    var hidden = {};
    this.blanks.forEach(function (i) { hidden[i] = true; });
    var code = this.code;
    code.textContent = "";
    var number = 0;
    for (var p = 0; p < pieces.length; p++) {
      if (p % 2 === 0) {
        if (pieces[p]) code.appendChild(document.createTextNode(pieces[p]));
        continue;
      }
      var index = (p - 1) / 2, text = pieces[p];
      if (hidden[index]) {
        number += 1;
        var input = el("input", { "class": "cloze-blank", type: "text", "data-index": String(index),
          autocomplete: "off", autocapitalize: "off", autocorrect: "off", spellcheck: "false",
          "aria-label": "第 " + number + " 空（" + text.length + " 个字符）" });
        input.style.width = "calc(" + Math.max(text.length, 2) + "ch + 0.6em)";
        code.appendChild(input);
      } else {
        code.appendChild(el("span", { "class": "cloze-token", "data-index": String(index) }, text));
      }
    }
  };

  Cloze.prototype.inputs = function () {
    return Array.prototype.slice.call(this.code.querySelectorAll("input.cloze-blank"));
  };

  Cloze.prototype.check = function () {
    var answers = this.answers, right = 0, wrong = 0, empty = 0;
    this.inputs().forEach(function (input) {
      var value = input.value.trim(), answer = answers[Number(input.getAttribute("data-index"))];
      input.classList.remove("cloze-right", "cloze-wrong", "cloze-revealed");
      input.removeAttribute("aria-invalid");
      if (!value) { empty += 1; return; }
      if (value === answer) {
        right += 1;
        input.classList.add("cloze-right");
      } else {
        wrong += 1;
        input.classList.add("cloze-wrong");
        input.setAttribute("aria-invalid", "true");
      }
    });
    var total = right + wrong + empty;
    this.result.textContent = right === total && total > 0 ? "全部正确：" + right + " / " + total
      : "对 " + right + " 个，错 " + wrong + " 个，未填 " + empty + " 个";
    return { right: right, wrong: wrong, empty: empty };
  };

  Cloze.prototype.reveal = function () {
    var answers = this.answers;
    this.inputs().forEach(function (input) {
      input.value = answers[Number(input.getAttribute("data-index"))];
      input.classList.remove("cloze-right", "cloze-wrong");
      input.removeAttribute("aria-invalid");
      input.classList.add("cloze-revealed");
    });
    this.result.textContent = "已填入答案：看一遍，再点「刷新」换一批";
  };

  var instances = [];

  function init() {
    var query = new URLSearchParams(window.location.search);
    var fixedSeed = parseSeed(query.get("seed") || "");
    var level = query.get("level");
    var cards = document.querySelectorAll(".cloze-card");
    Array.prototype.forEach.call(cards, function (card) {
      if (card.classList.contains("cloze-ready")) return;
      var script = card.querySelector("script.cloze-data");
      if (!script) return;
      var data = JSON.parse(script.textContent);
      instances.push(new Cloze(card, data, fixedSeed === null ? randomSeed() : fixedSeed, level));
    });
  }

  window.CourseCloze = {
    mulberry32: mulberry32, chooseBlanks: chooseBlanks, nextSeed: nextSeed, refreshSeed: refreshSeed,
    instances: instances, init: init
  };

  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", init);
  else init();
})();
