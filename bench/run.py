"""Benchmarks of the offline synth (a script, not a test: timings depend on the machine).

    .venv/bin/python bench/run.py [--repeat N] [--suite]

1. Synth of the staging stack against its floor: a fresh interpreter that, run as `synth.py` runs (the cyclic
   garbage collector off, no interpreter teardown at exit), only imports the SDKs the program uses (pulumi, the pulumi_aws submodules behind the plan's resource types - pulumi_aws loads
   them lazily, so the script touches each class - pulumi_eks, pulumi_kubernetes, pydantic). Both are
   measured interleaved in one run, each in a fresh subprocess, and the medians compared.
   Goal: synth <= 1.3 x floor (the program and the mocks add at most 30% to the unavoidable import cost).
2. Synth with 1, 10 and 50 GPU NodePools (generated stack files in a temporary copy of the project).
   Goal: 50 pools <= 2 x 1 pool (cost per pool stays small next to the fixed cost).
3. With --suite: the wall time of the README's test command (`python -m pytest -q`), once.

Prints every figure and whether each goal is met; exits 1 if a goal is missed, so `make bench` can gate.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

PROJECT_DIR = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(PROJECT_DIR))

from offline.project_copy import copy_program  # noqa: E402  (the project root is on sys.path only now)

SYNTH_GOAL = 1.3
SCALING_GOAL = 2.0
POOL_COUNTS = (1, 10, 50)
BENCH_STACK = "bench"

# Kubernetes API groups that are pulumi_kubernetes modules of another name: Helm's, and the built-in `*.k8s.io`
# groups (`storage.k8s.io` -> storage, `rbac.authorization.k8s.io` -> rbac). Other groups with a dot (CRDs:
# karpenter.sh, autoscaling.x-k8s.io) are created through apiextensions.CustomResource.
K8S_GROUP_MODULES = {"helm.sh": "helm"}


def k8s_module(group: str) -> str:
    """The pulumi_kubernetes module of an API group ("" -> core); a name with a dot: a CRD's group."""
    if group in K8S_GROUP_MODULES:
        return K8S_GROUP_MODULES[group]
    if group.endswith(".k8s.io") and not group.endswith("x-k8s.io"):
        return group.split(".")[0]
    return group


def sdk_class(type_token: str) -> tuple[str, str] | None:
    """(module, class) of the SDK class registering `type_token`; None for the program's own components."""
    package, module, name = type_token.split(":")
    if package == "aws":
        submodule = module.split("/")[0]
        return ("pulumi_aws" if submodule == "index" else f"pulumi_aws.{submodule}"), name
    if package == "eks":
        return "pulumi_eks", name
    if package == "pulumi" and module == "providers":
        return {"kubernetes": ("pulumi_kubernetes", "Provider"), "aws": ("pulumi_aws", "Provider")}.get(name)
    if package == "kubernetes":
        group, version = module.split("/")
        group_module = k8s_module(group)
        if "." in group_module:
            return "pulumi_kubernetes.apiextensions", "CustomResource"
        return f"pulumi_kubernetes.{group_module}.{version}", name
    return None


def floor_script(resource_types: set[str]) -> str:
    """Python source that imports the SDKs and touches every class the plan's resources come from."""
    classes = sorted({c for t in resource_types if (c := sdk_class(t))})
    return "\n".join(
        [
            "import importlib",
            "import pulumi, pulumi.runtime, pulumi_aws, pulumi_eks, pulumi_kubernetes, pydantic",
            f"for module, name in {classes!r}:",
            "    getattr(importlib.import_module(module), name)",
        ]
    )


def run_timed(command: list[str], cwd: Path) -> float:
    elapsed, result = _run(command, cwd)
    if result.returncode != 0:
        raise SystemExit(f"benchmark command failed: {' '.join(command)}\n{result.stdout}\n{result.stderr}")
    return elapsed


def _run(command: list[str], cwd: Path) -> tuple[float, subprocess.CompletedProcess[str]]:
    start = time.perf_counter()
    result = subprocess.run(command, cwd=cwd, capture_output=True, text=True, check=False)
    return time.perf_counter() - start, result


def synth_command(stack: str, out: Path) -> list[str]:
    return [sys.executable, "synth.py", "--stack", stack, "--out", str(out)]


def synth_of(stack: str, out: Path, cwd: Path) -> Callable[[], float]:
    return lambda: run_timed(synth_command(stack, out), cwd)


def medians(commands: dict[str, Callable[[], float]], repeat: int) -> dict[str, float]:
    """Interleaved repetitions (A B A B ...) so drift in machine load hits every command alike."""
    samples: dict[str, list[float]] = {name: [] for name in commands}
    for _ in range(repeat):
        for name, command in commands.items():
            samples[name].append(command())
    return {name: statistics.median(values) for name, values in samples.items()}


def pools_stack(base: dict[str, Any], count: int) -> dict[str, Any]:
    """The staging stack file with `count` GPU NodePools cloned from its first pool.

    The first clone keeps the pool's name: the labs' sessions and hubs name it."""
    config = json.loads(json.dumps(base["config"]))
    template = config["gpu-platform:karpenter"]["nodePools"][0]
    names = [template["name"]] + [f"gpu-pool-{i:03d}" for i in range(1, count)]
    config["gpu-platform:karpenter"]["nodePools"] = [{**template, "name": name} for name in names]
    return {"config": config}


def verdict(ok: bool) -> str:
    return "met" if ok else "MISSED"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5, help="repetitions per measurement (median reported)")
    parser.add_argument("--suite", action="store_true", help="also time the whole test suite once (slow)")
    args = parser.parse_args(argv)

    with tempfile.TemporaryDirectory(prefix="gpu-platform-bench-") as tmp:
        work = Path(tmp)
        program = copy_program(work / "program")
        plan_dir = work / "plan"
        run_timed(synth_command("staging", plan_dir), PROJECT_DIR)  # warm caches (.pyc), learn the types
        resource_types = {r["type"] for r in json.loads((plan_dir / "resources.json").read_text())}
        floor_file = work / "floor.py"
        floor_file.write_text(floor_script(resource_types), encoding="utf-8")
        # synth.py runs with the cyclic collector off (which also makes its imports cheaper) and ends without the
        # interpreter's teardown (offline/speed.py): the goal compares it with the same imports run the same way, so
        # only the program, the mocks and the writing count against it.
        floor_as_synth_file = work / "floor-as-synth.py"
        floor_as_synth_file.write_text(
            f"import sys\nsys.path.insert(0, {str(PROJECT_DIR)!r})\nfrom offline import speed\nspeed.collector_off()\n"
            + floor_script(resource_types)
            + "\nspeed.exit_now(0)\n",
            encoding="utf-8",
        )

        print(f"python {sys.version.split()[0]}, {args.repeat} repetitions per figure, medians of fresh processes")
        times = medians(
            {
                "floor": lambda: run_timed([sys.executable, str(floor_as_synth_file)], PROJECT_DIR),
                "floor-default": lambda: run_timed([sys.executable, str(floor_file)], PROJECT_DIR),
                "synth": synth_of("staging", work / "out-staging", PROJECT_DIR),
            },
            args.repeat,
        )
        synth_ratio = times["synth"] / times["floor"]
        default = times["floor-default"]
        print(
            f"\nSDK import floor            {times['floor']:6.2f} s  ({len(resource_types)} resource types, run as synth.py runs)"
        )
        print(f"  (in a plain interpreter: {default:.2f} s; the synth is {times['synth'] / default:.2f} x that)")
        print(f"synth --stack staging       {times['synth']:6.2f} s  = {synth_ratio:.2f} x floor")
        print(f"  program + mocks + writing {times['synth'] - times['floor']:6.2f} s  (synth - floor)")
        print(f"  goal <= {SYNTH_GOAL} x floor: {verdict(synth_ratio <= SYNTH_GOAL)}")

        base = yaml.safe_load((PROJECT_DIR / "Pulumi.staging.yaml").read_text(encoding="utf-8"))
        pool_times: dict[int, float] = {}
        print("\nGPU NodePools   synth     resources")
        for count in POOL_COUNTS:
            stack_file = program / f"Pulumi.{BENCH_STACK}.yaml"
            stack_file.write_text(yaml.safe_dump(pools_stack(base, count), sort_keys=False), encoding="utf-8")
            out = work / f"out-{count}"
            pool_times[count] = medians({"synth": synth_of(BENCH_STACK, out, program)}, args.repeat)["synth"]
            registered = len(json.loads((out / "resources.json").read_text()))
            print(f"{count:>13}   {pool_times[count]:6.2f} s  {registered:>6}")
        scaling = pool_times[POOL_COUNTS[-1]] / pool_times[POOL_COUNTS[0]]
        print(
            f"  {POOL_COUNTS[-1]} pools = {scaling:.2f} x {POOL_COUNTS[0]} pool; goal <= {SCALING_GOAL} x: {verdict(scaling <= SCALING_GOAL)}"
        )

        if args.suite:
            # Timed whatever the outcome; the last line of pytest's report says what passed.
            suite, result = _run([sys.executable, "-m", "pytest", "-q"], PROJECT_DIR)
            outcome = (result.stdout.strip().splitlines() or ["no output"])[-1]
            print(f"\ntest suite (python -m pytest -q)  {suite:6.1f} s  [{outcome}]")

    return 0 if synth_ratio <= SYNTH_GOAL and scaling <= SCALING_GOAL else 1


if __name__ == "__main__":
    sys.exit(main())
