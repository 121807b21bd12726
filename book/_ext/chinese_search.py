"""Search that finds Chinese: words cut by jieba in the index, the query cut against the index's own words.

Sphinx's Chinese search (sphinx.search.zh) splits a page's text into words with jieba when it is
installed (requirements.txt pins it); without jieba no Chinese word reaches searchindex.js at all. The
browser has no jieba: its default splitQuery keeps a run of Chinese characters as one query term
("组内标准化"), which matches only when jieba cut exactly that word. The splitter here cuts each run of
Chinese characters the way the index was cut, by the longest word the index holds at each position
(forward maximum matching against Search._index's terms and title terms), so "组内标准化" looks for
"组内" and "标准化", the words jieba indexed. A character left over alone is dropped, since the index keeps no
one-character word (SearchChinese.word_filter) and a term nothing can match would hide every page
("验证器" is "验证" and "器"); two or more in a row are a word the book does not have, and the query is
that word alone, which finds nothing ("蛋白质折叠" does not list the pages that say "折叠").
Everything else is split as Sphinx splits it. jieba's "Building prefix dict" lines are silenced:
a build prints warnings only.
"""
from __future__ import annotations

import logging

from sphinx.search.zh import SearchChinese

LONGEST_WORD = 8  # characters tried at each position of a Chinese query run

# splitQuery(query) -> terms; called by searchtools.js once the index is loaded (Search.query).
SPLITTER = r"""
var splitQuery = (query) => {
  const index = (typeof Search !== "undefined" && Search._index) || {terms: {}, titleterms: {}};
  const known = (word) => Object.prototype.hasOwnProperty.call(index.terms, word)
    || Object.prototype.hasOwnProperty.call(index.titleterms, word);
  // each run of Chinese characters: the longest indexed word at each position; a character no word
  // covers is dropped when it stands alone between words ("验证器": "验证" + "器"), but two or more in a
  // row are a word the book does not have, and the query is then that word alone (it finds nothing)
  const cut = (run) => {
    const words = [];
    let at = 0, unknown = "";
    while (at < run.length) {
      let end = Math.min(run.length, at + %(longest)d);
      while (end > at + 1 && !known(run.slice(at, end))) end -= 1;
      if (end > at + 1) {
        if (unknown.length > 1) return {missing: unknown};
        unknown = "";
        words.push(run.slice(at, end));
      } else unknown += run[at];
      at = end;
    }
    return unknown.length > 1 ? {missing: unknown} : {words};
  };
  const terms = [];
  for (const piece of query.split(/[^\p{Letter}\p{Number}_\p{Emoji_Presentation}]+/gu)) {
    const parts = piece.split(/(\p{Script=Han}+)/u);
    for (let i = 0; i < parts.length; i += 1) {
      if (!parts[i]) continue;
      if (i %% 2 === 0) { terms.push(parts[i]); continue; }
      const found = cut(parts[i]);
      if (found.missing) return [found.missing];
      terms.push(...found.words);
    }
  }
  return terms;
};
""" % {"longest": LONGEST_WORD}


class CourseChinese(SearchChinese):
    """sphinx.search.zh with a query splitter that cuts Chinese the way the index was cut."""

    js_splitter_code = SPLITTER

    def init(self, options: dict[str, str]) -> None:
        try:
            import jieba
        except ImportError as err:  # pinned in requirements.txt: without it no Chinese word is searchable
            raise RuntimeError("Chinese search needs jieba (requirements.txt): pip install -r requirements.txt") \
                from err
        jieba.setLogLevel(logging.WARNING)
        super().init(options)


PLACEHOLDER = "搜索本书……"  # the book theme's is English: "Search this book..."


def chinese_placeholder(app, config) -> None:
    config.html_theme_options = {**config.html_theme_options, "search_bar_text": PLACEHOLDER}


def setup(app):
    app.add_search_language(CourseChinese)
    app.connect("config-inited", chinese_placeholder)
