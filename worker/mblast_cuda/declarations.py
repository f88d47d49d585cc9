"""The extern "C" host functions of a CUDA source: a small tokenizer and declaration parser."""

from __future__ import annotations

import ctypes
import re
from dataclasses import dataclass
from typing import Any, Dict, List, Optional, Tuple


_TOKEN_RE = re.compile(
    r"""
    (?P<space>[ \t\r\f\v]+|\\\n)
  | (?P<newline>\n)
  | (?P<comment>//[^\n]*|/\*.*?\*/)
  | (?P<string>"(?:\\.|[^"\\\n])*"|'(?:\\.|[^'\\\n])*')
  | (?P<ident>[A-Za-z_][A-Za-z_0-9]*)
  | (?P<number>\.?[0-9](?:[eEpP][+-]|[A-Za-z0-9_.'])*)
  | (?P<punct>::|->|\.\.\.|[^\s])
    """,
    re.S | re.X,
)
_PREPROCESSOR_RE = re.compile(r"#(?:\\\n|[^\n])*")


def _tokenize(source: str) -> List[str]:
    """C++ tokens without comments, whitespace or preprocessor lines."""
    tokens: List[str] = []
    pos, line_start = 0, True
    while pos < len(source):
        if line_start and source[pos] == "#":
            pos = _PREPROCESSOR_RE.match(source, pos).end()  # type: ignore[union-attr]
            continue
        match = _TOKEN_RE.match(source, pos)
        assert match is not None  # the punct alternative matches any non-space character
        pos = match.end()
        kind = match.lastgroup
        if kind == "newline":
            line_start = True
        elif kind == "comment":
            line_start = line_start and "\n" not in match.group()
        elif kind != "space":
            tokens.append(match.group())
            line_start = False
    return tokens


_OPENERS = {"(": ")", "{": "}", "[": "]"}
# Specifiers that say nothing about how a host function is called.
_SPECIFIERS = {
    "static", "inline", "__inline__", "__forceinline__", "__noinline__", "__host__", "extern",
    "constexpr", "__cdecl",
}  # fmt: skip
_QUALIFIERS = {
    "const", "volatile", "__restrict__", "__restrict", "restrict", "struct", "class", "enum",
    "union", "typename", "register",
}  # fmt: skip
# Keywords followed by a parenthesised argument that is not a parameter list.
_CALL_LIKE = {
    "__attribute__", "__declspec", "__launch_bounds__", "__cluster_dims__", "__align__",
    "alignas", "noexcept", "throw", "decltype", "__maxnreg__",
}  # fmt: skip
_INTEGER_WORDS = {"unsigned", "signed", "int", "long", "short", "char"}
_BUILTIN_WORDS = _INTEGER_WORDS | {"float", "double", "bool", "void"}


def _skip_group(tokens: List[str], i: int) -> int:
    """Index just past the bracket group that opens at tokens[i]."""
    depth = 0
    for j in range(i, len(tokens)):
        if tokens[j] in _OPENERS:
            depth += 1
        elif tokens[j] in (")", "}", "]"):
            depth -= 1
            if depth == 0:
                return j + 1
    return len(tokens)


@dataclass(frozen=True)
class Param:
    name: str  # "" when the declaration leaves it out
    text: str  # the type as written, e.g. "const float*"
    base: str  # canonical base type, e.g. "float", "unsigned long", "__nv_bfloat16"
    pointer: int  # levels of indirection
    problem: str = ""  # why Python cannot pass it; empty when it can


@dataclass(frozen=True)
class HostFunction:
    name: str
    returns: str  # canonical return type
    params: Tuple[Param, ...]
    defined: bool  # a definition, not only a declaration
    problem: str = ""  # why Python cannot call it; empty when it can

    @property
    def stream_last(self) -> bool:
        return bool(self.params) and _is_stream(self.params[-1])

    def signature(self) -> str:
        args = ", ".join(f"{p.text} {p.name}".strip() for p in self.params)
        return f"{self.returns} {self.name}({args})"


def _canonical(words: List[str]) -> str:
    if not words or any(w not in _INTEGER_WORDS for w in words):
        return " ".join(words)
    sign = "unsigned " if "unsigned" in words else ""
    if "char" in words:
        return "unsigned char" if sign else "signed char" if "signed" in words else "char"
    if "short" in words:
        return sign + "short"
    longs = words.count("long")
    return sign + ("long long" if longs >= 2 else "long" if longs == 1 else "int")


def _type_text(tokens: List[str]) -> str:
    text = " ".join(tokens)
    return re.sub(r" (?=[*&\[\]]|::)|(?<=\[) |(?<=::) ", "", text)


def _is_stream(param: Param) -> bool:
    return param.pointer == 0 and param.base in ("cudaStream_t", "CUstream")


def _parse_param(tokens: List[str], index: int) -> Param:
    if "=" in tokens:
        tokens = tokens[: tokens.index("=")]
    text = _type_text(tokens)
    if "(" in tokens or "..." in tokens or "&" in tokens or "&&" in tokens:
        return Param("", text, text, 0, f"parameter {index + 1} ({text}) is not a pointer or number")
    pointer = tokens.count("*") + tokens.count("[")
    words: List[str] = []
    i = 0
    while i < len(tokens):
        t = tokens[i]
        if t in _CALL_LIKE and i + 1 < len(tokens) and tokens[i + 1] == "(":
            i = _skip_group(tokens, i + 1)
            continue
        if t == "[":
            i = _skip_group(tokens, i)
            continue
        if t == "::" and words:
            words.pop()  # std::int64_t -> int64_t
        elif re.fullmatch(r"[A-Za-z_]\w*", t) and t not in _QUALIFIERS:
            words.append(t)
        i += 1
    name = ""
    if len(words) >= 2 and words[-1] not in _BUILTIN_WORDS:
        name = words.pop()
    base = _canonical(words)
    # The type text without the name, for messages and exports.
    shown = [t for t in tokens if t != name] if name else tokens
    param = Param(name, _type_text(shown), base, pointer)
    if pointer == 0 and base not in _SCALARS and not _is_stream(param):
        problem = (
            f"parameter {index + 1} ({param.text}) cannot be passed from Python: use pointers, "
            "integers, float, double, bool or a trailing cudaStream_t"
        )
        return Param(name, param.text, base, pointer, problem)
    return param


def _split_params(tokens: List[str]) -> List[List[str]]:
    parts: List[List[str]] = [[]]
    depth = 0
    for t in tokens:
        if t in ("(", "[", "{", "<"):
            depth += 1
        elif t in (")", "]", "}", ">"):
            depth -= 1
        if t == "," and depth == 0:
            parts.append([])
        else:
            parts[-1].append(t)
    if parts == [[]] or parts == [["void"]]:
        return []
    return parts


def _parse_declaration(tokens: List[str], i: int) -> Tuple[Optional[HostFunction], int]:
    """Parses one declaration starting at tokens[i]; returns it (None if no function) and the
    index after it. Stops without consuming at a '}' that closes an enclosing block."""
    head: List[str] = []
    n = len(tokens)
    while i < n and tokens[i] != "(":
        t = tokens[i]
        if t in _CALL_LIKE and i + 1 < n and tokens[i + 1] == "(":
            i = _skip_group(tokens, i + 1)
        elif t == "[" and i + 1 < n and tokens[i + 1] == "[":
            i = _skip_group(tokens, i)  # [[attribute]]
        elif t == "{":
            i = _skip_group(tokens, i)  # struct body, or an initializer
        elif t == "}":
            return None, i
        elif t == ";":
            return None, i + 1
        else:
            head.append(t)
            i += 1
    if i >= n:
        return None, n
    close = _skip_group(tokens, i)
    params_tokens = tokens[i + 1 : close - 1]
    i = close
    while i < n and tokens[i] not in ("{", ";"):
        i = _skip_group(tokens, i) if tokens[i] == "(" else i + 1
    defined = i < n and tokens[i] == "{"
    i = _skip_group(tokens, i) if defined else i + 1
    reserved = _BUILTIN_WORDS | _QUALIFIERS | _SPECIFIERS | {"operator"}
    if not head or "=" in head or head[-1] in reserved or not re.fullmatch(r"\w+", head[-1]):
        return None, i  # a variable with a parenthesised initializer, an operator, a cast...
    if "__global__" in head or "template" in head or ("__device__" in head and "__host__" not in head):
        return None, i
    name = head[-1]
    ret_tokens = [t for t in head[:-1] if t not in _SPECIFIERS and t != "__device__"]
    ret_words = [t for t in ret_tokens if t not in _QUALIFIERS and t not in ("*", "&")]
    returns = _type_text(ret_tokens) if "*" in ret_tokens else _canonical(ret_words)
    params = tuple(_parse_param(p, k) for k, p in enumerate(_split_params(params_tokens)))
    problem = next((p.problem for p in params if p.problem), "")
    if returns not in _RETURNS:
        problem = f"it returns {returns}; host entry points must return void or int"
    elif any(_is_stream(p) for p in params[:-1]):
        problem = "only the last parameter may be a cudaStream_t"
    return HostFunction(name, returns, params, defined, problem), i


def parse_host_functions(source: str) -> List[HostFunction]:
    """The extern "C" host functions of a CUDA source, in order; a function both declared and
    defined appears once (the definition). Kernels and device functions are left out."""
    tokens = _tokenize(source)
    found: Dict[str, HostFunction] = {}
    i = 0
    while i < len(tokens):
        if tokens[i] != "extern" or i + 1 >= len(tokens) or tokens[i + 1] != '"C"':
            i += 1
            continue
        i += 2
        decls: List[Optional[HostFunction]] = []
        if i < len(tokens) and tokens[i] == "{":
            i += 1
            while i < len(tokens) and tokens[i] != "}":
                decl, i = _parse_declaration(tokens, i)
                decls.append(decl)
            i += 1
        else:
            decl, i = _parse_declaration(tokens, i)
            decls.append(decl)
        for decl in decls:
            if decl is not None and (decl.name not in found or decl.defined):
                found[decl.name] = decl
    return list(found.values())


# C scalar types a host function may take, with their ctypes and ranges.
@dataclass(frozen=True)
class _Scalar:
    ctype: Any
    kind: str  # "int", "float" or "bool"
    lo: int = 0
    hi: int = 0


def _int_scalar(ctype: Any, signed: bool) -> _Scalar:
    bits = ctypes.sizeof(ctype) * 8
    if signed:
        return _Scalar(ctype, "int", -(1 << (bits - 1)), (1 << (bits - 1)) - 1)
    return _Scalar(ctype, "int", 0, (1 << bits) - 1)


_SCALARS: Dict[str, _Scalar] = {
    "float": _Scalar(ctypes.c_float, "float"),
    "double": _Scalar(ctypes.c_double, "float"),
    "bool": _Scalar(ctypes.c_bool, "bool"),
}
for _names, _ctype, _signed in (
    (("int", "int32_t"), ctypes.c_int32, True),
    (("unsigned int", "uint32_t"), ctypes.c_uint32, False),
    (("long", "long long", "int64_t", "ssize_t", "ptrdiff_t", "intptr_t"), ctypes.c_int64, True),
    (("unsigned long", "unsigned long long", "uint64_t", "size_t", "uintptr_t"), ctypes.c_uint64, False),
    (("short", "int16_t"), ctypes.c_int16, True),
    (("unsigned short", "uint16_t"), ctypes.c_uint16, False),
    (("char", "signed char", "int8_t"), ctypes.c_int8, True),
    (("unsigned char", "uint8_t"), ctypes.c_uint8, False),
):
    for _name in _names:
        _SCALARS[_name] = _int_scalar(_ctype, _signed)

_RETURNS = {"void", "int", "cudaError_t", "cudaError"}
