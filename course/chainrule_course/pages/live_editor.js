/* chainrule live code: the code editor of a cell, CodeMirror 6 with its Python mode.
 *
 * An ES module, imported by live_cells.js when the reader presses "Live code"; the bare names
 * ("@codemirror/view", ...) resolve through the page's import map, which the build writes
 * (_ext/live_code.py), to the copies of npm's packages (package-lock.json) in _static/live/cm/.
 *
 * Tab indents and Shift+Tab dedents (CodeMirror's indentWithTab); Escape, then Tab, leaves
 * the editor, as CodeMirror documents for keyboard users. Enter keeps the indentation and
 * indents after a colon; Shift+Enter or Ctrl+Enter runs the cell (Ctrl+. or Cmd+., which stops
 * the running code, is live.js's, on the whole page: CodeMirror binds no such key). The editor grows with
 * its content. Colours come from classes (tok-keyword, ...) that live.css sets for the
 * light and the dark theme.
 */
import { EditorState } from "@codemirror/state";
import { EditorView, keymap } from "@codemirror/view";
import { defaultKeymap, history, historyKeymap, indentWithTab } from "@codemirror/commands";
import { bracketMatching, indentOnInput, indentUnit, syntaxHighlighting } from "@codemirror/language";
import { python } from "@codemirror/lang-python";
import { classHighlighter } from "@lezer/highlight";

/* An editor holding ``code``, named ``label`` for screen readers and described by the element
 * whose id is ``describedBy`` (the note of the keys, when given). ``onRun()`` on Shift+Enter
 * or Ctrl+Enter, ``onEdit(text)`` after every change. Returns what live.js needs: the
 * element to place, the text (``value``, which can be set), focus() and onFocus(). */
export function makeCodeEditor(code, label, onRun, onEdit, describedBy) {
  const described = describedBy ? { "aria-describedby": describedBy } : {};
  const run = () => { onRun(); return true; };
  const view = new EditorView({
    doc: code,
    extensions: [
      history(),
      indentOnInput(),
      bracketMatching(),
      syntaxHighlighting(classHighlighter),
      python(),
      indentUnit.of("    "),
      EditorState.tabSize.of(4),
      keymap.of([
        { key: "Shift-Enter", run: run },
        { key: "Ctrl-Enter", run: run },
        { key: "Mod-Enter", run: run },
        indentWithTab,
        ...historyKeymap,
        ...defaultKeymap,
      ]),
      // tabindex 0 says what the browser already does (an editable box is in the tab order) in a
      // way axe-core reads: a code line wider than a phone makes the box a scrolling region, which
      // must be reachable by the keyboard (WCAG 2.1.1, axe's scrollable-region-focusable).
      EditorView.contentAttributes.of({ "aria-label": label, "aria-multiline": "true", tabindex: "0", ...described }),
      // The box's class through CodeMirror's own facet: CodeMirror rewrites the class attribute
      // on focus and on every update, so a class added from outside is lost at the first touch.
      EditorView.editorAttributes.of({ class: "cr-live-editor" }),
      EditorView.updateListener.of((update) => {
        if (update.docChanged) onEdit(update.state.doc.toString());
      }),
    ],
  });
  // The text, for the page's tests and tools: element.chainruleCode().
  view.dom.chainruleCode = () => view.state.doc.toString();
  return {
    element: view.dom,
    get value() { return view.state.doc.toString(); },
    set value(text) {
      view.dispatch({ changes: { from: 0, to: view.state.doc.length, insert: text } });
    },
    focus() { view.focus(); },
    onFocus(callback) { view.contentDOM.addEventListener("focus", callback); },
  };
}
