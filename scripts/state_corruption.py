#!/usr/bin/env python3
"""Damage a state dir and resume from it: every outcome must be exact or a clear refusal.

A stateful word count over a file runs to its end over two workers with --state-dir, and
the dir it leaves is kept. Each trial copies it, then flips one bit at a random offset of
one of its files, or truncates that file at a random offset (to 0 bytes in some trials),
or deletes it, and runs the same topology again on the copy (a resume, which prints the
totals again). An outcome is
  exact    exit 0 and the same totals as the first run (in any order),
  refused  a non-zero exit with an `error:` line naming the damaged file or the state dir,
           and no panic,
  wrong    anything else (different totals with exit 0, a panic, a refusal saying nothing).

Usage: scripts/state_corruption.py [TRIALS] [--storm PATH] [--seed N]
Prints one line per trial that is not exact, then the figures; exits 1 if any is wrong.
"""

import argparse
import os
import random
import shutil
import subprocess
import sys
import tempfile

TOPOLOGY = "file(path={input}) | split(field=line) | count(word) stateful=true x2 | stdout"


def run(storm, input_path, state_dir, conf_dir):
    env = dict(os.environ, STORM_CONF_DIR=conf_dir)
    env.pop("STORM_LOG", None)
    return subprocess.run(
        [storm, "run", "-e", TOPOLOGY.format(input=input_path), "--workers", "2",
         "--state-dir", state_dir, "--quiet"],
        capture_output=True, text=True, env=env, timeout=300,
    )


def damage(path, rng):
    """Damage `path` one way; say how."""
    size = os.path.getsize(path)
    kind = rng.choice(["flip", "flip", "flip", "truncate", "empty", "delete"])
    if kind == "flip" and size > 0:
        offset = rng.randrange(size)
        bit = rng.randrange(8)
        with open(path, "r+b") as f:
            f.seek(offset)
            byte = f.read(1)[0]
            f.seek(offset)
            f.write(bytes([byte ^ (1 << bit)]))
        return f"flip bit {bit} at {offset} of {size}"
    if kind == "truncate" and size > 0:
        at = rng.randrange(size)
        os.truncate(path, at)
        return f"truncate to {at} of {size}"
    if kind == "empty":
        os.truncate(path, 0)
        return "empty"
    os.remove(path)
    return "delete"


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("trials", nargs="?", type=int, default=100)
    parser.add_argument("--storm", default="target/debug/storm")
    parser.add_argument("--seed", type=int, default=29)
    args = parser.parse_args()
    rng = random.Random(args.seed)
    storm = os.path.abspath(args.storm)
    with tempfile.TemporaryDirectory() as tmp:
        conf = os.path.join(tmp, "conf")
        os.mkdir(conf)
        input_path = os.path.join(tmp, "input.txt")
        words = [f"w{i}" for i in range(3000)]
        with open(input_path, "w") as f:
            for _ in range(4000):
                f.write(" ".join(rng.choice(words) for _ in range(8)) + "\n")
        pristine = os.path.join(tmp, "pristine")
        first = run(storm, input_path, pristine, conf)
        if first.returncode != 0:
            sys.exit(f"the first run failed: {first.stderr}")
        expected = sorted(first.stdout.splitlines())
        files = sorted(os.listdir(pristine))
        figures = {"exact": 0, "refused": 0, "wrong": 0}
        for trial in range(args.trials):
            state = os.path.join(tmp, f"trial-{trial}")
            shutil.copytree(pristine, state)
            name = files[trial % len(files)]
            how = damage(os.path.join(state, name), rng)
            out = run(storm, input_path, state, conf)
            errors = [l for l in out.stderr.splitlines() if l.startswith("error:")]
            if out.returncode == 0 and sorted(out.stdout.splitlines()) == expected:
                outcome = "exact"
            elif (out.returncode != 0 and "panicked" not in out.stderr and errors
                  and any(state in l for l in errors)):
                outcome = "refused"
            else:
                outcome = "wrong"
            figures[outcome] += 1
            if outcome != "exact":
                said = (errors or out.stderr.splitlines() or ["(nothing)"])[0]
                print(f"{trial:3} {name} {how}: {outcome} (exit {out.returncode}): {said[:200]}")
            shutil.rmtree(state)
        print(f"{args.trials} trials: {figures['exact']} exact, {figures['refused']} refused, "
              f"{figures['wrong']} wrong")
        sys.exit(1 if figures["wrong"] else 0)


if __name__ == "__main__":
    main()
