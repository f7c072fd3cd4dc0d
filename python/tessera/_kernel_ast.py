"""Source rewriting of ``@ts.kernel`` functions so that loops trace.

A trace runs the kernel body once, so a ``for`` loop over ``tile.range``
must become one ``ttile.range`` whose body is traced once, with the
variables the body reassigns carried from one iteration to the next. Each
``for`` statement of the kernel (without ``break``/``continue``/``return``
and without ``else``) is rewritten into a call of a body function:

    for k in ITER:                    def __tessera_body_1(k, __carry):
        acc = acc + f(k)                  (acc,) = __carry
                              ->          acc = acc + f(k)
                                          return (acc,)
                                      (acc,) = __tessera_for(ITER,
                                          __tessera_body_1, ('acc',), locals())

``__tessera_for`` (tessera.kernel) runs an ordinary Python loop for any
other iterable, so ``for i in range(4)`` still unrolls. Line numbers are
kept: diagnostics and tracebacks point at the kernel's source.
"""

from __future__ import annotations

import ast
import inspect
import itertools
import textwrap

_counter = itertools.count(1)
# FunctionDef's type parameters (Python >= 3.12).
_TYPE_PARAMS = ({"type_params": []} if "type_params" in ast.FunctionDef._fields
                else {})


class _Assigned(ast.NodeVisitor):
    """Names a statement list binds (not inside nested scopes)."""

    def __init__(self):
        self.names: list[str] = []

    def _add(self, name):
        if name not in self.names:
            self.names.append(name)

    def visit_Name(self, node):
        if isinstance(node.ctx, (ast.Store, ast.Del)):
            self._add(node.id)

    def visit_FunctionDef(self, node):
        self._add(node.name)

    visit_AsyncFunctionDef = visit_FunctionDef

    def visit_ClassDef(self, node):
        self._add(node.name)

    def visit_Lambda(self, node):
        pass

    def visit_ListComp(self, node):
        pass

    visit_SetComp = visit_DictComp = visit_GeneratorExp = visit_ListComp

    def visit_NamedExpr(self, node):
        self._add(node.target.id)
        self.visit(node.value)

    def visit_Import(self, node):
        for alias in node.names:
            self._add((alias.asname or alias.name).split(".")[0])

    visit_ImportFrom = visit_Import


class _Escapes(ast.NodeVisitor):
    """Whether a loop body leaves the loop other than by finishing it."""

    def __init__(self):
        self.found = False
        self.loop_depth = 0

    def visit_Return(self, node):
        self.found = True

    def visit_Break(self, node):
        if self.loop_depth == 0:
            self.found = True

    visit_Continue = visit_Break

    def visit_For(self, node):
        self.visit(node.target)
        self.visit(node.iter)
        self.loop_depth += 1
        for stmt in node.body:
            self.visit(stmt)
        self.loop_depth -= 1
        for stmt in node.orelse:
            self.visit(stmt)

    visit_AsyncFor = visit_For

    def visit_While(self, node):
        self.visit(node.test)
        self.loop_depth += 1
        for stmt in node.body:
            self.visit(stmt)
        self.loop_depth -= 1
        for stmt in node.orelse:
            self.visit(stmt)

    def visit_FunctionDef(self, node):
        pass

    visit_AsyncFunctionDef = visit_Lambda = visit_ClassDef = visit_FunctionDef

    def visit_Yield(self, node):
        self.found = True

    visit_YieldFrom = visit_Await = visit_Yield


def _names_bound(stmts) -> list[str]:
    v = _Assigned()
    for s in stmts:
        v.visit(s)
    return v.names


def _escapes(stmts) -> bool:
    v = _Escapes()
    for s in stmts:
        v.visit(s)
    return v.found


class _LoopRewriter(ast.NodeTransformer):
    def __init__(self, global_names):
        self.global_names = global_names

    def visit_FunctionDef(self, node):
        # Nested functions are left alone (they are not traced as loops).
        return node

    visit_AsyncFunctionDef = visit_Lambda = visit_FunctionDef

    def visit_For(self, node):
        self.generic_visit(node)  # inner loops first
        if node.orelse or _escapes(node.body):
            return node
        loc = dict(lineno=node.lineno, col_offset=node.col_offset,
                   end_lineno=node.end_lineno,
                   end_col_offset=node.end_col_offset)
        target_names = _names_bound([ast.Assign(targets=[node.target],
                                                value=ast.Constant(0))])
        # The target is carried out too: after a Python loop it holds the
        # last value, as in Python (after a tile.range loop it is unbound).
        carried = [n for n in target_names + _names_bound(node.body)
                   if n not in self.global_names
                   and not n.startswith("__tessera_")]
        carried = list(dict.fromkeys(carried))
        n = next(_counter)
        body_name = f"__tessera_body_{n}"
        carry_name = f"__tessera_carry_{n}"

        def tuple_of(names, ctx):
            return ast.Tuple(elts=[ast.Name(id=x, ctx=ctx()) for x in names],
                             ctx=ctx(), **loc)

        body = []
        if carried:
            body.append(ast.Assign(targets=[tuple_of(carried, ast.Store)],
                                   value=ast.Name(id=carry_name,
                                                  ctx=ast.Load()), **loc))
        body.extend(node.body)
        body.append(ast.Return(value=tuple_of(carried, ast.Load), **loc))
        func = ast.FunctionDef(
            name=body_name,
            args=ast.arguments(
                posonlyargs=[],
                args=[ast.arg(arg=f"__tessera_target_{n}"),
                      ast.arg(arg=carry_name)],
                kwonlyargs=[], kw_defaults=[], defaults=[]),
            body=body[:1 if carried else 0] +
            [ast.Assign(targets=[node.target],
                        value=ast.Name(id=f"__tessera_target_{n}",
                                       ctx=ast.Load()), **loc)] +
            body[1 if carried else 0:],
            decorator_list=[], returns=None, **_TYPE_PARAMS, **loc)
        call = ast.Call(
            func=ast.Name(id="__tessera_for", ctx=ast.Load()),
            args=[node.iter, ast.Name(id=body_name, ctx=ast.Load()),
                  ast.Tuple(elts=[ast.Constant(x) for x in carried],
                            ctx=ast.Load()),
                  ast.Call(func=ast.Name(id="locals", ctx=ast.Load()),
                           args=[], keywords=[])],
            keywords=[], **loc)
        if carried:
            assign = ast.Assign(targets=[tuple_of(carried, ast.Store)],
                                value=call, **loc)
        else:
            assign = ast.Expr(value=call, **loc)
        return [func, assign]


def rewrite(fn, loop_helper):
    """``fn`` with its ``for`` loops rewritten (see the module doc), or
    ``fn`` itself when its source is not available or has no loops."""
    try:
        source = inspect.getsource(fn)
        filename = inspect.getsourcefile(fn) or "<kernel>"
        first_line = fn.__code__.co_firstlineno
    except (OSError, TypeError):
        return fn
    lines = source.splitlines(keepends=True)
    indent = len(lines[0]) - len(lines[0].lstrip())
    try:
        tree = ast.parse(textwrap.dedent(source))
    except SyntaxError as e:
        raise TypeError(f"{filename}:{first_line}: the source of kernel "
                        f"{fn.__name__} does not parse on its own ({e.msg}); "
                        f"its loops over tile.range cannot be traced") from None
    fdef = tree.body[0]
    if not isinstance(fdef, ast.FunctionDef):
        return fn
    if fdef.name != fn.__code__.co_name:
        raise TypeError(f"{filename}:{first_line}: the source found for "
                        f"kernel {fn.__name__} defines {fdef.name} (was the "
                        f"file changed after it was imported?)")
    # Defaults were evaluated when the kernel was defined; the rewritten
    # function takes the same values (set below), not the expressions
    # evaluated again in another scope.
    fdef.args.defaults = []
    fdef.args.kw_defaults = [None] * len(fdef.args.kwonlyargs)
    if not any(isinstance(n, ast.For) for n in ast.walk(fdef)):
        return fn
    fdef.decorator_list = []
    global_names = set()
    for n in ast.walk(fdef):
        if isinstance(n, (ast.Global, ast.Nonlocal)):
            global_names.update(n.names)
    fdef.body = [_LoopRewriter(global_names).visit(s) for s in fdef.body]
    flat = []
    for s in fdef.body:
        flat.extend(s if isinstance(s, list) else [s])
    fdef.body = flat
    # Closures: the rewritten function is defined inside a factory taking
    # the original's free variables.
    # The loop helper comes in the same way, so the kernel's module is
    # left as it is.
    freevars = fn.__code__.co_freevars
    factory = ast.FunctionDef(
        name="__tessera_factory",
        args=ast.arguments(posonlyargs=[],
                           args=[ast.arg(arg=v) for v in
                                 ("__tessera_for",) + freevars],
                           kwonlyargs=[], kw_defaults=[], defaults=[]),
        body=[fdef, ast.Return(value=ast.Name(id=fdef.name, ctx=ast.Load()))],
        decorator_list=[], returns=None, **_TYPE_PARAMS)
    module = ast.Module(body=[factory], type_ignores=[])
    ast.fix_missing_locations(module)
    for n in ast.walk(module):
        if hasattr(n, "lineno") and n is not factory:
            n.lineno += first_line - 1
            n.end_lineno = (n.end_lineno or n.lineno) + first_line - 1
            if hasattr(n, "col_offset") and n.col_offset is not None:
                n.col_offset += indent
                if getattr(n, "end_col_offset", None) is not None:
                    n.end_col_offset += indent
    code = compile(module, filename, "exec")
    namespace = {}
    exec(code, fn.__globals__, namespace)
    cells = [c.cell_contents for c in (fn.__closure__ or ())]
    new = namespace["__tessera_factory"](loop_helper, *cells)
    new.__defaults__ = fn.__defaults__
    new.__kwdefaults__ = fn.__kwdefaults__
    return new
