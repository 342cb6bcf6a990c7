"""The Typer application object shared by the command modules."""

import typer

app = typer.Typer(
    name="csro",
    help="Code-Space Response Oracles: LLM-written code policies, evaluated and solved.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)

state = {"debug": False}


@app.callback()
def _root(debug: bool = typer.Option(False, "--debug", help="Show tracebacks on errors.")) -> None:
    state["debug"] = debug
