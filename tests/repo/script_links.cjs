// What each of the page's scripts imports, exports and shares on window, read from the syntax tree
// espree (ESLint's parser) builds: tests/repo/test_javascript.py checks the links between them.
//
// Reads {path: text} as JSON on stdin; writes {path: links} on stdout, where links are
//   module:   whether the file is an ES module (it has an import or export declaration);
//   exports:  the names it exports ("default" for its default export);
//   imports:  [{source, names, unread}]: the module named (as written, or the file name a
//             dynamic import's computed address ends in) and the names read from it. unread says
//             why the names of an import could not be known (the test reports it);
//   factories: {function: {takes, returns}}: what an exported function reads of the object of
//             helpers it is given, and the keys of the object it returns (factory, below);
//   calls:    [{name, source, calls: [{given, read}]}]: each call of an imported function, the
//             keys given to it and the names read of what it returned (callsOf, below);
//   shared:   [{name, set, on}]: names set (set true) or read on window, globalThis or self; read ones
//             only when they start with "chainrule" (the book's), not the browser's own.
"use strict";

const espree = require("espree"); // ESLint's, from node_modules

const GLOBAL_OBJECTS = new Set(["window", "globalThis", "self"]);

function parse(text) {
  const options = { ecmaVersion: "latest", sourceType: "module" };
  try {
    return espree.parse(text, options);
  } catch {
    return espree.parse(text, { ...options, sourceType: "script" });
  }
}

// Every node of the tree, with its parent, depth first.
function walk(node, visit, parent = null) {
  if (!node || typeof node.type !== "string") return;
  visit(node, parent);
  for (const [key, value] of Object.entries(node)) {
    if (key === "parent") continue;
    for (const child of Array.isArray(value) ? value : [value]) {
      if (child && typeof child === "object") walk(child, visit, node);
    }
  }
}

function nameOf(node) {
  return node.type === "Identifier" ? node.name : String(node.value);
}

// The names a binding pattern defines: x, { a, b: c }, [d, ...e], f = 1.
function patternNames(pattern) {
  if (!pattern) return [];
  if (pattern.type === "Identifier") return [pattern.name];
  if (pattern.type === "ObjectPattern") return pattern.properties.flatMap((p) => patternNames(p.value ?? p.argument));
  if (pattern.type === "ArrayPattern") return pattern.elements.flatMap(patternNames);
  if (pattern.type === "AssignmentPattern") return patternNames(pattern.left);
  if (pattern.type === "RestElement") return patternNames(pattern.argument);
  return [];
}

// The names a module's exported declaration defines: function, class, or each variable.
function declared(declaration) {
  if (declaration.id) return [declaration.id.name];
  return declaration.declarations.flatMap((each) => patternNames(each.id));
}

// The keys of an object literal: { a: 1, b }.
function keysOf(object) {
  return object.properties.filter((p) => p.type === "Property").map((p) => nameOf(p.key));
}

// A factory: an exported function that takes an object of helpers and returns an object of its own
// functions (live_cells.js's liveCells). What it reads of its first argument, directly, through
// ({ a, b } = helpers) or const { a } = helpers, or through a variable it keeps it in (api = helpers);
// and the keys of the object literal its body returns.
function factory(declaration, tree) {
  const [first] = declaration.params;
  const takes = new Set();
  const returns = [];
  if (first?.type === "Identifier") {
    const aliases = [first.name];
    walk(declaration.body, (node) => {
      const [left, right] = node.type === "AssignmentExpression" ? [node.left, node.right]
        : node.type === "VariableDeclarator" ? [node.id, node.init] : [null, null];
      if (right?.type !== "Identifier" || right.name !== first.name) return;
      if (left.type === "Identifier") aliases.push(left.name);
      else patternNames(left).forEach((name) => takes.add(name));
    });
    for (const alias of aliases) {
      const read = membersOf(alias === first.name ? declaration.body : tree, alias);
      read.names.forEach((name) => takes.add(name));
    }
  }
  for (const statement of declaration.body.body) {
    if (statement.type === "ReturnStatement" && statement.argument?.type === "ObjectExpression") {
      returns.push(...keysOf(statement.argument));
    }
  }
  return { takes: [...takes], returns };
}

// The calls of an imported function: the keys of an object literal given as its first argument, and
// the names read of what it returned, when that is kept in a variable (x = f(...) or var x = f(...)).
function callsOf(tree, local, ancestors) {
  const calls = [];
  walk(tree, (node) => {
    if (node.type !== "CallExpression" || node.callee.type !== "Identifier" || node.callee.name !== local) return;
    const given = node.arguments[0]?.type === "ObjectExpression" ? keysOf(node.arguments[0]) : null;
    const parent = ancestors.get(node);
    const kept = parent?.type === "AssignmentExpression" ? parent.left
      : parent?.type === "VariableDeclarator" ? parent.id : null;
    const read = kept?.type === "Identifier" ? membersOf(tree, kept.name).names : null;
    calls.push({ given, read });
  });
  return calls;
}

// Where a name is declared or assigned, not used.
const DEFINING = new Set(["ImportNamespaceSpecifier", "VariableDeclarator", "AssignmentExpression"]);

// The names read as alias.name anywhere under root; unread says why others may be read unseen:
// alias[...], or alias itself handed on (returned, passed, kept elsewhere).
function membersOf(root, alias) {
  const names = new Set();
  let unread = null;
  walk(root, (node, parent) => {
    if (node.type !== "Identifier" || node.name !== alias || parent?.type === "Property" && parent.key === node) return;
    if (parent?.type === "MemberExpression" && parent.object === node) {
      if (parent.computed) unread = `${alias}[...] is read`;
      else names.add(parent.property.name);
    } else if (!(parent?.type === "MemberExpression" && parent.property === node) && !DEFINING.has(parent?.type)) {
      unread = `${alias} itself is handed on`;
    }
  });
  return { names: [...names], unread };
}

// The module a dynamic import() names: its string, or the file name its computed address ends in.
function dynamicSource(source) {
  if (source.type === "Literal") return source.value;
  if (source.type === "BinaryExpression" && source.right.type === "Literal") {
    return "./" + String(source.right.value).split("/").pop();
  }
  return null;
}

// The names read from import(...): import(...).then(function (m) { m.name }), or
// const m = await import(...) and then m.name, or const { name } = await import(...).
function dynamicNames(node, parent, ancestors, tree) {
  const call = ancestors.get(parent);
  if (parent.type === "MemberExpression" && parent.property.name === "then" && call.type === "CallExpression") {
    const handler = call.arguments[0];
    if (handler && /Function/.test(handler.type) && handler.params[0]?.type === "Identifier") {
      return membersOf(handler.body, handler.params[0].name);
    }
  }
  if (parent.type === "AwaitExpression" && ancestors.get(parent)?.type === "VariableDeclarator") {
    const target = ancestors.get(parent).id;
    if (target.type === "Identifier") return membersOf(tree, target.name);
    if (target.type === "ObjectPattern") return { names: target.properties.map((p) => nameOf(p.key)), unread: null };
  }
  const how = "use import(...).then(function (m) { m.name })";
  return { names: [], unread: `its names are read in a way this test cannot follow: ${how}` };
}

function links(text) {
  const tree = parse(text);
  const ancestors = new Map();
  const pending = []; // [name, local name, module] of each imported name, for its calls
  const found = { module: false, exports: [], factories: {}, imports: [], shared: [] };
  walk(tree, (node, parent) => {
    ancestors.set(node, parent);
    if (node.type === "ImportDeclaration" || (node.type.startsWith("Export") && node.source)) {
      found.module = true;
      const names = [];
      let unread = null;
      for (const specifier of node.specifiers || []) {
        if (specifier.type === "ImportDefaultSpecifier") names.push("default");
        else if (specifier.type === "ImportNamespaceSpecifier") {
          const read = membersOf(tree, specifier.local.name);
          names.push(...read.names);
          unread = read.unread;
        } else if (specifier.type === "ImportSpecifier") {
          names.push(nameOf(specifier.imported));
          pending.push([nameOf(specifier.imported), specifier.local.name, node.source.value]);
        }
        else names.push(nameOf(specifier.local)); // export { a as b } from "./m.js": m's a
      }
      if (node.type === "ExportAllDeclaration") unread = "export * re-exports names this test cannot list";
      found.imports.push({ source: node.source.value, names, unread });
    }
    if (node.type === "ExportNamedDeclaration") {
      found.module = true;
      if (node.declaration) found.exports.push(...declared(node.declaration));
      if (node.declaration?.type === "FunctionDeclaration") {
        const made = factory(node.declaration, tree);
        if (made.takes.length || made.returns.length) found.factories[node.declaration.id.name] = made;
      }
      for (const specifier of node.specifiers) found.exports.push(nameOf(specifier.exported));
    }
    if (node.type === "ExportDefaultDeclaration") {
      found.module = true;
      found.exports.push("default");
    }
    if (node.type === "ImportExpression") {
      const source = dynamicSource(node.source);
      const read = dynamicNames(node, parent, ancestors, tree);
      const unread = source ? read.unread : "its address is computed";
      found.imports.push({ source: source ?? "<computed>", names: read.names, unread });
    }
    if (node.type === "MemberExpression" && node.object.type === "Identifier" && GLOBAL_OBJECTS.has(node.object.name)) {
      const literal = node.property.type === "Literal" ? String(node.property.value) : "[computed]";
      const name = node.computed ? literal : node.property.name;
      const set = parent.type === "AssignmentExpression" && parent.left === node;
      if (set || name.startsWith("chainrule")) found.shared.push({ name, set, on: node.object.name });
    }
  });
  found.calls = pending.map(([name, local, source]) => ({ name, source, calls: callsOf(tree, local, ancestors) }))
    .filter((each) => each.calls.length);
  return found;
}

const files = JSON.parse(require("fs").readFileSync(0, "utf8"));
const out = {};
for (const [name, text] of Object.entries(files)) out[name] = links(text);
process.stdout.write(JSON.stringify(out));
