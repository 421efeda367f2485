#!/usr/bin/env python3
"""Prints the module import cycles of a crate's src/ directory; exits 1 when
there is one. `scripts/test.sh` runs it on every crate of runtime/ and the packager
(ARCHITECTURE.md: a module never imports from a module that imports it).

Usage: scripts/module-cycles.py CRATE_SRC_DIR [...]

A module is a file (lib.rs = crate root, foo.rs or foo/mod.rs = foo, foo/bar.rs = foo::bar).
An edge A -> B is any path in A's code (a `use` or an inline path, comments stripped, code
inside `#[cfg(test)] mod tests` included) that names `crate::B...`, `super::...` or `self::...`
resolving to module B (the longest known module prefix of the path), B != A. Inside an inline
`mod x { ... }` (such as `mod tests`), `super` is the file's own module.
Declarations (`mod b;`) are not edges. Cycles are the strongly connected components with more
than one module; for each, one shortest cycle through its members is printed.
"""
import os, re, sys

def modules(src):
    mods = {}
    for root, _, files in os.walk(src):
        for f in files:
            if not f.endswith(".rs"):
                continue
            p = os.path.join(root, f)
            rel = os.path.relpath(p, src)[:-3].split(os.sep)
            if rel in (["lib"], ["main"]):
                path = ()
            elif rel[-1] == "mod":
                path = tuple(rel[:-1])
            else:
                path = tuple(rel)
            mods[path] = p
    return mods

def strip_comments(text):
    text = re.sub(r"/\*.*?\*/", "", text, flags=re.S)
    text = re.sub(r'"(\\.|[^"\\])*"', '""', text)
    return re.sub(r"//[^\n]*", "", text)

def expand_use_groups(text):
    """Turns `use a::{b, c::{d}}` into paths `a::b`, `a::c::d`."""
    out = []
    for m in re.finditer(r"\buse\s+([^;]+);", text, flags=re.S):
        out.extend(expand(m.group(1).replace("\n", " ").replace(" ", "")))
    return out

def expand(s):
    i = s.find("{")
    if i < 0:
        return [s]
    prefix, depth, parts, cur = s[:i], 0, [], ""
    body = s[i + 1 : s.rfind("}")]
    for ch in body:
        if ch == "," and depth == 0:
            parts.append(cur); cur = ""
            continue
        depth += ch == "{"
        depth -= ch == "}"
        cur += ch
    parts.append(cur)
    res = []
    for p in parts:
        if p:
            res.extend(expand(prefix + p))
    return res

def resolve(path, here, mods, is_mod_file):
    segs = [x for x in re.split(r"::", path) if x]
    if not segs:
        return None
    # The module a `super`/`self` path starts from: for foo.rs or foo/mod.rs, self = foo.
    if segs[0] == "crate":
        base, segs = (), segs[1:]
    elif segs[0] in ("super", "self"):
        base = here
        while segs and segs[0] in ("super", "self"):
            if segs[0] == "super":
                base = base[:-1]
            segs = segs[1:]
    else:
        return None
    full = base + tuple(s.split(" as ")[0] for s in segs)
    best = None
    for n in range(len(full), -1, -1):
        if full[:n] in mods:
            best = full[:n]
            break
    return best

def graph(src):
    mods = modules(src)
    edges = {m: set() for m in mods}
    for m, p in mods.items():
        text = strip_comments(open(p, encoding="utf-8").read())
        for base, part in inline_modules(text, m):
            paths = expand_use_groups(part)
            paths += re.findall(r"\b((?:crate|super|self)(?:::\w+)+)", part)
            for path in paths:
                path = re.sub(r"\s+as\s+\w+$", "", path)
                t = resolve(path, base, mods, p.endswith("mod.rs"))
                if t is not None and t != m:
                    edges[m].add(t)
    return mods, edges

def inline_modules(text, here):
    """Splits a file's text into (module path, text) parts: the file's own code, and the body
    of each inline `mod name { ... }` (e.g. `mod tests`), where `super` is the file's module."""
    parts, rest, pos = [], [], 0
    for m in re.finditer(r"\bmod\s+(\w+)\s*\{", text):
        if m.start() < pos:
            continue
        depth, i = 1, m.end()
        while i < len(text) and depth:
            depth += text[i] == "{"
            depth -= text[i] == "}"
            i += 1
        rest.append(text[pos:m.start()])
        parts.append((here + (m.group(1),), text[m.end():i]))
        pos = i
    rest.append(text[pos:])
    return [(here, "".join(rest))] + parts

def sccs(edges):
    index, low, stack, on, out, i = {}, {}, [], set(), [], [0]
    sys.setrecursionlimit(10000)
    def visit(v):
        index[v] = low[v] = i[0]; i[0] += 1
        stack.append(v); on.add(v)
        for w in edges[v]:
            if w not in index:
                visit(w); low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop(); on.discard(w); comp.append(w)
                if w == v:
                    break
            out.append(comp)
    for v in sorted(edges):
        if v not in index:
            visit(v)
    return out

def shortest_cycle(start, comp, edges):
    from collections import deque
    prev, q = {start: None}, deque([start])
    while q:
        v = q.popleft()
        for w in sorted(edges[v]):
            if w not in comp:
                continue
            if w == start:
                path = [v]
                while prev[path[-1]] is not None:
                    path.append(prev[path[-1]])
                return list(reversed(path)) + [start]
            if w not in prev:
                prev[w] = v; q.append(w)
    return None

def name(m):
    return "crate" if not m else "::".join(m)

if len(sys.argv) < 2:
    sys.exit(__doc__)
found = 0
for src in sys.argv[1:]:
    mods, edges = graph(src)
    cycles = [c for c in sccs(edges) if len(c) > 1]
    found += len(cycles)
    print(f"{src}: {len(mods)} modules, {sum(len(e) for e in edges.values())} import edges, "
          f"{len(cycles)} cycle(s)")
    for comp in cycles:
        comp = sorted(comp)
        cyc = shortest_cycle(comp[0], set(comp), edges)
        print(f"  cycle among {{{', '.join(name(m) for m in comp)}}}: "
              + " -> ".join(name(m) for m in cyc))
sys.exit(1 if found else 0)
