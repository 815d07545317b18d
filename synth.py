"""Offline synth: run the program for one stack under recording mocks and write its plan.

    python synth.py --stack staging --out DIR

Writes DIR/resources.json, DIR/manifests/*.yaml, DIR/helm.json, the weekly cost forecast DIR/cost-forecast.json and
its picture DIR/cost-week.svg (see docs/offline-synth.md, docs/cost.md) and prints a summary. Exit codes: 0
success, 2 invalid configuration (nothing written), 1 any other failure, including a value a receiver would
refuse: an input the AWS provider rejects at preview, or a Kubernetes name, label or annotation the API server
rejects (the plan is written; the lines name each one).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

from offline import speed

PROJECT_DIR = Path(__file__).resolve().parent
EXIT_OK, EXIT_FAILURE, EXIT_INVALID_CONFIG = 0, 1, 2


def main(argv: list[str] | None = None, project_dir: Path = PROJECT_DIR) -> int:
    """The synth; `project_dir` lets tests run it in-process on a copy of the program."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--stack", required=True, help="stack name: reads Pulumi.<stack>.yaml")
    parser.add_argument("--out", required=True, type=Path, help="directory to write the plan into")
    args = parser.parse_args(argv)

    sys.path.insert(0, str(PROJECT_DIR))
    from components.settings import SettingsError
    from components.settings.checks.fit_placement import group_fits
    from offline.config_files import StackFileError, read_stack_config
    from offline.cost import stack_forecast, write_forecast
    from offline.plan import OUTPUT_FILES, Plan, clear_outputs
    from offline.runner import checked_settings, close_event_loop, record_program
    from offline.summary import render_summary
    from policy.provider_rules import plan_violations

    out: Path = args.out
    if out.is_dir():
        clear_outputs(out)
    try:
        # A bad config is reported before anything exists: not even the --out directory.
        # The stack file is read once and validated once; the program run and the summary take those settings.
        config = read_stack_config(project_dir, args.stack)
        settings = checked_settings(config)
        out.mkdir(parents=True, exist_ok=True)
        recording = record_program(project_dir, args.stack, config, settings)
    except (SettingsError, StackFileError) as exc:
        print(f"synth: stack '{args.stack}': {exc}", file=sys.stderr)
        return EXIT_INVALID_CONFIG
    finally:
        close_event_loop()
    plan = Plan.from_recording(recording)
    forecast = stack_forecast(recording.settings)
    # Write beside the target first so a failure while writing never leaves half a plan.
    with tempfile.TemporaryDirectory(dir=out) as staging_dir:
        plan.write(staging_dir)
        write_forecast(Path(staging_dir), recording.settings, args.stack, forecast)
        for name in OUTPUT_FILES:
            (Path(staging_dir) / name).rename(out / name)
    print(render_summary(recording.settings, plan, args.stack, out, forecast, group_fits(recording.settings)))
    # Values every schema allows and a receiver refuses (the AWS provider at preview; the API server's names,
    # labels and annotations) fail the run, not the config keys: exit 1. The plan stays written, so
    # `python -m policy.check DIR` shows the same lines.
    from policy.k8s_values import RULE_NAME as K8S_RULE_NAME
    from policy.k8s_values import manifest_violations

    rejected = [f"aws-provider-rules  {urn}  {message}" for urn, message in plan_violations(plan.resources)]
    rejected += [f"{K8S_RULE_NAME}  {where} {message}" for where, message in manifest_violations(plan.manifests)]
    for line in rejected:
        print(f"synth: stack '{args.stack}': {line}", file=sys.stderr)
    if rejected:
        print(f"synth: a receiver would refuse {len(rejected)} value(s); nothing was deployed", file=sys.stderr)
        return EXIT_FAILURE
    return EXIT_OK


if __name__ == "__main__":
    speed.collector_off()  # the command is a short batch run: why in offline/speed.py
    try:
        code = main()
    except Exception as exc:  # anything but a config mistake: exit 1 with the cause, and its trace
        import traceback

        traceback.print_exc()
        print(f"synth: failed: {exc}", file=sys.stderr)
        code = EXIT_FAILURE
    # Everything is written (the plan's files are closed and renamed into place): no interpreter teardown.
    speed.exit_now(code)
