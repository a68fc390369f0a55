// The Code Lab's editor: CodeMirror 6 as a Streamlit custom component (st.components.v2).
//
// Python (pages/_editor.py) mounts it with
//   data = {doc, revision, error_line, height, label}
// and listens to
//   state "value"  - the editor's text, sent when the editor loses focus and before a run,
//   trigger "run"  - Ctrl/Cmd+Enter, carrying the text to run.
// `doc` replaces the editor's text only when `revision` changes (a reset, a shared link, the
// walkthrough): Python does not echo the visitor's own edits back, so typing never races a
// rerun, and the component's message stays the same (Streamlit then sends a short reference to
// it instead of this bundle again).
import { EditorState, RangeSet, StateEffect, StateField, Prec } from "@codemirror/state";
import {
  Decoration,
  EditorView,
  GutterMarker,
  drawSelection,
  gutter,
  highlightActiveLine,
  highlightActiveLineGutter,
  highlightSpecialChars,
  keymap,
  lineNumbers,
} from "@codemirror/view";
import { defaultKeymap, history, historyKeymap, indentWithTab } from "@codemirror/commands";
import {
  LanguageSupport,
  bracketMatching,
  indentOnInput,
  indentUnit,
  syntaxHighlighting,
} from "@codemirror/language";
import { pythonLanguage } from "@codemirror/lang-python";
import { editorTheme, highlightStyle } from "./theme.js";

// ---- The line of the last error: a line decoration and a gutter marker, kept on the same text
// while the visitor edits until Python sends a new line (or none).

const setErrorLine = StateEffect.define();

class ErrorMarker extends GutterMarker {
  toDOM() {
    const mark = document.createElement("span");
    mark.textContent = "●";
    mark.title = "The last run failed on this line";
    mark.setAttribute("aria-label", "error");
    return mark;
  }
}
const errorMarker = new ErrorMarker();
const errorLineDeco = Decoration.line({ class: "cm-errorLine" });

const errorField = StateField.define({
  create: () => ({ lines: Decoration.none, markers: RangeSet.empty }),
  update(value, tr) {
    let { lines, markers } = value;
    if (tr.docChanged) {
      lines = lines.map(tr.changes);
      markers = markers.map(tr.changes);
    }
    for (const effect of tr.effects) {
      if (!effect.is(setErrorLine)) continue;
      const number = effect.value;
      if (Number.isInteger(number) && number >= 1 && number <= tr.state.doc.lines) {
        const from = tr.state.doc.line(number).from;
        lines = Decoration.set([errorLineDeco.range(from)]);
        markers = RangeSet.of([errorMarker.range(from)]);
      } else {
        lines = Decoration.none;
        markers = RangeSet.empty;
      }
    }
    return { lines, markers };
  },
  provide: (field) => EditorView.decorations.from(field, (value) => value.lines),
});

const errorGutter = gutter({
  class: "cm-errorGutter",
  markers: (view) => view.state.field(errorField).markers,
  initialSpacer: () => errorMarker,
});

// ---- One editor per mounted component. Streamlit calls the default export again, with the
// same parent element, whenever the data changes; the editor (its undo history, cursor and
// focus) lives on across those calls.

const editors = new WeakMap();

function createEditor(parentElement, initial) {
  let api = initial; // the latest call's {data, setStateValue, setTriggerValue}
  let reported = initial.data.doc; // the text Python has
  let revision = initial.data.revision;
  let errorLine = null;

  const host = document.createElement("div");
  host.className = "jaxplay-code-editor";
  parentElement.appendChild(host);

  const text = () => view.state.doc.toString();
  // Send the text to Python if it changed since Python last had it.
  const flush = () => {
    const current = text();
    if (current !== reported) {
      reported = current;
      api.setStateValue("value", current);
    }
  };
  const run = () => {
    flush();
    api.setTriggerValue("run", text());
    return true;
  };

  const view = new EditorView({
    parent: host,
    state: EditorState.create({
      doc: initial.data.doc,
      extensions: [
        Prec.highest(
          keymap.of([
            { key: "Mod-Enter", run, preventDefault: true },
            { key: "Ctrl-Enter", run, preventDefault: true },
          ]),
        ),
        lineNumbers(),
        errorGutter,
        highlightActiveLineGutter(),
        highlightSpecialChars(),
        history(),
        drawSelection(),
        indentOnInput(),
        bracketMatching(),
        highlightActiveLine(),
        EditorState.tabSize.of(4),
        indentUnit.of("    "),
        new LanguageSupport(pythonLanguage),
        syntaxHighlighting(highlightStyle),
        // Tab and Shift-Tab indent and dedent; Escape then Tab leaves the editor (CodeMirror's
        // tab focus mode, also toggled by Ctrl-M).
        keymap.of([...defaultKeymap, ...historyKeymap, indentWithTab]),
        errorField,
        editorTheme,
        EditorView.contentAttributes.of({ "aria-label": initial.data.label || "Code" }),
        EditorView.domEventHandlers({ blur: () => flush() }),
      ],
    }),
  });

  // Bring a line into the editor's own view. (EditorView.scrollIntoView would also scroll the
  // page, pulling a visitor who reads the results below back up to the editor.)
  function scrollToLine(line) {
    view.requestMeasure({
      read: () => {
        const block = view.lineBlockAt(view.state.doc.line(line).from);
        const scroller = view.scrollDOM;
        const top = block.top + view.documentTop - scroller.getBoundingClientRect().top;
        return { top, bottom: top + block.height, height: scroller.clientHeight };
      },
      write: ({ top, bottom, height }) => {
        if (top < 0 || bottom > height) {
          view.scrollDOM.scrollTop += top - height / 3;
        }
      },
    });
  }

  function update(args) {
    api = args;
    const data = args.data || {};
    host.style.height = `${data.height || 380}px`;
    if (data.revision !== revision) {
      // Python replaced the code (reset, a shared link, the walkthrough): one undoable change.
      revision = data.revision;
      reported = data.doc;
      if (data.doc !== text()) {
        view.dispatch({ changes: { from: 0, to: view.state.doc.length, insert: data.doc } });
      }
    }
    const line = Number.isInteger(data.error_line) ? data.error_line : null;
    if (line !== errorLine) {
      errorLine = line;
      view.dispatch({ effects: setErrorLine.of(line) });
      if (line !== null && line >= 1 && line <= view.state.doc.lines) scrollToLine(line);
    }
  }

  return {
    update,
    destroy() {
      view.destroy();
      host.remove();
    },
  };
}

export default function codeEditor(component) {
  const { parentElement } = component;
  let entry = editors.get(parentElement);
  if (!entry) {
    entry = { editor: createEditor(parentElement, component), calls: 0 };
    editors.set(parentElement, entry);
  }
  const call = ++entry.calls;
  entry.editor.update(component);
  // Streamlit runs the cleanup of the latest call when the component goes, and may run an
  // earlier call's cleanup when data changed while that call was loading: a later call has then
  // taken over the editor, so only a cleanup that is still the latest one a moment later ends it.
  return () => {
    setTimeout(() => {
      if (editors.get(parentElement) === entry && entry.calls === call) {
        editors.delete(parentElement);
        entry.editor.destroy();
      }
    }, 0);
  };
}
