"""Checks on ordinary Nupp that the grammar cannot express.

Runs after parsing, before translation, and reports every problem of a file
at once: unknown attributes and keys, struct field types, names reserved for
the translator, switch forms that cannot mean anything, and the signature of
`@aot` functions (every parameter and the return typed with a known type).
The AOT subset proper is the checker's business (a later stage).
"""

from __future__ import annotations

from dataclasses import is_dataclass

from nupp.frontend import ast
from nupp.errors import Diagnostic, NuppError, Source
from nupp.frontend.types import (ATTRIBUTE_KEYS, RESERVED_PREFIX, SCALAR_TYPES, SPAN_KINDS,
                                 STORAGE_TYPES, lua_type_pattern_names)


def validate(source: Source, chunk: ast.Chunk) -> None:
    """Raise NuppError listing every problem found, or return quietly."""
    diagnostics = validation_diagnostics(source, chunk)
    if diagnostics:
        raise NuppError(sorted(diagnostics, key=lambda d: (d.line, d.col)))


def validation_diagnostics(source: Source, chunk: ast.Chunk) -> list[Diagnostic]:
    """Every problem found (the checker reports them with its own)."""
    checker = _Validator(source, top_level=chunk.body.stats)
    checker.visit(chunk)
    return checker.diagnostics


class _Validator:
    def __init__(self, source: Source, top_level=()):
        self.source = source
        self.top_level = {id(stat) for stat in top_level}
        self.diagnostics: list[Diagnostic] = []
        self.structs: dict[str, ast.StructDecl] = {}

    def error(self, node, message: str, hint: str | None = None) -> None:
        span = node.span
        self.diagnostics.append(Diagnostic(self.source, span.line, span.col, message, hint))

    def visit(self, node) -> None:
        # A visit_X method returning True has visited the children itself.
        method = getattr(self, "visit_" + type(node).__name__, None)
        if method is None or not method(node):
            self.visit_children(node)

    def visit_children(self, node) -> None:
        for name in ast.field_names(type(node)):
            self._visit_value(getattr(node, name))

    def _visit_value(self, value) -> None:
        if isinstance(value, tuple):
            for item in value:
                self._visit_value(item)
        elif is_dataclass(value) and not isinstance(value, ast.Span):
            self.visit(value)

    # ---- names
    def visit_Name(self, node: ast.Name) -> None:
        self._check_name(node, node.id)

    def visit_Param(self, node: ast.Param) -> None:
        self._check_name(node, node.name)

    def visit_LocalFunction(self, node: ast.LocalFunction) -> None:
        self._check_name(node, node.name)
        self._check_function(node, node.name, node.func, node.attributes)

    def visit_FunctionStat(self, node: ast.FunctionStat) -> None:
        name = ".".join(node.path) + (f":{node.method}" if node.method else "")
        if node.method and node.attributes:
            self.error(node.attributes[0], f"@{node.attributes[0].name} cannot mark the method '{name}'",
                       "mark a plain function: `@aot local function name(...)`")
        elif len(node.path) > 1 and any(a.name == "aot" for a in node.attributes):
            self.error(node, f"@aot function '{name}' must be a plain name at module top level",
                       "write `@aot local function name(...)`")
        self._check_function(node, name, node.func, node.attributes)

    def _check_name(self, node, name: str) -> None:
        if name.startswith(RESERVED_PREFIX):
            self.error(node, f"the name '{name}' is reserved for nupp's translator",
                       f"rename it: names starting with '{RESERVED_PREFIX}' are nupp's own")

    # ---- structs
    def visit_StructDecl(self, node: ast.StructDecl) -> None:
        self._check_name(node, node.name)
        if id(node) not in self.top_level:
            # run inside a function, it would declare a new C type per call
            self.error(node, f"struct {node.name} must be declared at the top level of its module",
                       "move the declaration out of the function or block")
        elif node.name in self.structs:
            # @aot code names a struct by its name: two of one name would be one to the compiler
            self.error(node, f"struct {node.name} is declared a second time "
                       f"(the first is at {_position(self.structs[node.name])})", "rename one of them")
        seen: set[str] = set()
        for f in node.fields:
            if f.name in seen:
                self.error(f, f"struct {node.name} declares the field '{f.name}' twice")
            seen.add(f.name)
            if f.type.args or f.type.name not in STORAGE_TYPES:
                self.error(f.type, f"unknown field type '{_type_text(f.type)}' in struct {node.name}",
                           "a field is one of: " + ", ".join(sorted(STORAGE_TYPES)))
        if not node.fields:
            self.error(node, f"struct {node.name} has no fields")
        self.structs.setdefault(node.name, node)

    # ---- functions and attributes
    def _check_function(self, node, name: str, func: ast.FuncBody, attributes) -> None:
        for attr in attributes:
            self._check_attribute(attr)
        if not any(a.name == "aot" for a in attributes):
            return
        if id(node) not in self.top_level:
            self.error(node, f"@aot function '{name}' must be at the top level of its module",
                       "move it out of the enclosing function or block: @aot functions are "
                       "compiled once per module")
            return
        self._check_aot_signature(name, func)

    def _check_attribute(self, attr: ast.Attribute) -> None:
        if attr.name not in ATTRIBUTE_KEYS:
            self.error(attr, f"unknown attribute '@{attr.name}'",
                       "the known attributes are: " + ", ".join("@" + a for a in ATTRIBUTE_KEYS))
            return
        allowed = ATTRIBUTE_KEYS[attr.name]
        for key, value in attr.args:
            if key not in allowed:
                known = ", ".join(allowed) or "none"
                self.error(value, f"unknown key '{key}' in @{attr.name}", f"known keys: {known}")
            elif not isinstance(value, ast.Bool):
                self.error(value, f"@{attr.name}({key} = ...) takes true or false")

    def _check_aot_signature(self, name: str, func: ast.FuncBody) -> None:
        if func.is_vararg:
            self.error(func, f"@aot function '{name}' cannot take '...'",
                       "declare each parameter with its type")
        first: dict[str, ast.Param] = {}
        for p in func.params:
            if p.name in first:
                self.error(p, f"parameter '{p.name}' of @aot function '{name}' is declared twice "
                           f"(the first is at {_position(first[p.name])})", "rename one of them")
            first.setdefault(p.name, p)
            self._check_aot_param(name, p)
        if func.returns is None:
            self.error(func, f"@aot function '{name}' must declare its return type",
                       "write `): nil` for a function that returns nothing, or `): number` etc.")
        elif func.returns.args or (func.returns.name != "nil" and func.returns.name not in SCALAR_TYPES):
            self.error(func.returns, f"unknown return type '{_type_text(func.returns)}' of @aot function '{name}'",
                       "a result is one of: " + ", ".join(sorted(SCALAR_TYPES)) + ", nil")

    def _check_aot_param(self, name: str, p: ast.Param) -> None:
        if p.type is None:
            self.error(p, f"parameter '{p.name}' of @aot function '{name}' has no type",
                       f"annotate it, e.g. `{p.name}: number`")
            return
        kind = p.type.path[-1]
        if kind in SPAN_KINDS:
            self._check_span_param(name, p, kind)
        elif p.type.args or p.type.name not in SCALAR_TYPES:
            self.error(p.type, f"unknown type '{_type_text(p.type)}' for parameter '{p.name}'",
                       "a parameter is a number type (" + ", ".join(sorted(SCALAR_TYPES))
                       + ") or span.Span<Struct> / span.WriteSpan<Struct>")
        elif p.qualifier:
            self.error(p, f"'{p.qualifier}' applies only to span parameters")

    def _check_span_param(self, name: str, p: ast.Param, kind: str) -> None:
        if len(p.type.args) != 1 or p.type.args[0].args:
            self.error(p.type, f"{kind} takes one struct type, as in {kind}<Pixel>")
            return
        elem = p.type.args[0].name
        if elem not in self.structs:
            self.error(p.type.args[0], f"unknown struct '{elem}' in the type of parameter '{p.name}'",
                       "declare it before the function with `local struct " + elem + " ... end`")
        want = SPAN_KINDS[kind]
        if p.qualifier is None:
            self.error(p, f"span parameter '{p.name}' needs its ownership: write `{want} {p.name}`")
        elif p.qualifier != want:
            self.error(p, f"a {kind} parameter is `{want}`, not `{p.qualifier}`",
                       "a WriteSpan is exclusive (no other argument may overlap it); a Span borrows")

    # ---- switch
    def visit_Switch(self, node: ast.Switch) -> None:
        self._check_switch(node, expression=True)

    def visit_SwitchStat(self, node: ast.SwitchStat) -> bool:
        # Visit the parts, not the Switch node: that would check it as an expression.
        self._check_switch(node.switch, expression=False)
        self.visit_children(node.switch)
        return True

    def _check_switch(self, node: ast.Switch, expression: bool) -> None:
        for arm in node.arms + ((node.otherwise,) if node.otherwise else ()):
            if expression and arm.block is not None:
                self.error(arm, "a switch expression's arm must be `-> expression`",
                           "give the arm one value, as in `case 1 -> 10`; block arms (`case ... do ... end`) "
                           "belong to a switch statement")
            for pattern in arm.patterns:
                if pattern.kind == "type":
                    self._check_type_pattern(pattern)

    def _check_type_pattern(self, pattern: ast.Pattern) -> None:
        t = pattern.type
        if t.args or (t.name not in lua_type_pattern_names() and t.name not in self.structs):
            self.error(t, f"the type pattern 'is {_type_text(t)}' cannot be tested at run time",
                       "use a Lua type (number, string, boolean, table, function, nil, cdata), "
                       "int64 / uint64, or a struct declared in this module; "
                       "ordinary numbers carry no width")


def _position(node) -> str:
    return f"{node.span.line}:{node.span.col}"


def _type_text(t: ast.TypeRef) -> str:
    if not t.args:
        return t.name
    return f"{t.name}<{', '.join(_type_text(a) for a in t.args)}>"
