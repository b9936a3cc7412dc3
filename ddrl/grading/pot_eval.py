"""Evaluate a Program-of-Thought sample to its numeric answer, without ``exec`` or ``eval``.

The SVAMP rollouts (``svamp_codex_rollouts`` in :mod:`ddrl.data`) hold short Python programs that
store their result in ``ans``, e.g.::

    original_price = 76
    discount = 25
    ans = original_price - discount

Running untrusted model output is not acceptable, so each program is parsed with :mod:`ast` and walked
by a small whitelist interpreter. It understands exactly what the rollouts README ("Derivation") lists:

- assignments, including tuple unpacking (``a, b = 1, 2``);
- numeric constants and names;
- ``+ - * / // % **`` and unary minus;
- comparisons, if-expressions (``a if c else b``) and tuples;
- calls to ``min``, ``max``, ``int``, ``float``, ``abs`` and ``round``;
- ``print(...)`` statements, which are ignored; other bare expression statements (a trailing ``ans``)
  are evaluated under the same whitelist and discarded.

The answer is ``ans`` rounded to 6 decimals. Two conventions match the reference derivation
(``pot_svamp_codex_sc30_answers.jsonl.gz``, agreement on all 29,970 samples): a tuple ``ans = a, b``
answers its first element, and a boolean ``ans`` (a comparison) is no answer.

Anything else (imports, loops, attribute access, strings, other calls, ...) and any runtime error
(division by zero, an unbound name, overflow) gives ``None``. Integer results are capped at
:data:`MAX_INT_BITS` bits and powers at :data:`MAX_EXPONENT`, so no program can hang the evaluator.
"""

from __future__ import annotations

import ast
import math
import operator
from typing import Any, Callable

#: Largest integer (in bits) any intermediate value may reach; larger means "not a sensible answer".
MAX_INT_BITS = 4096
#: Largest absolute exponent accepted by ``**``.
MAX_EXPONENT = 1024
#: Decimals kept in the final answer (the grouping key for answer frequency).
ANSWER_DECIMALS = 6

Number = int | float


class PoTError(Exception):
    """The program uses something outside the whitelist, or fails at run time."""


def _check_size(x: Any) -> Any:
    if isinstance(x, int) and not isinstance(x, bool) and x.bit_length() > MAX_INT_BITS:
        raise PoTError(f"integer of {x.bit_length()} bits exceeds MAX_INT_BITS={MAX_INT_BITS}")
    if isinstance(x, float) and not math.isfinite(x):
        raise PoTError(f"non-finite value {x!r}")
    return x


def _pow(a: Number, b: Number) -> Number:
    if abs(b) > MAX_EXPONENT:
        raise PoTError(f"exponent {b!r} exceeds MAX_EXPONENT={MAX_EXPONENT}")
    # |a|**b has at least (bits(a) - 1) * b + 1 bits; refuse before computing when that is already too many.
    if isinstance(a, int) and isinstance(b, int) and b > 0 and (a.bit_length() - 1) * b + 1 > MAX_INT_BITS:
        raise PoTError(f"{a}**{b} would exceed MAX_INT_BITS={MAX_INT_BITS}")
    r = a**b
    if isinstance(r, complex):
        raise PoTError("complex result")
    return r


_BINOPS: dict[type, Callable[[Any, Any], Any]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod,
    ast.Pow: _pow,
}
_UNARY: dict[type, Callable[[Any], Any]] = {ast.USub: operator.neg}
_COMPARE: dict[type, Callable[[Any, Any], bool]] = {
    ast.Eq: operator.eq,
    ast.NotEq: operator.ne,
    ast.Lt: operator.lt,
    ast.LtE: operator.le,
    ast.Gt: operator.gt,
    ast.GtE: operator.ge,
}
_CALLS: dict[str, Callable[..., Any]] = {
    "min": min,
    "max": max,
    "int": int,
    "float": float,
    "abs": abs,
    "round": round,
}


def _is_number(x: Any) -> bool:
    return isinstance(x, (int, float))  # bool is an int: True + 1 == 2, as in Python


def _eval_expr(node: ast.expr, env: dict[str, Any]) -> Any:
    """Value of one whitelisted expression node under the variable bindings ``env``."""
    if isinstance(node, ast.Constant):
        if not _is_number(node.value):
            raise PoTError(f"constant {node.value!r} is not a number")
        return node.value
    if isinstance(node, ast.Name):
        if node.id not in env:
            raise PoTError(f"name {node.id!r} is not bound")
        return env[node.id]
    if isinstance(node, ast.BinOp) and type(node.op) in _BINOPS:
        a, b = _eval_expr(node.left, env), _eval_expr(node.right, env)
        if not (_is_number(a) and _is_number(b)):
            raise PoTError("arithmetic on a non-number")
        return _check_size(_BINOPS[type(node.op)](a, b))
    if isinstance(node, ast.UnaryOp) and type(node.op) in _UNARY:
        a = _eval_expr(node.operand, env)
        if not _is_number(a):
            raise PoTError("unary operator on a non-number")
        return _UNARY[type(node.op)](a)
    if isinstance(node, ast.Compare) and all(type(op) in _COMPARE for op in node.ops):
        left = _eval_expr(node.left, env)
        for op, right_node in zip(node.ops, node.comparators):
            right = _eval_expr(right_node, env)
            if not _COMPARE[type(op)](left, right):
                return False
            left = right
        return True
    if isinstance(node, ast.IfExp):
        return _eval_expr(node.body if _eval_expr(node.test, env) else node.orelse, env)
    if isinstance(node, ast.Tuple):
        return tuple(_eval_expr(e, env) for e in node.elts)
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in _CALLS:
        if node.keywords:
            raise PoTError(f"keyword arguments to {node.func.id}()")
        args = [_eval_expr(a, env) for a in node.args]
        return _check_size(_CALLS[node.func.id](*args))
    raise PoTError(f"unsupported expression {type(node).__name__}")


def _assign(target: ast.expr, value: Any, env: dict[str, Any]) -> None:
    if isinstance(target, ast.Name):
        env[target.id] = value
    elif isinstance(target, (ast.Tuple, ast.List)):
        if not isinstance(value, tuple) or len(value) != len(target.elts):
            raise PoTError("tuple unpacking with a mismatched value")
        for t, v in zip(target.elts, value):
            _assign(t, v, env)
    else:
        raise PoTError(f"unsupported assignment target {type(target).__name__}")


def _is_print(stmt: ast.stmt) -> bool:
    return (
        isinstance(stmt, ast.Expr)
        and isinstance(stmt.value, ast.Call)
        and isinstance(stmt.value.func, ast.Name)
        and stmt.value.func.id == "print"
    )


def run_program(source: str) -> dict[str, Any]:
    """Interpret ``source`` and return its final variable bindings; raise :class:`PoTError` or
    :class:`SyntaxError` when the program is outside the whitelist or fails."""
    tree = ast.parse(source, mode="exec")
    env: dict[str, Any] = {}
    for stmt in tree.body:
        if isinstance(stmt, ast.Assign):
            value = _eval_expr(stmt.value, env)
            for target in stmt.targets:
                _assign(target, value, env)
        elif _is_print(stmt):
            continue
        elif isinstance(stmt, ast.Expr):
            _eval_expr(stmt.value, env)  # a bare expression such as a trailing ``ans``: checked, discarded
        else:
            raise PoTError(f"unsupported statement {type(stmt).__name__}")
    return env


def program_answer(source: str, result_name: str = "ans") -> float | None:
    """The numeric value of ``result_name`` after running ``source``, rounded to
    :data:`ANSWER_DECIMALS` decimals; ``None`` if it does not parse, leaves the whitelist, fails at
    run time, or does not bind a finite number to ``result_name``."""
    try:
        env = run_program(source)
        value = env.get(result_name)
        if isinstance(value, tuple) and value:
            value = value[0]  # ``ans = a, b``: the first element, as the reference derivation does
        if isinstance(value, bool) or not _is_number(value):
            return None
        out = round(float(value), ANSWER_DECIMALS)
    except (PoTError, SyntaxError, ValueError, TypeError, ArithmeticError, RecursionError, MemoryError):
        return None
    return out if math.isfinite(out) else None
