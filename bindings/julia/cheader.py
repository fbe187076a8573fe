"""Reads libalpa's C headers through clang (stdlib only; clang is the parser).

Everything about the C side comes from clang, never from regular expressions over the headers:
  - declarations (functions, parameters, structs, opaque handles, function pointer typedefs)
    from `clang -Xclang -ast-dump=json`;
  - the #define'd ALPA_ constants from `clang -dM -E` (their names and bodies), their C types from
    `typedef __typeof__((NAME)) ...` and their values from enumerators / initializers that clang
    evaluates (`enum { x = (NAME) }`);
  - struct layouts (offsets, sizes, alignments) from `__builtin_offsetof` / `sizeof` /
    `_Alignof` probes that clang evaluates.
The header text itself is read only to copy the doc comments, whose byte ranges clang reports
(for #define'd constants, the trailing `/**< ... */` on the `#define` line).

C types are kept as small trees parsed from clang's canonical spelling of a type (the
`qualType` it prints), which uses a fixed grammar: `[const] NAME [*[ const]]...` and `NAME[N]`.
"""

import json
import os
import re
import shutil
import subprocess
import tempfile

HEADERS = ("alpa.h", "alpa_experimental.h")

# Base C types the ABI uses, with their size and alignment on LP64 (x86_64, aarch64).
SCALARS = {
    "int32_t": (4, 4),
    "int64_t": (8, 8),
    "uint64_t": (8, 8),
    "uint32_t": (4, 4),
    "uint8_t": (1, 1),
    "size_t": (8, 8),
    "double": (8, 8),
    "char": (1, 1),
    "void": (0, 1),
}


class HeaderError(Exception):
    pass


def find_clang():
    for name in ("clang", "clang-16", "clang-15", "clang-14", "clang-13"):
        path = shutil.which(name)
        if path:
            return path
    raise HeaderError("clang not found (apt-get install clang)")


# ---- C types ---------------------------------------------------------------------------------
class CType:
    """kind: 'base' (name), 'ptr' (target, const = the target is const), 'array' (target, n)."""

    def __init__(self, kind, name=None, target=None, const=False, n=None):
        self.kind, self.name, self.target, self.const, self.n = kind, name, target, const, n
        self.self_const = False  # for 'ptr': the pointer itself is const (T *const)

    def spell(self):
        if self.kind == "base":
            return ("const " if self.const else "") + self.name
        if self.kind == "ptr":
            inner = self.target.spell()
            return inner + "*" + (" const" if self.self_const else "")
        return "%s[%d]" % (self.target.spell(), self.n)

    def __repr__(self):
        return self.spell()


_TOKEN = re.compile(r"\s*(\w+|\*|\[\d+\]|\S)")


def parse_ctype(text):
    """Parses clang's printed qualType ("const alpa_plan *", "const char *const *", "int64_t[8]")."""
    toks = _TOKEN.findall(text)
    pos = 0
    const = False
    name = None
    while pos < len(toks) and toks[pos] not in ("*",) and not toks[pos].startswith("["):
        t = toks[pos]
        if t == "const":
            const = True
        elif t == "struct":
            pass
        elif name is None:
            name = t
        elif name == "unsigned" or name == "signed" or name == "long":
            name = name + " " + t
        else:
            raise HeaderError("cannot read C type %r" % text)
        pos += 1
    if name is None:
        raise HeaderError("cannot read C type %r" % text)
    ty = CType("base", name=name, const=const)
    while pos < len(toks):
        t = toks[pos]
        if t == "*":
            ty = CType("ptr", target=ty, const=False)
        elif t == "const" and ty.kind == "ptr":
            ty.self_const = True  # "T *const": passes like any pointer
        elif t.startswith("["):
            ty = CType("array", target=ty, n=int(t[1:-1]))
        else:
            raise HeaderError("cannot read C type %r (at %r)" % (text, t))
        pos += 1
    return ty


# ---- the AST ---------------------------------------------------------------------------------
def _run(cmd, **kw):
    proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, **kw)
    return proc.returncode, proc.stdout.decode("utf-8", "replace"), proc.stderr.decode("utf-8", "replace")


def _clang_json(clang, include_dir, source):
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "probe.c")
        with open(path, "w") as f:
            f.write(source)
        rc, out, err = _run([clang, "-x", "c", "-std=c11", "-fparse-all-comments", "-Xclang",
                             "-ast-dump=json", "-fsyntax-only", "-I", include_dir, path])
        if rc != 0:
            raise HeaderError("clang failed on the probe:\n" + err)
        return json.loads(out)


def _walk_files(node, state, out):
    """Visits every node in clang's output order, tracking the current file (clang writes a
    location's "file" only when it changes). out[id(node)] = file of the node's loc."""
    def visit_loc(loc):
        if not isinstance(loc, dict):
            return
        if "spellingLoc" in loc:
            visit_loc(loc["spellingLoc"])
            visit_loc(loc["expansionLoc"])
            return
        if "file" in loc:
            state["file"] = loc["file"]

    if "loc" in node:
        loc = node["loc"]
        visit_loc(loc)
        out[id(node)] = state["file"]
    if "range" in node:
        visit_loc(node["range"].get("begin"))
        visit_loc(node["range"].get("end"))
    for child in node.get("inner", []):
        _walk_files(child, state, out)


def _loc_offset(loc):
    if "expansionLoc" in loc:
        return loc["expansionLoc"]["offset"]
    return loc["offset"]


class Header:
    """The C side: functions, structs, opaque handles, callbacks, constants."""

    def __init__(self, include_dir):
        self.include_dir = os.path.abspath(include_dir)
        self.clang = find_clang()
        self.sources = {}
        for h in HEADERS:
            p = os.path.join(self.include_dir, h)
            if not os.path.exists(p):
                raise HeaderError("missing header " + p)
            with open(p, "rb") as f:
                self.sources[h] = f.read()
        self.functions = []  # dicts: name, ret (CType), params [(name, CType)], doc, header
        self.structs = []    # dicts: name, fields [(name, CType, doc)], doc, header
        self.opaque = []     # dicts: name, doc, header
        self.callbacks = []  # dicts: name, spelling, doc, header
        self.constants = []  # dicts: name, ctype ('int', 'long', 'double'), value, doc, header
        self.layouts = {}    # struct name -> {"size", "align", "offsets": {field: offset}}
        self._read_decls()
        self._read_constants()
        self._read_layouts()

    # -- declarations
    def _doc(self, node, header):
        for child in node.get("inner", []):
            if child.get("kind") == "FullComment":
                r = child["range"]
                b, e = _loc_offset(r["begin"]), _loc_offset(r["end"])
                return clean_comment(self.sources[header][b:e].decode("utf-8"))
        return ""

    def _read_decls(self):
        ast = _clang_json(self.clang, self.include_dir, '#include "alpa_experimental.h"\n')
        files = {}
        _walk_files(ast, {"file": None}, files)
        records = {}
        typedefs = []
        for node in ast.get("inner", []):
            f = files.get(id(node))
            if not f or os.path.dirname(os.path.abspath(f)) != self.include_dir:
                continue  # only declarations spelled in our two headers (not stdint.h's)
            header = os.path.basename(f)
            if header not in HEADERS:
                continue
            kind = node.get("kind")
            name = node.get("name", "")
            if kind == "FunctionDecl":
                qual = node["type"]["qualType"]
                ret = parse_ctype(qual[:qual.index("(")].strip())
                params = []
                for i, p in enumerate(x for x in node.get("inner", []) if x["kind"] == "ParmVarDecl"):
                    params.append((p.get("name") or "arg%d" % (i + 1), parse_ctype(p["type"]["qualType"])))
                if node.get("variadic"):
                    raise HeaderError("%s is variadic; the binding cannot express it" % name)
                self.functions.append(dict(name=name, ret=ret, params=params,
                                           doc=self._doc(node, header), header=header,
                                           spelling=self._spell_fn(name, ret, params)))
            elif kind == "RecordDecl":
                if node.get("completeDefinition"):
                    fields = []
                    for fnode in node.get("inner", []):
                        if fnode["kind"] == "FieldDecl":
                            if fnode.get("isBitfield"):
                                raise HeaderError("%s.%s is a bit-field" % (name, fnode["name"]))
                            fields.append((fnode["name"], parse_ctype(fnode["type"]["qualType"]),
                                           self._doc(fnode, header)))
                        elif fnode["kind"] == "RecordDecl":
                            raise HeaderError("%s has a nested record" % name)
                    records[name] = dict(name=name, fields=fields, doc=self._doc(node, header),
                                         header=header, union=node.get("tagUsed") == "union")
            elif kind == "TypedefDecl":
                typedefs.append((node, header))
        for node, header in typedefs:
            name = node["name"]
            qual = node["type"]["qualType"]
            doc = self._doc(node, header)
            if qual == "struct " + name:
                if name in records:
                    rec = records[name]
                    if rec["union"]:
                        raise HeaderError("%s is a union" % name)
                    rec["doc"] = rec["doc"] or doc
                    self.structs.append(rec)
                else:
                    self.opaque.append(dict(name=name, doc=doc, header=header))
            elif "(*)" in qual:
                self.callbacks.append(dict(name=name, spelling=qual, doc=doc, header=header))
            else:
                raise HeaderError("typedef %s = %s: not a kind the binding knows" % (name, qual))
        if not self.functions:
            raise HeaderError("no functions found in the headers")

    @staticmethod
    def _spell_fn(name, ret, params):
        args = ", ".join("%s %s" % (t.spell(), n) for n, t in params) or "void"
        return "%s %s(%s)" % (ret.spell(), name, args)

    # -- constants
    def _read_constants(self):
        rc, out, err = _run([self.clang, "-x", "c", "-std=c11", "-E", "-dM", "-I", self.include_dir,
                             os.path.join(self.include_dir, "alpa_experimental.h")])
        if rc != 0:
            raise HeaderError("clang -dM failed:\n" + err)
        macros = []
        for line in out.splitlines():
            parts = line.split(None, 2)
            if len(parts) < 2 or parts[0] != "#define" or not parts[1].startswith("ALPA_"):
                continue
            if "(" in parts[1]:
                continue  # function-like macro
            body = parts[2].strip() if len(parts) > 2 else ""
            macros.append((parts[1], body))
        # Which macros are expressions: ask clang for each one's type; those it rejects (empty
        # bodies such as include guards, attributes, brace initializers) are not constants.
        probe = ['#include "alpa_experimental.h"']
        for i, (name, _) in enumerate(macros):
            probe.append("typedef __typeof__((%s)) alpa_jl_t%d;" % (name, i))
        ast = self._probe_tolerant(probe, len(macros))
        types = {}
        for node in ast.get("inner", []):
            n = node.get("name", "")
            if node.get("kind") == "TypedefDecl" and n.startswith("alpa_jl_t") and not node.get("isInvalid"):
                types[int(n[len("alpa_jl_t"):])] = node["type"].get("desugaredQualType",
                                                                     node["type"]["qualType"])
        probe = ['#include "alpa_experimental.h"']
        kinds = {}
        for i, (name, _) in enumerate(macros):
            t = types.get(i)
            if t in ("int", "long", "long long", "unsigned int", "unsigned long"):
                probe.append("enum { alpa_jl_c%d = (%s) };" % (i, name))
                kinds[i] = "int" if t in ("int", "unsigned int") else "long"
            elif t == "double":
                probe.append("static const double alpa_jl_c%d = (%s);" % (i, name))
                kinds[i] = "double"
        ast = _clang_json(self.clang, self.include_dir, "\n".join(probe) + "\n")
        values = {}
        for node in ast.get("inner", []):
            if node.get("kind") == "EnumDecl":
                for e in node.get("inner", []):
                    if e.get("kind") == "EnumConstantDecl" and e["name"].startswith("alpa_jl_c"):
                        values[int(e["name"][len("alpa_jl_c"):])] = int(_find_value(e))
            elif node.get("kind") == "VarDecl" and node["name"].startswith("alpa_jl_c"):
                values[int(node["name"][len("alpa_jl_c"):])] = _float_literal(node)
        for i, (name, body) in enumerate(macros):
            if i in kinds:
                header, doc, offset = self._macro_doc(name)
                self.constants.append(dict(name=name, ctype=kinds[i], value=values[i],
                                           body=body, header=header, doc=doc, offset=offset))
        self.constants.sort(key=lambda c: (HEADERS.index(c["header"]), c["offset"]))

    def _probe_tolerant(self, lines, _n):
        # clang still dumps the AST when some declarations are invalid; those carry isInvalid
        # (or are missing). Errors are expected here for the macros that are not expressions.
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "probe.c")
            with open(path, "w") as f:
                f.write("\n".join(lines) + "\n")
            rc, out, err = _run([self.clang, "-x", "c", "-std=c11", "-ferror-limit=0", "-Xclang",
                                 "-ast-dump=json", "-fsyntax-only", "-I", self.include_dir, path])
            if not out.strip():
                raise HeaderError("clang produced no AST for the constant probe:\n" + err)
            return json.loads(out)

    def _macro_doc(self, name):
        # The trailing /**< ... */ on the #define line, or a /** ... */ block ending right above it.
        for header in HEADERS:
            text = self.sources[header].decode("utf-8")
            m = re.search(r"^#define[ \t]+%s\b[^\n]*" % re.escape(name), text, re.M)
            if not m:
                continue
            line = m.group(0)
            doc = ""
            t = line.find("/**<")
            if t >= 0:
                doc = clean_comment(line[t + 3:line.rfind("*/")])
            else:
                before = text[:m.start()]
                if before.endswith("*/\n"):
                    start = before.rfind("/**")
                    line_start = before.rfind("\n", 0, start) + 1
                    if start >= 0 and not before[line_start:start].strip() \
                            and "*/" not in before[start:-3] and before[start + 3] != "<":
                        doc = clean_comment(before[start + 3:-3])
            return header, doc, m.start()
        raise HeaderError("constant %s is not #defined in %s" % (name, " or ".join(HEADERS)))

    # -- layouts
    def _read_layouts(self):
        probe = ['#include "alpa_experimental.h"']
        names = []
        for s in self.structs:
            i = len(names)
            names.append((s["name"], None))
            probe.append("enum { alpa_jl_s%d = sizeof(%s), alpa_jl_a%d = _Alignof(%s) };"
                         % (i, s["name"], i, s["name"]))
            for fname, _, _ in s["fields"]:
                j = len(names)
                names.append((s["name"], fname))
                probe.append("enum { alpa_jl_o%d = __builtin_offsetof(%s, %s) };" % (j, s["name"], fname))
        ast = _clang_json(self.clang, self.include_dir, "\n".join(probe) + "\n")
        for s in self.structs:
            self.layouts[s["name"]] = {"offsets": {}}
        for node in ast.get("inner", []):
            if node.get("kind") != "EnumDecl":
                continue
            for e in node.get("inner", []):
                n = e.get("name", "")
                if not n.startswith("alpa_jl_"):
                    continue
                idx = int(n[len("alpa_jl_") + 1:])
                sname, fname = names[idx]
                v = int(_find_value(e))
                if n[8] == "s":
                    self.layouts[sname]["size"] = v
                elif n[8] == "a":
                    self.layouts[sname]["align"] = v
                else:
                    self.layouts[sname]["offsets"][fname] = v

    # -- lookups
    def function(self, name):
        for f in self.functions:
            if f["name"] == name:
                return f
        return None

    def struct(self, name):
        for s in self.structs:
            if s["name"] == name:
                return s
        return None

    def is_opaque(self, name):
        return any(o["name"] == name for o in self.opaque)

    def is_callback(self, name):
        return any(c["name"] == name for c in self.callbacks)


def _find_value(node):
    if "value" in node and node.get("kind") == "ConstantExpr":
        return node["value"]
    for child in node.get("inner", []):
        v = _find_value(child)
        if v is not None:
            return v
    return None


def _float_literal(node):
    """The value of `static const double x = (LITERAL)` with optional parentheses and minus."""
    sign = 1.0
    cur = node["inner"][0] if node.get("inner") else None
    while cur is not None:
        k = cur.get("kind")
        if k == "FloatingLiteral":
            return sign * float(cur["value"])
        if k == "IntegerLiteral":
            return sign * float(int(cur["value"]))
        if k == "UnaryOperator" and cur.get("opcode") in ("-", "+"):
            if cur["opcode"] == "-":
                sign = -sign
        elif k not in ("ParenExpr", "ImplicitCastExpr"):
            raise HeaderError("%s: a double constant must be a literal (got %s)" % (node["name"], k))
        cur = cur["inner"][0]
    raise HeaderError("%s: no value" % node["name"])


def clean_comment(text):
    """The body of a /** ... */ comment (without the delimiters) as plain lines; example code
    keeps its indentation."""
    if text.startswith("<"):
        text = text[1:]
    lines = []
    for line in text.splitlines():
        s = line.lstrip()
        if s.startswith("*") and not s.startswith("*/"):
            s = s[1:]
            if s.startswith(" "):
                s = s[1:]
        lines.append(s.rstrip())
    while lines and not lines[0].strip():
        lines.pop(0)
    while lines and not lines[-1].strip():
        lines.pop()
    if lines:
        lines[0] = lines[0].lstrip()
    return "\n".join(lines)
