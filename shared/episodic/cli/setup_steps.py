"""What `setup claude-code|codex|gemini` does after writing the files: say (and save) which distiller writes
the cards, and leave the local server answering for the first prompt. `quickstart` offers Claude Code the
same way."""

from __future__ import annotations

import click


def offer_claude_code_distiller(settings, why: str = "", agent: str = "claude-code") -> None:  # type: ignore[no-untyped-def]
    """The agent's CLI on PATH and cards still heuristic: say what distilling with it would take."""
    import shutil

    from episodic.cli.distiller_choice import distiller_cost
    from episodic.distill.agent_cli import options_from
    from episodic.distill.agents import agent_cli

    if settings.distiller != "heuristic" or shutil.which(options_from(settings, agent)["binary"]) is None:
        return
    label = agent_cli(agent).label
    click.echo(
        f"{label} is on PATH{why}: it writes better cards than the offline heuristic "
        + ("(recall@3 0.68-0.75 vs 0.48 on a real corpus), " if agent == "claude-code" else "")
        + f"using your {label} plan or API key: {distiller_cost(settings, agent)}. "
        + (
            f"Log in, then run `episodic setup {agent} --write` again (or choose it now: "
            f"`--distiller {agent} --write`)."
            if why
            else f"`episodic setup {agent} --write` makes it the distiller when {label} is logged in "
            f"(`--distiller {agent} --write` chooses it in any case)."
        ),
        err=True,
    )


def say_if_not_installed(settings, agent: str, write: bool) -> None:  # type: ignore[no-untyped-def]
    """An agent whose CLI is not on PATH: say so, and that its configuration is written for when it is
    installed (the files are harmless without it, and a later install needs no second setup)."""
    import shutil

    from episodic.distill.agent_cli import options_from
    from episodic.distill.agents import agent_cli

    binary = options_from(settings, agent)["binary"]
    if shutil.which(binary) is not None:
        return
    label = agent_cli(agent).label
    if write:
        then = (
            "its configuration is written anyway and takes effect once you install it, with no second setup"
        )
    else:
        then = "`--write` writes this configuration anyway, for when you install it"
    click.echo(f"note: {label} is not installed here (no `{binary}` on PATH): {then}.", err=True)


def _save_distiller(distiller: str) -> str:
    from episodic.hooks.token import set_config_value
    from episodic.plumbing import envsource

    path = envsource.config_path()
    set_config_value(path, "distiller", distiller)
    return f"saved in {path}"


def announce_distiller(settings, choice, write: bool, agent: str = "claude-code") -> None:  # type: ignore[no-untyped-def]
    """Save and say which distiller writes the cards (the agent's cost with it, how to opt out)."""
    from episodic.cli.distiller_choice import distiller_cost
    from episodic.distill.agent_cli import AGENT_KINDS
    from episodic.distill.agents import agent_cli

    chose_agent = choice.source == "default" and choice.distiller in AGENT_KINDS
    to_save = choice.source == "option" or chose_agent
    if choice.source == "saved":
        where = "as configured"
    elif not to_save:
        where = "the default"
    else:
        where = _save_distiller(choice.distiller) if write else "saved by --write"
    lead = "" if write else "# "  # the printed plan stays a paste-able script
    click.echo(f"{lead}distiller: {choice.distiller} ({where})")
    if chose_agent:
        click.echo(
            f"{lead}  {choice.reason}, so your {agent_cli(choice.distiller).label} writes the cards: "
            f"{distiller_cost(settings, choice.distiller)}. "
            f"`episodic setup {agent} --distiller heuristic --write` opts out."
        )
    elif choice.source == "default":
        why = "" if "not on PATH" in choice.reason else f", but {choice.reason}"
        offer_claude_code_distiller(settings, why, agent)


def leave_server_answering(settings, agent: str = "claude-code") -> None:  # type: ignore[no-untyped-def]
    """The server the prompt hook asks, started as the hook starts it, and warm before the first prompt;
    then `agent`'s prompt hook run once as that CLI runs it (when it is on)."""
    from episodic.hooks.local_server import READY_WAIT_SECONDS, ensure_answering
    from episodic.hooks.token import endpoint_is_local

    if not endpoint_is_local(settings) or not settings.token:
        return

    def starting() -> None:
        click.echo(
            f"local server: starting it, waiting until it answers (up to {READY_WAIT_SECONDS:.0f} s)…",
            err=True,
        )

    state = ensure_answering(settings, settings.token, on_start=starting)
    click.echo(f"local server: {state.describe()}")
    if state.status == "off":  # hook_autostart is off: the user runs `episodic serve` (the line says so)
        return
    if state.status != "answering":
        raise click.ClickException(f"the prompt hook cannot be made to answer: {state.describe()}")
    if settings.hook_prompt:
        hook_answers(settings.user_home, agent)


def hook_answers(user_home: str | None, agent: str = "claude-code") -> None:
    """The prompt hook command `agent` runs, run once as it would: what it logged; exit 1 when it failed."""
    from episodic.cli.hook_probe import run_hook_probe
    from episodic.cli.setup_clients import user_home as home_of
    from episodic.kernel.settings import load_settings

    probe = run_hook_probe(
        load_settings(), home_of(user_home), agent=agent
    )  # again: a move saved another port
    click.echo(f"prompt hook: {probe.detail}")
    if probe.status == "fail":
        raise click.ClickException(f"the prompt hook does not answer: {probe.detail}; {probe.fix}")


AGENT_KINDS_BY_LABEL = {"Claude Code": "claude-code", "Codex CLI": "codex", "Gemini CLI": "gemini"}


def quickstart_next_step(settings, labels: list[str]) -> None:  # type: ignore[no-untyped-def]
    """After quickstart's search: the setup that gives this memory to each agent found here and not yet
    wired (Claude Code when none is found), so the first run ends on what to do next."""
    import os
    import shlex
    import shutil

    from episodic.cli.doctor_agents import agents_set_up
    from episodic.cli.setup_clients import installed_executable
    from episodic.kernel.errors import EpisodicError

    found = [AGENT_KINDS_BY_LABEL[label] for label in dict.fromkeys(labels) if label in AGENT_KINDS_BY_LABEL]
    wired = set(agents_set_up(settings))
    waiting = [agent for agent in found or ["claude-code"] if agent not in wired]
    if not waiting:
        return
    try:
        executable = installed_executable()
    except EpisodicError:
        executable = "episodic"
    on_path = shutil.which("episodic")
    same = on_path is not None and os.path.realpath(on_path) == os.path.realpath(executable)
    command = "episodic" if same else shlex.quote(executable)  # what the user's shell finds
    setups = " and ".join(f"`{command} setup {agent} --write`" for agent in waiting)
    click.echo(
        f"Next, to give this memory to your agent (MCP server and prompt hook): {setups} (without "
        f"--write it prints what it would change); `{command} doctor` then checks every link."
    )
