"""The C++ core's ground plan holds: every #include in magics/src looks down.

magics/src is made of layers (base, driver, compile, runtime, ...), each a folder and a library, and the runtime
layer of rooms (runtime/devices, runtime/memory, ...), each a folder and an object library. What each may use is
read from the build's own declarations, the one place it is written:

  - a layer: the xcuda_* libraries its `target_link_libraries(xcuda_<layer> ...)` names
    (magics/src/<layer>/CMakeLists.txt);
  - a room: the rooms and layers after USES in its `xcuda_runtime_room(<room> USES ... HOT ... COLD ...)`
    (magics/src/runtime/CMakeLists.txt); a layer that uses runtime may use every room.

The build already fails on an include of a header that is not on a target's include path; this test says it
without a build, names the file and the line, and also finds what the build cannot: a loop of includes between the
units of one folder (a .hpp/.cpp pair includes, directly or round a loop, a unit that includes it back), a loop
in the declarations themselves, and one header name in two folders (headers are included by their bare names).
"""
import re
from collections import defaultdict
from pathlib import Path

import pytest

SOURCE = Path(__file__).resolve().parents[2] / "magics" / "src"
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)
PREFIX = "xcuda_"
# Loops of units known and left for now, by the units' names (whatever folder they are in). Remove an entry when
# its loop is broken. The signature reader's lexer evaluates #if conditions with constant_expression, which
# lexes the text of a constant with source_lexer (both in signature/).
KNOWN_LOOPS = [{"constant_expression", "source_lexer"}]


def cmake_calls(text, command):
    """The argument lists of every call of `command` in a CMake file's text, comments removed."""
    text = re.sub(r"#[^\n]*", "", text)
    return [call.split() for call in re.findall(rf"\b{command}\s*\(([^)]*)\)", text)]


def ground_plan(source=SOURCE):
    """{place: (folder, set of places it may use directly)} for every layer and runtime room of `source`.

    A place is a layer's name ("compile") or a room's ("runtime/memory"); "runtime" itself is a layer whose
    folder holds no sources and which uses every room.
    """
    places = {}
    layers = sorted(p.parent for p in source.glob("*/CMakeLists.txt"))
    names = {p.name for p in layers}
    for folder in layers:
        text = (folder / "CMakeLists.txt").read_text()
        uses = set()
        for args in cmake_calls(text, "target_link_libraries"):
            if args and args[0] == PREFIX + folder.name:
                uses |= {a[len(PREFIX):] for a in args[1:] if a.startswith(PREFIX) and a[len(PREFIX):] in names}
        places[folder.name] = (folder, uses)
    runtime = source / "runtime"
    rooms = cmake_calls((runtime / "CMakeLists.txt").read_text(), "xcuda_runtime_room")
    room_names = {args[0] for args in rooms}
    for room, *rest in rooms:
        uses = set()
        for word in rest[rest.index("USES") + 1:] if "USES" in rest else []:
            if word in ("HOT", "COLD"):
                break
            uses.add(f"runtime/{word}" if word in room_names else word)
        places[f"runtime/{room}"] = (runtime / room, uses)
    places["runtime"] = (runtime, {f"runtime/{room}" for room in room_names} | places["runtime"][1])
    return places


def reachable(places):
    """{place: every place it may use, directly or through what it uses}."""
    closure = {}

    def visit(place, path):
        if place in closure:
            return closure[place]
        if place in path:
            raise AssertionError("the layers' or rooms' declarations run in a loop: " + " -> ".join(path + [place]))
        below = set()
        for used in places[place][1]:
            if used not in places:
                raise AssertionError(f"{place} may use {used!r}, which is neither a layer nor a room")
            below |= {used} | visit(used, path + [place])
        closure[place] = below
        return below

    for place in places:
        visit(place, [])
    return closure


def sources_of(places):
    """{place: [files]} of the .hpp/.cpp files directly in each place's folder."""
    return {place: sorted(f for f in folder.iterdir() if f.suffix in (".hpp", ".cpp", ".h"))
            for place, (folder, _) in places.items() if folder.is_dir()}


def problems(source=SOURCE):
    """Every include that runs up or sideways, every loop of units, every header named in two places."""
    places = ground_plan(source)
    allowed = reachable(places)
    files = sources_of(places)
    found = []
    home = {}
    for place, paths in files.items():
        for path in paths:
            if path.suffix in (".hpp", ".h"):
                if path.name in home:
                    found.append(f"{path.name} is a header of both {home[path.name]} and {place}: an #include by "
                                 "its bare name is ambiguous")
                home[path.name] = place
    units = defaultdict(set)  # (place, stem) -> units it includes, within its own place
    for place, paths in files.items():
        for path in paths:
            text = path.read_text(errors="replace")
            for match in INCLUDE.finditer(text):
                header = Path(match.group(1)).name
                target = home.get(header)
                if target is None:
                    continue  # not a header of magics/src (a system or a generated one)
                line = text.count("\n", 0, match.start()) + 1
                where = f"{path.relative_to(source)}:{line}"
                if target == place:
                    if Path(header).stem != path.stem:
                        units[(place, path.stem)].add((place, Path(header).stem))
                elif target not in allowed[place]:
                    found.append(f'{where} includes "{header}" of {target}, which {place} may not use '
                                 f"(it may use: {', '.join(sorted(allowed[place])) or 'nothing'})")
    found += [f"units include each other round a loop: {' -> '.join(cycle)}" for cycle in loops(units)
              if {unit.rsplit("/", 1)[1] for unit in cycle} not in KNOWN_LOOPS]
    return found


def loops(edges):
    """One loop (as "place/unit" names, the first repeated at the end) per strongly connected group of units."""
    index, low, stack, on_stack, groups = {}, {}, [], set(), []

    def connect(node):
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(edges.get(node, ())):
            if nxt not in index:
                connect(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            group = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                group.append(member)
                if member == node:
                    break
            if len(group) > 1:
                groups.append(set(group))

    for node in sorted(edges):
        if node not in index:
            connect(node)
    found = []
    for group in groups:
        start = min(group)
        path, seen = [start], {start}
        while True:  # walk inside the group until a unit repeats: that is a loop
            nxt = min(n for n in edges[path[-1]] if n in group)
            if nxt in seen:
                loop = path[path.index(nxt):] + [nxt]
                break
            path.append(nxt)
            seen.add(nxt)
        found.append(["/".join(unit) for unit in loop])
    return found


def test_every_include_looks_down_the_layers_and_rooms():
    found = problems()
    assert not found, "\n".join(found)


def test_the_plan_knows_the_runtime_rooms_and_each_room_has_sources():
    places = ground_plan()
    rooms = [p for p in places if p.startswith("runtime/")]
    assert len(rooms) >= 5, rooms
    for room in rooms:
        folder = places[room][0]
        assert folder.is_dir() and any(folder.glob("*.hpp")), f"{room}: no folder of headers at {folder}"
    assert not any((SOURCE / "runtime").glob("*.[hc]pp")), "runtime's sources belong in its rooms' folders"


@pytest.mark.parametrize("case", ["upward", "loop"])
def test_the_check_fails_on_an_upward_include_and_on_a_loop(tmp_path, case):
    """A copy of the tree with one include added: up a room, or back to a unit that includes the file."""
    import shutil

    copy = tmp_path / "src"
    shutil.copytree(SOURCE, copy, ignore=shutil.ignore_patterns("*.o", "build"))
    places = ground_plan(copy)
    allowed = reachable(places)
    files = sources_of(places)
    rooms = sorted((p for p in places if p.startswith("runtime/")), key=lambda p: len(allowed[p]))
    low, high = rooms[0], rooms[-1]
    if case == "upward":
        victim = files[low][0]
        header = next(f.name for f in files[high] if f.suffix == ".hpp")
        expected = f'includes "{header}" of {high}, which {low} may not use'
    else:
        # a room's header that includes another header of its room, whose .cpp then includes it back
        header, victim = next((path.name, path.parent / (Path(own).stem + ".cpp"))
                              for room in rooms for path in files[room] if path.suffix == ".hpp"
                              for own in INCLUDE.findall(path.read_text())
                              if (path.parent / own).exists() and (path.parent / (Path(own).stem + ".cpp")).exists())
        expected = "units include each other round a loop"
    victim.write_text(victim.read_text() + f'\n#include "{header}"\n')
    found = problems(copy)
    assert any(expected in f for f in found), found
