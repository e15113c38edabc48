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
                      "generator", "klass", "finally", "fstring"]
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


def generate(seed: int) -> str:
    return ProgramGenerator(seed).program()
