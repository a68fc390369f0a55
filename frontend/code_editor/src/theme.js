// The editor's look: Streamlit's light theme (primary #4f46e5), read from the CSS custom
// properties Streamlit sets around every custom component (--st-*), with the app's values as
// fallbacks.
import { EditorView } from "@codemirror/view";
import { HighlightStyle } from "@codemirror/language";
import { tags as t } from "@lezer/highlight";

const primary = "var(--st-primary-color, #4f46e5)";
const border = "var(--st-border-color, #d5dae5)";
const radius = "var(--st-base-radius, 0.5rem)";
const red = "var(--st-red-color, #ff2b2b)";

export const editorTheme = EditorView.theme(
  {
    "&": {
      height: "100%",
      backgroundColor: "#ffffff",
      color: "var(--st-text-color, #31333f)",
      border: `1px solid ${border}`,
      borderRadius: radius,
      fontSize: "14px",
    },
    "&.cm-focused": {
      outline: "none",
      borderColor: primary,
      boxShadow: `0 0 0 1px ${primary}`,
    },
    ".cm-scroller": {
      fontFamily: "var(--st-code-font, 'Source Code Pro', monospace)",
      lineHeight: "1.55",
      overflow: "auto",
      borderRadius: radius,
    },
    ".cm-content": { caretColor: primary, padding: "6px 0" },
    ".cm-cursor, .cm-dropCursor": { borderLeftColor: primary, borderLeftWidth: "2px" },
    ".cm-gutters": {
      backgroundColor: "var(--st-secondary-background-color, #f0f2f6)",
      color: "#808495",
      borderRight: `1px solid ${border}`,
    },
    ".cm-lineNumbers .cm-gutterElement": { padding: "0 8px 0 4px", minWidth: "28px" },
    ".cm-activeLine": { backgroundColor: "rgba(79, 70, 229, 0.045)" },
    ".cm-activeLineGutter": { backgroundColor: "rgba(79, 70, 229, 0.12)", color: "#31333f" },
    ".cm-selectionBackground": { backgroundColor: "rgba(79, 70, 229, 0.14)" },
    "&.cm-focused > .cm-scroller > .cm-selectionLayer .cm-selectionBackground": {
      backgroundColor: "rgba(79, 70, 229, 0.24)",
    },
    "&.cm-focused .cm-matchingBracket": {
      backgroundColor: "rgba(79, 70, 229, 0.16)",
      outline: "1px solid rgba(79, 70, 229, 0.55)",
    },
    "&.cm-focused .cm-nonmatchingBracket": { backgroundColor: "rgba(255, 43, 43, 0.22)" },
    // The line of the last run's error, and its gutter marker.
    ".cm-errorLine": {
      backgroundColor: "var(--st-red-background-color, rgba(255, 43, 43, 0.09))",
      boxShadow: `inset 3px 0 0 ${red}`,
    },
    ".cm-errorGutter .cm-gutterElement": {
      color: red,
      padding: "0 2px 0 5px",
      fontWeight: "700",
      cursor: "default",
    },
  },
  { dark: false },
);

// Python tokens, in colours that read on white and match the app's indigo.
export const highlightStyle = HighlightStyle.define([
  { tag: [t.keyword, t.controlKeyword, t.definitionKeyword, t.moduleKeyword], color: "#7c3aed" },
  { tag: t.operatorKeyword, color: "#7c3aed" },
  { tag: [t.string, t.special(t.string)], color: "#067d3a" },
  { tag: t.escape, color: "#b45309" },
  { tag: [t.number, t.bool, t.null], color: "#b45309" },
  { tag: [t.lineComment, t.comment], color: "#6b7280", fontStyle: "italic" },
  { tag: t.function(t.definition(t.variableName)), color: "#1d4ed8", fontWeight: "600" },
  { tag: t.definition(t.className), color: "#0e7490", fontWeight: "600" },
  { tag: [t.function(t.variableName), t.function(t.propertyName)], color: "#1d4ed8" },
  { tag: t.self, color: "#be185d" },
  { tag: t.meta, color: "#9a3412" },
  { tag: t.modifier, color: "#7c3aed" },
  { tag: [t.arithmeticOperator, t.compareOperator, t.updateOperator, t.bitwiseOperator], color: "#4b5563" },
  { tag: t.invalid, color: red },
]);
