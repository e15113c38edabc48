"""Random Python programs for differential fuzzing.

Each program is the source of one function `f(a, b, arr)` built from a small grammar —
arithmetic that can raise, branches, loops, closures over locals and arguments (cells),
comprehensions, try/except, container mutation and numpy expressions — so that running it
plainly and through framehook exercises frames, cells, exception tables and guards.
A program is determined by its seed.
"""
from __future__ import annotations

import random
from typing import List

INT_OPS = ("+", "-", "*", "//", "%")
CMP_OPS = ("<", "<=", "==", "!=", ">", ">=")


class ProgramGenerator:
    def __init__(self, seed: int, max_depth: int = 3) -> None:
        self.rng = random.Random(seed)
        self.max_depth = max_depth
        self.ints = ["a", "b"]  # names that hold ints
        self.counter = 0

    def fresh(self, prefix: str) -> str:
        self.counter += 1
        return f"{prefix}{self.counter}"

    # ---- expressions ------------------------------------------------------------------
    def int_expr(self, depth: int = 0) -> str:
        r = self.rng.random()
        if depth >= 2 or r < 0.35:
            return self.rng.choice(self.ints + [str(self.rng.randint(-3, 9))])
        if r < 0.75:
            op = self.rng.choice(INT_OPS)
            return f"({self.int_expr(depth + 1)} {op} {self.int_expr(depth + 1)})"
        if r < 0.85:
            return f"len([{self.int_expr(depth + 1)}, {self.int_expr(depth + 1)}])"
        if r < 0.93:
            return f"max({self.int_expr(depth + 1)}, {self.int_expr(depth + 1)})"
        return f"int(arr.sum()) % 7"

    def cond(self) -> str:
        return f"{self.int_expr(1)} {self.rng.choice(CMP_OPS)} {self.int_expr(1)}"

    def array_expr(self) -> str:
        choices = [
            "arr * {i}", "arr + {i}", "(arr - {i}) * arr", "arr[::-1] + {i}", "arr.cumsum()",
            "np.maximum(arr, {i})", "np.where(arr > {i}, arr, -arr)", "arr.reshape(-1)[:2] * {i}",
        ]
        return self.rng.choice(choices).format(i=self.int_expr(2))

    # ---- statements ---------------------------------------------------------------------
    def block(self, depth: int, indent: str) -> List[str]:
        lines: List[str] = []
        for _ in range(self.rng.randint(1, 3)):
            lines += self.statement(depth, indent)
        return lines

    def statement(self, depth: int, indent: str) -> List[str]:
        kinds = ["assign", "assign", "acc", "array"]
        if depth < self.max_depth:
            kinds += ["if", "for", "try", "closure", "comp", "while", "nonlocal", "star_call",
                      "generator", "klass", "finally", "fstring", "array_loop", "with"]
        kind = self.rng.choice(kinds)
        if kind == "assign":
            name = self.fresh("v")
            line = f"{indent}{name} = {self.int_expr()}"
            self.ints.append(name)
            return [line]
        if kind == "acc":
            return [f"{indent}acc.append({self.int_expr()})"]
        if kind == "array":
            return [f"{indent}arrs.append({self.array_expr()})"]
        if kind == "if":
            saved = list(self.ints)
            body = self.block(depth + 1, indent + "    ")
            self.ints = list(saved)
            other = self.block(depth + 1, indent + "    ")
            self.ints = saved  # names bound in only one branch are not safe to read later
            return [f"{indent}if {self.cond()}:", *body, f"{indent}else:", *other]
        if kind == "for":
            var = self.fresh("i")
            saved = list(self.ints)
            self.ints.append(var)
            body = self.block(depth + 1, indent + "    ")
            self.ints = saved
            return [f"{indent}for {var} in range({self.rng.randint(0, 4)}):", *body]
        if kind == "array_loop":
            # long enough for the translator to capture it as one loop (or to give up cleanly)
            name, var = self.fresh("t"), self.fresh("i")
            saved = list(self.ints)
            self.ints.append(var)
            steps = [self.rng.choice([
                "{t} = {t} * 0.5 + {i}", "{t} = np.where({t} > {i}, {t} - 1.0, {t} + 1.0)",
                "{t} = np.maximum({t}, {i}) - 0.25", "{t} = {t}[::-1] * 0.75 + {t}",
                "{t}[1:] = {t}[1:] + {t}[:-1] * 0.5", "{t} = np.sin({t}) + {i}",
                "acc.append({i})", "{t} = {t} + {t}.sum() / 8.0"]).format(t=name, i=self.int_expr(1))
                for _ in range(self.rng.randint(1, 3))]
            self.ints = saved
            return [f"{indent}{name} = arr * 1.0",
                    f"{indent}for {var} in range({self.rng.randint(0, 12)}):",
                    *(f"{indent}    {line}" for line in steps),
                    f"{indent}arrs.append({name})"]
        if kind == "while":
            var = self.fresh("w")
            saved = list(self.ints)
            body = self.block(depth + 1, indent + "    ")
            self.ints = saved
            return [f"{indent}{var} = 0", f"{indent}while {var} < {self.rng.randint(1, 3)}:",
                    f"{indent}    {var} += 1", *body]
        if kind == "try":
            saved = list(self.ints)
            body = self.block(depth + 1, indent + "    ")
            self.ints = list(saved)
            handler = self.block(depth + 1, indent + "    ")
            self.ints = saved
            return [f"{indent}try:", *body, f"{indent}except ZeroDivisionError as exc:",
                    f"{indent}    acc.append(str(exc))", *handler]
        if kind == "with":
            # a context manager that logs its enter/exit and swallows ZeroDivisionError; the
            # body may raise it (a zero divisor) and is left by the exception
            saved = list(self.ints)
            body = self.block(depth + 1, indent + "    ")
            self.ints = saved
            cls = self.fresh("M")
            return [f"{indent}class {cls}:",
                    f"{indent}    def __enter__(self):",
                    f"{indent}        acc.append('enter')",
                    f"{indent}        return self",
                    f"{indent}    def __exit__(self, kind, value, tb):",
                    f"{indent}        acc.append('exit' if kind is None else kind.__name__)",
                    f"{indent}        return kind is ZeroDivisionError",
                    f"{indent}with {cls}():",
                    f"{indent}    acc.append(100 // ({self.int_expr(1)} - {self.int_expr(1)}))",
                    *body]
        if kind == "nonlocal":
            # a nested function rebinding a variable of this frame: it becomes a cell
            target = self.rng.choice(self.ints)
            name = self.fresh("h")
            return [f"{indent}def {name}():",
                    f"{indent}    nonlocal {target}",
                    f"{indent}    {target} = {target} + {self.rng.randint(1, 3)}",
                    f"{indent}    return {target}",
                    f"{indent}acc.append({name}())"]
        if kind == "star_call":
            name = self.fresh("s")
            result = self.fresh("v")
            line = [f"{indent}def {name}(x, *xs, key=0, **kw):",
                    f"{indent}    return x + sum(xs) + key + len(kw)",
                    f"{indent}{result} = {name}({self.int_expr(1)}, *[{self.int_expr(1)}, {self.int_expr(1)}], "
                    f"key={self.int_expr(1)}, **{{'z': {self.int_expr(1)}}})"]
            self.ints.append(result)
            return line
        if kind == "generator":
            name = self.fresh("gen")
            var = self.fresh("i")
            saved = list(self.ints)
            self.ints.append(var)
            elem = self.int_expr(1)  # reads this frame's variables: a generator over cells
            self.ints = saved
            result = self.fresh("v")
            self.ints.append(result)
            return [f"{indent}def {name}(n):",
                    f"{indent}    for {var} in range(n):",
                    f"{indent}        yield {elem}",
                    f"{indent}{result} = sum({name}({self.rng.randint(0, 4)}))"]
        if kind == "klass":
            base, cls = self.fresh("B"), self.fresh("C")
            result = self.fresh("v")
            expr = self.int_expr(1)
            self.ints.append(result)
            return [f"{indent}class {base}:",
                    f"{indent}    def m(self, x):",
                    f"{indent}        return x * 2",
                    f"{indent}class {cls}({base}):",
                    f"{indent}    def __init__(self, x):",
                    f"{indent}        self.x = x",
                    f"{indent}    def m(self, y):",
                    f"{indent}        return super().m(self.x) - y",
                    f"{indent}{result} = {cls}({expr}).m({self.rng.randint(0, 5)})"]
        if kind == "finally":
            saved = list(self.ints)
            body = self.block(depth + 1, indent + "        ")
            self.ints = saved
            return [f"{indent}try:",
                    f"{indent}    try:",
                    *body,
                    f"{indent}    finally:",
                    f"{indent}        acc.append('finally')",
                    f"{indent}except ArithmeticError as exc:",
                    f"{indent}    acc.append(type(exc).__name__)"]
        if kind == "fstring":
            return [f"{indent}acc.append(f'{{{self.int_expr(1)}}}-{{{self.int_expr(1)}!r:>4}}')"]
        if kind == "closure":
            name = self.fresh("g")
            param = self.fresh("p")
            saved = list(self.ints)
            self.ints.append(param)
            body_expr = self.int_expr(1)  # reads enclosing locals: they become cells
            self.ints = saved
            argument = self.int_expr(1)
            result = self.fresh("v")
            self.ints.append(result)
            return [f"{indent}def {name}({param}, k={self.rng.randint(0, 3)}):",
                    f"{indent}    return {body_expr} + k",
                    f"{indent}{result} = {name}({argument})"]
        # comprehension
        var = self.fresh("c")
        saved = list(self.ints)
        self.ints.append(var)
        elem = self.int_expr(1)
        self.ints = saved
        return [f"{indent}acc.extend([{elem} for {var} in range({self.rng.randint(0, 4)}) "
                f"if {var} % 2 == {self.rng.randint(0, 1)}])"]

    def program(self) -> str:
        body = self.block(0, "    ")
        ret = self.int_expr()
        return "\n".join([
            "def f(a, b, arr):",
            "    acc = []",
            "    arrs = []",
            *body,
            f"    return {ret}, acc, [x.tolist() for x in arrs]",
        ]) + "\n"


class KernelGenerator(ProgramGenerator):
    """Array code the translator can capture whole: elementwise updates, reductions, in-place
    slices, branches on ints, and loops long enough to be captured as loops (some with
    bodies that change a shape or a dtype, so the capture has to give up)."""

    UPDATES = [
        "{x} = {x} * 0.5 + {y}", "{x} = np.where({x} > {y}, {x}, {y} * 0.5)", "{x} = np.maximum({x}, {i}) - 0.25",
        "{x} = {x}[::-1] + {i}", "{x} = np.tanh({x}) - {y}", "{x} = {x}.cumsum(axis=-1) * 0.1",
        "{x} = {x} + {x}.sum() / 8.0", "{x}[:, 1:] = {x}[:, 1:] + {y}[:, :-1] * 0.5",
        "{x} = ({x} - {x}.mean(axis=0)) * {i}", "{x} = {x} @ {y}.T", "{x} = {x}.astype(np.float32) + 1",
        "{x} = np.concatenate([{x}, {y}])[:2]", "{x} = {x}.T.T * 2",
        "{x}[{x} > {i}, ...] = {y}.sum() * 0.5",                    # a mask in a tuple index, stored
        "{x} = {x} + {x}[{x}.sum() > {i}, ...].sum(axis=0) * 0.25",  # a 0-d mask
        "{x} = {x} + np.linalg.eigh(np.outer(np.tanh({x}), np.tanh({x})) + np.eye({x}.size)).eigenvalues * 0.1",
        "{x} = {x} * np.tanh(np.linalg.svd(np.outer(np.tanh({x}), {y}), compute_uv=False)).sum()",
        "acc.append(round(float({x}.sum()), 6))",   # a break: a Python float of array data
    ]

    def update(self, names: List[str], index: str) -> str:
        x, y = self.rng.choice(names), self.rng.choice(names)
        return self.rng.choice(self.UPDATES).format(x=x, y=y, i=index)

    def kernel_statement(self, depth: int, indent: str, names: List[str]) -> List[str]:
        r = self.rng.random()
        if depth < 2 and r < 0.4:
            var = self.fresh("i")
            body = [self.update(names, self.rng.choice([var, self.int_expr(1)]))
                    for _ in range(self.rng.randint(1, 3))]
            if self.rng.random() < 0.3:
                inner = self.fresh("j")
                body += [f"for {inner} in range({self.rng.randint(0, 7)}):",
                         "    " + self.update(names, inner)]
            return [f"{indent}for {var} in range({self.rng.randint(0, 14)}):", *(f"{indent}    {b}" for b in body)]
        if r < 0.5:
            return [f"{indent}if {self.cond()}:", f"{indent}    {self.update(names, self.int_expr(1))}",
                    f"{indent}else:", f"{indent}    {self.update(names, self.int_expr(1))}"]
        return [f"{indent}{self.update(names, self.int_expr(1))}"]

    def program(self) -> str:
        names = ["x", "y"]
        body: List[str] = []
        for _ in range(self.rng.randint(1, 4)):
            body += self.kernel_statement(0, "    ", names)
        return "\n".join([
            "def f(a, b, arr):",
            "    acc = []",
            "    x = arr * 1.0",
            "    y = arr + 0.5",
            *body,
            "    return a, acc, [x.tolist(), y.tolist(), str(x.dtype), str(y.dtype)]",
        ]) + "\n"


def generate(seed: int) -> str:
    """Every fourth program is array code (``KernelGenerator``); the rest mix Python constructs."""
    if seed % 4 == 3:
        return KernelGenerator(seed).program()
    return ProgramGenerator(seed).program()
