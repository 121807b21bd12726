"""Chinese search: the index holds Chinese words, and a Chinese query is cut into the same words.

Sphinx's `zh` search language (html_search_language: zh in _config.yml) cuts the pages' text with jieba
(requirements.txt) in `cut_for_search` mode; without jieba the index holds no Chinese at all. The query side
runs in the browser, where Sphinx only splits at spaces and punctuation: 组内标准化 stays one term, but the index
has 组内, 标准 and 标准化, so the query found nothing. The splitter below (Sphinx's `js_splitter_code` hook,
written into language_data.js) cuts each run of Han characters by forward maximum matching against the
index's own words (its terms and title terms): 组内标准化 -> 组内 + 标准化, 验证器 -> 验证 (a single character is
never indexed, so it is dropped; two or more characters the index does not know are kept, and find nothing).
Latin words and numbers are split as Sphinx does.

Every word of a query is required. Sphinx's searchtools.js lets a page through that lacks the query's words of
two letters or fewer (English ones that short are not indexed); most Chinese words have two characters, so
组内标准化 listed every page with 标准化. The same script (language_data.js) keeps only the pages that hold every
word, in a title or the text, whole or (three characters or more, as Sphinx matches) inside a longer indexed word.

Numbered things: Sphinx drops a bare number from a query, so 练习 3 would find every page that says 练习. The
index therefore also holds a numbering word with the number after it as one term (练习3, 图3; NUMBERING), and the
query splitter adds the same term when a number follows Chinese text: 练习 3 finds the pages that say 练习 3.
"""
from __future__ import annotations

from sphinx.search.zh import JIEBA, SearchChinese

if JIEBA:
    import jieba

LONGEST_WORD = 8  # Han characters; jieba's dictionary words are shorter
NUMBERING = ("练习", "填空", "图", "表", "第", "难度")  # words a number follows: 练习 3, 图 2, 第 4 步

SPLITTER = """
function splitQuery(query) {
  const index = (typeof Search !== "undefined" && Search._index) || {};
  const known = (word) => (index.terms && Object.prototype.hasOwnProperty.call(index.terms, word))
    || (index.titleterms && Object.prototype.hasOwnProperty.call(index.titleterms, word));
  const han = /\\p{Script=Han}/u;
  const runs = [];
  for (const chunk of query.split(/[^\\p{Letter}\\p{Number}_\\p{Emoji_Presentation}]+/gu)) {
    if (chunk) runs.push(...chunk.match(/\\p{Script=Han}+|[^\\p{Script=Han}]+/gu));
  }
  const words = [];
  for (let i = 0; i < runs.length; i++) {
    const run = runs[i];
    if (!han.test(run)) { words.push(run); continue; }
    // a number after Chinese text: the indexed "word + number" (练习 3 -> 练习3), its longest known form
    const next = runs[i + 1] || "";
    if (/^\\d+$/.test(next)) {
      for (let from = Math.max(0, run.length - LONGEST_WORD); from < run.length; from++) {
        if (known(run.slice(from) + next)) { words.push(run.slice(from) + next); break; }
      }
    }
    // forward maximum matching; characters the index does not know: dropped alone, kept (finding nothing) if more
    let start = 0, unknown = "";
    const flush = () => { if (unknown.length > 1) words.push(unknown); unknown = ""; };
    while (start < run.length) {
      let end = 0;
      for (let stop = Math.min(run.length, start + LONGEST_WORD); stop > start + 1; stop--) {
        if (known(run.slice(start, stop))) { end = stop; break; }
      }
      if (end) { flush(); words.push(run.slice(start, end)); start = end; }
      else { unknown += run[start]; start += 1; }
    }
    flush();
  }
  return words;
}

// every word of the query required (module docstring of book/_ext/search_zh.py)
(() => {
  const holds = (file, word) => {
    const index = Search._index;
    const has = (map, key) => map[key] !== undefined && [].concat(map[key]).includes(file);
    if (has(index.terms, word) || has(index.titleterms, word)) return true;
    if (word.length < 3) return false;
    return [index.terms, index.titleterms].some((map) => Object.keys(map).some(
      (term) => term.includes(word) && has(map, term)));
  };
  const requireAll = () => {
    const original = Search.performTermsSearch;
    Search.performTermsSearch = (searchTerms, excludedTerms) => original(searchTerms, excludedTerms).filter(
      (result) => [...searchTerms].every((word) => holds(Search._index.docnames.indexOf(result[0]), word)));
  };
  if (typeof Search !== "undefined") requireAll();
  else document.addEventListener("DOMContentLoaded", requireAll);
})();
""".replace("LONGEST_WORD", str(LONGEST_WORD))


class CourseChinese(SearchChinese):
    """Sphinx's Chinese search language with a query splitter that knows Chinese words (module docstring)."""

    js_splitter_code = SPLITTER
    def split(self, input: str) -> list[str]:
        words = super().split(input)
        if JIEBA:
            tokens = [token for token in jieba.cut(input) if token.strip()]
            for word, after in zip(tokens, tokens[1:]):
                if after.isdigit() and after.isascii() and word in NUMBERING:
                    words.append(word + after)
        return words


def setup(app) -> None:
    app.add_search_language(CourseChinese)
