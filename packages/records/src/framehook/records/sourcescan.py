"""Bounding what a recorded source costs to compile, before ``compile()`` sees it.

CPython's parser and compiler recurse once per level of expression nesting. On 3.9 and
3.10 nothing stops that recursion before the C stack ends (a 200,000-term ``x+1+1...``
crashes the interpreter), later versions raise RecursionError or MemoryError, and in a
thread with a small stack every version can still crash. Compile time and memory grow
with the number of tokens (about 350 bytes and 2-4 us each). ``ast.parse`` cannot measure
any of this, since it runs the same parser, so a regular expression walks the text once:

* ``source_tokens``: every token but whitespace and comments counts one;
* ``source_nesting``: an estimate of the deepest syntax tree a statement builds, from
  above: each operator, dot, keyword operator and call or subscript in a run of
  operands counts one, a run ends at a comma, semicolon or the end of the statement;
  each open bracket counts ``BRACKET_WEIGHT`` plus the runs inside it, each level of
  indentation ``INDENT_WEIGHT``. Expressions inside f-strings and t-strings count where
  the string stands.
* every decimal literal is at most ``MAX_DIGITS`` digits (3.9 and 3.10 convert longer
  ones in quadratic time; later versions refuse them anyway).

The weights come from measurements on CPython 3.9 in a thread with 256 KiB of stack:
2,000 chained operators or 149 nested brackets compile there, 150 brackets crash.
"""

from __future__ import annotations

import itertools
import re

from .errors import SourceLimitError, SourceUnavailableError
from .limits import Limits

BRACKET_WEIGHT = 10
INDENT_WEIGHT = 10
MAX_DIGITS = 4300  # CPython's own default int_max_str_digits (3.11+)
_TAB = 8

# One match per token, its leading blanks included (half as many matches as a separate
# whitespace token); the commonest kinds come first.
_TOKEN = re.compile(
    r"""[ \t\f\r]*(?:
        (?P<word>\w+)
      | (?P<nl>\n)
      | (?P<op>\*\*=?|//=?|<<=?|>>=?|->|:=|[-+*/%@&|^~<>=!:.]=?)
      | (?P<open>[(\[{])
      | (?P<close>[)\]}])
      | (?P<sep>[,;])
      | (?P<string>'''[^'\\]*(?:(?:\\[\s\S]|'(?!''))[^'\\]*)*'''
          |\"\"\"[^"\\]*(?:(?:\\[\s\S]|"(?!""))[^"\\]*)*\"\"\"
          |'[^'\\\n]*(?:\\[\s\S][^'\\\n]*)*'
          |"[^"\\\n]*(?:\\[\s\S][^"\\\n]*)*")
      | (?P<comment>\#[^\n]*)
      | (?P<cont>\\\r?\n)
      | (?P<other>.)
    )""",
    re.VERBOSE,
)
# Keywords that nest the expression around them (and, or, in, is count: cheap and safe).
_NESTING_WORDS = frozenset({"lambda", "if", "else", "not", "await", "and", "or", "in", "is", "yield", "for"})
_QUOTES = ("'''", '"""', "'", '"')
# f-string and t-string prefixes in every letter case: their fields are expressions
_TEMPLATE_PREFIXES = frozenset(
    "".join(letters)
    for prefix in ("f", "rf", "fr", "t", "rt", "tr")
    for letters in itertools.product(*[(ch, ch.upper()) for ch in prefix])
)


class _Scan:
    """One pass over a source text; ``check`` raises SourceLimitError at the first excess."""

    def __init__(self, limits: Limits, filename: str, path: str | None) -> None:
        self.limits = limits
        self.filename = filename
        self.path = path
        self.tokens = 0
        self.deepest = 0

    def fail(self, limit: str, value: int, line: int, partial: bool = False) -> SourceLimitError:
        return self.limits.source_error(limit, value, self.filename, line, self.path, partial=partial)

    def run(self, text: str, base: int, line: int, statements: bool) -> int:
        """Scan ``text``; ``base`` is the nesting already open around it. Returns the line
        number reached. ``statements`` is False inside an f-string's braces."""
        limit_tokens = self.limits.source_tokens
        limit_nesting = self.limits.source_nesting
        indents = [0]
        runs = [0]  # one run counter per open bracket level, the statement's at the bottom
        nesting = base  # base + brackets * weight + sum(runs) + indentation * weight
        line_start = statements
        word_end, last_word = -1, ""
        for match in _TOKEN.finditer(text):
            kind = match.lastgroup
            at = match.start(kind)
            if kind == "nl":
                line += 1
                if statements and len(runs) == 1:
                    nesting -= runs[0]
                    runs[0] = 0
                    line_start = True
                continue
            if kind == "comment":
                continue
            if kind == "cont":
                line += 1
                continue
            if line_start:
                line_start = False
                column = len(text[match.start() : at].expandtabs(_TAB))
                if column > indents[-1]:
                    indents.append(column)
                    nesting += INDENT_WEIGHT
                else:
                    while len(indents) > 1 and column < indents[-1]:
                        indents.pop()
                        nesting -= INDENT_WEIGHT
            self.tokens += 1
            if self.tokens > limit_tokens:
                raise self.fail("source_tokens", self.tokens, line, partial=True)
            if kind == "word":
                word = match.group(kind)
                if word[0].isdigit() and len(word) > MAX_DIGITS:
                    raise SourceUnavailableError(
                        f"the recorded source of {self.filename} is refused before compiling: line {line} "
                        f"has a number literal of {len(word)} digits (more than {MAX_DIGITS})",
                        self.path,
                    )
                word_end, last_word = match.end(), word
                if word not in _NESTING_WORDS:
                    continue
                runs[-1] += 1
                nesting += 1
            elif kind == "op":
                runs[-1] += 1
                nesting += 1
            elif kind == "open":
                runs[-1] += 1  # a call or subscript nests what it applies to
                runs.append(0)
                nesting += 1 + BRACKET_WEIGHT
            elif kind == "close":
                if len(runs) > 1:
                    nesting -= runs.pop() + BRACKET_WEIGHT
            elif kind == "sep":
                nesting -= runs[-1]
                runs[-1] = 0
            elif kind == "string":
                body = match.group(kind)
                if word_end == at and last_word in _TEMPLATE_PREFIXES:
                    # an f-string's (or t-string's) fields are expressions, nested where it stands
                    quote = next(q for q in _QUOTES if body.startswith(q))
                    self.run(body[len(quote) : len(body) - len(quote)], nesting, line, statements=False)
                line += body.count("\n")
            if nesting > self.deepest:
                self.deepest = nesting
                if nesting > limit_nesting:
                    raise self.fail("source_nesting", nesting, line, partial=True)
        return line


def check(source: str, limits: Limits, filename: str, path: str | None) -> None:
    """Raise SourceLimitError when compiling ``source`` could crash this interpreter or
    cost more than ``limits`` allow; otherwise return without building anything."""
    size = len(source)
    if size > limits.source_bytes:
        raise limits.source_error("source_bytes", size, filename, None, path)
    _Scan(limits, filename, path).run(source, 0, 1, statements=True)
