"""Plain CUDA for candidates: nvcc to a shared object in about a second, called through ctypes.

A candidate keeps its CUDA source in a string and calls ``lib = mblast_cuda.load(CUDA_SRC)``.
Every ``extern "C"`` host function of the source becomes ``lib.<name>``: tensors pass as device
pointers (checked for device, layout and dtype), numbers are range-checked, and a trailing
``cudaStream_t`` parameter is filled with PyTorch's current stream.

Artifacts live in a cache keyed by the SHA-256 of the compiled text, the nvcc flags and the
architecture. The C++ driver (backends/cuda/cuda_build.cpp) computes the same key and pre-builds
candidates in parallel; both sides must change together.

``export_kernelbench`` rewrites a candidate into KernelBench's load_inline form. Command line:
``python3 -m mblast_cuda export CANDIDATE.py > OUT.py`` or ``python3 -m mblast_cuda key < SRC``.
"""

from __future__ import annotations

import ast
import ctypes
import functools
import hashlib
import json
import keyword
import operator
import os
import re
import secrets
import shutil
import signal
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Sequence, Set, Tuple, Type, Union

__all__ = [
    "CudaBuildError",
    "CudaToolkitError",
    "HostFunction",
    "Library",
    "Param",
    "cache_dir",
    "cache_key",
    "detect_arch",
    "export_kernelbench",
    "final_source",
    "find_nvcc",
    "load",
    "nvcc_flags",
    "parse_host_functions",
]

# How candidate CUDA is built, shared with cuda_build.cpp: nvcc_build.json beside this file.
_BUILD: Dict[str, Any] = json.loads((Path(__file__).resolve().parent / "nvcc_build.json").read_text())
BASE_FLAGS: Tuple[str, ...] = tuple(_BUILD["base_flags"])
TRAILING_FLAGS: Tuple[str, ...] = tuple(_BUILD["trailing_flags"])
HELPER_SUFFIX: str = _BUILD["helper_suffix"]
GENCODE: str = _BUILD["gencode"]

BUILD_TIMEOUT_S: float = 180.0
LOG_LIMIT: int = 8192
_ARCH_RE = re.compile(r"sm_([0-9]+[a-z]?)")


class CudaBuildError(RuntimeError):
    """nvcc rejected the source. The message is nvcc's output, trimmed to LOG_LIMIT characters."""

    def __init__(self, message: str, log: str = "", key: str = "") -> None:
        super().__init__(message)
        self.log: str = log
        self.key: str = key


class CudaToolkitError(RuntimeError):
    """No usable nvcc: a setup problem, not a fault of the candidate."""


# ---------------------------------------------------------------------------------------------
# Keys, flags and the cache


def _validate_arch(arch: str) -> str:
    if not _ARCH_RE.fullmatch(arch):
        raise ValueError(f"CUDA architecture {arch!r} is not of the form sm_90 / sm_90a")
    return arch


def detect_arch() -> str:
    """sm_XY of the current GPU; else $MBLAST_CUDA_ARCH; else sm_90."""
    torch = _torch()
    if torch is not None and torch.cuda.is_available():
        major, minor = torch.cuda.get_device_capability()
        return f"sm_{major}{minor}"
    env = os.environ.get("MBLAST_CUDA_ARCH", "").strip()
    return _validate_arch(env) if env else "sm_90"


def nvcc_flags(arch: str, extra_flags: Sequence[str] = ()) -> List[str]:
    number = _ARCH_RE.fullmatch(_validate_arch(arch))
    assert number is not None
    code = number.group(1)
    return [*BASE_FLAGS, "-gencode", GENCODE.format(code=code), *TRAILING_FLAGS, *extra_flags]


def final_source(source: str) -> str:
    """The exact text nvcc compiles: the candidate's source plus the error helpers."""
    return source + HELPER_SUFFIX


def _key_for(text: str, flags: Sequence[str], arch: str) -> str:
    material = text + "\0" + " ".join(flags) + "\0" + arch
    return hashlib.sha256(material.encode("utf-8")).hexdigest()


def cache_key(source: str, *, arch: Optional[str] = None, extra_flags: Sequence[str] = ()) -> str:
    arch = detect_arch() if arch is None else arch
    return _key_for(final_source(source), nvcc_flags(arch, extra_flags), arch)


def cache_dir() -> Path:
    env = os.environ.get("MBLAST_CUDA_CACHE", "")
    return Path(env) if env else Path.home() / ".cache" / "mblast" / "cuda"


def find_nvcc() -> Optional[str]:
    """$MBLAST_NVCC when set (and only then), else nvcc on PATH, else /usr/local/cuda/bin/nvcc."""
    env = os.environ.get("MBLAST_NVCC", "")
    if env:
        if "/" not in env:
            return shutil.which(env)
        return env if _executable(env) else None
    found = shutil.which("nvcc")
    if found:
        return found
    default = "/usr/local/cuda/bin/nvcc"
    return default if _executable(default) else None


def _executable(path: str) -> bool:
    return os.path.isfile(path) and os.access(path, os.X_OK)


def _write_atomic(path: Path, data: bytes) -> None:
    tmp = path.with_name(f"{path.name}.tmp-{os.getpid()}-{secrets.token_hex(4)}")
    tmp.write_bytes(data)
    os.replace(tmp, path)


def _trim(log: str, log_path: Path) -> str:
    if len(log) <= LOG_LIMIT:
        return log
    rest = len(log) - LOG_LIMIT
    return f"{log[:LOG_LIMIT]}\n[... {rest} more characters of nvcc output in {log_path}]"


def _compile(text: str, flags: Sequence[str], key: str, directory: Path) -> None:
    nvcc = find_nvcc()
    if nvcc is None:
        raise CudaToolkitError(
            "nvcc not found: set MBLAST_NVCC, put nvcc on PATH or install CUDA in /usr/local/cuda"
        )
    directory.mkdir(parents=True, exist_ok=True)
    source_path = directory / f"{key}.cu"
    log_path = directory / f"{key}.log"
    _write_atomic(source_path, text.encode("utf-8"))
    tmp = directory / f"{key}.tmp-{os.getpid()}-{secrets.token_hex(4)}.so"
    command = [nvcc, *flags, "-o", str(tmp), str(source_path)]
    # A session of its own so that a timeout also ends cicc and ptxas.
    proc = subprocess.Popen(
        command,
        cwd=directory,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    try:
        output, _ = proc.communicate(timeout=BUILD_TIMEOUT_S)
        timed_out = False
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        output, _ = proc.communicate()
        timed_out = True
    log = output.decode("utf-8", "replace")
    if timed_out:
        log += f"\nnvcc timed out after {BUILD_TIMEOUT_S:.0f} s\n"
    _write_atomic(log_path, log.encode("utf-8"))
    if timed_out or proc.returncode != 0 or not tmp.is_file():
        tmp.unlink(missing_ok=True)
        message = _trim(log, log_path) if log.strip() else f"nvcc exited with {proc.returncode}"
        raise CudaBuildError(message, log, key)
    os.replace(tmp, directory / f"{key}.so")


# ---------------------------------------------------------------------------------------------
# Parsing extern "C" host functions out of CUDA source

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


# ---------------------------------------------------------------------------------------------
# Calling: argument conversion and the Library


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

# Tensor dtypes accepted for T*, by torch attribute name (some exist only in newer versions).
_ELEMENT_DTYPES: Dict[str, Tuple[str, ...]] = {}
for _names, _dtypes in (
    (("float", "float1", "float2", "float3", "float4"), ("float32",)),
    (("double", "double1", "double2", "double4"), ("float64",)),
    (("half", "__half", "half2", "__half2"), ("float16",)),
    (("__nv_bfloat16", "nv_bfloat16", "__nv_bfloat162", "nv_bfloat162"), ("bfloat16",)),
    (("int", "int32_t", "int1", "int2", "int3", "int4"), ("int32",)),
    (("unsigned int", "uint32_t", "uint2", "uint4"), ("int32", "uint32")),
    (("long", "long long", "int64_t", "ssize_t", "ptrdiff_t", "longlong2"), ("int64",)),
    (("unsigned long", "unsigned long long", "uint64_t", "size_t"), ("int64", "uint64")),
    (("short", "int16_t"), ("int16",)),
    (("unsigned short", "uint16_t"), ("int16", "uint16")),
    (("signed char", "int8_t"), ("int8",)),
    (("char",), ("int8", "uint8", "bool")),
    (("unsigned char", "uint8_t"), ("uint8", "bool")),
    (("bool",), ("bool",)),
):
    for _name in _names:
        _ELEMENT_DTYPES[_name] = _dtypes


@functools.lru_cache(maxsize=None)
def _torch() -> Any:
    try:
        import torch
    except ImportError:
        return None
    return torch


class _NoTensor:
    """Stands in for torch.Tensor where torch is not installed."""


Converter = Callable[[Any], Any]


def _describe(value: Any) -> str:
    torch = _torch()
    if torch is not None and isinstance(value, torch.Tensor):
        return f"a {value.dtype} tensor on {value.device}"
    return f"{type(value).__name__} {value!r}"[:120]


def _pointer_converter(where: str, param: Param) -> Converter:
    torch = _torch()
    tensor_type: Any = torch.Tensor if torch is not None else _NoTensor
    names = _ELEMENT_DTYPES.get(param.base) if param.pointer == 1 else None
    dtypes = None
    if names and torch is not None:
        dtypes = tuple(getattr(torch, n) for n in names if hasattr(torch, n))
    wanted = " or ".join(f"torch.{n}" for n in names) if names else ""

    def convert(value: Any) -> Any:
        if isinstance(value, tensor_type):
            if not value.is_cuda:
                raise TypeError(f"{where} needs a CUDA tensor, got one on {value.device}")
            if dtypes is not None and value.dtype not in dtypes:
                raise TypeError(f"{where} needs a {wanted} tensor, got {value.dtype}")
            if not value.is_contiguous():
                raise TypeError(f"{where} needs a contiguous tensor: call .contiguous() first")
            return value.data_ptr()
        if value is None or (isinstance(value, int) and not isinstance(value, bool)):
            return value
        raise TypeError(f"{where} needs a CUDA tensor (or an int address), got {_describe(value)}")

    return convert


def _scalar_converter(where: str, scalar: _Scalar) -> Converter:
    torch = _torch()
    tensor_type: Any = torch.Tensor if torch is not None else _NoTensor
    if scalar.kind == "float":

        def convert_float(value: Any) -> Any:
            if isinstance(value, (tensor_type, str, bytes)):
                raise TypeError(f"{where} needs a Python number, got {_describe(value)}")
            try:
                return float(value)
            except (TypeError, ValueError):
                raise TypeError(f"{where} needs a number, got {_describe(value)}") from None

        return convert_float

    def convert_int(value: Any) -> Any:
        if isinstance(value, tensor_type):
            raise TypeError(f"{where} needs a Python int (use .item()), got {_describe(value)}")
        try:
            number = operator.index(value)
        except TypeError:
            raise TypeError(f"{where} needs an integer, got {_describe(value)}") from None
        if scalar.kind == "bool":
            return bool(number)
        if not scalar.lo <= number <= scalar.hi:
            raise OverflowError(f"{where}: {number} is out of range [{scalar.lo}, {scalar.hi}]")
        return number

    return convert_int


def _stream_converter(where: str) -> Converter:
    def convert(value: Any) -> Any:
        stream = getattr(value, "cuda_stream", value)
        if stream is None or (isinstance(stream, int) and not isinstance(stream, bool)):
            return stream
        raise TypeError(f"{where} needs a torch.cuda.Stream, got {_describe(value)}")

    return convert


@functools.lru_cache(maxsize=None)
def _stream_getter() -> Callable[[], Any]:
    torch = _torch()
    if torch is None or not torch.cuda.is_available():
        return lambda: None
    # The raw getters skip building a torch.cuda.Stream object: about 6 us less per call.
    raw: Optional[Callable[[int], int]] = getattr(torch._C, "_cuda_getCurrentRawStream", None)
    device: Optional[Callable[[], int]] = getattr(torch._C, "_cuda_getDevice", None)
    if raw is None or device is None:
        current = torch.cuda.current_stream
        return lambda: current().cuda_stream
    raw_stream, current_device = raw, device
    return lambda: raw_stream(current_device())


def _argtype(param: Param) -> Any:
    if param.pointer or _is_stream(param):
        return ctypes.c_void_p
    return _SCALARS[param.base].ctype


class HostCall:
    """One extern "C" host function, callable with tensors and numbers."""

    def __init__(self, library: Library, function: HostFunction, symbol: Any) -> None:
        self.function = function
        self.__doc__ = function.signature()
        self._library = library
        self._symbol = symbol
        symbol.argtypes = [_argtype(p) for p in function.params]
        symbol.restype = None if function.returns == "void" else ctypes.c_int
        self._converters: List[Converter] = []
        for k, p in enumerate(function.params):
            where = f"{function.name}(): argument {k + 1} '{p.name or '?'}' ({p.text})"
            if p.pointer:
                self._converters.append(_pointer_converter(where, p))
            elif _is_stream(p):
                self._converters.append(_stream_converter(where))
            else:
                self._converters.append(_scalar_converter(where, _SCALARS[p.base]))
        self._arity = len(function.params)
        self._stream = function.stream_last
        self._current_stream = _stream_getter()
        self._names = [p.name for p in function.params]

    def _bind(self, args: Tuple[Any, ...], kwargs: Dict[str, Any]) -> Tuple[Any, ...]:
        values = list(args)
        for name in self._names[len(args) :]:
            if name not in kwargs:
                break
            values.append(kwargs.pop(name))
        if kwargs:
            raise TypeError(f"{self.function.name}() got unexpected keyword(s) {sorted(kwargs)}")
        return tuple(values)

    def __call__(self, *args: Any, **kwargs: Any) -> None:
        if kwargs:
            args = self._bind(args, kwargs)
        if self._stream and len(args) == self._arity - 1:
            args = (*args, self._current_stream())
        elif len(args) != self._arity:
            auto = " (the trailing cudaStream_t is appended for you)" if self._stream else ""
            wanted = self._arity - 1 if self._stream else self._arity
            raise TypeError(
                f"{self.function.signature()} takes {wanted} arguments{auto}, got {len(args)}"
            )
        rc = self._symbol(*[convert(a) for convert, a in zip(self._converters, args)])
        if self._library.check_after_call:
            self._library.check(self.function.name)
        if rc:
            raise RuntimeError(f"{self.function.name}() returned {self._library._code_text(rc)}")

    def __repr__(self) -> str:
        return f"<{self._library.name}: {self.function.signature()}>"


class Library:
    """A compiled source: lib.<function>(...) for each extern "C" host function. A function
    whose name collides with an attribute of this class stays reachable as lib["name"]."""

    def __init__(
        self, name: str, key: str, path: Path, functions: Sequence[HostFunction]
    ) -> None:
        self.name = name
        self.key = key
        self.path = path
        # Launch errors (bad grid, too much shared memory) surface at the call that caused them.
        self.check_after_call = True
        try:
            self._cdll = ctypes.CDLL(str(path))
        except OSError as exc:  # e.g. an undefined symbol that the linker let through
            raise CudaBuildError(f"cannot load {path}: {exc}", str(exc), key) from None
        self._last_error = self._cdll.mblast_last_error
        self._last_error.argtypes, self._last_error.restype = [], ctypes.c_int
        self._error_string = self._cdll.mblast_error_string
        self._error_string.argtypes, self._error_string.restype = [ctypes.c_int], ctypes.c_char_p
        self._calls: Dict[str, HostCall] = {}
        self.problems: Dict[str, str] = {}  # function name -> why it cannot be called
        for function in functions:
            try:
                symbol = getattr(self._cdll, function.name)
            except AttributeError:
                self.problems[function.name] = "the library does not export it (declared only?)"
                continue
            if function.problem:
                self.problems[function.name] = function.problem
                continue
            call = HostCall(self, function, symbol)
            self._calls[function.name] = call
            if not hasattr(type(self), function.name) and function.name not in vars(self):
                setattr(self, function.name, call)

    @property
    def functions(self) -> Dict[str, str]:
        return {name: call.function.signature() for name, call in self._calls.items()}

    def _code_text(self, code: int) -> str:
        text = self._error_string(code)
        return f"error {code} ({text.decode('utf-8', 'replace') if text else 'unknown'})"

    def check(self, where: str = "") -> None:
        """Raises RuntimeError if a CUDA call of this library has failed since the last check."""
        code = self._last_error()
        if code:
            site = f" after {where}()" if where else ""
            raise RuntimeError(f"CUDA {self._code_text(code)}{site} in {self.name}")

    def __getitem__(self, name: str) -> HostCall:
        if name in self._calls:
            return self._calls[name]
        raise self._missing(name, KeyError)

    def __getattr__(self, name: str) -> HostCall:
        if name.startswith("_"):
            raise AttributeError(name)
        raise self._missing(name, AttributeError)

    def _missing(self, name: str, cls: Type[Exception]) -> Exception:
        if name in self.problems:
            return TypeError(f"{name}() cannot be called from Python: {self.problems[name]}")
        known = ", ".join(sorted(self._calls)) or "none"
        return cls(
            f"{self.name} has no extern \"C\" host function {name!r} (callable ones: {known})"
        )

    def __repr__(self) -> str:
        return f"<mblast_cuda.Library {self.name} {sorted(self._calls)}>"


_loaded: Dict[str, Library] = {}


def load(source: str, *, name: Optional[str] = None, extra_flags: Sequence[str] = ()) -> Library:
    """Compiles source with nvcc (or reuses the cached build) and returns its host functions.

    Raises CudaBuildError with nvcc's output when the source does not compile."""
    if not isinstance(source, str):
        raise TypeError(f"mblast_cuda.load() needs the CUDA source as str, got {type(source)}")
    if isinstance(extra_flags, str):
        raise TypeError("extra_flags must be a sequence of flags, not one str")
    arch = detect_arch()
    flags = nvcc_flags(arch, list(extra_flags))
    text = final_source(source)
    key = _key_for(text, flags, arch)
    if key in _loaded:
        return _loaded[key]
    directory = cache_dir()
    artifact = directory / f"{key}.so"
    if not artifact.is_file():
        _compile(text, flags, key, directory)
    library = Library(name or f"mblast_cuda_{key[:12]}", key, artifact, parse_host_functions(source))
    _loaded[key] = library
    return library


# ---------------------------------------------------------------------------------------------
# Export to KernelBench's load_inline form

_EXPORT_HEADER = (
    "# KernelBench ModelNew exported by mblast: the CUDA source below is built with\n"
    "# torch.utils.cpp_extension.load_inline; each host function gets an int64 shim.\n"
)

_SHIM_PRELUDE = """
// Generated by mblast: int64 entry points for load_inline (tensors pass as data_ptr()).
#include <cstdint>
#include <c10/cuda/CUDAException.h>
#include <c10/cuda/CUDAStream.h>

namespace {
struct MblastPtr {
  int64_t address;
  template <typename T>
  operator T*() const { return reinterpret_cast<T*>(address); }
};
cudaStream_t mblast_stream(int64_t s) {
  return s == -1 ? c10::cuda::getCurrentCUDAStream().stream() : reinterpret_cast<cudaStream_t>(s);
}
}  // namespace
"""

_PY_HELPERS = '''
import functools as _mblast_functools

import torch
from torch.utils.cpp_extension import load_inline


def _mblast_ptr(value, where):
    if isinstance(value, torch.Tensor):
        if not value.is_cuda or not value.is_contiguous():
            raise TypeError(f"{where} needs a contiguous CUDA tensor")
        return value.data_ptr()
    return 0 if value is None else int(value)


def _mblast_stream(value):
    if value is None:
        return -1
    return int(getattr(value, "cuda_stream", value))
'''


def _shim(function: HostFunction) -> Tuple[str, str]:
    """(definition for the CUDA source, declaration for the C++ source) of one function."""
    params, args = [], []
    for k, p in enumerate(function.params):
        if p.pointer:
            params.append(f"int64_t a{k}")
            args.append(f"MblastPtr{{a{k}}}")
        elif _is_stream(p):
            params.append(f"int64_t a{k}")
            args.append(f"mblast_stream(a{k})")
        elif _SCALARS[p.base].kind == "float":
            params.append(f"double a{k}")
            args.append(f"static_cast<{p.base}>(a{k})")
        else:
            params.append(f"{'bool' if p.base == 'bool' else 'int64_t'} a{k}")
            args.append(f"static_cast<{p.base}>(a{k})")
    ret = "void" if function.returns == "void" else "int64_t"
    head = f"{ret} mblast_{function.name}({', '.join(params)})"
    call = f"{function.name}({', '.join(args)})"
    if ret == "void":
        body = f"  {call};\n  C10_CUDA_KERNEL_LAUNCH_CHECK();\n"
    else:
        body = f"  const int64_t rc = static_cast<int64_t>({call});\n"
        body += "  C10_CUDA_KERNEL_LAUNCH_CHECK();\n  return rc;\n"
    return f"{head} {{\n{body}}}\n", f"{head};\n"


def _py_name(name: str, k: int, taken: Set[str]) -> str:
    ok = name.isidentifier() and not keyword.iskeyword(name) and name not in taken
    result = name if ok and name != "self" and not name.startswith("_mblast") else f"arg{k}"
    taken.add(result)
    return result


def _adapter_method(function: HostFunction) -> str:
    taken: Set[str] = set()
    names = [_py_name(p.name, k, taken) for k, p in enumerate(function.params)]
    sig, args = [], []
    for p, n in zip(function.params, names):
        if p.pointer:
            args.append(f'_mblast_ptr({n}, "{function.name}: {n}")')
        elif _is_stream(p):
            args.append(f"_mblast_stream({n})")
        else:
            args.append(f"{_SCALARS[p.base].kind}({n})")
        sig.append(f"{n}=None" if _is_stream(p) else n)
    call = f"self._ext.mblast_{function.name}({', '.join(args)})"
    lines = [f"    def {function.name}(self, {', '.join(sig)}):".replace("(self, )", "(self)")]
    if function.returns == "void":
        lines.append(f"        {call}")
    else:
        lines.append(f"        rc = {call}")
        lines.append("        if rc:")
        lines.append(f'            raise RuntimeError(f"{function.name}() returned {{rc}}")')
    return "\n".join(lines) + "\n"


def _export_block(index: int, source: str, source_expr: str, flags: Sequence[str]) -> str:
    functions = [f for f in parse_host_functions(source) if f.defined and not f.problem]
    if not functions:
        raise ValueError("cannot export: the CUDA source has no callable extern \"C\" host function")
    shims = [_shim(f) for f in functions]
    cuda_shim = _SHIM_PRELUDE + "\n" + "\n".join(s[0] for s in shims)
    cpp_decls = "#include <cstdint>\n\n" + "".join(s[1] for s in shims)
    ext = "mblast_" + hashlib.sha256((source + "\0" + " ".join(flags)).encode()).hexdigest()[:16]
    methods = "\n".join(_adapter_method(f) for f in functions)
    names = ", ".join(f'"mblast_{f.name}"' for f in functions)
    return (
        f"\n_MBLAST_CPP_{index} = r'''\n{cpp_decls}'''\n"
        f"\n_MBLAST_SHIM_{index} = r'''\n{cuda_shim}'''\n\n\n"
        f"class _MblastLib{index}:\n"
        f"    def __init__(self, ext):\n        self._ext = ext\n\n"
        f"    def check(self, where=''):\n        pass\n\n{methods}\n\n"
        f"@_mblast_functools.lru_cache(maxsize=None)\n"
        f"def _mblast_load_{index}():\n"
        f"    ext = load_inline(\n"
        f'        name="{ext}",\n'
        f"        cpp_sources=[_MBLAST_CPP_{index}],\n"
        f"        cuda_sources=[({source_expr}) + _MBLAST_SHIM_{index}],\n"
        f"        functions=[{names}],\n"
        f'        extra_cflags=["-O3"],\n'
        f"        extra_cuda_cflags={['-O3', *flags]!r},\n"
        f"        verbose=False,\n"
        f"    )\n"
        f"    return _MblastLib{index}(ext)\n"
    )


class _ExportScan:
    """Finds the mblast_cuda imports and load() calls of a candidate, and its string constants."""

    def __init__(self, tree: ast.Module) -> None:
        self.modules: Set[str] = set()  # names bound to the module
        self.loads: Set[str] = set()  # names bound to mblast_cuda.load
        self.imports: List[ast.stmt] = []
        self.calls: List[ast.Call] = []
        self.constants: Dict[str, ast.expr] = {}
        assigned: Dict[str, int] = {}
        for stmt in tree.body:
            pairs: List[Tuple[ast.expr, Optional[ast.expr]]] = []
            if isinstance(stmt, ast.Assign):
                pairs = [(target, stmt.value) for target in stmt.targets]
            elif isinstance(stmt, ast.AnnAssign) and stmt.value is not None:
                pairs = [(stmt.target, stmt.value)]
            elif isinstance(stmt, ast.AugAssign):
                pairs = [(stmt.target, None)]  # CUDA_SRC += ...: not a constant any more
            for target, value in pairs:
                if isinstance(target, ast.Name):
                    assigned[target.id] = assigned.get(target.id, 0) + 1
                    if value is not None:
                        self.constants[target.id] = value
        for name, count in assigned.items():
            if count > 1:
                self.constants.pop(name, None)
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.name == "mblast_cuda":
                        self.modules.add(alias.asname or "mblast_cuda")
                if any(alias.name == "mblast_cuda" for alias in node.names):
                    self.imports.append(node)
            elif isinstance(node, ast.ImportFrom) and node.module == "mblast_cuda":
                for alias in node.names:
                    if alias.name != "load":
                        raise ValueError(f"cannot export: line {node.lineno} imports {alias.name}")
                    self.loads.add(alias.asname or "load")
                self.imports.append(node)
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and self._is_load(node.func):
                self.calls.append(node)
        self.calls.sort(key=lambda c: (c.lineno, c.col_offset))

    def _is_load(self, func: ast.expr) -> bool:
        if isinstance(func, ast.Attribute) and func.attr == "load":
            return isinstance(func.value, ast.Name) and func.value.id in self.modules
        return isinstance(func, ast.Name) and func.id in self.loads

    def value(self, node: ast.expr, seen: Tuple[str, ...] = ()) -> Any:
        """Evaluates literals, module-level constants and + of them."""
        if isinstance(node, ast.Name) and node.id in self.constants and node.id not in seen:
            return self.value(self.constants[node.id], (*seen, node.id))
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
            return self.value(node.left, seen) + self.value(node.right, seen)
        if isinstance(node, (ast.List, ast.Tuple)):
            return [self.value(e, seen) for e in node.elts]
        if isinstance(node, ast.Constant):
            return node.value
        raise ValueError(
            f"cannot export: line {node.lineno} is not a string literal or a module-level constant"
        )


class _Edits:
    """Replacements at (line, column) positions of a text, as ast reports them (UTF-8 bytes)."""

    def __init__(self, text: str) -> None:
        self.data = text.encode("utf-8")
        self.starts = [0]
        for match in re.finditer(rb"\r\n|\r|\n", self.data):
            self.starts.append(match.end())
        self.edits: List[Tuple[int, int, str]] = []

    def offset(self, line: int, col: int) -> int:
        return self.starts[line - 1] + col

    def replace(self, node: Union[ast.stmt, ast.expr], text: str) -> None:
        assert node.end_lineno is not None and node.end_col_offset is not None
        start = self.offset(node.lineno, node.col_offset)
        end = self.offset(node.end_lineno, node.end_col_offset)
        self.edits.append((start, end, text))

    def remove_lines(self, node: ast.stmt) -> None:
        """Removes a statement that fills its lines; otherwise just its own text."""
        assert node.end_lineno is not None and node.end_col_offset is not None
        end = self.offset(node.end_lineno, node.end_col_offset)
        line_end = self.starts[node.end_lineno] if node.end_lineno < len(self.starts) else len(self.data)
        if node.col_offset == 0 and not self.data[end:line_end].strip():
            self.edits.append((self.offset(node.lineno, 0), line_end, ""))
        else:
            self.replace(node, "")

    def insert_line(self, line: int, text: str) -> None:
        self.edits.append((self.starts[line - 1], self.starts[line - 1], text))

    def apply(self) -> str:
        data = self.data
        for start, end, text in sorted(self.edits, key=lambda e: (e[0], e[1]), reverse=True):
            data = data[:start] + text.encode("utf-8") + data[end:]
        return data.decode("utf-8")


def export_kernelbench(candidate_py_text: str) -> str:
    """Rewrites a candidate that uses mblast_cuda.load into a self-contained KernelBench file
    that builds the same CUDA source with load_inline. ModelNew's body is left unchanged."""
    tree = ast.parse(candidate_py_text)
    scan = _ExportScan(tree)
    if not scan.calls:
        raise ValueError("cannot export: the candidate never calls mblast_cuda.load()")
    edits = _Edits(candidate_py_text)
    covered: Set[int] = set()
    blocks = [_PY_HELPERS]
    for index, call in enumerate(scan.calls):
        if not call.args or any(k.arg not in ("name", "extra_flags") for k in call.keywords):
            raise ValueError(f"cannot export: line {call.lineno}: load(source, name=, extra_flags=)")
        source = scan.value(call.args[0])
        flags: List[str] = []
        for kw in call.keywords:
            if kw.arg == "extra_flags":
                flags = list(scan.value(kw.value))
        source_expr = ast.get_source_segment(candidate_py_text, call.args[0])
        if not isinstance(source, str) or source_expr is None:
            raise ValueError(f"cannot export: line {call.lineno}: the source must be a str")
        blocks.append(_export_block(index, source, source_expr, flags))
        edits.replace(call, f"_mblast_load_{index}()")
        covered.update(id(n) for n in ast.walk(call.func))
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and id(node) not in covered:
            if node.id in scan.modules or node.id in scan.loads:
                raise ValueError(f"cannot export: line {node.lineno} uses {node.id} beyond load()")
    top_level = {id(s) for s in tree.body}
    for stmt in scan.imports:
        kept = [a for a in stmt.names if a.name != "mblast_cuda"]  # type: ignore[attr-defined]
        if isinstance(stmt, ast.Import) and kept:
            edits.replace(stmt, ast.unparse(ast.Import(names=kept)))
        elif id(stmt) in top_level:
            edits.remove_lines(stmt)
        else:
            edits.replace(stmt, "pass")
    first = min(
        min([s.lineno] + [d.lineno for d in getattr(s, "decorator_list", [])])
        for s in tree.body
        if any(n in scan.imports or n in scan.calls for n in ast.walk(s))
    )
    edits.insert_line(first, "\n\n\n".join(b.strip("\n") for b in blocks) + "\n\n\n")
    out = _EXPORT_HEADER + edits.apply()
    compile(out, "<exported>", "exec")
    return out


# ---------------------------------------------------------------------------------------------
# Command line


def main(argv: Sequence[str]) -> int:
    usage = (
        "usage: python3 -m mblast_cuda export CANDIDATE.py > OUT.py\n"
        "       python3 -m mblast_cuda key [--arch sm_90] [FLAG...] < SOURCE.cu\n"
    )
    if len(argv) == 2 and argv[0] == "export":
        with open(argv[1], encoding="utf-8") as fh:
            text = fh.read()
        try:
            sys.stdout.write(export_kernelbench(text))
        except (ValueError, SyntaxError) as exc:
            sys.stderr.write(f"mblast_cuda export: {argv[1]}: {exc}\n")
            return 1
        return 0
    if argv and argv[0] == "key":
        rest = list(argv[1:])
        arch = None
        if len(rest) >= 2 and rest[0] == "--arch":
            arch, rest = rest[1], rest[2:]
        source = sys.stdin.buffer.read().decode("utf-8")
        print(cache_key(source, arch=arch, extra_flags=rest))
        return 0
    sys.stderr.write(usage)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
