// Building the page. Memory text is untrusted data: it only ever becomes a text node
// (textContent / createTextNode), never markup; nothing here uses innerHTML.

export function h(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs || {})) {
    if (value === null || value === undefined || value === false) continue;
    if (name.startsWith("on")) node.addEventListener(name.slice(2), value);
    else if (name === "class") node.className = value;
    else if (name === "text") node.textContent = value;
    else node.setAttribute(name, value === true ? "" : String(value));
  }
  append(node, children);
  return node;
}

export function append(node, children) {
  for (const child of children.flat()) {
    if (child === null || child === undefined || child === false) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

const SVG = "http://www.w3.org/2000/svg";

export function svg(tag, attrs = {}, ...children) {
  const node = document.createElementNS(SVG, tag);
  for (const [name, value] of Object.entries(attrs)) node.setAttribute(name, String(value));
  append(node, children);
  return node;
}

export function clear(node) {
  node.replaceChildren();
  return node;
}

let labelCount = 0;

// A labelled control: <div><label for=…>text</label><control id=…></div>
export function field(labelText, control) {
  labelCount += 1;
  const id = control.id || `field-${labelCount}`;
  control.id = id;
  return h("div", {}, h("label", { for: id, text: labelText }), control);
}

export function select(name, options, value = "") {
  const node = h("select", { name });
  for (const option of options) {
    const [optionValue, text] = Array.isArray(option) ? option : [option, option || "any"];
    node.append(h("option", { value: optionValue, selected: optionValue === value, text }));
  }
  return node;
}

export function when(stamp) {
  if (!stamp) return "";
  const date = new Date(stamp);
  return Number.isNaN(date.getTime()) ? String(stamp) : date.toLocaleString();
}

export function facts(pairs) {
  const list = h("dl", { class: "facts" });
  for (const [term, value] of pairs) {
    if (value === null || value === undefined || value === "") continue;
    list.append(h("dt", { text: term }), h("dd", { text: String(value) }));
  }
  return list;
}
