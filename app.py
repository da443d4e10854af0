#!/usr/bin/env python3
"""CDK entry: `npx cdk synth|deploy` (context in cdk.json; `-c provisionedConcurrency=0` and friends)."""

from __future__ import annotations

import aws_cdk as cdk
from cdk_nag import AwsSolutionsChecks

from stacks.episodic_stack import EpisodicStack


def build_app(app: cdk.App | None = None, *, nag: bool = True) -> tuple[cdk.App, EpisodicStack]:
    app = app or cdk.App()
    prefix = app.node.try_get_context("namePrefix") or "episodic"
    stack = EpisodicStack(
        app,
        "EpisodicStack",
        stack_name=f"{str(prefix).capitalize()}Stack",
        description="episodic: memory for coding agents (transcripts -> cards -> S3 Vectors, MCP over HTTP)",
    )
    if nag:  # cdk-nag AwsSolutions: any unacknowledged finding stops the synth
        cdk.Validations.of(app).add_plugins(AwsSolutionsChecks(app, verbose=True))
    return app, stack


if __name__ == "__main__":
    application, _ = build_app()
    application.synth()
