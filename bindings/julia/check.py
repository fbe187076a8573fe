#!/usr/bin/env python3
"""Proves that the Julia binding (bindings/julia/Alpa.jl/src/*.jl) agrees with libalpa's C headers.

    python3 bindings/julia/check.py [--include DIR] [--src DIR] [--no-freshness] [-v]

The C side comes from clang (cheader.py: JSON AST, clang-evaluated constants and struct
offsets). The Julia side is read from the source: every `ccall` in every .jl file under --src,
every `const ALPA_* = ...`, every `struct` named like a C struct, every `mutable struct`
standing for an opaque handle, and every call of an `alpa_*` function or struct constructor in
files other than LibAlpa.jl. It proves:

  1. every ccall names a function the headers declare, in libalpa, with the same number of
     argument types as C parameters, each argument type and the return type matching the C type
     (table below), a 1-tuple written with its trailing comma, as many values as types;
  2. every C function has exactly one wrapper in LibAlpa.jl: `function NAME(p1, ..., pn)` whose
     body is the ccall of NAME passing p1..pn in order;
  3. every #define'd ALPA_ constant exists with the same value and type (int -> Cint/Int32,
     double -> Float64), and no ALPA_ constant exists that the headers lack;
  4. every C struct exists as a Julia `struct` with the same field names in the same order and
     matching types, and the offsets and size Julia lays it out with (natural alignment, as
     Julia does for isbits structs) equal clang's offsetof / sizeof; every opaque handle type
     exists; every callback typedef is `Ptr{Cvoid}`;
  5. calls of LibAlpa functions (and struct constructors) from the other files pass as many
     arguments as C takes (fields);
  6. (unless --no-freshness) LibAlpa.jl is byte for byte what generate.py writes now.

Type table (C -> accepted Julia): int32_t -> Int32/Cint, int64_t -> Int64/Clonglong, uint64_t -> UInt64/Culonglong, uint32_t ->
UInt32/Cuint, uint8_t -> UInt8/Cuchar, size_t -> Csize_t/UInt, double -> Cdouble/Float64, void ->
Cvoid/Nothing, const char* -> Cstring or Ptr{UInt8}/Ptr{Cchar}, T* -> Ptr{T} (or Ref{T} for an
argument), handle* -> Ptr{handle} or Ptr{Cvoid}, handle** -> Ptr{Ptr{handle}}, void* and function
pointers -> Ptr{Cvoid}, T[N] -> NTuple{N, T}. Int / Clong / Culong (platform-sized) are refused.

Exit status 0 when everything agrees; 1 with one line per disagreement (file:line, the function,
what C says, what Julia says); 2 when the headers cannot be read.
"""

import argparse
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import cheader  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(HERE))
DEFAULT_SRC = os.path.join(HERE, "Alpa.jl", "src")

JULIA_KEYWORDS = {
    "abstract", "baremodule", "begin", "break", "catch", "const", "continue", "do", "else",
    "elseif", "end", "export", "false", "finally", "for", "function", "global", "if", "import",
    "let", "local", "macro", "module", "mutable", "primitive", "quote", "return", "struct",
    "true", "try", "type", "using", "where", "while", "outer",
}


# ---- Julia source: comments and strings blanked -----------------------------------------------
def blank_julia(text):
    """The source with comments and string / char literal contents replaced by spaces (newlines
    kept), so that offsets and line numbers stay valid. String interpolations `$(...)` are
    blanked with their string."""
    out = list(text)
    i, n = 0, len(text)

    def blank(a, b):
        for k in range(a, b):
            if out[k] != "\n":
                out[k] = " "

    while i < n:
        c = text[i]
        if c == "#":
            if text.startswith("#=", i):
                depth, j = 1, i + 2
                while j < n and depth:
                    if text.startswith("#=", j):
                        depth, j = depth + 1, j + 2
                    elif text.startswith("=#", j):
                        depth, j = depth - 1, j + 2
                    else:
                        j += 1
                blank(i, j)
                i = j
            else:
                j = text.find("\n", i)
                j = n if j < 0 else j
                blank(i, j)
                i = j
        elif c == '"':
            j = _string_end(text, i)
            # keep the quotes so that the code still reads as a string expression
            blank(i + 1, j - 1)
            i = j
        elif c == "'" and not (i > 0 and (text[i - 1].isalnum() or text[i - 1] in ")]}_'")):
            j = i + 1
            if j < n and text[j] == "\\":
                j += 2
            else:
                j += 1
            while j < n and text[j] != "'":
                j += 1
            blank(i + 1, j)
            i = j + 1
        else:
            i += 1
    return "".join(out)


def _string_end(text, i):
    """Offset just past the string literal starting at text[i] == '"'."""
    n = len(text)
    triple = text.startswith('"""', i)
    j = i + (3 if triple else 1)
    while j < n:
        c = text[j]
        if c == "\\":
            j += 2
            continue
        if c == "$" and j + 1 < n and text[j + 1] == "(":
            j = _match_paren(text, j + 1, strings=True) + 1
            continue
        if triple and text.startswith('"""', j):
            return j + 3
        if not triple and c == '"':
            return j + 1
        j += 1
    raise ValueError("unterminated string at offset %d" % i)


def _match_paren(text, i, strings=False):
    """Offset of the bracket closing text[i] (one of ( [ {)."""
    pairs = {"(": ")", "[": "]", "{": "}"}
    stack = [pairs[text[i]]]
    j = i + 1
    while j < len(text):
        c = text[j]
        if strings and c == '"':
            j = _string_end(text, j)
            continue
        if c in pairs:
            stack.append(pairs[c])
        elif c in ")]}":
            if not stack or c != stack[-1]:
                raise ValueError("unbalanced %r at offset %d" % (c, j))
            stack.pop()
            if not stack:
                return j
        j += 1
    raise ValueError("unclosed %r at offset %d" % (text[i], i))


def split_top(text):
    """Splits at commas that are not inside brackets; strips each piece."""
    parts, depth, cur = [], 0, []
    for c in text:
        if c in "([{":
            depth += 1
        elif c in ")]}":
            depth -= 1
        if c == "," and depth == 0:
            parts.append("".join(cur).strip())
            cur = []
        else:
            cur.append(c)
    last = "".join(cur).strip()
    if last or parts:
        parts.append(last)
    return parts


# ---- Julia type expressions -------------------------------------------------------------------
ALIASES = {
    "Cint": "Int32", "Cuint": "UInt32", "Clonglong": "Int64", "Culonglong": "UInt64",
    "Cdouble": "Float64", "Cfloat": "Float32", "Nothing": "Cvoid", "Cuchar": "UInt8",
    "Cshort": "Int16", "Cushort": "UInt16", "UInt": "Csize_t", "Csize_t": "Csize_t",
    "Cptrdiff_t": "Int", "Cssize_t": "Int",
}


class JType:
    def __init__(self, name, args=()):
        self.name, self.args = name, list(args)

    def __str__(self):
        return self.name + ("{%s}" % ", ".join(str(a) for a in self.args) if self.args else "")


def parse_jtype(text, aliases):
    text = text.strip()
    m = re.match(r"^([A-Za-z_][\w.]*)\s*(\{(.*)\})?$", text, re.S)
    if not m:
        if re.match(r"^-?\d+$", text):
            return JType(text)
        raise ValueError("not a type expression: %r" % text)
    name = m.group(1)
    if name.startswith("LibAlpa."):
        name = name[len("LibAlpa."):]
    if name.startswith("Base.") or name.startswith("Core."):
        name = name.split(".", 1)[1]
    args = [parse_jtype(a, aliases) for a in split_top(m.group(3))] if m.group(2) else []
    if not args and name in aliases:
        return aliases[name]
    return JType(ALIASES.get(name, name), args)


# ---- the comparison ---------------------------------------------------------------------------
SCALAR_J = {"int32_t": "Int32", "int64_t": "Int64", "uint32_t": "UInt32", "uint64_t": "UInt64", "uint8_t": "UInt8",
            "size_t": "Csize_t", "double": "Float64", "void": "Cvoid"}
CHAR_J = ("Cchar", "Int8", "UInt8")


def expected(h, ct, ctx):
    """A readable spelling of what Julia should say for C type ct."""
    if ct.kind == "array":
        return "NTuple{%d, %s}" % (ct.n, expected(h, ct.target, "field"))
    if ct.kind == "base":
        if ct.name in SCALAR_J:
            return SCALAR_J[ct.name]
        if ct.name == "char":
            return "Cchar"
        if h.is_callback(ct.name):
            return "Ptr{Cvoid}"
        return ct.name
    if ct.target.kind == "base" and ct.target.name == "char":
        return "Cstring or Ptr{UInt8}"
    return "Ptr{%s}" % expected(h, ct.target, "pointee")


def accepts(h, ct, jt, ctx):
    """True when Julia type jt passes / holds C type ct the same way. ctx: 'arg', 'ret',
    'field', 'pointee'."""
    if ct.kind == "array":
        return (jt.name == "NTuple" and len(jt.args) == 2 and jt.args[0].name == str(ct.n)
                and accepts(h, ct.target, jt.args[1], "field"))
    if ct.kind == "base":
        if jt.args and jt.name != "Ptr":
            return False
        if ct.name in SCALAR_J:
            return not jt.args and jt.name == SCALAR_J[ct.name]
        if ct.name == "char":
            return not jt.args and jt.name in CHAR_J
        if h.is_callback(ct.name):
            return jt.name == "Ptr" and len(jt.args) == 1 and jt.args[0].name == "Cvoid" \
                and not jt.args[0].args
        if h.struct(ct.name):
            return ctx in ("field", "pointee") and not jt.args and jt.name == ct.name
        if h.is_opaque(ct.name):
            return ctx == "pointee" and not jt.args and jt.name in (ct.name, "Cvoid")
        return False
    # a pointer
    target = ct.target
    if target.kind == "base" and target.name == "char" and not jt.args and jt.name == "Cstring":
        return True
    ptr_like = ("Ptr", "Ref") if ctx == "arg" else ("Ptr",)
    if jt.name not in ptr_like or len(jt.args) != 1:
        return False
    inner = jt.args[0]
    if target.kind == "base" and target.name == "void":
        return inner.name == "Cvoid" and not inner.args
    if target.kind == "base" and (h.is_opaque(target.name) or h.is_callback(target.name)):
        if inner.name == "Cvoid" and not inner.args:
            return True
    if target.kind == "base" and target.name == "char":
        return not inner.args and inner.name in CHAR_J
    return accepts(h, target, inner, "pointee")


# ---- Julia layout of an isbits struct ---------------------------------------------------------
def julia_size_align(h, jt, layouts):
    if jt.name in ("Int32", "UInt32", "Float32"):
        return 4, 4
    if jt.name in ("Int64", "UInt64", "Float64", "Csize_t", "Int", "Cstring", "Ptr"):
        return 8, 8
    if jt.name in ("Int8", "UInt8", "Cchar", "Bool"):
        return 1, 1
    if jt.name in ("Int16", "UInt16"):
        return 2, 2
    if jt.name == "NTuple" and len(jt.args) == 2 and jt.args[0].name.isdigit():
        s, a = julia_size_align(h, jt.args[1], layouts)
        return s * int(jt.args[0].name), a
    if jt.name in layouts:
        return layouts[jt.name]
    return None


class Checker:
    def __init__(self, header, src_dir, verbose=False):
        self.h = header
        self.src = src_dir
        self.verbose = verbose
        self.errors = []
        self.files = {}
        for dirpath, _, names in os.walk(src_dir):
            for name in sorted(names):
                if name.endswith(".jl"):
                    path = os.path.join(dirpath, name)
                    with open(path) as f:
                        text = f.read()
                    self.files[path] = (text, blank_julia(text))
        self.lib = os.path.join(src_dir, "LibAlpa.jl")
        if self.lib not in self.files:
            self.fail(None, 0, "LibAlpa.jl is missing from %s" % src_dir)
        self.aliases = {}
        self.stats = {"ccalls": 0, "wrappers": 0, "constants": 0, "structs": 0, "calls": 0}

    def fail(self, path, offset, msg):
        if path is None:
            self.errors.append(msg)
            return
        line = self.files[path][1].count("\n", 0, offset) + 1
        self.errors.append("%s:%d: %s" % (os.path.relpath(path), line, msg))

    # -- type aliases (const X = Ptr{Cvoid}) first, so that ccalls may use them
    def read_aliases(self):
        for path, (_, clean) in self.files.items():
            for m in re.finditer(r"(?m)^\s*const\s+([A-Za-z_]\w*)\s*=\s*(.+?)\s*$", clean):
                rhs = m.group(2)
                if re.match(r"^(Ptr|Ref|NTuple)\{.*\}$", rhs) or rhs in ALIASES or rhs == "Cvoid":
                    self.aliases[m.group(1)] = parse_jtype(rhs, {})

    def jtype(self, path, offset, text, what):
        try:
            return parse_jtype(text, self.aliases)
        except ValueError as e:
            self.fail(path, offset, "%s: %s" % (what, e))
            return None

    # -- 1, 2: ccalls and wrappers
    def check_ccalls(self):
        wrapped = {}
        for path, (text, clean) in self.files.items():
            if "@ccall" in clean or re.search(r"\bcglobal\s*\(", clean):
                self.fail(path, clean.find("@ccall") if "@ccall" in clean else 0,
                          "@ccall / cglobal are not checked; use ccall((:name, libalpa), ...)")
            funcs = [(m.start(), m.group(1), m.group(2)) for m in
                     re.finditer(r"(?m)^function\s+([\w.!]+)\s*\(([^)]*)\)", clean)]
            for m in re.finditer(r"\bccall\s*\(", clean):
                start = m.end() - 1
                try:
                    end = _match_paren(clean, start)
                except ValueError as e:
                    self.fail(path, m.start(), "ccall: %s" % e)
                    continue
                self.stats["ccalls"] += 1
                name = self.check_one_ccall(path, m.start(), clean[start + 1:end])
                if path == self.lib and name:
                    encl = [f for f in funcs if f[0] < m.start()]
                    if not encl:
                        self.fail(path, m.start(), "%s: ccall outside a wrapper function" % name)
                        continue
                    fstart, fname, fparams = encl[-1]
                    if fname != name:
                        self.fail(path, m.start(), "%s: the ccall of %s is inside function %s; "
                                  "the wrapper must have the C function's name" % (name, name, fname))
                        continue
                    if name in wrapped:
                        self.fail(path, m.start(), "%s: wrapped twice" % name)
                    wrapped[name] = (fparams, clean[start + 1:end])
                    self.check_wrapper(path, fstart, name, fparams, clean[start + 1:end])
        for f in self.h.functions:
            if f["name"] not in wrapped:
                self.fail(self.lib, 0, "%s: declared in %s but LibAlpa.jl has no wrapper for it"
                          % (f["name"], f["header"]))
        self.stats["wrappers"] = len(wrapped)

    def check_one_ccall(self, path, offset, inside):
        args = split_top(inside)
        if len(args) < 3:
            self.fail(path, offset, "ccall with %d arguments: cannot read it" % len(args))
            return None
        m = re.match(r"^\(\s*:(\w+)\s*,\s*((?:LibAlpa\.)?libalpa)\s*,?\s*\)$", args[0])
        if not m:
            self.fail(path, offset, "ccall(%s, ...): the function must be written (:alpa_name, "
                      "libalpa) so that it can be checked" % args[0])
            return None
        name = m.group(1)
        f = self.h.function(name)
        if f is None:
            self.fail(path, offset, "%s: ccall of a function that neither alpa.h nor "
                      "alpa_experimental.h declares" % name)
            return None
        rest = args[1:]
        if rest and rest[0] in ("cdecl", ":cdecl", "ccall", ":ccall"):
            rest = rest[1:]
        ret_text, types_text, values = rest[0], rest[1], rest[2:]
        ret = self.jtype(path, offset, ret_text, "%s: return type" % name)
        if ret is not None and not accepts(self.h, f["ret"], ret, "ret"):
            self.fail(path, offset, "%s: returns %s in C (%s) but the ccall says %s (expected %s)"
                      % (name, f["ret"].spell(), f["header"], ret_text,
                         expected(self.h, f["ret"], "ret")))
        if not (types_text.startswith("(") and types_text.endswith(")")):
            self.fail(path, offset, "%s: the argument types must be a tuple, got %s"
                      % (name, types_text))
            return name
        inner = types_text[1:-1].strip()
        types = split_top(inner) if inner else []
        if len(types) == 1 and not inner.rstrip().endswith(","):
            self.fail(path, offset, "%s: (%s) is not a tuple; write (%s,)" % (name, inner, inner))
        if types and types[-1] == "":
            types = types[:-1]
        params = f["params"]
        if len(types) != len(params):
            self.fail(path, offset, "%s: C takes %d arguments (%s) but the ccall lists %d types"
                      % (name, len(params), f["spelling"], len(types)))
        else:
            for i, ((pname, pt), tt) in enumerate(zip(params, types)):
                jt = self.jtype(path, offset, tt, "%s: argument %d" % (name, i + 1))
                if jt is not None and not accepts(self.h, pt, jt, "arg"):
                    self.fail(path, offset, "%s: argument %d (%s, C type %s) is %s in the ccall "
                              "(expected %s)" % (name, i + 1, pname, pt.spell(), tt,
                                                 expected(self.h, pt, "arg")))
        if len(values) != len(types) and not any(v.endswith("...") for v in values):
            self.fail(path, offset, "%s: the ccall lists %d types but passes %d values"
                      % (name, len(types), len(values)))
        return name

    def check_wrapper(self, path, offset, name, fparams, inside):
        f = self.h.function(name)
        params = [p.strip() for p in fparams.split(",") if p.strip()]
        names = [re.split(r"::|=", p)[0].strip() for p in params]
        if len(params) != len(f["params"]):
            self.fail(path, offset, "%s: the wrapper takes %d arguments, C takes %d (%s)"
                      % (name, len(params), len(f["params"]), f["spelling"]))
        values = split_top(inside)[3:]
        if values != names:
            self.fail(path, offset, "%s: the ccall must pass the wrapper's arguments (%s) in "
                      "order, it passes (%s)" % (name, ", ".join(names), ", ".join(values)))

    # -- 3: constants
    def check_constants(self):
        (_, clean) = self.files.get(self.lib, ("", ""))
        text = self.files.get(self.lib, ("", ""))[0]
        found = {}
        for m in re.finditer(r"(?m)^\s*const\s+(ALPA_\w+)\s*=\s*(.+?)\s*$", clean):
            name, rhs = m.group(1), text[m.start(2):m.end(2)].strip()
            if name in found:
                self.fail(self.lib, m.start(), "%s: defined twice" % name)
            found[name] = (m.start(), rhs)
        for c in self.h.constants:
            if c["name"] not in found:
                self.fail(self.lib, 0, "%s: #defined in %s (%s) but missing from LibAlpa.jl"
                          % (c["name"], c["header"], c["body"]))
                continue
            off, rhs = found.pop(c["name"])
            self.stats["constants"] += 1
            mi = re.match(r"^(Cint|Int32|Int64|Clonglong)\((-?\d+)\)$", rhs)
            mf = re.match(r"^-?(\d+\.?\d*([eE][-+]?\d+)?|Inf|NaN)$", rhs)
            if c["ctype"] in ("int", "long"):
                want = ("Cint", "Int32") if c["ctype"] == "int" else ("Int64", "Clonglong")
                if not mi or mi.group(1) not in want:
                    self.fail(self.lib, off, "%s: C %s constant %s; Julia must say %s(%d), says %s"
                              % (c["name"], c["ctype"], c["body"], want[0], c["value"], rhs))
                elif int(mi.group(2)) != c["value"]:
                    self.fail(self.lib, off, "%s: value %d in C (%s), %s in Julia"
                              % (c["name"], c["value"], c["body"], mi.group(2)))
            else:
                if not mf or "." not in rhs and "e" not in rhs.lower() and rhs.strip("-") not in ("Inf", "NaN"):
                    self.fail(self.lib, off, "%s: C double constant %s; Julia says %s (not a Float64 "
                              "literal)" % (c["name"], c["body"], rhs))
                elif float(rhs.replace("Inf", "inf").replace("NaN", "nan")) != c["value"]:
                    self.fail(self.lib, off, "%s: value %r in C (%s), %s in Julia"
                              % (c["name"], c["value"], c["body"], rhs))
        for name, (off, rhs) in found.items():
            self.fail(self.lib, off, "%s: LibAlpa.jl defines it but the headers do not" % name)

    # -- 4: structs, opaque handles, callbacks
    def check_types(self):
        jstructs, opaque = {}, set()
        for path, (_, clean) in self.files.items():
            for m in re.finditer(r"(?m)^\s*mutable\s+struct\s+(\w+)\s+end\b", clean):
                opaque.add(m.group(1))
            for m in re.finditer(r"(?m)^(\s*)struct\s+(\w+)\s*\n(.*?)^\1end\b", clean, re.S):
                name = m.group(2)
                if self.h.struct(name) is None and not name.startswith("alpa_"):
                    continue
                if name in jstructs:
                    self.fail(path, m.start(), "struct %s: defined twice" % name)
                jstructs[name] = (path, m.start(), m.group(3), m.start(3))
        layouts = {s: (l["size"], l["align"]) for s, l in self.h.layouts.items()}
        for o in self.h.opaque:
            ok = o["name"] in opaque or (o["name"] in self.aliases and str(self.aliases[o["name"]]) == "Cvoid")
            if not ok:
                self.fail(self.lib, 0, "%s: opaque handle type of %s missing (mutable struct %s end)"
                          % (o["name"], o["header"], o["name"]))
        for c in self.h.callbacks:
            a = self.aliases.get(c["name"])
            if a is None or str(a) != "Ptr{Cvoid}":
                self.fail(self.lib, 0, "%s: the callback type (%s) must be const %s = Ptr{Cvoid}"
                          % (c["name"], c["spelling"], c["name"]))
        for s in self.h.structs:
            if s["name"] not in jstructs:
                self.fail(self.lib, 0, "struct %s of %s is missing" % (s["name"], s["header"]))
                continue
            path, off, body, body_off = jstructs.pop(s["name"])
            self.stats["structs"] += 1
            fields = []
            for lm in re.finditer(r"(?m)^[ \t]*(\S.*?)[ \t]*$", body):
                fm = re.match(r"^(\w+)::(.+)$", lm.group(1))
                if not fm:
                    self.fail(path, body_off + lm.start(), "struct %s: cannot read %r as a field "
                              "(name::Type)" % (s["name"], lm.group(1)))
                    continue
                fields.append((fm.group(1), fm.group(2).strip(), body_off + lm.start()))
            cnames = [f[0] for f in s["fields"]]
            jnames = [f[0][:-1] if f[0].endswith("_") and f[0][:-1] in JULIA_KEYWORDS else f[0]
                      for f in fields]
            if cnames != jnames:
                self.fail(path, off, "struct %s: C fields (%s), Julia fields (%s)"
                          % (s["name"], ", ".join(cnames), ", ".join(jnames)))
                continue
            offset, align_max, bad = 0, 1, False
            for (fname, ct, _), (_, ftext, foff) in zip(s["fields"], fields):
                jt = self.jtype(path, foff, ftext, "struct %s.%s" % (s["name"], fname))
                if jt is None:
                    bad = True
                    continue
                if not accepts(self.h, ct, jt, "field"):
                    self.fail(path, foff, "struct %s: field %s is %s in C, %s in Julia (expected %s)"
                              % (s["name"], fname, ct.spell(), ftext, expected(self.h, ct, "field")))
                    bad = True
                    continue
                sa = julia_size_align(self.h, jt, layouts)
                if sa is None:
                    self.fail(path, foff, "struct %s: no size known for %s" % (s["name"], ftext))
                    bad = True
                    continue
                size, align = sa
                offset = (offset + align - 1) // align * align
                want = self.h.layouts[s["name"]]["offsets"][fname]
                if offset != want:
                    self.fail(path, foff, "struct %s: field %s at offset %d in Julia, %d in C"
                              % (s["name"], fname, offset, want))
                    bad = True
                offset += size
                align_max = max(align_max, align)
            if not bad:
                total = (offset + align_max - 1) // align_max * align_max
                lay = self.h.layouts[s["name"]]
                if (total, align_max) != (lay["size"], lay["align"]):
                    self.fail(path, off, "struct %s: Julia size/alignment %d/%d, C %d/%d"
                              % (s["name"], total, align_max, lay["size"], lay["align"]))
        for name, (path, off, _, _) in jstructs.items():
            self.fail(path, off, "struct %s: named like a C struct, but the headers have none"
                      % name)

    # -- 5: calls from the idiomatic layer
    def check_calls(self):
        for path, (_, clean) in self.files.items():
            if path == self.lib:
                continue
            for m in re.finditer(r"(?<![\w:.])(?:LibAlpa\.)?(alpa_\w+)\s*\(", clean):
                if re.search(r"(function|struct)\s+$", clean[max(0, m.start() - 20):m.start()]):
                    continue
                name = m.group(1)
                f, s = self.h.function(name), self.h.struct(name)
                if f is None and s is None:
                    self.fail(path, m.start(), "%s(...): no such function or struct in the "
                              "headers" % name)
                    continue
                start = m.end() - 1
                try:
                    end = _match_paren(clean, start)
                except ValueError as e:
                    self.fail(path, m.start(), "%s: %s" % (name, e))
                    continue
                inner = clean[start + 1:end].strip()
                args = split_top(inner) if inner else []
                if any(a.endswith("...") for a in args) or ";" in inner:
                    continue
                self.stats["calls"] += 1
                want = len(f["params"]) if f else len(s["fields"])
                if len(args) != want:
                    what = f["spelling"] if f else "struct %s, %d fields" % (name, want)
                    self.fail(path, m.start(), "%s: called with %d arguments, C takes %d (%s)"
                              % (name, len(args), want, what))

    def check_project(self):
        """Project.toml (next to src/, when there) carries the headers' ALPA_VERSION."""
        path = os.path.join(os.path.dirname(os.path.abspath(self.src)), "Project.toml")
        if not os.path.exists(path):
            return
        with open(path) as f:
            m = re.search(r'(?m)^version\s*=\s*"([^"]+)"', f.read())
        v = {c["name"]: c["value"] for c in self.h.constants}
        want = "%d.%d.%d" % (v["ALPA_VERSION_MAJOR"], v["ALPA_VERSION_MINOR"], v["ALPA_VERSION_PATCH"])
        if not m or m.group(1) != want:
            self.errors.append("%s: version %s, the headers are %s"
                               % (os.path.relpath(path), m.group(1) if m else "missing", want))

    def run(self):
        self.check_project()
        self.read_aliases()
        self.check_ccalls()
        self.check_constants()
        self.check_types()
        self.check_calls()
        return self.errors


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--include", default=os.path.join(ROOT, "include"))
    ap.add_argument("--src", default=DEFAULT_SRC)
    ap.add_argument("--no-freshness", action="store_true",
                    help="skip the regenerate-and-compare check of LibAlpa.jl")
    ap.add_argument("-v", "--verbose", action="store_true")
    args = ap.parse_args(argv)
    try:
        h = cheader.Header(args.include)
    except cheader.HeaderError as e:
        print("check.py: " + str(e), file=sys.stderr)
        return 2
    checker = Checker(h, args.src, args.verbose)
    errors = checker.run()
    if not args.no_freshness:
        import generate
        text = generate.generate(args.include)
        lib = os.path.join(args.src, "LibAlpa.jl")
        with open(lib) as f:
            if f.read() != text:
                errors.append("%s: out of date: it is not what generate.py writes from %s; run "
                              "python3 bindings/julia/generate.py" % (os.path.relpath(lib), args.include))
    if errors:
        for e in errors:
            print(e, file=sys.stderr)
        print("check.py: %d disagreement(s) between the Julia binding and the headers"
              % len(errors), file=sys.stderr)
        return 1
    st = checker.stats
    print("check.py: OK: %d C functions, %d wrappers, %d ccalls, %d constants, %d structs (fields, "
          "types, offsets, sizes), %d opaque handles, %d callback types, %d calls from the "
          "idiomatic layer agree with alpa.h / alpa_experimental.h"
          % (len(h.functions), st["wrappers"], st["ccalls"], st["constants"], st["structs"],
             len(h.opaque), len(h.callbacks), st["calls"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
