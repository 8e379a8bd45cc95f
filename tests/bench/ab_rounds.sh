#!/usr/bin/env bash
# Before/after of two or more builds' host costs, in alternating processes: launch cost (launch_ab.py)
# and the cost of an unchanged %%cuda cell (magic_ab.py), ROUNDS rounds each, pinned to one core
# (taskset -c CORE) and unpinned. Each line is one fresh process; within a round the builds run one
# after another in the order given. Compare the medians of the rounds (the ratio is to the first build),
# and call a difference inside the spread of the rounds "level with".
#
#   bash tests/bench/ab_rounds.sh BUILD_BEFORE BUILD_AFTER [MORE_BUILDS...] [ROUNDS=8] [CORE=3]
set -euo pipefail
builds=()
numbers=()
for argument in "$@"; do
  if [ -d "$argument" ]; then builds+=("$argument"); else numbers+=("$argument"); fi
done
[ ${#builds[@]} -ge 2 ] || { echo "usage: ab_rounds.sh BUILD_BEFORE BUILD_AFTER [MORE_BUILDS...] [ROUNDS] [CORE]" >&2; exit 2; }
rounds=${numbers[0]:-8} core=${numbers[1]:-3}
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
for script in launch_ab.py magic_ab.py; do
  for pinning in pinned unpinned; do
    echo "== $script, $pinning"
    for round in $(seq "$rounds"); do
      for build in "${builds[@]}"; do
        if [ $pinning = pinned ]; then
          taskset -c "$core" python3 "$here/$script" "$build"
        else
          python3 "$here/$script" "$build"
        fi
      done
    done
  done
done | python3 -c '
import re, statistics, sys
rows = {}
section = None
for line in sys.stdin:
    print(line, end="")
    if line.startswith("== "):
        section = line[3:].strip()
        continue
    m = re.match(r"(\S+): ([0-9.]+) us", line)
    if m:
        rows.setdefault(section, {}).setdefault(m.group(1), []).append(float(m.group(2)))
print()
header = ("measurement", "build", "median us", "min", "max", "ratio")
print("%-28s %-40s %10s %8s %8s %7s" % header)
for section, builds in rows.items():
    names = list(builds)
    base = statistics.median(builds[names[0]])
    for name in names:
        values = builds[name]
        print(f"{section:<28} {name:<40} {statistics.median(values):>10.3f} {min(values):>8.3f} {max(values):>8.3f} "
              f"{statistics.median(values) / base:>7.2f}x")
'
