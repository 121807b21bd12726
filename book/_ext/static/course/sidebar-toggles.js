/* The chapter list and the page's contents open from the buttons a reader sees.
 *
 * pydata-sphinx-theme 0.17.1 (its dialogs, below 992 px) and sphinx-book-theme 1.3.0 (hiding the chapter
 * list, from 992 px) attach their click handlers to document.querySelector(".primary-toggle") and
 * (".secondary-toggle"): the first such button of the page, which is pydata's own header button, hidden in
 * the book theme's layout. The visible buttons in the article header got no handler, so they did nothing at
 * any width (pydata-sphinx-theme issue 2451). Here every other toggle hands its click to that first button,
 * which carries both themes' handlers (pinned versions: a theme that wired every toggle itself would get
 * two clicks; tests/test_site_reader.py opens and closes both at three widths).
 */
document.addEventListener("DOMContentLoaded", () => {
  ["primary-toggle", "secondary-toggle"].forEach((kind) => {
    const [wired, ...others] = document.querySelectorAll(`.${kind}`);
    if (!wired) return;
    others.forEach((button) => {
      button.addEventListener("click", (event) => {
        event.preventDefault();
        event.stopPropagation();
        wired.click();
      });
    });
  });
});

/* A heading chosen in the contents dialog (a tablet, a phone) closes the dialog: the theme leaves it open,
 * over the very section the reader asked for. Links to other pages load a new page anyway. */
document.addEventListener("click", (event) => {
  const link = event.target.closest && event.target.closest("dialog[open] a[href]");
  if (!link) return;
  const target = new URL(link.href, document.baseURI);
  if (target.pathname === window.location.pathname && target.hash) link.closest("dialog").close();
});
