"""`mlptui push FOLDER --bucket NAME | --repo NS/NAME`: upload traces to the Hugging Face Hub and print one
Perfetto link per file. Never deletes anything remote; `--dry-run` uses no network at all."""

from __future__ import annotations

import argparse
import sys

from mlptui.base.errors import MlptuiError


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("folder",
                        help="folder of traces (*.pt.trace.json[.gz], trace *.json[.gz]) and manifest.json")
    where = parser.add_mutually_exclusive_group(required=True)
    where.add_argument("--bucket", "-b", metavar="NAME",
                       help="Hugging Face bucket (NAME or NS/NAME; created if missing)")
    where.add_argument("--repo", metavar="NS/NAME", help="a Hub repo instead of a bucket (created if missing)")
    parser.add_argument("--namespace", metavar="NS",
                        help="owner (user or org) of a bare --bucket or --repo NAME "
                             "(default: the token's user; needed with --dry-run)")
    parser.add_argument("--repo-type", choices=("dataset", "model"), default="dataset",
                        help="kind of --repo (default: dataset)")
    parser.add_argument("--prefix", default="", metavar="PATH",
                        help="folder inside the bucket or repo to push into (default: its root)")
    parser.add_argument("--overwrite", action="store_true",
                        help="replace bucket files of the same name but other content (buckets keep no history)")
    parser.add_argument("--dry-run", action="store_true",
                        help="print what would be uploaded and the links; no network at all")
    parser.add_argument("--token", help="Hugging Face token (default: HF_TOKEN or `hf auth login`)")
    parser.add_argument("--private", action="store_true", default=None,
                        help="create the bucket or repo private (Perfetto links then need a token)")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")


def target_spec(args: argparse.Namespace, namespace: str | None) -> str:
    """The hf:// spelling of where FOLDER goes."""
    name = args.bucket or args.repo
    if "/" not in name:
        if not namespace:
            raise MlptuiError(f"{name}: give the owner (--namespace NS, or NS/{name}); "
                              "--dry-run cannot ask the Hub who you are")
        name = f"{namespace}/{name}"
    kind = "buckets" if args.bucket else f"{args.repo_type}s"
    prefix = args.prefix.strip("/")
    if not prefix.isprintable():
        raise MlptuiError(f"--prefix {prefix!r}: a folder name holds no control characters (newline, tab, ...)")
    return f"hf://{kind}/{name}" + (f"/{prefix}" if prefix else "")


def run(args: argparse.Namespace) -> int:
    from mlptui.publish.hub_push import (
        PushOptions,
        describe_dry_run,
        links_message,
        plan_push,
        resolve_token,
        run_push,
        whoami,
    )
    from mlptui.sources.hub_spec import parse_hf_spec

    name = args.bucket or args.repo
    if args.namespace and "/" in name:
        raise MlptuiError(f"{name}: already has an owner; drop --namespace or the NS/ part")
    namespace = args.namespace
    if "/" not in name and not namespace and not args.dry_run:
        namespace = whoami(resolve_token(args.token))
    target = parse_hf_spec(target_spec(args, namespace))
    plan = plan_push(args.folder, target)
    if args.dry_run:
        describe_dry_run(plan, sys.stdout, sys.stderr)
        note = links_message(bool(args.private), target)
        if note:
            print(note, file=sys.stderr)
        return 0
    run_push(plan, PushOptions(token=args.token, private=args.private, overwrite=args.overwrite,
                               progress=not args.no_progress))
    return 0
