// Forms generated from the JSON Schema of an elicitation request.
//
// The schema is an object schema with flat properties, as MCP elicitation
// asks for. Each property becomes one labelled control:
//   string                 → text input (email, uri/url, date by "format";
//                            minLength, maxLength, pattern as attributes)
//   enum / oneOf of const  → select (labels from enumNames or oneOf titles)
//   number, integer        → number input (minimum, maximum; integer steps by 1)
//   boolean                → checkbox
//   anything else          → textarea holding JSON
// title labels the control (the property name when absent), description
// describes it (aria-describedby), "required" marks it required, and
// default fills it. The browser's own validation checks the constraints.

import { el } from "./dom.js";

/**
 * buildSchemaForm returns {element, collect} for schema: element holds the
 * controls; collect() returns {content} or {error} for the filled form.
 */
export function buildSchemaForm(schema, idPrefix) {
  const element = el("div", { class: "schema-fields" });
  const fields = [];
  const props = schema && typeof schema === "object" && schema.properties && typeof schema.properties === "object" ? schema.properties : {};
  const required = new Set(Array.isArray(schema?.required) ? schema.required : []);
  Object.entries(props).forEach(([name, prop], i) => {
    const field = buildField(name, prop || {}, required.has(name), `${idPrefix}-f${i}`);
    fields.push(field);
    element.append(field.element);
  });
  if (fields.length === 0) {
    element.append(el("p", { class: "hint" }, "No details are requested; submit to accept."));
  }
  return {
    element,
    collect() {
      const content = {};
      for (const f of fields) {
        const r = f.read();
        if (r.error) {
          f.control.focus();
          return { error: r.error };
        }
        if (r.value !== undefined) content[f.name] = r.value;
      }
      return { content };
    },
  };
}

function choicesOf(prop) {
  if (Array.isArray(prop.enum)) {
    const names = Array.isArray(prop.enumNames) ? prop.enumNames : [];
    return prop.enum.map((v, i) => ({ value: v, label: String(names[i] ?? v) }));
  }
  const alts = Array.isArray(prop.oneOf) ? prop.oneOf : Array.isArray(prop.anyOf) ? prop.anyOf : null;
  if (alts && alts.length && alts.every((a) => a && "const" in a)) {
    return alts.map((a) => ({ value: a.const, label: String(a.title ?? a.const) }));
  }
  return null;
}

function buildField(name, prop, isRequired, id) {
  const type = Array.isArray(prop.type) ? prop.type.find((t) => t !== "null") : prop.type;
  const title = prop.title || name;
  const descId = `${id}-desc`;
  const description = prop.description ? el("p", { class: "field-desc", id: descId }, prop.description) : null;
  const choices = choicesOf(prop);
  const common = { id, name };
  if (description) common["aria-describedby"] = descId;
  const req = isRequired ? { required: "" } : {};

  const label = el("label", { for: id }, title);
  if (isRequired) label.append(el("span", { class: "req", "aria-hidden": "true" }, " *"));

  let control;
  let read;
  const wrapper = el("div", { class: "field" });

  if (choices) {
    control = el("select", { ...common, ...req });
    control.append(el("option", { value: "" }, isRequired ? "Choose…" : "— none —"));
    choices.forEach((c, i) => {
      const o = el("option", { value: String(i) }, c.label);
      if (prop.default !== undefined && c.value === prop.default) o.selected = true;
      control.append(o);
    });
    read = () => (control.value === "" ? { value: undefined } : { value: choices[+control.value].value });
    wrapper.append(label, control);
  } else if (type === "boolean") {
    // Not "required": a checkbox answers by its state, checked or not.
    control = el("input", { ...common, type: "checkbox" });
    control.checked = prop.default === true;
    read = () => ({ value: control.checked });
    wrapper.classList.add("field-check");
    wrapper.append(control, label);
  } else if (type === "number" || type === "integer") {
    control = el("input", { ...common, ...req, type: "number", inputmode: type === "integer" ? "numeric" : "decimal", step: type === "integer" ? "1" : "any" });
    if (typeof prop.minimum === "number") control.min = String(prop.minimum);
    if (typeof prop.maximum === "number") control.max = String(prop.maximum);
    if (typeof prop.default === "number") control.value = String(prop.default);
    read = () => {
      if (control.value === "") return { value: undefined };
      const n = Number(control.value);
      if (!Number.isFinite(n) || (type === "integer" && !Number.isInteger(n))) {
        return { error: `${title} must be ${type === "integer" ? "a whole number" : "a number"}.` };
      }
      return { value: n };
    };
    wrapper.append(label, control);
  } else if (type === "string" || (type === undefined && !prop.properties && !prop.items)) {
    const inputType = { email: "email", uri: "url", url: "url", date: "date" }[prop.format] || "text";
    const long = typeof prop.maxLength === "number" && prop.maxLength > 200;
    control = long ? el("textarea", { ...common, ...req, rows: "3" }) : el("input", { ...common, ...req, type: inputType, autocomplete: inputType === "email" ? "email" : "off" });
    if (typeof prop.minLength === "number") control.minLength = prop.minLength;
    if (typeof prop.maxLength === "number") control.maxLength = prop.maxLength;
    if (typeof prop.pattern === "string" && !long) control.pattern = prop.pattern;
    if (typeof prop.default === "string") control.value = prop.default;
    read = () => (control.value === "" && !isRequired ? { value: undefined } : { value: control.value });
    wrapper.append(label, control);
  } else {
    control = el("textarea", { ...common, ...req, rows: "4", class: "json-input", spellcheck: "false" });
    if (prop.default !== undefined) control.value = JSON.stringify(prop.default, null, 2);
    read = () => {
      if (control.value.trim() === "") return { value: undefined };
      try {
        return { value: JSON.parse(control.value) };
      } catch {
        return { error: `${title} must be valid JSON.` };
      }
    };
    label.append(" (JSON)");
    wrapper.append(label, control);
  }
  if (description) wrapper.append(description);
  return { name, control, element: wrapper, read };
}
