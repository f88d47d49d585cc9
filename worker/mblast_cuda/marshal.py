"""Calling host functions through ctypes: argument checks and conversion, HostCall, Library, load()."""

from __future__ import annotations

import ctypes
import functools
import operator
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple, Type

from .declarations import HostFunction, Param, _SCALARS, _Scalar, _is_stream, parse_host_functions
from .nvcc import build


@functools.lru_cache(maxsize=None)
def _torch() -> Any:
    try:
        import torch
    except ImportError:
        return None
    return torch


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


# The libraries this process loaded, by (source, extra flags).
_loaded: Dict[Tuple[str, Tuple[str, ...]], Library] = {}


def load(source: str, *, name: Optional[str] = None, extra_flags: Sequence[str] = ()) -> Library:
    """Builds source through mblast's nvcc driver (or reuses its cached build) and returns its
    host functions.

    Raises CudaBuildError with nvcc's output when the source does not compile."""
    if not isinstance(source, str):
        raise TypeError(f"mblast_cuda.load() needs the CUDA source as str, got {type(source)}")
    if isinstance(extra_flags, str):
        raise TypeError("extra_flags must be a sequence of flags, not one str")
    wanted = (source, tuple(extra_flags))
    if wanted in _loaded:
        return _loaded[wanted]
    built = build(source, extra_flags)
    library = Library(name or f"mblast_cuda_{built.key[:12]}", built.key, built.artifact, parse_host_functions(source))
    _loaded[wanted] = library
    return library
