"""`respc.runtime.schema.get_json_schema` must match transformers' `get_json_schema` (the oracle) exactly.

Every case runs both implementations and compares either the returned dicts (value, key order and the
int/bool distinction, via `repr`) or the names of the exception classes raised.
"""

# The legacy and redundant typing spellings flagged by these rules are exactly the inputs under test.
# ruff: noqa: UP006, UP007, UP045, RUF041

import collections.abc
import datetime
import functools
import inspect
import json
import subprocess
import sys
import types
import typing
from collections.abc import Callable
from enum import Enum, Flag, IntEnum
from typing import Annotated, Any, Literal, Optional, Union

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st
from support.outcome import outcome
from transformers.utils import chat_template_utils

from respc.runtime import schema as schema_module
from respc.runtime.schema import get_json_schema

oracle_get_json_schema = chat_template_utils.get_json_schema

# ----------------------------------------------------------------------------------------------------
# Comparison helpers


def assert_same(func: Any) -> tuple:
    """Run both implementations on `func` and require the same result (by repr, which also checks key
    order, as templates render dicts in order, and tells True from 1) or the same exception class."""
    expected = outcome(oracle_get_json_schema, func)
    actual = outcome(get_json_schema, func)
    assert actual[0] == expected[0], f"oracle: {expected!r}\nours:   {actual!r}"
    if actual[0] == "ok":
        assert repr(actual[1]) == repr(expected[1])
    else:
        assert actual[1].__name__ == expected[1].__name__, f"oracle: {expected!r}\nours:   {actual!r}"
    return expected


_NO_HINT = object()
_NO_DEFAULT = inspect.Parameter.empty


def make_function(
    params: list[tuple[str, Any, Any]],
    doc: str | None,
    returns: Any = _NO_HINT,
    name: str = "tool",
    kinds: dict[str, str] | None = None,
) -> Callable[..., Any]:
    """Build a real function from (name, hint, default) triples; `kinds` maps names to '*' or '**'."""
    namespace: dict[str, Any] = {}
    pieces = []
    for index, (param, hint, default) in enumerate(params):
        piece = (kinds or {}).get(param, "") + param
        if hint is not _NO_HINT:
            namespace[f"_hint{index}"] = hint
            piece += f": _hint{index}"
        if default is not _NO_DEFAULT:
            namespace[f"_default{index}"] = default
            piece += f" = _default{index}"
        pieces.append(piece)
    arrow = ""
    if returns is not _NO_HINT:
        namespace["_returns"] = returns
        arrow = " -> _returns"
    exec(f"def {name}({', '.join(pieces)}){arrow}:\n    pass\n", namespace)
    func = namespace[name]
    func.__doc__ = doc
    return func


def args_doc(*names: str, summary: str = "Do something useful.", returns: str | None = None) -> str:
    lines = [summary, "", "Args:"] + [f"    {name}: The {name} value." for name in names]
    if returns is not None:
        lines += ["", "Returns:", f"    {returns}"]
    return "\n".join(lines) + "\n"


# ----------------------------------------------------------------------------------------------------
# Type hints


class Color(Enum):
    RED = "red"
    GREEN = "green"


class Level(IntEnum):
    LOW = 1
    HIGH = 2


class Mixed(Enum):
    A = 1
    B = "b"
    C = None
    D = 2.5
    E = False


class Aliased(Enum):
    ONE = 1
    UNO = 1  # aliases are part of what is tested
    TRUE = True  # equal to 1, so another alias


class Perm(Flag):
    R = 4
    W = 2
    X = 1


class Empty(Enum):
    pass


class TupleValued(Enum):
    A = (1, 2)


class NestedEnumValued(Enum):
    A = Color.RED


class Custom:
    pass


class MyList(list):
    pass


class FakeImage:
    """Named like PIL's Image, but PIL is not what defines it."""


FakeImage.__module__ = "PIL.Image"
FakeImage.__name__ = FakeImage.__qualname__ = "Image"

T = typing.TypeVar("T")
UserId = typing.NewType("UserId", int)

HINTS: dict[str, Any] = {
    "int": int,
    "float": float,
    "str": str,
    "bool": bool,
    "none": None,
    "nonetype": type(None),
    "any": Any,
    "object": object,
    "bytes": bytes,
    "complex": complex,
    "set": set,
    "frozenset": frozenset,
    "datetime": datetime.datetime,
    "custom": Custom,
    "list_subclass": MyList,
    "list_subclass_generic": MyList[int],
    "fake_pil_image": FakeImage,
    "typevar": T,
    "newtype": UserId,
    "ellipsis": ...,
    "unhashable_list_literal": [int],
    "int_instance": 3,
    "string_forward_ref": "int",
    "string_forward_ref_generic": "list[dict[str, float]]",
    "list": list,
    "list_int": list[int],
    "list_list_str": list[list[str]],
    "list_two_args": list[int, str],
    "list_none": list[None],
    "list_ellipsis": list[...],
    "typing_List": typing.List,
    "typing_List_int": typing.List[int],
    "typing_List_None": typing.List[None],
    "tuple": tuple,
    "tuple_empty": tuple[()],
    "typing_Tuple_empty": typing.Tuple[()],
    "tuple_one": tuple[int],
    "tuple_two": tuple[int, str],
    "tuple_three_nested": tuple[int, list[str], dict[str, bool]],
    "tuple_variadic": tuple[int, ...],
    "typing_Tuple": typing.Tuple,
    "typing_Tuple_two": typing.Tuple[float, bool],
    "dict": dict,
    "dict_str_int": dict[str, int],
    "dict_int_list": dict[int, list[float]],
    "dict_one_arg": dict[str],
    "dict_str_none": dict[str, None],
    "dict_str_any": dict[str, Any],
    "typing_Dict": typing.Dict,
    "typing_Dict_args": typing.Dict[str, typing.List[int]],
    "optional_int": Optional[int],
    "optional_list": Optional[list[int]],
    "optional_any": Optional[Any],
    "optional_none": Optional[None],
    "union_int_str": Union[int, str],
    "union_str_int": Union[str, int],
    "union_with_none": Union[int, str, None],
    "union_list_tuple": Union[list, tuple],
    "union_int_bool_float": Union[int, bool, float],
    "union_list_int_str": Union[list[int], str],
    "union_any_int": Union[Any, int],
    "union_custom": Union[int, Custom],
    "union_enum_str": Union[Color, str],
    "union_literals": Union[Literal["a"], Literal[1]],
    "union_dict_list": Union[dict[str, int], list[str], None],
    "pipe_int_str": int | str,
    "pipe_int_none": int | None,
    "pipe_none_first": None | int,
    "pipe_generic": list[int] | dict[str, str] | None,
    "pipe_literal": Literal["x"] | None,
    "literal_str": Literal["a", "b"],
    "literal_int": Literal[1, 2, 3],
    "literal_mixed": Literal["a", 1, 2.5, True, None],
    "literal_bool_int": Literal[1, True, 0, False],
    "literal_none": Literal[None],
    "literal_enum_member": Literal[Color.RED],
    "literal_bytes": Literal[b"x"],
    "literal_empty_tuple": Literal[()],
    "literal_nested": Literal[Literal["a"], "b"],
    "list_literal": list[Literal["a", "b"]],
    "enum_str": Color,
    "enum_int": Level,
    "enum_mixed": Mixed,
    "enum_aliased": Aliased,
    "enum_flag": Perm,
    "enum_empty": Empty,
    "enum_base": Enum,
    "enum_tuple_values": TupleValued,
    "enum_enum_values": NestedEnumValued,
    "optional_enum": Optional[Color],
    "list_enum": list[Level],
    "annotated": Annotated[int, "meta"],
    "annotated_nested": list[Annotated[str, "meta"]],
    "callable": typing.Callable[[int], str],
    "abc_callable": collections.abc.Callable,
    "sequence": typing.Sequence[int],
    "abc_sequence": collections.abc.Sequence[int],
    "iterable": typing.Iterable[str],
    "mapping": typing.Mapping[str, int],
    "set_int": set[int],
    "type_int": type[int],
    "typing_Type": typing.Type[int],
    "classvar": typing.ClassVar[int],
    "final": typing.Final[int],
    "no_return": typing.NoReturn,
    "bare_optional": Optional,
    "bare_union": Union,
    "bare_literal": Literal,
    "generic_alias_union": types.UnionType,
    "deep_nesting": dict[str, list[tuple[int, Optional[Literal["a", "b"]]]]],
    "optional_tuple_one": Optional[tuple[int]],
    "list_of_custom": list[Custom],
    "dict_of_custom": dict[str, Custom],
}


@pytest.mark.parametrize("hint", list(HINTS.values()), ids=list(HINTS))
def test_parameter_hint(hint: Any) -> None:
    assert_same(make_function([("x", hint, _NO_DEFAULT)], args_doc("x")))


@pytest.mark.parametrize("hint", list(HINTS.values()), ids=list(HINTS))
def test_parameter_hint_with_default_and_choices(hint: Any) -> None:
    doc = 'Pick one.\n\nArgs:\n    x: The pick (choices: ["a", 2, null])\n    y: Other.\n'
    assert_same(make_function([("y", int, _NO_DEFAULT), ("x", hint, None)], doc))


@pytest.mark.parametrize("hint", list(HINTS.values()), ids=list(HINTS))
def test_return_hint(hint: Any) -> None:
    # Unsupported return hints are dropped silently, but other exceptions (TypeError...) still propagate
    assert_same(make_function([("x", int, _NO_DEFAULT)], args_doc("x", returns="The result."), returns=hint))
    assert_same(make_function([("x", int, _NO_DEFAULT)], args_doc("x"), returns=hint))


def test_supported_hints_really_produce_schemas() -> None:
    # Guards against the comparison passing trivially because both sides raise
    outcome = assert_same(make_function([("x", dict[str, list[Optional[Color]]], 1)], args_doc("x")))
    assert outcome[0] == "ok"
    assert outcome[1]["function"]["parameters"]["properties"]["x"]["additionalProperties"]["items"] == {
        "type": "string",
        "enum": ["red", "green"],
        "nullable": True,
    }


# ----------------------------------------------------------------------------------------------------
# Signatures: defaults, receivers, variadics, missing hints


def _doc_all(*names: str) -> str:
    return args_doc(*names, returns="Nothing much.")


SIGNATURES: dict[str, Callable[..., Any]] = {
    "no_params": make_function([], "Takes nothing."),
    "no_params_no_hint_return": make_function([], "Takes nothing.\n\nReturns:\n    Zero.", returns=int),
    "defaults": make_function(
        [("a", int, _NO_DEFAULT), ("b", str, "x"), ("c", Optional[int], None), ("d", list[int], [])],
        _doc_all("a", "b", "c", "d"),
    ),
    "missing_hint": make_function([("a", int, _NO_DEFAULT), ("b", _NO_HINT, 1)], _doc_all("a", "b")),
    "missing_hint_first": make_function([("a", _NO_HINT, _NO_DEFAULT), ("b", Custom, 1)], _doc_all("a", "b")),
    "missing_hint_and_description": make_function([("a", _NO_HINT, _NO_DEFAULT)], "No args section."),
    "self_unannotated_first": make_function([("self", _NO_HINT, _NO_DEFAULT), ("a", int, 1)], _doc_all("a")),
    "cls_unannotated_first": make_function([("cls", _NO_HINT, _NO_DEFAULT), ("a", int, 1)], _doc_all("a")),
    "self_annotated": make_function([("self", int, _NO_DEFAULT), ("a", int, 1)], _doc_all("a")),
    "self_annotated_described": make_function([("self", int, _NO_DEFAULT)], _doc_all("self")),
    "self_not_first": make_function([("a", int, 1), ("self", _NO_HINT, 2)], _doc_all("a", "self")),
    "this_unannotated_first": make_function([("this", _NO_HINT, _NO_DEFAULT), ("a", int, 1)], _doc_all("a")),
    "varargs": make_function(
        [("a", int, _NO_DEFAULT), ("args", str, _NO_DEFAULT), ("kw", bool, _NO_DEFAULT)],
        _doc_all("a", "args", "kw"),
        kinds={"args": "*", "kw": "**"},
    ),
    "varargs_unannotated": make_function(
        [("a", int, _NO_DEFAULT), ("args", _NO_HINT, _NO_DEFAULT)], _doc_all("a", "args"), kinds={"args": "*"}
    ),
    "kwargs_unannotated": make_function(
        [("a", int, _NO_DEFAULT), ("kwargs", _NO_HINT, _NO_DEFAULT)], _doc_all("a"), kinds={"kwargs": "**"}
    ),
    "varargs_undescribed": make_function(
        [("a", int, _NO_DEFAULT), ("args", int, _NO_DEFAULT)], _doc_all("a"), kinds={"args": "*"}
    ),
    "return_any": make_function([("a", int, 1)], _doc_all("a"), returns=Any),
    "return_none": make_function([("a", int, 1)], _doc_all("a"), returns=None),
    "return_custom_dropped": make_function([("a", int, 1)], _doc_all("a"), returns=Custom),
    "return_string_ref": make_function([("a", int, 1)], _doc_all("a"), returns="dict[str, int]"),
    "return_unresolvable_ref": make_function([("a", int, 1)], _doc_all("a"), returns="NoSuchName"),
    "param_unresolvable_ref": make_function([("a", "NoSuchName", 1)], _doc_all("a")),
    "undescribed_before_bad_choices": make_function(
        [("a", int, 1), ("b", int, 1)], "S.\n\nArgs:\n    b: B (choices: [oops])\n"
    ),
    "bad_choices_before_undescribed": make_function(
        [("b", int, 1), ("a", int, 1)], "S.\n\nArgs:\n    b: B (choices: [oops])\n"
    ),
    "bad_hint_before_missing_description": make_function([("a", Custom, 1), ("b", int, 1)], "S."),
    "missing_hint_after_bad_hint": make_function([("a", Custom, 1), ("b", _NO_HINT, 1)], "S."),
    "no_docstring": make_function([("a", int, 1)], None),
    "empty_docstring": make_function([("a", int, 1)], ""),
    "blank_docstring": make_function([("a", int, 1)], "   \n\t \n"),
    "no_docstring_bad_hint": make_function([("a", Custom, 1)], None),
}


def _positional_only(a: int, /, b: str, *, c: float = 1.0) -> bool:
    """Mix parameter kinds.

    Args:
        a: Positional only.
        b: Either way.
        c: Keyword only.

    Returns:
        Whether it worked.
    """
    return True


def _string_annotations(a: "int", b: "Optional[list[Color]]" = None) -> "Level":
    """String annotations are evaluated.

    Args:
        a: An int.
        b: Colors.
    """
    return Level.LOW


class Toolbox:
    """A class whose methods are tools.

    Args:
        size: Constructor argument.
    """

    limit: int
    label: "str"

    def __init__(self, size: int = 3) -> None:
        self.size = size

    def scale(self, factor: float, offset: int = 0) -> float:
        """Scale the size.

        Args:
            factor: Multiplier.
            offset: Added afterwards.

        Returns:
            The scaled size.
        """
        return self.size * factor + offset

    @classmethod
    def build(cls, size: int) -> "Toolbox":
        """Build one.

        Args:
            size: The size.
        """
        return cls(size)

    @staticmethod
    def helper(value: str) -> str:
        """Echo.

        Args:
            value: Anything.
        """
        return value

    def annotated_self(self: "Toolbox", value: int) -> None:
        """Annotated receiver.

        Args:
            value: Anything.
        """

    def __call__(self, query: str) -> str:
        """Call the toolbox.

        Args:
            query: What to look up.
        """
        return query


class DescribedToolbox(Toolbox):
    """Toolbox with its attributes described.

    Args:
        limit: The limit.
        label: The label.
        size: Constructor argument.
    """


class InheritsDoc(Toolbox):
    def scale(self, factor: float, offset: int = 0) -> float:  # docstring inherited through inspect.getdoc
        return 0.0


def _decorator(func: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        return func(*args, **kwargs)

    return wrapper


@_decorator
def _wrapped(city: str, days: int = 1) -> dict[str, float]:
    """Forecast.

    Args:
        city: Where.
        days: How long.

    Returns:
        The forecast.
    """
    return {}


CALLABLES: dict[str, Any] = {
    "positional_only": _positional_only,
    "string_annotations": _string_annotations,
    "method_bound": Toolbox().scale,
    "method_unbound": Toolbox.scale,
    "classmethod": Toolbox.build,
    "classmethod_underlying": Toolbox.__dict__["build"].__func__,
    "staticmethod": Toolbox.helper,
    "annotated_self_bound": Toolbox().annotated_self,
    "annotated_self_unbound": Toolbox.annotated_self,
    "callable_instance": Toolbox(),
    "dunder_call_bound": Toolbox().__call__,
    "class": Toolbox,
    "class_described": DescribedToolbox,
    "inherited_docstring": InheritsDoc().scale,
    "functools_wraps": _wrapped,
    "functools_partial": functools.partial(_positional_only, 1),
    "lambda": lambda x: x,
    "builtin": len,
    "builtin_method": "abc".upper,
    **SIGNATURES,
}


@pytest.mark.parametrize("func", list(CALLABLES.values()), ids=list(CALLABLES))
def test_callables(func: Any) -> None:
    assert_same(func)


def test_elementwise_eq_default_fails_like_upstream() -> None:
    # Upstream compares defaults with `==`, which an array default turns into an ambiguous truth value
    np = pytest.importorskip("numpy")
    assert_same(make_function([("a", list, np.zeros(2))], _doc_all("a")))
    assert_same(make_function([("a", list, np.zeros(1))], _doc_all("a")))


# ----------------------------------------------------------------------------------------------------
# Docstrings

DOCSTRINGS: dict[str, str | None] = {
    "google": "Summary line.\n\nArgs:\n    x: The x.\n    y: The y.\n\nReturns:\n    The sum.\n",
    "no_args_section": "Just a summary.",
    "summary_only_with_returns": "Summary.\n\nReturns:\n    Something.\n",
    "args_first_line": "Args:\n    x: The x.\n    y: The y.\n",
    "args_no_blank_line": "Summary.\nArgs:\n    x: The x.\n    y: The y.",
    "args_trailing_space_header": "Summary.\n\nArgs: \n    x: The x.\n    y: The y.\n",
    "args_lowercase": "Summary.\n\nargs:\n    x: The x.\n    y: The y.\n",
    "arguments_header": "Summary.\n\nArguments:\n    x: The x.\n    y: The y.\n",
    "args_at_end": "Summary.\n\nArgs:",
    "multiline_descriptions": (
        "Summary.\n\nArgs:\n    x: The x, which is described\n        over several lines\n\n"
        "        with a blank line.\n    y:   The y,\n      also long.\n"
    ),
    "typed_args": "Summary.\n\nArgs:\n    x (int): The x.\n    y (str, optional): The y.\n",
    "empty_description_swallows_next": "Summary.\n\nArgs:\n    x:\n    y: The y.\n",
    "description_on_next_line": "Summary.\n\nArgs:\n    x:\n        The x.\n    y:\n        The y.\n",
    "colon_in_continuation_same_indent": "S.\n\nArgs:\n    x: The x.\n    Note: careful.\n    y: The y.\n",
    "colon_in_continuation_deeper": "S.\n\nArgs:\n    x: The x.\n        Note: careful.\n    y: The y.\n",
    "colon_shallower": "Summary.\n\nArgs:\n    x: The x.\n  Note: careful.\n    y: The y.\n",
    "tabs": "Summary.\n\nArgs:\n\tx: The x.\n\t\tMore x.\n\ty: The y.\n",
    "duplicate_arg": "Summary.\n\nArgs:\n    x: First.\n    y: The y.\n    x: Second.\n",
    "unknown_args_described": "Summary.\n\nArgs:\n    x: The x.\n    y: The y.\n    z: Not a parameter.\n",
    "returns_inside_args": "Summary.\n\nArgs:\n    x: The x. Returns: nothing.\n    y: The y.\n",
    "raises_inside_args": "Summary.\n\nArgs:\n    x: The x.\n    y: The y Raises: nothing.\n",
    "returns_before_args": "Summary.\n\nReturns:\n    The sum.\n\nArgs:\n    x: The x.\n    y: The y.\n",
    "returns_multiline": "S.\n\nArgs:\n    x: The x.\n    y: The y.\n\nReturns:\n    A\n      b\n    c.\n",
    "returns_then_raises": (
        "S.\n\nArgs:\n    x: The x.\n    y: The y.\n\nReturns:\n    Sum.\n\nRaises:\n    ValueError: bad.\n"
    ),
    "raises_before_args": "S.\n\nRaises:\n    ValueError: bad.\n\nArgs:\n    x: X.\n    y: Y.\n",
    "raises_in_summary": "Never Raises: anything.\n\nArgs:\n    x: X.\n    y: Y.\n",
    "returns_empty_then_raises": "Summary.\n\nArgs:\n    x: X.\n    y: Y.\n\nReturns:\nRaises:\n    E: e\n",
    "returns_same_line": "Summary.\n\nArgs:\n    x: X.\n    y: Y.\n\nReturns: the sum.\n",
    "returns_at_end": "Summary.\n\nArgs:\n    x: X.\n    y: Y.\n\nReturns:",
    "summary_mentions_args": "Use these Args: carefully.\n\nArgs:\n    x: X.\n    y: Y.\n",
    "summary_multiline": "First line\nsecond line.\n\n  Indented third.\n\nArgs:\n    x: X.\n    y: Y.\n",
    "summary_empty_args_first": "\n\n  Args:\n    x: X.\n    y: Y.\n",
    "choices_strings": 'S.\n\nArgs:\n    x: Pick (choices: [" a ", "b"])\n    y: Y.\n',
    "choices_numbers": "S.\n\nArgs:\n    x: Pick (choices: [1, 2.5, true, null, -3])\n    y: Y.\n",
    "choices_uppercase": 'S.\n\nArgs:\n    x: Pick (CHOICES:["a"])   \n    y: Y.\n',
    "choices_only": 'S.\n\nArgs:\n    x: (choices: ["a"])\n    y: Y.\n',
    "choices_not_at_end": 'S.\n\nArgs:\n    x: Pick (choices: ["a"]) please\n    y: Y.\n',
    "choices_twice": 'S.\n\nArgs:\n    x: Pick (choices: ["a"]) or (choices: ["b"])\n    y: Y.\n',
    "choices_multiline": 'S.\n\nArgs:\n    x: Pick (choices: ["a",\n        "b"])\n    y: Y.\n',
    "choices_invalid_json": "S.\n\nArgs:\n    x: Pick (choices: [a, b])\n    y: Y.\n",
    "choices_string_json": 'S.\n\nArgs:\n    x: Pick (choices: "ab ")\n    y: Y.\n',
    "choices_object_json": 'S.\n\nArgs:\n    x: Pick (choices: {"k": 1})\n    y: Y.\n',
    "choices_number_json": "S.\n\nArgs:\n    x: Pick (choices: 3)\n    y: Y.\n",
    "choices_nested_json": 'S.\n\nArgs:\n    x: Pick (choices: [[1], {"a": " b "}])\n    y: Y.\n',
    "choices_empty": "S.\n\nArgs:\n    x: Pick (choices: [])\n    y: Y.\n",
    "choices_paren_inside": 'S.\n\nArgs:\n    x: Pick (choices: ["(a)", "b)"])\n    y: Y.\n',
    "choices_missing_close": 'S.\n\nArgs:\n    x: Pick (choices: ["a"]\n    y: Y.\n',
    "unicode": "Résumé ✓.\n\nArgs:\n    x: Ünïcode\u00a0text.\n    y: 日本語.\n",
    "unicode_whitespace": "S.\u2003\n\nArgs:\n    x: X\u2028more.\u00a0\n    y: Y.\u3000\n",
    "carriage_returns": "S.\r\n\r\nArgs:\r\n    x: X.\r\n    y: Y.\r\n",
    "windows_header_only": "S.\n\nArgs:\r\n    x: X.\n    y: Y.\n",
    "numeric_names": "S.\n\nArgs:\n    1: one\n    x: X.\n    y: Y.\n",
    "only_x": "S.\n\nArgs:\n    x: X.\n",
    "none": None,
}


@pytest.mark.parametrize("doc", list(DOCSTRINGS.values()), ids=list(DOCSTRINGS))
def test_docstrings(doc: str | None) -> None:
    params = [("x", Literal["a", "b"], _NO_DEFAULT), ("y", Optional[str], None)]
    assert_same(make_function(params, doc, returns=list[int]))
    assert_same(make_function(params, doc))


# ----------------------------------------------------------------------------------------------------
# Property-based comparisons

_SCALARS = st.one_of(
    st.integers(-5, 5),
    st.floats(allow_nan=False, width=16),
    st.text("ab ", max_size=3),
    st.booleans(),
    st.none(),
)
_INVALID = object()


def _build(constructor: Callable[..., Any], *args: Any) -> Any:
    """Apply a typing constructor, or give `_INVALID` when typing itself rejects the arguments."""
    try:
        return constructor(*args)
    except Exception:  # typing rejects some combinations, not always with TypeError
        return _INVALID


_LEAF_HINTS = st.sampled_from(
    [
        int,
        float,
        str,
        bool,
        None,
        type(None),
        Any,
        list,
        tuple,
        dict,
        typing.List,
        typing.Dict,
        typing.Tuple,
        bytes,
        set,
        object,
        Custom,
        Color,
        Level,
        Mixed,
        Aliased,
        Perm,
        Empty,
        TupleValued,
        FakeImage,
        ...,
        Annotated[int, 0],
    ]
)
_LITERALS = st.one_of(
    st.lists(_SCALARS, min_size=1, max_size=4).map(lambda values: _build(Literal.__getitem__, tuple(values))),
    st.sampled_from([Literal[Color.RED], Literal[b"x", 1]]),
)


def _compound(children: st.SearchStrategy) -> st.SearchStrategy:
    pair = st.tuples(children, children)
    several = st.lists(children, min_size=1, max_size=3).map(tuple)
    return st.one_of(
        children.map(lambda hint: _build(list.__class_getitem__, hint)),
        children.map(lambda hint: _build(typing.List.__getitem__, hint)),
        pair.map(lambda hints: _build(dict.__class_getitem__, hints)),
        children.map(lambda hint: _build(dict.__class_getitem__, (str, hint))),
        several.map(lambda hints: _build(tuple.__class_getitem__, hints)),
        children.map(lambda hint: _build(tuple.__class_getitem__, (hint, ...))),
        several.map(lambda hints: _build(Union.__getitem__, hints)),
        children.map(lambda hint: _build(Optional.__getitem__, hint)),
        pair.map(lambda hints: _build(lambda left, right: left | right, *hints)),
        children.map(lambda hint: _build(set.__class_getitem__, hint)),
    )


HINT_STRATEGY = st.recursive(st.one_of(_LEAF_HINTS, _LITERALS), _compound, max_leaves=6).filter(
    lambda hint: hint is not _INVALID
)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.filter_too_much])
@given(
    hints=st.lists(HINT_STRATEGY, min_size=1, max_size=3),
    returns=st.one_of(st.just(_NO_HINT), HINT_STRATEGY),
    required=st.integers(0, 3),
    choices=st.booleans(),
)
def test_random_hints(hints: list[Any], returns: Any, required: int, choices: bool) -> None:
    names = [f"p{index}" for index in range(len(hints))]
    params = [
        (name, hint, _NO_DEFAULT if index < required else None)
        for index, (name, hint) in enumerate(zip(names, hints, strict=True))
    ]
    suffix = ' (choices: ["a ", 1])' if choices else ""
    doc = "Tool.\n\nArgs:\n" + "".join(f"    {name}: About {name}.{suffix}\n" for name in names)
    event(assert_same(make_function(params, doc + "\nReturns:\n    Output.\n", returns=returns))[0])


_NAMES = st.sampled_from(["x", "y", "z", "self", "args", "Note", "x_1"])
_INDENT = st.sampled_from(["", " ", "  ", "    ", "\t", "      ", "        "])
_WORDS = st.lists(
    st.sampled_from(
        [
            "word",
            "x:",
            "y:",
            "Args:",
            "Returns:",
            "Raises:",
            "(choices:",
            "[1]",
            "[",
            "]",
            ")",
            '"a"',
            "é",
            "\u00a0",
        ]
    ),
    max_size=4,
).map(" ".join)
_CHOICES = st.one_of(
    st.just(""),
    st.lists(
        st.one_of(st.text("ab ", max_size=3), st.integers(-2, 2), st.booleans(), st.none()), max_size=3
    ).map(lambda values: " (choices: " + json.dumps(values) + ")"),
    st.sampled_from([" (Choices: [1])", " (choices: nope)", ' (choices: "xy")', " (choices: [1]) tail"]),
)


@st.composite
def structured_docstrings(draw: st.DrawFn) -> str:
    """Google-style docstrings with random indentation, continuations, blank lines and extra sections."""
    parts = [draw(_WORDS)]
    for section in draw(st.lists(st.sampled_from(["Args", "Returns", "Raises", "text"]), max_size=3)):
        parts.append(draw(st.sampled_from(["\n", "\n\n", "\n \n", " "])))
        if section == "text":
            parts.append(draw(_WORDS))
            continue
        parts.append(draw(_INDENT) + section + ":" + draw(st.sampled_from(["\n", "\n\n", " \n", ""])))
        for _ in range(draw(st.integers(0, 4))):
            indent = draw(_INDENT)
            if section == "Args":
                parts.append(f"{indent}{draw(_NAMES)}:{draw(st.sampled_from(['', ' ', '  ']))}{draw(_WORDS)}")
                parts.append(draw(_CHOICES))
            else:
                parts.append(indent + draw(_WORDS))
            parts.append(draw(st.sampled_from(["\n", "\n\n", "\n   \n"])))
    return "".join(parts)


@settings(max_examples=600, deadline=None)
@given(doc=structured_docstrings(), returns=st.sampled_from([_NO_HINT, int, Custom, Optional[list[str]]]))
def test_random_structured_docstrings(doc: str, returns: Any) -> None:
    params = [("x", int, _NO_DEFAULT), ("y", Optional[str], None)]
    event(str(assert_same(make_function(params, doc, returns=returns))[1])[:26])


_TOKENS = st.sampled_from(
    [
        "Args:",
        "Returns:",
        "Raises:",
        "\n",
        "\n    ",
        "\n  ",
        "\n        ",
        " ",
        "\t",
        "x",
        "y",
        "x:",
        "y:",
        ":",
        "desc",
        "(choices:",
        "(CHOICES: ",
        '["a", " b"]',
        "[1, true]",
        ")",
        "(",
        '"',
        "\u00a0",
        "\u2028",
        "\r",
        "\x0c",
        "\x1c",
        "é",
        "_",
    ]
)


@settings(max_examples=1000, deadline=None)
@given(tokens=st.lists(_TOKENS, max_size=30))
def test_random_token_docstrings(tokens: list[str]) -> None:
    params = [("x", int, _NO_DEFAULT), ("y", Optional[str], None)]
    event(str(assert_same(make_function(params, "".join(tokens), returns=dict[str, int]))[1])[:26])
    doc = "Summary.\n\nArgs:\n    " + "".join(tokens)
    event(str(assert_same(make_function(params, doc, returns=dict[str, int]))[1])[:26])


# ----------------------------------------------------------------------------------------------------
# Module contract


def test_exception_classes_are_plain_exceptions() -> None:
    assert schema_module.DocstringParsingException.__bases__ == (Exception,)
    assert schema_module.TypeHintParsingException.__bases__ == (Exception,)
    assert schema_module.DocstringParsingException.__name__ == "DocstringParsingException"
    assert schema_module.TypeHintParsingException.__name__ == "TypeHintParsingException"


def test_import_is_stdlib_only() -> None:
    # Load the file on its own (not through the `respc` packages, whose imports are not this module's business)
    # in a fresh interpreter, and list every non-stdlib module that loading it pulled in
    code = (
        "import importlib.util, sys\n"
        "before = set(sys.modules)\n"
        "spec = importlib.util.spec_from_file_location('schema_under_test', sys.argv[1])\n"
        "module = importlib.util.module_from_spec(spec)\n"
        "sys.modules['schema_under_test'] = module\n"
        "spec.loader.exec_module(module)\n"
        "new = {name.split('.')[0] for name in set(sys.modules) - before}\n"
        "print(sorted(new - set(sys.stdlib_module_names) - {'schema_under_test'}))\n"
    )
    result = subprocess.run(
        [sys.executable, "-I", "-c", code, schema_module.__file__], capture_output=True, text=True, check=True
    )
    assert result.stdout.strip() == "[]"


def test_library_types_are_recognised_once_loaded(monkeypatch: pytest.MonkeyPatch) -> None:
    # transformers maps PIL's Image to "image" and torch.Tensor to "audio" when they are installed. Neither is
    # installed here, so the oracle cannot be asked: stand-in modules check the lookup that replaces it.
    fake_pil, fake_torch = types.ModuleType("PIL.Image"), types.ModuleType("torch")
    fake_pil.Image = type("Image", (), {})
    fake_torch.Tensor = type("Tensor", (), {})
    func = make_function(
        [("img", fake_pil.Image, _NO_DEFAULT), ("wav", Optional[fake_torch.Tensor], None)],
        args_doc("img", "wav"),
    )
    with pytest.raises(schema_module.TypeHintParsingException):
        get_json_schema(func)  # not loaded: custom classes, as for transformers without PIL and torch
    monkeypatch.setitem(sys.modules, "PIL.Image", fake_pil)
    monkeypatch.setitem(sys.modules, "torch", fake_torch)
    properties = get_json_schema(func)["function"]["parameters"]["properties"]
    assert properties == {
        "img": {"type": "image", "description": "The img value."},
        "wav": {"type": "audio", "nullable": True, "description": "The wav value."},
    }
    subclass = type("Sub", (fake_pil.Image,), {})
    with pytest.raises(schema_module.TypeHintParsingException):  # exact class only, as upstream's dict lookup
        get_json_schema(make_function([("img", subclass, _NO_DEFAULT)], args_doc("img")))
