"""`python -m gpu_reaper --dry-run --scrapes DIR --users USERS.json`: what the reaper would do with recorded data;
`python -m gpu_reaper --config FILE`: the hub's managed service (docs/jupyterhub.md)."""

from __future__ import annotations

import argparse
import json
import logging
import sys
from pathlib import Path

from gpu_reaper import classify
from gpu_reaper.replay import Judge, dry_run, read_scrapes
from gpu_reaper.users import learners_by_pod


def _arguments(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m gpu_reaper", description=__doc__)
    parser.add_argument("--dry-run", action="store_true", help="replay recorded scrapes; warn and stop nothing")
    parser.add_argument("--scrapes", type=Path, help="folder of <unix-seconds>.prom exporter scrapes")
    parser.add_argument("--users", type=Path, help="the hub's GET /users answer (JSON)")
    parser.add_argument("--kernels", type=Path, help="optional: {user: GET /user/<name>/api/kernels answer}")
    parser.add_argument("--namespace", help="only this lab's pods")
    parser.add_argument("--config", type=Path, help="the service's settings file (what the chart ships)")
    defaults = classify.Thresholds()
    parser.add_argument("--threshold-percent", type=float, default=defaults.threshold_percent)
    parser.add_argument("--idle-minutes", type=int, default=defaults.idle_minutes)
    parser.add_argument("--grace-minutes", type=int, default=defaults.grace_minutes)
    parser.add_argument("--never-used-minutes", type=int, default=defaults.never_used_minutes)
    parser.add_argument("--exempt-group", default="gpu-idle-exempt")
    parser.add_argument(
        "--unjudged-profile",
        action="append",
        default=[],
        help="a profile whose slots give no per-process GPU samples (MPS, g6f): its pods stay unknown (repeatable)",
    )
    return parser.parse_args(argv)


def main(argv: list[str]) -> int:
    args = _arguments(argv)
    if not args.dry_run:
        if args.config is None:
            print("either --dry-run with --scrapes and --users, or --config", file=sys.stderr)
            return 2
        from gpu_reaper.service import run

        logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(levelname)s %(message)s")
        run(args.config)
        return 0
    if args.scrapes is None or args.users is None:
        print("--dry-run needs --scrapes DIR and --users USERS.json", file=sys.stderr)
        return 2
    limits = classify.Thresholds(args.threshold_percent, args.idle_minutes, args.grace_minutes, args.never_used_minutes)
    kernels = json.loads(args.kernels.read_text()) if args.kernels else {}
    learners = learners_by_pod(json.loads(args.users.read_text()))
    judge = Judge(limits, args.exempt_group, args.namespace, frozenset(args.unjudged_profile))
    for decision in dry_run(judge, read_scrapes(args.scrapes), learners, kernels):
        print(decision.line())
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
