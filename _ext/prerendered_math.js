// Typesets the book's maths with MathJax 3 in Node, when the book is built (_ext/prerendered_math.py).
//
// Usage: node prerendered_math.js <MathJax's es5 folder>
// stdin:  {"pages": [{"items": [{"tex": "...", "display": true}, ...]}, ...]}
// stdout: {"pages": [{"html": ["<mjx-container ...>", ...], "css": "...", "errors": [[i, "message"], ...]}]}
//
// Each formula becomes MathJax's CommonHTML with its MathML beside it for assistive technology
// (a11y/assistive-mml), as MathJax would have written it in the reader's browser. Each page gets
// the stylesheet of only the characters it uses. An undefined macro is an error here (the
// noundefined package, which would draw it in red, is left out), and every TeX error is reported.
"use strict";

// The browser's MathJax scales each formula so that its x-height matches the text's
// (matchFontHeight); 1ex in a font-size is the parent's x-height, 0.442em the TeX fonts'.
const MATCH_FONT_HEIGHT = 'mjx-container[jax="CHTML"] { font-size: calc(1ex / 0.442); }\n';

// Where the stylesheet finds MathJax's fonts: prerendered_math.py puts each page's path here.
const FONT_URL = "MJX-FONT-URL";

function readStdin() {
  return new Promise((resolve, reject) => {
    const chunks = [];
    process.stdin.on("data", (chunk) => chunks.push(chunk));
    process.stdin.on("end", () => resolve(Buffer.concat(chunks).toString("utf8")));
    process.stdin.on("error", reject);
  });
}

async function typesetPage(MathJax, page, errors) {
  const adaptor = MathJax.startup.adaptor;
  MathJax.startup.output.clearCache(); // this page's stylesheet holds this page's characters only
  const html = [];
  for (const [index, item] of page.items.entries()) {
    errors.current = (message) => errors.page.push([index, message]);
    const node = await MathJax.tex2chtmlPromise(item.tex, { display: item.display });
    html.push(adaptor.outerHTML(node));
  }
  const css = adaptor.textContent(MathJax.chtmlStylesheet());
  return { html, css: css + MATCH_FONT_HEIGHT };
}

async function main() {
  const es5 = process.argv[2];
  const request = JSON.parse(await readStdin());
  const errors = { page: [], current: null };
  const MathJax = await require(`${es5}/node-main.js`).init({
    loader: { load: ["input/tex", "output/chtml", "a11y/assistive-mml"] },
    tex: {
      packages: { "[-]": ["noundefined"] },
      formatError(jax, error) {
        errors.current(error.message);
        return jax.formatError(error);
      },
    },
    chtml: { fontURL: FONT_URL }, // each page's own path to the fonts replaces it
  });
  const pages = [];
  for (const page of request.pages) {
    errors.page = [];
    const result = await typesetPage(MathJax, page, errors);
    pages.push({ ...result, errors: errors.page });
  }
  process.stdout.write(JSON.stringify({ pages }));
}

main().catch((error) => {
  process.stderr.write(`prerendered_math.js: ${error.stack || error}\n`);
  process.exit(1);
});
