"""The repository's SQL, read from its source and parsed with PostgreSQL's own parser (pglast), and
the check that a statement stays within one session (tests/test_distribution.py).

``statements()`` finds every string literal of the db modules that is an SQL statement (f-strings
are rendered with the module's own constants; the few local values are given by ``SAMPLE_LOCALS``).
``session_params(sql, session_tables)`` tells how the statement reaches session rows: each
reference to a session table is tied, through ``session = $n`` / ``session = ANY($n)``, a join on
``session`` (``a.session = b.session`` or ``USING (session, ...)``), to a parameter. Only top-level
AND terms of WHERE and JOIN ... ON count: a predicate under OR filters nothing.
"""

from __future__ import annotations

import ast
import importlib
import inspect
import pkgutil
import re
from dataclasses import dataclass
from datetime import UTC, datetime
from types import ModuleType
from typing import Any

import pglast
from pglast import ast as pg
from pglast.enums import BoolExprType

import mcp_memory.db
from mcp_memory.db.filters import among, condition
from mcp_memory.models import RecallFilter

# Every module of the db package: a new one is read without being listed (pool.py and embedded.py
# hold no statement on our tables).
MODULES: list[ModuleType] = [importlib.import_module(f"mcp_memory.db.{info.name}")
                             for info in pkgutil.iter_modules(mcp_memory.db.__path__)]
# The values of the local names some f-strings interpolate (a number, or a list of SET terms).
_SAMPLE_FILTER = RecallFilter(since=datetime(2024, 3, 1, tzinfo=UTC), metadata={"team": "blue"})
SAMPLE_LOCALS: dict[str, Any] = {"ef_search": 40, "threshold": 0.5, "column": "session",
                                 "updates": "calls = llm_usage.calls + EXCLUDED.calls",
                                 # a recall filter on a table that only names memories (db/expansion.py)
                                 "passing": among(_SAMPLE_FILTER, "t.memory_id", 7),
                                 "where": condition(_SAMPLE_FILTER, "m", 4)}
_STATEMENT = re.compile(r"\s*\(?\s*(SELECT|INSERT|UPDATE|DELETE|WITH)\b")
_TEMPLATE = re.compile(r"\{\w*\}")  # a str.format template: checked where it is filled in


@dataclass(frozen=True)
class Statement:
    where: str  # "module.function"
    sql: str


def statements() -> list[Statement]:
    """Every SQL statement written in the db modules, with the function it is in."""
    found: list[Statement] = []
    for module in MODULES:
        name = module.__name__.rsplit(".", 1)[1]

        def visit(node: ast.AST, function: str, module: ModuleType = module, name: str = name) -> None:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                function = node.name
            if isinstance(node, ast.JoinedStr):
                head = node.values[0]
                if not (isinstance(head, ast.Constant) and _STATEMENT.match(head.value)):
                    return  # a message, not SQL
                text = "".join(part.value if isinstance(part, ast.Constant) else
                               str(eval(compile(ast.Expression(part.value), name, "eval"), vars(module), SAMPLE_LOCALS))
                               for part in node.values)
            elif isinstance(node, ast.Constant) and isinstance(node.value, str):
                text = node.value
            else:
                for child in ast.iter_child_nodes(node):
                    visit(child, function)
                return
            if _STATEMENT.match(text) and not _TEMPLATE.search(text):
                found.append(Statement(f"{name}.{function}", text))

        visit(ast.parse(inspect.getsource(module)), "<module>")
    return found


class _Links:
    """Union-find over relation references ("r<n>") and parameters ("$<n>")."""

    def __init__(self) -> None:
        self.parent: dict[str, str] = {}

    def find(self, item: str) -> str:
        self.parent.setdefault(item, item)
        while self.parent[item] != item:
            item = self.parent[item]
        return item

    def join(self, a: str, b: str) -> None:
        self.parent[self.find(a)] = self.find(b)


def _conjuncts(node: Any) -> list[Any]:
    if isinstance(node, pg.BoolExpr) and node.boolop == BoolExprType.AND_EXPR:
        return [term for arg in node.args for term in _conjuncts(arg)]
    return [] if node is None else [node]


def _uncast(node: Any) -> Any:
    while isinstance(node, pg.TypeCast):
        node = node.arg
    return node


def _session_column(node: Any) -> str | None:
    """'' for an unqualified ``session``, the alias for ``alias.session``, else None."""
    node = _uncast(node)
    if isinstance(node, pg.ColumnRef) and isinstance(node.fields[-1], pg.String) and node.fields[-1].sval == "session":
        return node.fields[0].sval if len(node.fields) == 2 else ""
    return None


class _Reader:
    def __init__(self, session_tables: set[str]) -> None:
        self.session_tables = session_tables
        self.links = _Links()
        self.session_refs: list[str] = []
        self.count = 0
        # INSERT ... SELECT x.session ...: the target's reference, tied to x.session in that SELECT
        self.written: dict[int, list[tuple[str, Any]]] = {}

    def relation(self, scope: dict[str, str], range_var: Any) -> None:
        self.count += 1
        ref = f"r{self.count}"
        scope[range_var.alias.aliasname if range_var.alias else range_var.relname] = ref
        if range_var.relname in self.session_tables:
            self.session_refs.append(ref)

    def from_items(self, scope: dict[str, str], items: Any, predicates: list[Any]) -> None:
        for item in items or ():
            if isinstance(item, pg.RangeVar):
                self.relation(scope, item)
            elif isinstance(item, pg.JoinExpr):
                before = set(scope)
                self.from_items(scope, [item.larg], predicates)
                left = set(scope) - before
                self.from_items(scope, [item.rarg], predicates)
                right = set(scope) - before - left
                if item.usingClause and "session" in [name.sval for name in item.usingClause]:
                    for a in left:
                        for b in right:
                            self.links.join(scope[a], scope[b])
                predicates.extend(_conjuncts(item.quals))

    def resolve(self, chain: list[dict[str, str]], alias: str) -> list[str]:
        for scope in reversed(chain):
            if alias == "":
                return [ref for ref in scope.values() if ref in self.session_refs] or list(scope.values())
            if alias in scope:
                return [scope[alias]]
        return []

    def level(self, chain: list[dict[str, str]], node: Any) -> None:
        """One query level: its relations, its pinning predicates, then everything nested in it."""
        scope: dict[str, str] = {}
        predicates: list[Any] = []
        if isinstance(node, pg.SelectStmt):
            self.from_items(scope, node.fromClause, predicates)
            predicates += _conjuncts(node.whereClause)
            for target, column in self.written.pop(id(node), []):
                for ref in self.resolve([*chain, scope], _session_column(column)):
                    self.links.join(target, ref)
        elif isinstance(node, (pg.DeleteStmt, pg.UpdateStmt)):
            self.relation(scope, node.relation)
            self.from_items(scope, getattr(node, "usingClause", None) or getattr(node, "fromClause", None), predicates)
            predicates += _conjuncts(node.whereClause)
        elif isinstance(node, pg.InsertStmt):
            self.relation(scope, node.relation)
            columns = [column.name for column in node.cols or ()]
            select = node.selectStmt
            if "session" in columns and select is not None:  # the session each row is written to
                place = columns.index("session")
                values = [row[place] for row in select.valuesLists or ()] or [
                    target.val for target in (select.targetList or ())[place : place + 1]]
                target = scope[node.relation.alias.aliasname if node.relation.alias else node.relation.relname]
                for value in values:
                    if isinstance(_uncast(value), pg.ParamRef):
                        self.links.join(target, f"${_uncast(value).number}")
                    elif _session_column(_uncast(value)) is not None and not select.valuesLists:
                        self.written.setdefault(id(select), []).append((target, _uncast(value)))
        chain = [*chain, scope]
        for predicate in predicates:
            if not isinstance(predicate, pg.A_Expr) or predicate.name[-1].sval != "=":
                continue
            for one, other in ((predicate.lexpr, predicate.rexpr), (predicate.rexpr, predicate.lexpr)):
                alias = _session_column(one)
                if alias is None:
                    continue
                for ref in self.resolve(chain, alias):
                    if isinstance(_uncast(other), pg.ParamRef):
                        self.links.join(ref, f"${_uncast(other).number}")
                    elif (other_alias := _session_column(other)) is not None:
                        for other_ref in self.resolve(chain, other_alias):
                            self.links.join(ref, other_ref)
        self.nested(chain, node)

    def nested(self, chain: list[dict[str, str]], node: Any) -> None:
        for value in _children(node):
            if isinstance(value, (pg.SelectStmt, pg.DeleteStmt, pg.UpdateStmt, pg.InsertStmt)):
                self.level(chain, value)
            else:
                self.nested(chain, value)


def _children(node: Any) -> list[Any]:
    if isinstance(node, (list, tuple)):
        return [item for item in node if item is not None]
    if not isinstance(node, pg.Node):
        return []
    return [value for slot in node.__slots__ if isinstance(value := getattr(node, slot), (pg.Node, list, tuple))]


def session_params(sql: str, session_tables: set[str]) -> set[str] | None:
    """The parameters that choose the session rows ``sql`` reaches (``{"$1"}`` for one session;
    an INSERT's rows count by the session column's value); None when some reference to a
    session table is tied to no parameter (it reads across sessions)."""
    reader = _Reader(session_tables)
    for raw in pglast.parse_sql(sql):
        reader.level([], raw.stmt)
    params: set[str] = set()
    for ref in reader.session_refs:
        root = reader.links.find(ref)
        pinned = {item for item in reader.links.parent if item.startswith("$") and reader.links.find(item) == root}
        if not pinned:
            return None
        params |= pinned
    return params
