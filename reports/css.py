"""The stylesheet of the report page (inline in ``<style>``: the page loads nothing).

Tables keep their numbers whole (a cell of numbers and a signed number in text never break; a
table wider than the column scrolls in its own box), the math font has the Unicode letters by
meaning (𝒫, ℝ, 𝔼), figures and theorem blocks fit the column, and the printed page
(``report.pdf``) keeps figures and rows whole (its page layout, :mod:`flowcert.reports.pdf`, adds
page numbers, headers, contents and keeps theorem blocks and headings whole).
"""

PAGE_CSS = """\
:root { color-scheme: light; }
body { font-family: "Iowan Old Style", "Palatino Linotype", Palatino, Georgia,
       "Times New Roman", serif; font-size: 1.05rem; line-height: 1.55;
       color: #1d1d1f; background: #fdfdfb; max-width: 60rem; margin: 2rem auto;
       padding: 0 1.25rem; }
h1, h2, h3, h4, h5, h6 { line-height: 1.25; margin: 1.6em 0 0.5em; }
h1 { font-size: 1.9rem; border-bottom: 2px solid #ddd; padding-bottom: 0.25em; }
h2 { font-size: 1.45rem; border-bottom: 1px solid #e4e4e4; padding-bottom: 0.2em; }
h3 { font-size: 1.2rem; }
h4 { font-size: 1.05rem; }
p, ul, ol, table, pre, blockquote { margin: 0.7em 0; }
a { color: #1a5fb4; }
code, pre { font-family: "DejaVu Sans Mono", Menlo, Consolas, monospace; font-size: 0.88em; }
/* a code span (a key, a theorem id, a file) is one word: it never breaks inside, at a hyphen or a colon */
code { background: #f1f1ee; padding: 0.05em 0.3em; border-radius: 3px; white-space: nowrap; }
code.words { white-space: normal; } code.words > span.w { white-space: nowrap; }
pre { background: #f4f4f1; border: 1px solid #e2e2dc; padding: 0.75em 1em;
      white-space: pre-wrap; overflow-wrap: anywhere; border-radius: 4px; }
pre code { background: none; padding: 0; white-space: inherit; }
code.tex { color: #8a3b00; background: #fff4e5; }
blockquote { border-left: 4px solid #d6d6d0; margin-left: 0; padding: 0.1em 1em; color: #4a4a4a; }
hr { border: none; border-top: 1px solid #ccc; margin: 1.5em 0; }
/* Tables keep their numbers whole: a cell breaks only between words, a cell of numbers never
   (class "num"), and a table wider than the column scrolls inside its own container. */
.table-wrap { overflow-x: auto; max-width: 100%; margin: 0.7em 0; }
.table-wrap > table { margin: 0; }
table { border-collapse: collapse; width: 100%; table-layout: auto; font-size: 0.95em; }
th, td { border: 1px solid #bdbdb6; padding: 0.3em 0.55em; vertical-align: top; }
th.num, td.num { white-space: nowrap; font-variant-numeric: tabular-nums; }
span.num { white-space: nowrap; }
td:first-child { min-width: 6em; }
th { background: #eeeeea; }
tr:nth-child(even) td { background: #f8f8f5; }
img { max-width: 100%; height: auto; display: block; margin: 0.5em auto; }
picture { display: block; }
.caption { display: block; font-size: 0.88em; color: #444; margin: 0 0 1.2em; }
/* Letters by meaning are Unicode (𝒫, ℝ, 𝔼): a math font that has them all. */
math { font-family: "DejaVu Math TeX Gyre", "STIX Two Math", "Latin Modern Math", "Cambria Math", math;
       font-size: 1.08em; }
.math-display { display: block; margin: 0.9em 0; overflow-x: auto; overflow-y: hidden; text-align: center; }
math[display="block"] { margin: 0.4em auto; }
:target { background: #fff6c8; }
/* one block per theorem: statement, hypotheses list, prediction, cross-check */
div.theorem { border: 1px solid #d9d9d2; border-left: 4px solid #8aa4c8; border-radius: 4px;
              padding: 0.2em 1em 0.4em; margin: 1.2em 0; background: #fff; }
div.theorem h4 { margin: 0.5em 0 0.3em; }
div.theorem ul { padding-left: 1.4em; }
div.theorem li { margin: 0.25em 0; overflow-wrap: break-word; }
div.theorem table { width: auto; min-width: 50%; }
details { margin: 0.2em 0 0.4em; font-size: 0.92em; color: #333; }
details > summary { cursor: pointer; color: #1a5fb4; }
details > p, details > ul, details > .table-wrap { margin: 0.3em 0 0.3em 1em; }
@media print { body { max-width: none; margin: 0; background: #fff; font-size: 0.95rem; }
               .table-wrap { overflow: visible; } table { font-size: 0.85em; }
               details > summary { color: #333; font-style: italic; }
               img, picture, tr, .caption, li { break-inside: avoid; } h2, h3, h4 { break-after: avoid; } }
@media (max-width: 900px) { body { padding: 0 0.6rem; } table { font-size: 0.85em; }
                            th, td { padding: 0.25em 0.35em; } div.theorem { padding: 0.2em 0.6em 0.4em; } }
code.verdict { white-space: nowrap; overflow-wrap: normal; font-weight: bold; padding: 0.08em 0.45em; border-radius: 0.7em;
               border: 1px solid transparent; }
code.verdict-holds, code.verdict-agrees, code.verdict-applies { color: #0f5b1e;
       background: #dcf3e0; border-color: #9fd4aa; }
code.verdict-fails, code.verdict-disagrees, code.verdict-inapplicable { color: #8b1014;
       background: #fbe0e0; border-color: #e6a3a5; }
code.verdict-unknown, code.verdict-undecided { color: #6b5200; background: #fbf1cf;
       border-color: #e3cf86; }
code.verdict-skipped { color: #444; background: #ececec; border-color: #ccc; }
"""
